"""Hand-written PySpark baseline for the flights example.

Hourly departures per origin airport from the per-day flights CSV stream
(``examples/flights/data/flights/``): number of flights, average departure
delay and number of flights delayed by more than 15 minutes, per 1-hour
tumbling event-time window on ``time_hour`` with a 1-hour watermark, appended
to Parquet once the window is closed by the watermark.

The file source takes files in modification-time order, not name order: run
``python examples/flights/prepare_data.py --touch`` after a checkout so that
day files are read in date order (otherwise days can be dropped as late).

Usage (from the repository root)::

    python bench/handwritten_flights.py \
        [--data examples/flights/data/flights] [--out bench/out/flights] \
        [--checkpoint bench/out/flights_checkpoint] [--max-files-per-trigger 10] \
        [--no-count]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DoubleType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

REPO_ROOT = Path(__file__).resolve().parent.parent

# Columns of examples/flights/data/flights/*.csv, in file order.
FLIGHTS_SCHEMA = StructType(
    [
        StructField("year", IntegerType()),
        StructField("month", IntegerType()),
        StructField("day", IntegerType()),
        StructField("dep_time", IntegerType()),
        StructField("sched_dep_time", IntegerType()),
        StructField("dep_delay", DoubleType()),
        StructField("arr_delay", DoubleType()),
        StructField("carrier", StringType()),
        StructField("flight", IntegerType()),
        StructField("tailnum", StringType()),
        StructField("origin", StringType()),
        StructField("dest", StringType()),
        StructField("distance", IntegerType()),
        StructField("time_hour", TimestampType()),
    ]
)


def hourly_by_origin(flights: DataFrame) -> DataFrame:
    """The aggregation, shared by the streaming job and batch checks."""
    return (
        flights.groupBy(F.window("time_hour", "1 hour"), F.col("origin"))
        .agg(
            F.count("*").alias("flights"),
            F.avg("dep_delay").alias("avg_dep_delay"),
            F.sum(F.when(F.col("dep_delay") > 15, 1).otherwise(0)).alias("delayed"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "origin",
            "flights",
            "avg_dep_delay",
            "delayed",
        )
    )


def run(spark: SparkSession, data_dir, out_dir, checkpoint_dir, max_files_per_trigger):
    """Run the streaming job until all files currently in data_dir are processed.

    Returns the finished StreamingQuery (its ``lastProgress`` holds the final
    watermark). Re-running with the same checkpoint only processes new files.
    """
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    flights = (
        spark.readStream.format("csv")
        .option("header", True)
        .option("nullValue", "NA")
        .option("maxFilesPerTrigger", int(max_files_per_trigger))
        .schema(FLIGHTS_SCHEMA)
        .load(str(data_dir))
    )
    result = hourly_by_origin(flights.withWatermark("time_hour", "1 hour"))
    query = (
        result.writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(out_dir))
        .option("checkpointLocation", str(checkpoint_dir))
        .trigger(availableNow=True)
        .queryName("handwritten_flights")
        .start()
    )
    query.awaitTermination()
    return query


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Hand-written PySpark flights job")
    parser.add_argument("--data", type=Path, default=REPO_ROOT / "examples/flights/data/flights")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "bench/out/flights")
    parser.add_argument(
        "--checkpoint", type=Path, default=REPO_ROOT / "bench/out/flights_checkpoint"
    )
    parser.add_argument("--max-files-per-trigger", type=int, default=10)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--shuffle-partitions", type=int, default=2)
    parser.add_argument(
        "--no-count",
        action="store_true",
        help="do not read the output back to count its rows (bench/run.py times the process)",
    )
    args = parser.parse_args(argv)

    spark = (
        SparkSession.builder.master(args.master)
        .appName("handwritten_flights")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    try:
        started = time.perf_counter()
        query = run(spark, args.data, args.out, args.checkpoint, args.max_files_per_trigger)
        elapsed = time.perf_counter() - started
        progress = query.lastProgress or {}
        watermark = progress.get("eventTime", {}).get("watermark")
        if args.no_count:
            print(f"done in {elapsed:.1f}s, final watermark {watermark}, output in {args.out}")
        else:
            rows = spark.read.parquet(str(args.out)).count()
            print(f"done in {elapsed:.1f}s, final watermark {watermark}, {rows} rows in {args.out}")
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
