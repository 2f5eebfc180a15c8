"""``connector = 'table'`` on Spark: a stream written into a catalog table (``toTable``) at
``.sqlstream/warehouse/<table>`` beside the pipeline file, restarted in a session whose
catalog forgot the table; and a table read as a stream (``readStream.table``). Each
compared with the rows of the CSV files, read in plain Python."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import sqlstream
from sqlstream import Session
from tests.support.flights import FLIGHTS_STREAM, copy_days

ROOT = Path(__file__).resolve().parents[2]
DAYS = sorted((ROOT / "examples/flights/data/flights").glob("2013-06-0[1-3].csv"))


def _late(days, minutes: int = 60) -> list[tuple]:
    rows = []
    for day in days:
        with day.open(newline="") as f:
            rows += [
                (r["carrier"], int(r["flight"]), r["origin"], float(r["dep_delay"]))
                for r in csv.DictReader(f)
                if r["dep_delay"] != "NA" and float(r["dep_delay"]) > minutes
            ]
    return sorted(rows)


def test_warehouse_default_setting_and_path_option(tmp_path):
    sink = (
        "CREATE SINK late WITH (connector = 'table', table = {table}{extra});\n"
        "INSERT INTO late SELECT carrier, flight FROM flights;\n"
    )
    cases = [
        ("'t1'", "", "", tmp_path / ".sqlstream/warehouse/t1"),
        ("'db.t2'", "", "SET 'spark.sql.warehouse.dir' = '/data/wh';\n", "/data/wh/db.db/t2"),
        ("'t3'", ", path = 'tables/t3', format = 'delta'", "", tmp_path / "tables/t3"),
    ]
    for table, extra, setting, location in cases:
        text = setting + FLIGHTS_STREAM + sink.format(table=table, extra=extra)
        translation = sqlstream.compile(text, path=str(tmp_path / "p.ssql")).translate()
        assert f".option('path', '{location}')" in translation
        assert "spark.conf.set('spark.sql.warehouse.dir'" not in translation  # static
    assert "    .format('delta')\n" in translation


@pytest.mark.spark
def test_table_sink_in_the_pipelines_warehouse_survives_a_forgotten_catalog(spark, tmp_path):
    copy_days(tmp_path, DAYS[:2])
    path = tmp_path / "to_table.ssql"
    path.write_text(
        FLIGHTS_STREAM
        + """
CREATE SINK late WITH (connector = 'table', table = 'late_flights_sink');
INSERT INTO late SELECT carrier, flight, origin, dep_delay FROM flights WHERE dep_delay > 60;
"""
    )
    session = Session(spark)
    pipeline = session.compile_file(str(path))
    assert (
        ".option('path', '" + str(tmp_path / ".sqlstream/warehouse/late_flights_sink") + "')"
        in pipeline.translate()
    )
    session.run(pipeline, available_now=True)
    location = (
        spark.sql("DESCRIBE TABLE EXTENDED late_flights_sink")
        .filter("col_name = 'Location'")
        .first()
        .data_type
    )
    assert location == f"file:{tmp_path}/.sqlstream/warehouse/late_flights_sink"
    assert sorted(map(tuple, spark.table("late_flights_sink").collect())) == _late(DAYS[:2])

    # A new session's in-memory catalog has no such table: the restart re-creates it at the
    # same location and appends only the new day (the file sink's log is in the table).
    spark.sql("DROP TABLE late_flights_sink")  # external: the files stay
    copy_days(tmp_path, DAYS[2:])
    session.run(session.compile_file(str(path)), available_now=True)
    assert sorted(map(tuple, spark.table("late_flights_sink").collect())) == _late(DAYS)


@pytest.mark.spark
def test_table_source_streams_the_tables_rows(spark, tmp_path):
    (
        spark.read.option("header", True)
        .option("nullValue", "NA")
        .schema(
            "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,"
            " arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING,"
            " dest STRING, distance DOUBLE, time_hour TIMESTAMP"
        )
        .csv([str(d) for d in DAYS])
        .write.option("path", str(tmp_path / "flights_table"))
        .saveAsTable("flights_table_source")
    )
    pipeline = sqlstream.compile(
        """
CREATE STREAM flights (carrier STRING, flight INT, origin STRING, dep_delay DOUBLE)
WITH (connector = 'table', table = 'flights_table_source');
CREATE SINK late WITH (connector = 'memory', query_name = 'late_from_table');
INSERT INTO late SELECT carrier, flight, origin, dep_delay FROM flights WHERE dep_delay > 60;
""",
        path=str(tmp_path / "from_table.ssql"),
    )
    assert "df = (spark.readStream\n    .table('flights_table_source'))" in pipeline.translate()
    Session(spark).run(pipeline, available_now=True)
    assert sorted(map(tuple, spark.table("late_from_table").collect())) == _late(DAYS)
