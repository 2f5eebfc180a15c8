"""The test feed carries every value exactly: what Spark's JSON reader reads from the file
feed (:func:`sqlstream.testing.feed.write_step` with ``JSON_OPTIONS``) equals what PySpark's
own conversion makes of the same Python values (``spark.createDataFrame``, the oracle),
for random values of every type the file feed takes (hypothesis); and a column the file
feed cannot carry (a ``MAP`` with an integer key) is fed by the Python feed, in a
streaming test that passes.
"""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlstream.testing import feed, values

pytestmark = pytest.mark.spark

ZONES = [ZoneInfo(z) for z in ("UTC", "America/New_York", "Asia/Kolkata", "Europe/Berlin")]
INSTANTS = st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1))

COLUMNS = [  # (name, Spark type, strategy of Python values as values.to_python makes them)
    ("i", "INT", st.integers(-(2**31), 2**31 - 1)),
    ("b", "BIGINT", st.integers(-(2**63), 2**63 - 1)),
    ("d", "DOUBLE", st.floats(allow_nan=True, allow_infinity=True)),
    (
        "m",
        "DECIMAL(38,18)",
        st.decimals(
            min_value=Decimal("-1e19"),
            max_value=Decimal("1e19"),
            places=18,
            allow_nan=False,
            allow_infinity=False,
        ),
    ),
    (
        "n",
        "DECIMAL(5,2)",
        st.decimals(
            min_value=Decimal("-999.99"),
            max_value=Decimal("999.99"),
            places=2,
            allow_nan=False,
            allow_infinity=False,
        ),
    ),
    ("s", "STRING", st.text(st.characters(exclude_categories=("Cs",)), max_size=12)),
    ("f", "BOOLEAN", st.booleans()),
    ("day", "DATE", st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 1, 1))),
    (
        "t",
        "TIMESTAMP",
        st.builds(lambda d, z: d.replace(tzinfo=z), INSTANTS, st.sampled_from(ZONES)),
    ),
    ("ntz", "TIMESTAMP_NTZ", INSTANTS),
    ("bin", "BINARY", st.binary(max_size=10)),
    (
        "arr",
        "ARRAY<TIMESTAMP>",
        st.lists(st.builds(lambda d: d.replace(tzinfo=ZONES[0]), INSTANTS), max_size=3),
    ),
    (
        "kv",
        "MAP<STRING, DOUBLE>",
        st.dictionaries(st.text(max_size=4), st.floats(allow_nan=False), max_size=3),
    ),
    (
        "st",
        "STRUCT<a: DECIMAL(5,2), w: TIMESTAMP, x: ARRAY<BIGINT>>",
        st.tuples(
            st.decimals(
                min_value=Decimal("-999.99"),
                max_value=Decimal("999.99"),
                places=2,
                allow_nan=False,
                allow_infinity=False,
            ),
            st.builds(lambda d: d.replace(tzinfo=ZONES[1]), INSTANTS),
            st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3),
        ),
    ),
]
DDL = ", ".join(f"{name} {kind}" for name, kind, _ in COLUMNS)
ROWS = st.lists(
    st.tuples(*(st.one_of(st.none(), strategy) for _, _, strategy in COLUMNS)),
    min_size=1,
    max_size=40,
)


def _comparable(value):
    """A collected value in a form where NaN equals NaN (rows hold floats)."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, (list, tuple)):
        return tuple(_comparable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _comparable(v)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def test_every_type_but_a_non_string_map_key_goes_by_the_file_feed():
    assert all(feed.file_exact(values.parse_type(kind)) for _, kind, _ in COLUMNS)
    assert not feed.file_exact(values.parse_type("MAP<INT, STRING>"))
    assert not feed.file_exact(values.parse_type("ARRAY<STRUCT<m: MAP<DATE, INT>>>"))


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=ROWS)
def test_the_file_feed_reads_back_what_pyspark_makes_of_the_same_values(spark, rows):
    columns = [(name, values.parse_type(kind)) for name, kind, _ in COLUMNS]
    with tempfile.TemporaryDirectory() as folder:
        feed.write_step(Path(folder), 1, columns, [("s", row) for row in rows])
        read = (
            spark.read.format("json")
            .schema(f"{feed.TAG} STRING, {DDL}")
            .options(**feed.JSON_OPTIONS)
            .load(folder)
            .drop(feed.TAG)
            .collect()
        )
    oracle = spark.createDataFrame(rows, DDL).collect()
    assert [_comparable(tuple(r)) for r in read] == [_comparable(tuple(r)) for r in oracle]


MAP_PIPELINE = """\
CREATE STREAM codes (id INT, names MAP<INT, STRING>) WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK named WITH (connector = 'memory');
INSERT INTO named SELECT id, names[1] AS first FROM codes;
"""

MAP_TEST = """\
pipeline: codes.ssql
tests:
  - name: a map with an integer key goes by the Python feed
    steps:
      - input: {codes: [{id: 1, names: {1: one, 2: two}}, {id: 2, names: {2: two}}]}
        expect: {named: [{id: 1, first: one}, {id: 2, first: null}]}
      - input: {codes: [{id: 3, names: {1: uno}}]}
        expect: {named: [{id: 3, first: uno}]}
"""


def test_a_map_with_an_integer_key_runs_on_the_python_feed(spark, tmp_path):
    from sqlstream.testing.suite import run

    (tmp_path / "codes.ssql").write_text(MAP_PIPELINE, encoding="utf-8")
    (tmp_path / "codes.test.yaml").write_text(MAP_TEST, encoding="utf-8")
    results = run([tmp_path], session=lambda: spark)
    assert [(r.name, r.status) for r in results] == [
        ("a map with an integer key goes by the Python feed", "passed")
    ], results[0].failures
