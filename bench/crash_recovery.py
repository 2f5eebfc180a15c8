"""Crash recovery, the long run: SIGKILL ``sqlstream exec`` many times, check the sinks.

The harness of ``tests/test_crash_recovery.py`` (``tests/crash_harness.py``) with more
days and kills: the flights stream into a stateless filter and an hourly windowed
aggregation (parquet sinks), killed with SIGKILL (driver and JVM) at seeded random
points after the queries started, restarted each time, then left to finish. Each sink is
read through its ``_spark_metadata`` log (``spark.read.parquet`` in batch) and compared
with the plain-Python oracle; the part files a plain ``*.parquet`` glob would read on top
(batches killed before their commit) are counted, and such a glob read is tried with
pyarrow to show why a file sink must be read through its log.

    python bench/crash_recovery.py --days 31 --kills 12 --seed 7
    python bench/crash_recovery.py --days 10 --kills 6 --seed 12   # the CI case

Prints one JSON object (see ``bench/README.md`` for measured results). Exit 1 when a
sink differs from its oracle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.crash_harness import (  # noqa: E402
    expected_hourly, expected_late, prepare, run_until_done, uncommitted_files,
)


def _plain_glob_read(sink: Path) -> str:
    """What reading ``sink/*.parquet`` without the log gives: rows, or the error."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return "pyarrow not installed"
    try:
        table = pq.ParquetDataset([str(p) for p in sorted(sink.glob("*.parquet"))]).read()
        return f"{table.num_rows} rows"
    except Exception as error:  # noqa: BLE001 - the point is to show the error
        return f"fails: {type(error).__name__}: {str(error)[:160]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=31)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-delay", type=float, default=2.0,
                        help="kill up to this many seconds after the drawn number of committed batches")
    parser.add_argument("--files-per-batch", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="folder (default: a temporary one)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="crash-"))
    files = prepare(work, args.days, args.files_per_batch)
    report = run_until_done(work, args.kills, args.seed, args.max_delay)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    late = spark.read.parquet(str(work / "out" / "late")).selectExpr(
        "year", "month", "day", "flight", "carrier", "origin", "dep_delay",
        "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss')").collect()
    hourly = spark.read.parquet(str(work / "out" / "hourly")).selectExpr(
        "date_format(window_start, 'yyyy-MM-dd HH:mm:ss')", "origin", "flights",
        "round(total_delay, 6)").collect()
    late_ok = sorted(map(tuple, late)) == expected_late(files)
    hourly_ok = sorted(map(tuple, hourly), key=repr) == sorted(expected_hourly(files), key=repr)
    result = {
        "days": args.days, "files_per_batch": args.files_per_batch, "seed": args.seed,
        "kill_points": report.kills, "runs": report.runs, "wall_s": report.seconds,
        "late_rows": len(late), "late_equals_oracle": late_ok,
        "hourly_windows": len(hourly), "hourly_equals_oracle": hourly_ok,
        "uncommitted_part_files": {s: [p.name for p in uncommitted_files(work / "out" / s)]
                                   for s in ("late", "hourly")},
        "plain_glob_read": {s: _plain_glob_read(work / "out" / s) for s in ("late", "hourly")},
        "work": str(work),
    }
    spark.stop()
    print(json.dumps(result, indent=2))
    return 0 if late_ok and hourly_ok else 1


if __name__ == "__main__":
    sys.exit(main())
