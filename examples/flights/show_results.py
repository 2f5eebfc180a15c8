"""Print what the flights example wrote: row count, busiest hours, worst delays.

Usage: python examples/flights/show_results.py [OUT_DIR]   (default: examples/flights/out/hourly)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "out" / "hourly"
    if not out.exists():
        sys.exit(
            f"{out} does not exist: run `sqlstream exec examples/flights/hourly_delays.ssql` first"
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("FATAL")
    hourly = spark.read.parquet(str(out))
    hourly.createOrReplaceTempView("hourly")
    print(f"{hourly.count()} hourly windows in {out}\n")
    print("Per airport, 2013:")
    spark.sql("""
        SELECT origin, COUNT(*) AS hours, SUM(flights) AS flights,
               ROUND(SUM(avg_dep_delay * flights) / SUM(flights), 2) AS avg_dep_delay,
               SUM(delayed) AS delayed_over_15_min
        FROM hourly GROUP BY origin ORDER BY origin""").show()
    print("The ten hours with the worst average departure delay (at least 10 flights):")
    spark.sql("""
        SELECT window_start, origin, flights, ROUND(avg_dep_delay, 1) AS avg_dep_delay, delayed
        FROM hourly WHERE flights >= 10 ORDER BY avg_dep_delay DESC LIMIT 10""").show(
        truncate=False
    )
    spark.stop()


if __name__ == "__main__":
    main()
