"""User-defined functions on Spark over the bundled flights (``examples/flights/udfs.ssql``).

The example uses a Python function (declared types), one in Flink's spelling (types from
annotations), a pandas function (in a computed column) and a SQL function (in a filter
and an aggregate's argument), with two of them as grouping keys. Its streaming output,
run on the first days of the flights, must equal the same functions applied in plain
Python (``examples/flights/udfs.py``, and ``miles * 1.609344`` written out) to the rows of
the same CSV files read with the csv module, the windows kept being those that end at or
before the final watermark.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest

import sqlstream
from tests.conftest import ROOT, settings_kept

pytestmark = pytest.mark.spark

EXAMPLE = ROOT / "examples" / "flights"
DAYS = sorted((EXAMPLE / "data" / "flights").glob("*.csv"))[:2]


def _number(text: str) -> float | None:
    return None if text in ("", "NA") else float(text)


def _oracle(files, watermark: datetime) -> dict:
    """``(window_start, carrier_group, delay_class)`` → ``(flights, km, avg_dep_minutes)``
    by plain Python over the CSV rows."""
    import importlib

    import pandas as pd

    udfs = importlib.import_module("udfs")  # beside the .ssql file: on sys.path once compiled

    groups = defaultdict(list)
    for path in files:
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                km = _number(row["distance"]) * 1.609344
                if not km > 200:
                    continue
                hour = datetime.strptime(row["time_hour"], "%Y-%m-%dT%H:%M:%SZ")
                if hour + timedelta(hours=1) > watermark:
                    continue
                dep_time = _number(row["dep_time"])
                minutes = (
                    None
                    if dep_time is None
                    else float(udfs.hhmm_to_minutes(pd.Series([dep_time])).iloc[0])
                )
                key = (
                    hour,
                    udfs.carrier_group(row["carrier"]),
                    udfs.delay_class(_number(row["dep_delay"])),
                )
                groups[key].append((km, minutes))
    result = {}
    for key, rows in groups.items():
        minutes = [m for _, m in rows if m is not None]
        result[key] = (
            len(rows),
            sum(k for k, _ in rows),
            sum(minutes) / len(minutes) if minutes else None,
        )
    return result


def test_udfs_equal_plain_python_over_the_flights(spark, tmp_path):
    for name in ("udfs.ssql", "udfs.py"):  # the example, run in a folder of its own
        shutil.copy(EXAMPLE / name, tmp_path / name)
    data = tmp_path / "data" / "flights"
    data.mkdir(parents=True)
    for day in DAYS:  # one file per micro-batch, in date order (modification time)
        shutil.copy(day, data / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(data / day.name, (stamp, stamp))
    out = tmp_path / "out" / "udfs" / "hourly_groups"
    pipeline = sqlstream.compile_file(tmp_path / "udfs.ssql")
    with settings_kept(spark, pipeline):
        (query,) = pipeline.start(spark, available_now=True)
        query.awaitTermination()
    assert query.exception() is None
    mark = query.recentProgress[-1]["eventTime"]["watermark"]
    watermark = datetime.strptime(mark, "%Y-%m-%dT%H:%M:%S.%fZ")
    rows = spark.read.parquet(str(out)).collect()
    got = {
        (r.window_start, r.carrier_group, r.delay_class): (r.flights, r.km, r.avg_dep_minutes)
        for r in rows
    }
    expected = _oracle(DAYS, watermark)
    assert len(rows) == len(got) and len(expected) > 20  # every window of the first day
    assert got.keys() == expected.keys()
    for key, (flights, km, minutes) in expected.items():
        assert got[key][0] == flights, key
        assert math.isclose(got[key][1], km, rel_tol=1e-9), key
        assert (got[key][2] is None and minutes is None) or math.isclose(
            got[key][2], minutes, rel_tol=1e-9
        ), key


JOINED = """
CREATE FUNCTION upper_code AS 'tests.udf_functions.upper_code' LANGUAGE PYTHON;
CREATE FUNCTION same_code(a STRING, b STRING) RETURNS BOOLEAN RETURN lower(a) = lower(b);
CREATE STREAM flights (carrier STRING, flight INT, time_hour TIMESTAMP)
WITH (connector = 'files', path = '{data}', format = 'csv', header = true, nullValue = 'NA');
CREATE TABLE airlines (carrier STRING, name STRING)
WITH (connector = 'files', path = '{airlines}', format = 'csv', header = true);
CREATE SINK joined WITH (connector = 'memory', query_name = 'udf_joined');
INSERT INTO joined
SELECT f.flight, a.name FROM flights AS f
JOIN airlines AS a ON upper_code(lower(f.carrier)) = a.carrier AND same_code(a.carrier, f.carrier);
"""


def test_python_and_sql_functions_in_a_join_condition(spark, tmp_path):
    """A stream-static join whose condition calls a Python and a SQL function: the rows
    equal a plain Python join of the same CSV files."""
    data = tmp_path / "flights"
    data.mkdir()
    shutil.copy(DAYS[0], data / DAYS[0].name)
    airlines = EXAMPLE / "data" / "airlines.csv"
    pipeline = sqlstream.compile(
        JOINED.format(data=data, airlines=airlines), state_dir=str(tmp_path / "state")
    )
    with settings_kept(spark, pipeline):
        (query,) = pipeline.start(spark, available_now=True)
        query.awaitTermination()
    assert query.exception() is None
    got = sorted((r.flight, r.name) for r in spark.table("udf_joined").collect())
    with open(airlines, newline="") as handle:
        names = {row["carrier"]: row["name"] for row in csv.DictReader(handle)}
    with open(DAYS[0], newline="") as handle:
        expected = sorted(
            (int(row["flight"]), names[row["carrier"]])
            for row in csv.DictReader(handle)
            if row["carrier"] in names
        )
    assert len(expected) > 800 and got == expected
