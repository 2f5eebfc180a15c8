"""CSV columns bound by name (docs/connectors.md#csv-columns-by-name, sqlstream/connectors/formats/csv_header.py).

Without Spark: what the compiler reads from the header, the schema and projection it
plans, the findings (SS242 a declared column not in the header, SS243 a header-less file
with another number of columns), no files yet. On Spark: the spec's own example over the
real flights CSV (declared columns a subset, in another order than the file's) gives the
values of a batch read that binds by name (``spark.read`` with the header's own schema
inferred). A later file whose header differs is never read by position: with
``on_error = 'fail'`` Spark's header check stops the query when a declared column is
not in its place (other columns may differ: rows then equal a read by name); with
``drop`` / ``dead_letter`` every row of the file is set aside with the reason, also for
files bigger than Spark's split size, and the good files' rows equal a plain-Python
read by name.
"""

from __future__ import annotations

import csv
import gzip
import os
import shutil
from datetime import datetime, timezone

import pytest

import sqlstream
from sqlstream.connectors.call_sequence import schema_ddl
from sqlstream.connectors.formats.csv_header import Header, bind, first_record
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.runtime.events import BatchProgress
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
    read = [part.strip().split(" ")[0].strip("`") for part in schema_ddl(relation).split(", ")]
    assert read == header  # the file's columns, in file order
    assert "`dep_delay` DOUBLE" in schema_ddl(relation) and "`time_hour` TIMESTAMP" in schema_ddl(
        relation
    )
    assert "`year` STRING" in schema_ddl(relation)  # not declared: read as text, then dropped
    assert relation.projection[:4] == ("`carrier`", "`origin`", "`dep_delay`", "`time_hour`")
    assert ("enforceSchema", "false") in relation.options  # Spark checks every later header
    translated = sqlstream.compile(SPEC.format(path=folder, name="q")).translate()
    assert "selectExpr('`carrier`', '`origin`', '`dep_delay`', '`time_hour`'" in translated


def test_the_example_declaring_every_column_in_file_order_needs_no_projection():
    relation = sqlstream.compile_file(
        ROOT / "examples" / "flights" / "hourly_delays.ssql"
    ).plan.relations[0]
    assert relation.projection == (
        "`year`",
        "`month`",
        "`day`",
        "`dep_time`",
        "`sched_dep_time`",
        "`dep_delay`",
        "`arr_delay`",
        "`carrier`",
        "`flight`",
        "`tailnum`",
        "`origin`",
        "`dest`",
        "`distance`",
        "`time_hour`",
        "dep_delay > 15 AS `delayed`",
    )  # the computed column's
    assert schema_ddl(relation).startswith("`year` INT, `month` INT")


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
    assert binding.schema == (
        ("ID", "INT"),
        ("name", "STRING"),
        ("_c2", "STRING"),
        ("_c3", "STRING"),
    )
    assert not binding.exact and not binding.problems  # _c2, _c3: never read by a query
    assert bind([("x", "INT")], header).problems == (
        (0, "column 'x' is twice in the header of f.csv (ID, name, x, x)"),
    )
    (tmp_path / "f.csv").write_text("ID,name\n1,a\n")
    relation = _source(f"""CREATE TABLE t (name STRING, id INT) WITH (connector = 'files',
        path = '{tmp_path}', format = 'csv', header = true);""")
    assert schema_ddl(relation) == "`ID` INT, `name` STRING"
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
    assert (
        schema_ddl(relation)
        == "`carrier` STRING, `origin` STRING, `dep_delay` DOUBLE, `time_hour` TIMESTAMP"
    )
    assert ("enforceSchema", "false") in relation.options
    kept = _source(
        SPEC.format(path=tmp_path / "later", name="q").replace(
            "header = true,", "header = true, enforceSchema = true,"
        )
    )
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
    pipeline = sqlstream.compile(
        SPEC.format(path=folder, name="csv_header_spec"), path=str(tmp_path / "p.ssql")
    )
    for query in pipeline.start(spark, available_now=True):
        query.awaitTermination()
        assert query.exception() is None
    actual = spark.table("csv_header_spec")
    expected = (
        spark.read.option("header", True)
        .option("nullValue", "NA")
        .option("inferSchema", True)
        .csv(str(folder))  # names from the header
        .selectExpr(
            "carrier",
            "origin",
            "CAST(dep_delay AS DOUBLE) AS dep_delay",
            "CAST(time_hour AS TIMESTAMP) AS time_hour",
            "CAST(dep_delay AS DOUBLE) > 15 AS delayed",
        )
    )
    assert actual.count() == expected.count() > 1500
    assert actual.exceptAll(expected).count() == 0 and expected.exceptAll(actual).count() == 0
    assert {r.origin for r in actual.select("origin").distinct().collect()} == {"EWR", "JFK", "LGA"}


@pytest.mark.spark
def test_a_later_file_with_other_columns_fails_the_query(spark, tmp_path):
    folder = _days(tmp_path, 1)
    pipeline = sqlstream.compile(
        SPEC.format(path=folder, name="csv_header_later"), path=str(tmp_path / "p.ssql")
    )
    swapped = folder / "2099-01-01.csv"
    lines = (DATA / "2013-01-02.csv").read_text().splitlines()
    swapped.write_text("\n".join(",".join(reversed(line.split(","))) for line in lines) + "\n")
    (query,) = pipeline.start(spark, available_now=True)
    with pytest.raises(Exception):  # noqa: B017 - Spark's StreamingQueryException
        query.awaitTermination()
    assert "header" in str(query.exception()).lower()


# ------------------------------------------- a later file's header under on_error = drop / dead_letter

COLUMNS = (
    "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, "
    "dest STRING, distance DOUBLE, time_hour TIMESTAMP"
)
KINDS = {
    "INT": int,
    "DOUBLE": float,
    "STRING": str,
    "TIMESTAMP": lambda v: v.replace("T", " ").rstrip("Z"),
}
LATER = """
CREATE STREAM flights ({columns}) WITH (connector = 'files', path = 'in', format = 'csv',
    header = true, nullValue = 'NA', on_error = 'dead_letter', dead_letter_path = 'out/dead');
CREATE STREAM subset (carrier STRING, origin STRING, dep_delay DOUBLE) WITH (connector = 'files',
    path = 'in', format = 'csv', header = true, nullValue = 'NA', on_error = 'drop');
CREATE STREAM unseen (carrier STRING, origin STRING, dep_delay DOUBLE) WITH (connector = 'files',
    path = 'unseen', format = 'csv', header = true, nullValue = 'NA', on_error = 'drop');
CREATE SINK all_rows WITH (connector = 'files', path = 'out/all', format = 'parquet');
CREATE SINK sub WITH (connector = 'files', path = 'out/sub', format = 'parquet');
CREATE SINK uns WITH (connector = 'files', path = 'out/unseen', format = 'parquet');
INSERT INTO all_rows SELECT * FROM flights EMIT ONCE;
INSERT INTO sub SELECT * FROM subset EMIT ONCE;
INSERT INTO uns SELECT * FROM unseen EMIT ONCE;
"""


def _records(day: int, count: int) -> list[dict]:
    """``count`` rows of a real day file, by column name."""
    with sorted(DATA.glob("*.csv"))[day].open() as handle:
        return list(csv.DictReader(handle))[:count]


def _write(path, names, records, stamp, end="\n", bom=""):
    """A CSV file at ``path``: header ``names``, then each record's values of those names
    (``x`` for a name it lacks); modification time ``stamp``. Returns its data lines."""
    lines = [",".join(r.get(n, "x") for n in names) for r in records]
    path.write_text(bom + end.join([",".join(names), *lines]) + end, newline="")
    os.utime(path, (stamp, stamp))
    return lines


def _typed(record: dict, columns: str) -> tuple:
    """A record (by name) as the declared ``columns`` (plain Python): NA is null."""
    kinds = [c.split() for c in columns.split(", ")]
    return tuple(None if record[n] == "NA" else KINDS[k](record[n]) for n, k in kinds)


@pytest.mark.spark
def test_a_later_file_with_another_header_is_set_aside_never_read_by_position(spark, tmp_path):
    """The first file fixes the header; later files whose header names other columns, or
    the same in another order, give no row: every record is a dead letter (dropped and
    counted with drop) whose reason names the file and both headers. A header that differs
    only in case, a byte-order mark or CRLF line ends binds as planned; files are bigger
    than Spark's split size, so a file's header and its rows would be in different
    partitions if it were read line by line."""
    header = (DATA / "2013-01-01.csv").read_text().splitlines()[0].split(",")
    folder, unseen = tmp_path / "in", tmp_path / "unseen"
    folder.mkdir()
    unseen.mkdir()
    good, bad = [], {}  # good records (by name); bad file -> (its data lines, its header line)
    rows = _records(0, 150)
    _write(folder / "f1.csv", header, rows, 1_000)
    good += rows
    (tmp_path / "p.ssql").write_text(LATER.format(columns=COLUMNS))
    pipeline = sqlstream.compile_file(tmp_path / "p.ssql")  # planned with f1's header

    swap = {"carrier": "origin", "origin": "carrier"}
    variants = {  # name: (header, records): every value under its own column's name
        "f2_reordered.csv": ([swap.get(n, n) for n in header], _records(1, 150)),
        "f4_extra.csv": (header + ["extra"], _records(3, 40)),
        "f5_missing.csv": ([n for n in header if n != "tailnum"], _records(4, 40)),
        "f6_renamed.csv": (
            [n if n != "carrier" else "airline" for n in header],
            [{**r, "airline": r["carrier"]} for r in _records(5, 40)],
        ),
        "f8_reversed.csv": (header[::-1], _records(6, 300)),
    }
    for stamp, (name, (names, records)) in enumerate(variants.items(), start=2_000):
        bad[name] = (_write(folder / name, names, records, stamp), ",".join(names))
    rows = _records(2, 150)
    _write(folder / "f3.csv", header, rows, 3_000)
    good += rows
    rows = _records(7, 150)
    _write(
        folder / "f7.csv",
        [n.upper() for n in header],
        [{n.upper(): v for n, v in r.items()} for r in rows],
        4_000,
        end="\r\n",
        bom="\ufeff",
    )
    good += rows
    later = ["carrier", "origin", "dep_delay"]
    unseen_good = _records(8, 50)
    _write(unseen / "a.csv", later, unseen_good, 1_000)
    unseen_bad = _write(
        unseen / "b.csv", ["origin", "carrier", "dep_delay"], _records(9, 50), 2_000
    )

    events = []
    split = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "4096")  # the files are 6-40 KB
    try:
        sqlstream.Session(spark, listeners=[events.append]).run(pipeline, available_now=True)
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", split)

    got = (
        spark.read.parquet(str(tmp_path / "out" / "all"))
        .selectExpr("*", "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss') AS th")
        .drop("time_hour")
        .collect()
    )
    assert sorted((tuple(r)[:-1] + (r["th"],) for r in got), key=repr) == sorted(
        (_typed(r, COLUMNS) for r in good), key=repr
    )
    dead = spark.read.json(str(tmp_path / "out" / "dead")).collect()
    planned = ",".join(header)
    assert sorted((d["raw"], d["reason"], os.path.basename(d["file"])) for d in dead) == sorted(
        (
            line,
            f'malformed: header differs: {name} has "{names}" where the source was planned '
            f'with "{planned}"',
            name,
        )
        for name, (lines, names) in bad.items()
        for line in lines
    )

    subset = "carrier STRING, origin STRING, dep_delay DOUBLE"
    got = spark.read.parquet(str(tmp_path / "out" / "sub")).collect()
    assert sorted(map(tuple, got), key=repr) == sorted((_typed(r, subset) for r in good), key=repr)
    got = spark.read.parquet(str(tmp_path / "out" / "unseen")).collect()
    assert sorted(map(tuple, got), key=repr) == sorted(
        (_typed(r, subset) for r in unseen_good), key=repr
    )
    malformed = {}
    for event in events:
        if isinstance(event, BatchProgress):
            for source, count in event.malformed_records.items():
                malformed[event.name, source] = malformed.get((event.name, source), 0) + count
    assert malformed == {
        ("all_rows", "flights"): sum(len(lines) for lines, _ in bad.values()),
        ("sub", "subset"): sum(len(lines) for lines, _ in bad.values()),
        ("uns", "unseen"): len(unseen_bad),
    }


FAIL = """
CREATE STREAM flights (carrier STRING, origin STRING, dep_delay DOUBLE) WITH (connector = 'files',
    path = 'in', format = 'csv', header = true, nullValue = 'NA', maxFilesPerTrigger = 1);
CREATE SINK o WITH (connector = 'files', path = 'out', format = 'parquet');
INSERT INTO o SELECT * FROM flights EMIT ONCE;
"""


@pytest.mark.spark
@pytest.mark.parametrize(
    "first, later, stops",
    [
        ("header", "reordered", True),
        ("header", "missing", True),
        ("header", "renamed", True),
        ("header", "extra", False),
        ("header", "other_renamed", False),
        ("index", "reordered", True),  # an empty first name, as pandas writes an index
        ("repeated", "reordered", True),  # a name twice: read as _c0, _c1, never by the query
    ],
)
def test_on_error_fail_never_reads_a_later_header_by_position(spark, tmp_path, first, later, stops):
    """With ``on_error = 'fail'`` (the default) Spark checks, in each file's header, the
    names at the positions of the columns the query reads (CSV column pruning): a later
    file where a declared column is elsewhere, renamed or missing stops the query with a
    hint, and none of its rows is written; a file whose other columns differ has every
    declared column in its place and its rows are those of a read by name."""
    header = (DATA / "2013-01-01.csv").read_text().splitlines()[0].split(",")
    header = {"header": header, "index": ["", *header], "repeated": ["x", "x", *header]}[first]
    folder = tmp_path / "in"
    folder.mkdir()
    rows = [{"": str(i), "x": "x", **r} for i, r in enumerate(_records(0, 100))]
    _write(folder / "a.csv", header, rows, 1_000)
    (tmp_path / "p.ssql").write_text(FAIL)
    pipeline = sqlstream.compile_file(tmp_path / "p.ssql")
    swap = {"carrier": "origin", "origin": "carrier"}
    names = {
        "reordered": [swap.get(n, n) for n in header],
        "extra": header + ["extra"],
        "missing": [n for n in header if n != "tailnum"],
        "renamed": [n if n != "carrier" else "airline" for n in header],
        "other_renamed": [n if n != "year" else "yr" for n in header],
    }[later]
    later_rows = [{**r, "airline": r["carrier"], "yr": r["year"]} for r in _records(1, 100)]
    _write(folder / "b.csv", names, later_rows, 2_000)
    if stops:
        with pytest.raises(SqlStreamError) as failed:
            sqlstream.Session(spark).run(pipeline, available_now=True)
        assert "b.csv" in failed.value.message and "header" in failed.value.message.lower()
        assert "bound by name" in failed.value.hint
    else:
        sqlstream.Session(spark).run(pipeline, available_now=True)
        rows += later_rows
    got = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(map(tuple, got), key=repr) == sorted(
        (_typed(r, "carrier STRING, origin STRING, dep_delay DOUBLE") for r in rows), key=repr
    )


def test_drop_and_dead_letter_check_each_file_header_against_the_planned_one(tmp_path):
    """Without Spark: with ``header = true`` the decoding reads each file whole and expects
    the header the source was planned with (a repeated name, never read, matches any
    name); with no files yet, the declared columns in declared order. ``fail`` lets Spark
    check every header (``enforceSchema = false``), also with a repeated name."""
    (tmp_path / "f.csv").write_text("x,carrier,x,dep_delay\n1,UA,2,3\n")
    text = """CREATE STREAM s (dep_delay DOUBLE, carrier STRING) WITH (connector = 'files',
        path = '{path}', format = 'csv', header = true, on_error = '{on_error}');"""
    relation = _source(text.format(path=tmp_path, on_error="drop"))
    assert relation.decoding.header == (None, "carrier", None, "dep_delay")
    assert ("wholetext", "true") not in relation.decoding.reader_options
    translated = sqlstream.compile(text.format(path=tmp_path, on_error="drop")).translate()
    assert ".option('wholetext', 'true')" in translated
    assert "lower(`__sqlstream_header`.`_c1`) <=> \\'carrier\\'" in translated
    assert "`_c0`) <=>" not in translated and "`_c2`) <=>" not in translated
    assert "WHEN `__sqlstream_header` IS NOT NULL THEN `__sqlstream_header`" in translated
    assert 'where the source was planned with "*,carrier,*,dep_delay"' in translated
    unseen = _source(text.format(path=tmp_path / "none", on_error="drop"))
    assert unseen.decoding.header == ("dep_delay", "carrier")
    failing = _source(text.format(path=tmp_path, on_error="fail"))
    assert schema_ddl(failing).startswith("`_c0` STRING, `carrier` STRING, `_c2` STRING")
    assert ("enforceSchema", "false") in failing.options and failing.decoding is None
