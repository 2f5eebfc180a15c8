"""Joins on Spark: the examples of ``examples/joins/`` over eight days of flights, against a
batch join of the same files.

The first :data:`DAYS` day files of the flights and one fewer of the weather are copied,
each with the modification time of its date (Spark's file source reads files in that
order), with the three static tables, into a work folder shaped like the repository's
``examples/``; the two example files run there with two files per micro-batch (so four
micro-batches with data, and a last one without, which evicts state with the final
watermark). The weather stopping a day before the flights, the flights of the last day
have no observation: unmatched, but not final (the watermark never passes them).

* ``lookups.ssql`` (stream-static: inner written as Flink's lookup join, left outer, left
  semi): a stream-static join writes every joined row of every micro-batch at once, so each
  sink holds exactly the batch join of the same files.
* ``weather.ssql`` (stream-stream, watermarks of 30 minutes on both streams and the range
  ``w.time_hour > f.time_hour - 1 hour AND w.time_hour <= f.time_hour``; on January 1 and 6
  some hours have no observation): inner and left semi hold
  the whole batch join (no row is late: the files do not overlap in event time). An outer
  join writes an unmatched row only when Spark drops it from its state: a flight once the
  watermark ``W`` passes its hour (no observation later than ``W`` can match it), an
  observation once ``W`` passes its hour plus one hour. The oracle applies the same rule
  with the final watermark computed from the files themselves — the smaller of the two
  streams' latest ``time_hour`` minus 30 minutes (Spark's default ``min`` policy) — and the
  test checks that Spark reports that watermark.

The oracle is plain Spark batch (``spark.read.csv`` and SQL written here), never the
streaming plan under test.
"""

from __future__ import annotations

import csv
import os
import shutil
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import sqlstream
from tests.conftest import ROOT

pytestmark = pytest.mark.spark

DATA = ROOT / "examples" / "flights" / "data"
EXAMPLES = ROOT / "examples" / "joins"
DAYS = 8  # flights; the weather stops a day earlier
TABLES = ("airlines.csv", "airports.csv", "planes.csv")
FLIGHTS = (
    "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING, "
    "distance DOUBLE, time_hour TIMESTAMP"
)
WEATHER = (
    "origin STRING, year INT, month INT, day INT, hour INT, temp DOUBLE, dewp DOUBLE, "
    "humid DOUBLE, wind_dir INT, wind_speed DOUBLE, wind_gust DOUBLE, precip DOUBLE, "
    "pressure DOUBLE, visib DOUBLE, time_hour TIMESTAMP"
)
DELAY = timedelta(minutes=30)  # both streams' WATERMARK FOR … - INTERVAL '30' MINUTE
RANGE = "w.time_hour > f.time_hour - INTERVAL '1' HOUR AND w.time_hour <= f.time_hour"


def _copy_days(stream: str, target, days: int) -> list:
    target.mkdir(parents=True)
    copies = []
    for day in sorted((DATA / stream).glob("*.csv"))[:days]:
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        shutil.copy(day, target / day.name)
        os.utime(target / day.name, (stamp, stamp))
        copies.append(target / day.name)
    return copies


def _latest(files) -> datetime:
    """The latest ``time_hour`` of CSV files (read with the csv module, not Spark)."""
    latest = max(
        row["time_hour"]
        for f in files
        for row in csv.DictReader(Path(f).read_text(encoding="utf-8").splitlines())
    )
    return datetime.strptime(latest, "%Y-%m-%dT%H:%M:%SZ")


def _run(spark, work, example: str) -> dict:
    text = (EXAMPLES / example).read_text(encoding="utf-8")
    text = text.replace("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 2")
    (work / "joins" / example).write_text(text, encoding="utf-8")
    pipeline = sqlstream.compile_file(work / "joins" / example)
    assert not pipeline.plan.warnings
    queries = pipeline.start(spark, available_now=True)
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None
    return {q.name: q for q in queries}


@pytest.fixture(scope="module")
def work(spark, tmp_path_factory):
    """The work folder, with the batch views ``flights_b``, ``weather_b``, ``airlines_b``,
    ``planes_b``, ``airports_b`` of the same files, and ``W``, the final watermark."""
    root = tmp_path_factory.mktemp("joins")
    (root / "joins").mkdir()
    flights = _copy_days("flights", root / "flights" / "data" / "flights", DAYS)
    weather = _copy_days("weather", root / "flights" / "data" / "weather", DAYS - 1)
    for table in TABLES:
        shutil.copy(DATA / table, root / "flights" / "data" / table)

    def read():  # a DataFrameReader keeps its schema: a new one per file
        return spark.read.option("header", True).option("nullValue", "NA")

    read().schema(FLIGHTS).csv([str(f) for f in flights]).createOrReplaceTempView("flights_b")
    read().schema(WEATHER).csv([str(f) for f in weather]).createOrReplaceTempView("weather_b")
    read().csv(str(DATA / "airlines.csv")).createOrReplaceTempView("airlines_b")
    read().schema(
        "tailnum STRING, year INT, type STRING, manufacturer STRING, model STRING, "
        "engines INT, seats INT, speed INT, engine STRING"
    ).csv(str(DATA / "planes.csv")).createOrReplaceTempView("planes_b")
    read().option("inferSchema", True).csv(str(DATA / "airports.csv")).createOrReplaceTempView(
        "airports_b"
    )
    return root, min(_latest(flights), _latest(weather)) - DELAY


def _rows(df) -> Counter:
    """The rows of a DataFrame, with their multiplicity."""
    return Counter(tuple(row) for row in df.collect())


def _same(actual, expected: Counter):
    got = _rows(actual)
    assert sum(got.values()) == sum(expected.values())
    assert got == expected


def _out(spark, work, sink: str):
    return spark.read.parquet(str(work / "joins" / "out" / "joins" / sink))


# ---- stream-static ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lookups(spark, work):
    root, _ = work
    return _run(spark, root, "lookups.ssql")


def test_lookup_join_is_the_batch_inner_join(spark, work, lookups):
    expected = _rows(
        spark.sql(
            "SELECT f.carrier, a.name AS airline, f.flight, f.origin, f.dest, f.time_hour "
            "FROM flights_b AS f JOIN airlines_b AS a ON f.carrier = a.carrier"
        )
    )
    assert len(lookups["named"].recentProgress) >= 4  # several micro-batches
    _same(_out(spark, work[0], "named"), expected)


def test_stream_left_join_table_is_the_batch_left_join(spark, work, lookups):
    expected = _rows(
        spark.sql(
            "SELECT f.carrier, f.flight, f.tailnum, f.time_hour, p.manufacturer, p.model, p.seats "
            "FROM flights_b AS f LEFT JOIN planes_b AS p ON f.tailnum = p.tailnum"
        )
    )
    assert sum(n for row, n in expected.items() if row[5] is None) > 100  # tails planes.csv lacks
    _same(_out(spark, work[0], "with_planes"), expected)


def test_stream_left_semi_join_table_is_the_batch_semi_join(spark, work, lookups):
    expected = _rows(
        spark.sql(
            "SELECT f.carrier, f.flight, f.origin, f.dest, f.time_hour "
            "FROM flights_b AS f LEFT SEMI JOIN airports_b AS a ON f.dest = a.faa"
        )
    )
    flights = spark.table("flights_b").count()
    assert 0 < sum(expected.values()) < flights  # SJU, BQN, STT, PSE are not in airports.csv
    _same(_out(spark, work[0], "to_known"), expected)


def test_spark_refuses_the_time_travel_a_lookup_join_would_leave(spark, work):
    """Without the rewrite, Spark gets ``TIMESTAMP AS OF f.time_hour`` (sqlglot's spelling of
    ``FOR SYSTEM_TIME AS OF``) on a view, and refuses it; so does ``FOR SYSTEM_TIME AS OF`` on
    the relation in FROM (what SS335 refuses)."""
    from pyspark.errors import AnalysisException, ParseException

    for sql in (
        "SELECT * FROM flights_b AS f JOIN airlines_b TIMESTAMP AS OF f.time_hour AS a "
        "ON f.carrier = a.carrier",
        "SELECT * FROM airlines_b FOR SYSTEM_TIME AS OF TIMESTAMP '2013-01-01 00:00:00'",
        "SELECT * FROM flights_b AS f JOIN airlines_b VERSION AS OF 3 AS a ON f.carrier = a.carrier",
    ):
        with pytest.raises((AnalysisException, ParseException)):
            spark.sql(sql).collect()


# ---- stream-stream ------------------------------------------------------------------------------

WEATHER_COLUMNS = "w.time_hour AS weather_hour, w.temp, w.wind_speed, w.visib, w.precip"


@pytest.fixture(scope="module")
def weather(spark, work):
    root, _ = work
    return _run(spark, root, "weather.ssql")


def _batch_join(spark, kind: str, columns: str) -> Counter:
    return _rows(
        spark.sql(
            f"SELECT {columns} FROM flights_b AS f {kind} JOIN weather_b AS w "
            f"ON f.origin = w.origin AND {RANGE}"
        )
    )


def _split(rows: Counter, padded) -> tuple[Counter, Counter]:
    """``(matched, null-padded)`` rows of an outer join; ``padded(row)`` says which."""
    return (
        Counter({r: n for r, n in rows.items() if not padded(r)}),
        Counter({r: n for r, n in rows.items() if padded(r)}),
    )


def _final(rows: Counter, index: int, before: datetime) -> Counter:
    """The rows whose column ``index`` (an event time) is before ``before`` (UTC; PySpark
    gives timestamps as naive datetimes in the local time zone of the process)."""
    local = before.replace(tzinfo=timezone.utc).astimezone().replace(tzinfo=None)
    return Counter({r: n for r, n in rows.items() if r[index] < local})


def test_final_watermark_is_the_oracles(work, weather):
    """Spark's last watermark is the smaller of the streams' latest event times minus 30 min."""
    _, final = work
    for query in weather.values():
        marks = [p["eventTime"].get("watermark") for p in query.recentProgress]
        assert marks[-1] == f"{final:%Y-%m-%dT%H:%M:%S}.000Z", query.name
        assert len(set(marks)) >= 4, "the watermark moved between micro-batches"


def test_stream_stream_inner_join_is_the_batch_join(spark, work, weather):
    columns = f"f.carrier, f.flight, f.origin, f.time_hour, f.dep_delay, {WEATHER_COLUMNS}"
    expected = _batch_join(spark, "", columns)
    assert 0 < sum(expected.values()) < spark.table("flights_b").count()
    _same(_out(spark, work[0], "flight_weather"), expected)


def test_stream_stream_left_join_writes_the_flights_the_watermark_passed(spark, work, weather):
    root, final = work
    columns = f"f.carrier, f.flight, f.origin, f.time_hour, f.dep_delay, {WEATHER_COLUMNS}"
    matched, padded = _split(_batch_join(spark, "LEFT", columns), lambda r: r[5] is None)
    written = _final(padded, 3, final)
    assert 0 < sum(written.values()) < sum(padded.values())  # some final, some not yet
    _same(_out(spark, root, "flights_any_weather"), matched + written)


def test_stream_stream_right_join_writes_the_weather_the_watermark_passed(spark, work, weather):
    root, final = work
    batch = _batch_join(
        spark,
        "RIGHT",
        "f.carrier, f.flight, f.time_hour, w.origin, w.time_hour AS weather_hour, w.temp",
    )
    matched, padded = _split(batch, lambda r: r[1] is None)
    written = _final(padded, 4, final - timedelta(hours=1))
    assert 0 < sum(written.values()) < sum(padded.values())
    _same(_out(spark, root, "weather_any_flights"), matched + written)


def test_stream_stream_full_join_writes_both_sides_the_watermark_passed(spark, work, weather):
    root, final = work
    batch = _batch_join(
        spark,
        "FULL",
        "f.carrier, f.flight, f.origin, f.time_hour, "
        "w.origin AS weather_origin, w.time_hour AS weather_hour, w.temp",
    )
    matched, padded = _split(batch, lambda r: r[1] is None or r[5] is None)
    flights = _final(_split(padded, lambda r: r[5] is None)[1], 3, final)
    observations = _final(_split(padded, lambda r: r[1] is None)[1], 5, final - timedelta(hours=1))
    assert flights and observations
    _same(_out(spark, root, "flights_and_weather"), matched + flights + observations)


def test_stream_stream_left_semi_join_is_the_batch_semi_join(spark, work, weather):
    expected = _batch_join(
        spark, "LEFT SEMI", "f.carrier, f.flight, f.origin, f.time_hour, f.dep_delay"
    )
    assert 0 < sum(expected.values()) < spark.table("flights_b").count()
    _same(_out(spark, work[0], "observed_flights"), expected)
