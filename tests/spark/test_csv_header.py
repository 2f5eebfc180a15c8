"""CSV columns bound by name (docs/connectors.md#csv-columns-by-name, sqlstream/connectors/formats/csv_header.py).

Without Spark: what the compiler reads from the header, the schema and projection it
plans, the findings (SS242 a declared column not in the header, SS243 a header-less file
with another number of columns), no files yet. On Spark: the spec's own example over the
real flights CSV (declared columns a subset, in another order than the file's) gives the
values of a batch read that binds by name (``spark.read`` with the header's own schema
inferred), and a later file whose header differs fails the query instead of giving
wrong values.
"""

from __future__ import annotations

import gzip
import os
import shutil
from datetime import datetime, timezone

import pytest

import sqlstream
from sqlstream.connectors.formats.csv_header import Header, bind, first_record
from sqlstream.diagnostics.errors import SqlStreamError
from tests.conftest import ROOT

DATA = ROOT / "examples" / "flights" / "data" / "flights"
# The example of docs/connectors.md#csv-columns-by-name: four of the file's columns, in another order.
SPEC = """
CREATE STREAM flights (
    carrier    STRING,
    origin     STRING,
    dep_delay  DOUBLE,
    time_hour  TIMESTAMP,
    delayed    AS dep_delay > 15,
    src_file   STRING METADATA FROM 'file_path',
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = '{path}', format = 'csv', header = true,
        nullValue = 'NA', maxFilesPerTrigger = 1);
CREATE SINK out WITH (connector = 'memory', query_name = '{name}');
INSERT INTO out SELECT carrier, origin, dep_delay, time_hour, delayed FROM flights;
"""


def _days(tmp_path, n):
    """The first ``n`` day files, copied with mtimes in date order (Spark reads by mtime)."""
    target = tmp_path / "flights"
    target.mkdir()
    for day in sorted(DATA.glob("*.csv"))[:n]:
        shutil.copy(day, target / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(target / day.name, (stamp, stamp))
    return target


def _source(text):
    return sqlstream.compile(text).plan.relations[0]


def test_spec_example_reads_every_header_column_and_selects_the_declared(tmp_path):
    folder = _days(tmp_path, 1)
    relation = _source(SPEC.format(path=folder, name="q"))
    header = (DATA / "2013-01-01.csv").read_text().splitlines()[0].split(",")
    read = [part.strip().split(" ")[0].strip("`") for part in relation.schema.split(", ")]
    assert read == header  # the file's columns, in file order
    assert "`dep_delay` DOUBLE" in relation.schema and "`time_hour` TIMESTAMP" in relation.schema
    assert "`year` STRING" in relation.schema  # not declared: read as text, then dropped
    assert relation.projection[:4] == ("`carrier`", "`origin`", "`dep_delay`", "`time_hour`")
    assert ("enforceSchema", "false") in relation.options  # Spark checks every later header
    translated = sqlstream.compile(SPEC.format(path=folder, name="q")).translate()
    assert "selectExpr('`carrier`', '`origin`', '`dep_delay`', '`time_hour`'" in translated


def test_the_example_declaring_every_column_in_file_order_needs_no_projection():
    relation = sqlstream.compile_file(ROOT / "examples" / "flights" / "hourly_delays.ssql").plan.relations[0]
    assert relation.projection == ("`year`", "`month`", "`day`", "`dep_time`", "`sched_dep_time`",
                                   "`dep_delay`", "`arr_delay`", "`carrier`", "`flight`", "`tailnum`",
                                   "`origin`", "`dest`", "`distance`", "`time_hour`",
                                   "dep_delay > 15 AS `delayed`")  # the computed column's
    assert relation.schema.startswith("`year` INT, `month` INT")


def test_a_declared_column_not_in_the_header_is_an_error_at_the_column(tmp_path):
    folder = _days(tmp_path, 1)
    text = SPEC.format(path=folder, name="q").replace("carrier    STRING", "carier STRING")
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text)
    assert info.value.code == "SS242"
    assert info.value.span.line == 3 and info.value.span.column == 5
    assert "'carier' is not in the header of 2013-01-01.csv (year, month, day" in info.value.message


def test_header_names_match_ignoring_case_and_a_repeated_name_is_refused(tmp_path):
    header = Header("f.csv", ("ID", "name", "x", "x"))
    binding = bind([("name", "STRING"), ("id", "INT")], header)
    assert binding.read_as == ("name", "ID")
    assert binding.schema == (("ID", "INT"), ("name", "STRING"), ("_c2", "STRING"), ("_c3", "STRING"))
    assert not binding.exact and not binding.problems  # _c2, _c3: Spark cannot check names
    assert bind([("x", "INT")], header).problems == ((0, "column 'x' is twice in the header of "
                                                      "f.csv (ID, name, x, x)"),)
    (tmp_path / "f.csv").write_text("ID,name\n1,a\n")
    relation = _source(f"""CREATE TABLE t (name STRING, id INT) WITH (connector = 'files',
        path = '{tmp_path}', format = 'csv', header = true);""")
    assert relation.schema == "`ID` INT, `name` STRING"
    assert relation.projection == ("`name`", "`ID` AS `id`")


def test_first_record_follows_spark_file_order_options_and_compression(tmp_path):
    (tmp_path / "_SUCCESS").write_text("not,data\n")
    (tmp_path / ".hidden.csv").write_text("no;no\n")
    (tmp_path / "empty.csv").write_text("")
    with gzip.open(tmp_path / "b.csv.gz", "wt") as out:
        out.write('"a;1";b\n1;2\n')
    (tmp_path / "c.csv").write_text("c;d\n")
    os.utime(tmp_path / "c.csv", (2_000_000_000, 2_000_000_000))  # newer: read after b
    found = first_record(str(tmp_path), {"sep": ";"})
    assert found == Header(str(tmp_path / "b.csv.gz"), ("a;1", "b"))
    assert first_record(str(tmp_path), {"sep": ";", "pathglobfilter": "c*"}).names == ("c", "d")
    assert "no files" in first_record(str(tmp_path / "none"), {})
    assert "not a local folder" in first_record("s3a://bucket/flights", {})


def test_no_files_yet_binds_by_position_with_spark_checking_each_header(tmp_path):
    relation = _source(SPEC.format(path=tmp_path / "later", name="q"))
    assert relation.schema == "`carrier` STRING, `origin` STRING, `dep_delay` DOUBLE, `time_hour` TIMESTAMP"
    assert ("enforceSchema", "false") in relation.options
    kept = _source(SPEC.format(path=tmp_path / "later", name="q").replace(
        "header = true,", "header = true, enforceSchema = true,"))
    assert [k for k, _ in kept.options].count("enforceSchema") == 1  # the user's choice stays


def test_without_a_header_check_warns_when_the_column_count_differs(tmp_path):
    (tmp_path / "f.csv").write_text("1,a,x\n2,b,y\n")
    findings, _ = sqlstream.check_plan(f"""
        CREATE STREAM s (id INT, name STRING) WITH (connector = 'files', path = '{tmp_path}',
            format = 'csv');
        SELECT * FROM s;""")
    (finding,) = findings
    assert (finding.code, finding.severity) == ("SS243", "warning")
    assert "2 columns are declared and f.csv has 3" in finding.message
    findings, _ = sqlstream.check_plan(f"""
        CREATE STREAM s (id INT, name STRING, x STRING) WITH (connector = 'files',
            path = '{tmp_path}', format = 'csv');
        SELECT * FROM s;""")
    assert findings == []


@pytest.mark.spark
def test_spec_example_on_real_flights_equals_a_batch_read_by_name(spark, tmp_path):
    folder = _days(tmp_path, 2)
    pipeline = sqlstream.compile(SPEC.format(path=folder, name="csv_header_spec"),
                                 path=str(tmp_path / "p.ssql"))
    for query in pipeline.start(spark, available_now=True):
        query.awaitTermination()
        assert query.exception() is None
    actual = spark.table("csv_header_spec")
    expected = (spark.read.option("header", True).option("nullValue", "NA")
                .option("inferSchema", True).csv(str(folder))  # names from the header
                .selectExpr("carrier", "origin", "CAST(dep_delay AS DOUBLE) AS dep_delay",
                            "CAST(time_hour AS TIMESTAMP) AS time_hour",
                            "CAST(dep_delay AS DOUBLE) > 15 AS delayed"))
    assert actual.count() == expected.count() > 1500
    assert actual.exceptAll(expected).count() == 0 and expected.exceptAll(actual).count() == 0
    assert {r.origin for r in actual.select("origin").distinct().collect()} == {"EWR", "JFK", "LGA"}


@pytest.mark.spark
def test_a_later_file_with_other_columns_fails_the_query(spark, tmp_path):
    folder = _days(tmp_path, 1)
    pipeline = sqlstream.compile(SPEC.format(path=folder, name="csv_header_later"),
                                 path=str(tmp_path / "p.ssql"))
    swapped = folder / "2099-01-01.csv"
    lines = (DATA / "2013-01-02.csv").read_text().splitlines()
    swapped.write_text("\n".join(",".join(reversed(line.split(","))) for line in lines) + "\n")
    (query,) = pipeline.start(spark, available_now=True)
    with pytest.raises(Exception):  # noqa: B017 - Spark's StreamingQueryException
        query.awaitTermination()
    assert "header" in str(query.exception()).lower()
