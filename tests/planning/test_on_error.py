"""Malformed records (``on_error``, docs/operations.md#malformed-records; ``sqlstream/planning/malformed.py``).

Without Spark: the option rules (SS250–SS255), positioned. On Spark: three days of real
flights with crafted bad CSV lines mixed in, and JSON lines of a fourth day with bad
records, run through a pipeline whose CSV source writes dead letters and whose JSON source
drops them. The good rows equal a plain-Python decoding of only the good lines; the dead
letters are exactly the bad lines, each once (two queries read the source), with their
reasons and files; the dropped JSON records are counted in the progress events. With the
default (``fail``) a bad value stops the query with an error naming the file.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

import sqlstream
from sqlstream.connectors.call_sequence import schema_ddl
from sqlstream.runtime.events import BatchProgress
from tests.conftest import ROOT
from tests.support.run_failures import failure_of

DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))[:4]
HEADER = (
    "year,month,day,dep_time,sched_dep_time,dep_delay,arr_delay,carrier,flight,tailnum,"
    "origin,dest,distance,time_hour"
)
COLUMNS = """
    year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,
    arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
    distance DOUBLE, time_hour TIMESTAMP"""
GOOD = "2013,1,2,1500,1500,61,70,UA,1,N1,EWR,IAH,1400,2013-01-02T20:00:00Z"
# Bad CSV lines, the reason each must get, and the day file they are mixed into.
BAD_CSV = [
    (
        "2013,1,1,517,515,abc,11,UA,1545,N14228,EWR,IAH,1400,2013-01-01T10:00:00Z",
        "column dep_delay: 'abc' is not a DOUBLE",
        0,
    ),
    (
        "2013,1,1,517,515,2,11,UA,1545",
        "malformed: a CSV record with other than the 14 declared fields, or an unclosed quote",
        0,
    ),
    (
        "2013,1,2,517,515,2,11,UA,1545,N14228,EWR,IAH,1400,not-a-time",
        "column time_hour: 'not-a-time' is not a TIMESTAMP",
        1,
    ),
    (
        "2013,1,2,517,515,2,11,UA,1545,N14228,EWR,IAH,1400,2013-01-02T10:00:00Z,extra",
        "malformed: a CSV record with other than the 14 declared fields, or an unclosed quote",
        1,
    ),
    (
        "2013,1,3,5x7,515,2,11,UA,1545,N14228,EWR,IAH,1400,2013-01-03T10:00:00Z",
        "column dep_time: '5x7' is not a INT",
        2,
    ),
]
BAD_JSON = [
    '{"carrier": "AA", "dep_delay": "abc", "time_hour": "2013-01-04T10:00:00Z"}',
    "not json at all",
    '{"carrier": "B6", "dep_delay": 4, "time_hour": "yesterday"}',
]

PIPELINE = f"""
CREATE STREAM flights ({COLUMNS}
) WITH (connector = 'files', path = 'in/flights', format = 'csv', header = true,
        nullValue = 'NA', maxFilesPerTrigger = 2, on_error = 'dead_letter',
        dead_letter_path = 'out/dead');
CREATE STREAM events (carrier STRING, dep_delay DOUBLE, time_hour TIMESTAMP)
WITH (connector = 'files', path = 'in/events', format = 'json', on_error = 'drop');
CREATE SINK all_rows WITH (connector = 'files', path = 'out/all', format = 'parquet');
CREATE SINK late WITH (connector = 'files', path = 'out/late', format = 'parquet');
CREATE SINK json_rows WITH (connector = 'files', path = 'out/json', format = 'parquet');
INSERT INTO all_rows SELECT * FROM flights EMIT ONCE;
INSERT INTO late SELECT carrier, origin, dep_delay FROM flights WHERE dep_delay > 60 EMIT ONCE;
INSERT INTO json_rows SELECT * FROM events EMIT ONCE;
"""


def _stamp(path: Path, day: str) -> None:
    stamp = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
    os.utime(path, (stamp, stamp))


def _inputs(work: Path) -> tuple[list[str], list[dict]]:
    """The day files with bad lines inserted, and the JSON file; returns the good CSV
    lines and the good JSON records."""
    flights = work / "in" / "flights"
    flights.mkdir(parents=True)
    good_lines: list[str] = []
    for index, day in enumerate(DAYS[:3]):
        lines = day.read_text().splitlines()
        assert lines[0] == HEADER
        good_lines += lines[1:]
        mixed = lines[:1]
        bad = [line for line, _, at in BAD_CSV if at == index]
        for i, line in enumerate(lines[1:]):
            mixed.append(line)
            if bad and i % 97 == 5:  # spread through the file
                mixed.append(bad.pop())
        mixed += bad
        (flights / day.name).write_text("\n".join(mixed) + "\n")
        _stamp(flights / day.name, day.stem)
    events = work / "in" / "events"
    events.mkdir(parents=True)
    records = []
    with DAYS[3].open() as handle:
        for row in list(csv.DictReader(handle))[:300]:
            records.append(
                {
                    "carrier": row["carrier"],
                    "dep_delay": None if row["dep_delay"] == "NA" else float(row["dep_delay"]),
                    "time_hour": row["time_hour"],
                }
            )
    lines = [json.dumps(r) for r in records]
    lines[100:100] = BAD_JSON
    (events / "day.json").write_text("\n".join(lines) + "\n")
    return good_lines, records


def _decode(line: str) -> tuple:
    """A good CSV line as the declared columns (plain Python, not Spark): NA is null."""
    values = next(csv.reader([line]))
    kinds = [int] * 5 + [float, float, str, int, str, str, str, float, str]
    row = tuple(None if v == "NA" else k(v) for k, v in zip(kinds, values, strict=True))
    return row[:-1] + (row[-1].replace("T", " ").rstrip("Z"),)


# ---------------------------------------------------------------- option rules (no JVM)


@pytest.mark.parametrize(
    "options, code, at",
    [
        ("on_error = 'skip'", "SS250", "'skip'"),
        ("on_error = 'drop', dead_letter_path = 'x'", "SS252", "dead_letter_path"),
        ("on_error = 'dead_letter'", "SS252", "on_error"),
        (
            "on_error = 'dead_letter', dead_letter = 'a', dead_letter_path = 'x'",
            "SS252",
            "dead_letter_path",
        ),
        ("on_error = 'drop', mode = 'PERMISSIVE'", "SS253", "on_error"),
        ("on_error = 'drop', multiLine = true", "SS251", "'drop'"),
        ("on_error = 'dead_letter', dead_letter = 'nowhere'", "SS254", "'nowhere'"),
        (
            "on_error = 'dead_letter', dead_letter = 'o'",
            "SS204",
            "'o'",
        ),  # o takes the INSERT already
    ],
)
def test_bad_on_error_options_are_positioned_findings(options, code, at):
    text = (
        f"CREATE STREAM s (a INT, b STRING) WITH (connector = 'files', path = 'in', "
        f"format = 'csv', {options});\nCREATE SINK o WITH (connector = 'console');\n"
        "INSERT INTO o SELECT * FROM s;\n"
    )
    findings = [f for f in sqlstream.check(text) if f.severity == "error"]
    assert [f.code for f in findings] == [code], findings
    start = findings[0].span.start
    assert text[start : start + len(at)] == at


def test_on_error_on_parquet_and_dead_letters_of_a_table_are_refused():
    parquet = (
        "CREATE STREAM s (a INT) WITH (connector = 'files', path = 'in', "
        "format = 'parquet', on_error = 'drop');\nSELECT * FROM s;\n"
    )
    assert [f.code for f in sqlstream.check(parquet)] == ["SS251"]
    table = (
        "CREATE TABLE t (a INT) WITH (connector = 'files', path = 'in', format = 'csv', "
        "on_error = 'dead_letter', dead_letter_path = 'x');\n"
    )
    assert [f.code for f in sqlstream.check(table)] == ["SS255"]
    sink = "CREATE SINK o WITH (connector = 'console', on_error = 'drop');\n"
    assert [f.code for f in sqlstream.check(sink)] == ["SS251"]


def test_default_is_fail_and_a_named_sink_takes_the_dead_letters():
    text = (
        "CREATE STREAM s (a INT) WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE STREAM d (a INT) WITH (connector = 'files', path = 'in', format = 'csv', "
        "on_error = 'dead_letter', dead_letter = 'bad');\n"
        "CREATE SINK bad WITH (connector = 'files', path = 'bad', format = 'json');\n"
        "SELECT * FROM s UNION ALL SELECT * FROM d;\n"
    )
    plan = sqlstream.compile(text).plan
    assert ("mode", "FAILFAST") in plan.relations[0].options
    dead = plan.queries[-1]
    assert (dead.name, dead.sink.path, dead.output_mode) == ("bad", "bad", "append")
    assert [c for c, _ in dead.columns] == ["raw", "reason", "source", "file", "time"]


# ---------------------------------------------------------------- on Spark


@pytest.mark.spark
def test_dead_letters_and_drops_on_real_flights(spark, tmp_path):
    good_lines, good_records = _inputs(tmp_path)
    (tmp_path / "p.ssql").write_text(PIPELINE)
    events = []
    pipeline = sqlstream.compile_file(tmp_path / "p.ssql")
    sqlstream.Session(spark, listeners=[events.append]).run(pipeline, available_now=True)

    # Good rows: exactly the good lines, decoded (batch reads of the sinks honour _spark_metadata).
    rows = (
        spark.read.parquet(str(tmp_path / "out" / "all"))
        .selectExpr("*", "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss') AS th")
        .drop("time_hour")
        .collect()
    )
    got = sorted((tuple(r)[:-1] + (r["th"],) for r in rows), key=repr)
    assert got == sorted((_decode(line) for line in good_lines), key=repr)
    late = spark.read.parquet(str(tmp_path / "out" / "late")).count()
    assert late == sum(
        1 for line in good_lines if (d := _decode(line))[5] is not None and d[5] > 60
    )

    # Dead letters: each bad line once, with its reason, source and file.
    dead = spark.read.json(str(tmp_path / "out" / "dead")).collect()
    assert sorted(
        (d["raw"], d["reason"], d["source"], Path(d["file"]).name) for d in dead
    ) == sorted((line, reason, "flights", DAYS[at].name) for line, reason, at in BAD_CSV)
    assert all(d["time"] for d in dead)

    # JSON with on_error = 'drop': the good records flow on, the bad ones are counted.
    json_rows = (
        spark.read.parquet(str(tmp_path / "out" / "json"))
        .selectExpr("carrier", "dep_delay", "date_format(time_hour, \"yyyy-MM-dd'T'HH:mm:ss'Z'\")")
        .collect()
    )
    assert sorted(map(tuple, json_rows), key=repr) == sorted(
        ((r["carrier"], r["dep_delay"], r["time_hour"]) for r in good_records), key=repr
    )
    progress = [e for e in events if isinstance(e, BatchProgress)]
    assert sum(
        e.malformed_records.get("events", 0) for e in progress if e.name == "json_rows"
    ) == len(BAD_JSON)
    assert sum(
        e.malformed_records.get("flights", 0) for e in progress if e.name == "all_rows"
    ) == len(BAD_CSV)
    assert all(isinstance(e.to_dict()["malformed_records"], dict) for e in progress)


@pytest.mark.spark
def test_fail_by_default_names_the_file(spark, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(DAYS[0], folder / DAYS[0].name)
    bad = folder / "2013-01-02.csv"
    bad.write_text(HEADER + "\n" + BAD_CSV[0][0] + "\n")
    error = failure_of(
        spark,
        tmp_path,
        (
            f"CREATE STREAM flights ({COLUMNS}) WITH (connector = 'files', path = 'in', "
            "format = 'csv', header = true, nullValue = 'NA');\n"
            "CREATE SINK o WITH (connector = 'files', path = 'out', format = 'parquet');\n"
            "INSERT INTO o SELECT * FROM flights EMIT ONCE;\n"
        ),
    )
    assert "2013-01-02.csv" in error.message and "abc" in error.message, error.message
    assert "on_error = 'drop' or 'dead_letter' on the source" in error.hint  # not Spark's advice


def test_decoding_reads_the_columns_of_the_schema_in_file_order():
    """The decoding parses a line into the columns of the read's schema (with header
    binding, every header column in file order), not only the declared ones."""
    quoted = sqlstream.compile(
        "CREATE STREAM q (a INT, `b c` DECIMAL(10, 2), `x``y` STRUCT<p: INT, q: MAP<STRING, INT>>) "
        "WITH (connector = 'files', path = 'in', format = 'json', on_error = 'drop');\n"
        "SELECT * FROM q;\n"
    ).plan.relations[0]
    # the columns travel as data; the DDL text is made from them only where it is lowered
    assert (
        quoted.read_columns
        == quoted.decoding.columns
        == (
            ("a", "INT"),
            ("b c", "DECIMAL(10, 2)"),
            ("x`y", "STRUCT<`p`: INT, `q`: MAP<STRING, INT>>"),
        )
    )
    assert (
        schema_ddl(quoted)
        == "`a` INT, `b c` DECIMAL(10, 2), `x``y` STRUCT<`p`: INT, `q`: MAP<STRING, INT>>"
    )
    text = (
        "CREATE STREAM s (a INT, b DOUBLE) WITH (connector = 'files', path = 'in', "
        "format = 'csv', header = true, enforceSchema = false, on_error = 'drop');\n"
        "SELECT * FROM s;\n"
    )
    relation = sqlstream.compile(text).plan.relations[0]
    assert relation.decoding.columns == (("a", "INT"), ("b", "DOUBLE"))
    assert relation.decoding.reader_options == ()  # enforceSchema is the CSV reader's


@pytest.mark.spark
def test_json_files_with_fields_in_another_order_or_extra_bind_by_name(spark, tmp_path):
    """JSON binds by field name, under ``fail`` (Spark's reader) and ``drop`` (``from_json``)
    alike: a later file with the fields in another order, an extra field or one missing
    gives the values of its own fields (a missing one NULL, not malformed)."""
    folder = tmp_path / "in"
    folder.mkdir()
    records = [
        {
            "carrier": r["carrier"],
            "origin": r["origin"],
            "dep_delay": None if r["dep_delay"] == "NA" else float(r["dep_delay"]),
        }
        for r in list(csv.DictReader(DAYS[0].open()))[:90]
    ]
    first = [json.dumps(r) for r in records[:30]]
    later = [
        json.dumps(
            {
                "dep_delay": r["dep_delay"],
                "extra": 1,
                "origin": r["origin"],
                "carrier": r["carrier"],
            }
        )
        for r in records[30:60]
    ]
    missing = [json.dumps({"origin": r["origin"], "carrier": r["carrier"]}) for r in records[60:]]
    for stamp, (name, lines) in enumerate(
        {"a.json": first, "b.json": later, "c.json": missing}.items(), start=1_000
    ):
        (folder / name).write_text("\n".join(lines) + "\n")
        os.utime(folder / name, (stamp, stamp))
    (tmp_path / "p.ssql").write_text(
        "\n".join(
            f"CREATE STREAM s_{mode} (carrier STRING, origin STRING, dep_delay DOUBLE) WITH ("
            f"connector = 'files', path = 'in', format = 'json', on_error = '{mode}');\n"
            f"CREATE SINK {mode}_out WITH (connector = 'files', path = 'out/{mode}', format = 'parquet');\n"
            f"INSERT INTO {mode}_out SELECT * FROM s_{mode} EMIT ONCE;"
            for mode in ("fail", "drop")
        )
    )
    sqlstream.Session(spark).run(sqlstream.compile_file(tmp_path / "p.ssql"), available_now=True)
    expected = sorted(((r["carrier"], r["origin"], r["dep_delay"]) for r in records[:60]), key=repr)
    expected = sorted(
        expected + [(r["carrier"], r["origin"], None) for r in records[60:]], key=repr
    )
    for mode in ("fail", "drop"):
        got = spark.read.parquet(str(tmp_path / "out" / mode)).collect()
        assert sorted(map(tuple, got), key=repr) == expected, mode
