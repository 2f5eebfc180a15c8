"""Deduplication on Spark: the flights, each day file delivered twice, deduplicated by each
spelling, against a batch ``SELECT DISTINCT`` over the same files.

The first days of ``examples/flights/data/flights`` are copied twice — ``<day>.csv`` and
``<day>-again.csv``, the copy's modification time twelve hours after the original's, so
that Spark's file source reads them in that order — and ``examples/flights/dedup.ssql``
runs on them with three files per micro-batch: some copies arrive in the batch of their
original, others in the next one. Each spelling must write exactly one row per key, the
rows a batch ``SELECT DISTINCT`` (plain Spark batch, not the streaming plan) gives.
"""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone

import pytest

import sqlstream
from tests.conftest import ROOT

pytestmark = pytest.mark.spark

EXAMPLE = ROOT / "examples" / "flights"
DAYS = sorted((EXAMPLE / "data" / "flights").glob("*.csv"))[:8]
SCHEMA = (
    "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING, "
    "distance DOUBLE, time_hour TIMESTAMP"
)
KEY = ["carrier", "flight", "time_hour"]


def _deliver_twice(work):
    """Each day file, then its copy twelve hours later (by modification time)."""
    target = work / "data" / "flights"
    target.mkdir(parents=True)
    for day in DAYS:
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        for name, at in ((day.name, stamp), (f"{day.stem}-again.csv", stamp + 12 * 3600)):
            shutil.copy(day, target / name)
            os.utime(target / name, (at, at))
    return sorted(target.glob("*.csv"))


def _run(spark, pipeline):
    queries = pipeline.start(spark, available_now=True)
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None
    return {q.name: q for q in queries}


def _batch(spark, files):
    """The delivered files, duplicates included, as a batch DataFrame (plain ``spark.read``)."""
    return (
        spark.read.option("header", True)
        .option("nullValue", "NA")
        .schema(SCHEMA)
        .csv([str(f) for f in files])
    )


def _same(actual, expected):
    assert actual.count() == expected.count()
    assert actual.exceptAll(expected).count() == 0 and expected.exceptAll(actual).count() == 0


@pytest.fixture(scope="module")
def delivered(spark, tmp_path_factory):
    """The example run on the files delivered twice: ``(work folder, files, queries)``."""
    work = tmp_path_factory.mktemp("dedup")
    files = _deliver_twice(work)
    text = (EXAMPLE / "dedup.ssql").read_text(encoding="utf-8")
    text = text.replace("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 3")
    (work / "dedup.ssql").write_text(text, encoding="utf-8")
    pipeline = sqlstream.compile_file(work / "dedup.ssql")
    assert not pipeline.plan.warnings  # the event time is among every key: bounded state
    queries = _run(spark, pipeline)
    _batch(spark, files).createOrReplaceTempView("delivered")
    return work, files, queries


def test_every_row_arrives_twice(spark, delivered):
    _, files, queries = delivered
    assert len(files) == 2 * len(DAYS)
    progress = queries["routes"].recentProgress
    assert len(progress) > 2  # several micro-batches: duplicates within one and across them
    rows = sum(p["numInputRows"] for p in progress)
    assert rows == 2 * spark.sql("SELECT DISTINCT * FROM delivered").count()


def test_select_distinct_equals_batch_distinct(spark, delivered):
    work, _, _ = delivered
    routes = spark.read.parquet(str(work / "out" / "dedup" / "routes"))
    _same(routes, spark.sql("SELECT DISTINCT origin, dest, time_hour FROM delivered"))


def test_distinct_on_one_row_per_key(spark, delivered):
    work, _, _ = delivered
    flights = spark.read.parquet(str(work / "out" / "dedup" / "flights"))
    assert flights.select(*KEY).distinct().count() == flights.count()  # one row per key
    _same(flights, spark.sql("SELECT DISTINCT * FROM delivered"))  # each flight's row


def test_row_number_in_a_subquery_feeding_an_aggregation(spark, delivered):
    work, _, queries = delivered
    hourly = spark.read.parquet(str(work / "out" / "dedup" / "hourly"))
    watermark = queries["hourly"].recentProgress[-1]["eventTime"]["watermark"]
    limit = datetime.strptime(watermark, "%Y-%m-%dT%H:%M:%S.%fZ").strftime("%Y-%m-%d %H:%M:%S")
    expected = spark.sql(
        "SELECT window.start AS window_start, window.end AS window_end, origin, COUNT(*) AS flights "
        "FROM (SELECT DISTINCT * FROM delivered) GROUP BY window(time_hour, '1 hour'), origin"
    )
    expected = expected.where(f"window_end <= TIMESTAMP '{limit}'")
    assert expected.count() > len(DAYS) * 3 * 10
    _same(hourly, expected)


def test_qualify_into_memory(spark, delivered, tmp_path):
    work, _, _ = delivered
    text = (EXAMPLE / "dedup.ssql").read_text(encoding="utf-8").split("-- SELECT DISTINCT")[0]
    text += """
CREATE SINK firsts WITH (connector = 'memory', query_name = 'dedup_qualify');
INSERT INTO firsts
SELECT carrier, flight, time_hour, origin FROM flights
QUALIFY ROW_NUMBER() OVER (PARTITION BY carrier, flight, time_hour ORDER BY time_hour) = 1;
"""
    text = text.replace("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 3")
    (work / "qualify.ssql").write_text(text, encoding="utf-8")
    _run(spark, sqlstream.compile_file(work / "qualify.ssql"))
    firsts = spark.table("dedup_qualify")
    assert firsts.select(*KEY).distinct().count() == firsts.count()
    _same(firsts, spark.sql("SELECT DISTINCT carrier, flight, time_hour, origin FROM delivered"))
