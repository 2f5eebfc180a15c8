"""Spark integration: every statement form and connector of issue #2 runs with its meaning.

Each test compiles a small `.ssql` program, runs it on the shared SparkSession with
``trigger(availableNow=True)`` (or a bounded processing-time run for unbounded sources)
and compares what the sink received with a batch computation of the same input.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

import sqlstream
from sqlstream.diagnostics.errors import QueryFailedError
from tests.conftest import ROOT
from tests.support.flights import FLIGHT_COLUMNS, first_days

pytestmark = pytest.mark.spark

DATA = ROOT / "examples" / "flights" / "data"


def _run(spark, text, tmp_path, variables=None):
    pipeline = sqlstream.compile(text, variables, path=str(tmp_path / "pipeline.ssql"))
    queries = pipeline.start(spark, available_now=True)
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None
    return pipeline, queries


def _same(actual, expected):
    assert actual.count() == expected.count() > 0
    assert actual.exceptAll(expected).count() == 0
    assert expected.exceptAll(actual).count() == 0


def _batch_flights(spark, folder):
    return (
        spark.read.option("header", True)
        .option("nullValue", "NA")
        .schema(FLIGHT_COLUMNS)
        .csv(str(folder))
    )


def test_computed_and_metadata_columns_view_and_complete_mode(spark, tmp_path):
    folder = first_days(tmp_path)
    _run(
        spark,
        f"""
        CREATE STREAM flights ({FLIGHT_COLUMNS},
            late AS dep_delay > 30,
            src STRING METADATA FROM 'file_name'
        ) WITH (connector = 'files', path = '{folder}', format = 'csv', header = true,
                null_value = 'NA', max_files_per_trigger = 1);
        CREATE VIEW late_flights AS SELECT origin, src FROM flights WHERE late;
        CREATE SINK late_counts WITH (connector = 'memory', query_name = 'late_counts_t1');
        INSERT INTO late_counts
        SELECT origin, src, COUNT(*) AS n FROM late_flights GROUP BY origin, src EMIT COMPLETE;
    """,
        tmp_path,
    )
    from pyspark.sql import functions as F

    expected = (
        _batch_flights(spark, folder)
        .where("dep_delay > 30")
        .withColumn("src", F.element_at(F.split(F.input_file_name(), "/"), -1))
        .groupBy("origin", "src")
        .agg(F.count("*").alias("n"))
    )
    _same(spark.table("late_counts_t1"), expected)


def test_stream_static_join_with_a_table_into_files(spark, tmp_path):
    folder = first_days(tmp_path, 2)
    out = tmp_path / "joined"
    _run(
        spark,
        f"""
        CREATE STREAM flights ({FLIGHT_COLUMNS})
        WITH (connector = 'files', path = '{folder}', format = 'csv', header = true, nullValue = 'NA');
        CREATE TABLE airlines (carrier STRING, name STRING)
        WITH (connector = 'files', path = '{DATA / "airlines.csv"}', format = 'csv', header = true);
        CREATE SINK joined WITH (connector = 'files', path = '{out}', format = 'json');
        INSERT INTO joined
        SELECT f.flight, f.origin, a.name AS airline
        FROM flights AS f JOIN airlines AS a ON f.carrier = a.carrier;
    """,
        tmp_path,
    )
    airlines = spark.read.option("header", True).csv(str(DATA / "airlines.csv"))
    expected = (
        _batch_flights(spark, folder)
        .alias("f")
        .join(airlines.alias("a"), "carrier")
        .selectExpr("CAST(f.flight AS BIGINT) AS flight", "f.origin", "a.name AS airline")
    )
    _same(spark.read.json(str(out)).select("flight", "origin", "airline"), expected)


def test_create_stream_as_select_is_a_sink_and_a_view(spark, tmp_path):
    folder = first_days(tmp_path, 2)
    out = tmp_path / "jfk"
    _run(
        spark,
        f"""
        CREATE STREAM flights ({FLIGHT_COLUMNS})
        WITH (connector = 'files', path = '{folder}', format = 'csv', header = true, nullValue = 'NA');
        CREATE STREAM jfk WITH (connector = 'files', path = '{out}', format = 'orc')
        AS SELECT carrier, dest, dep_delay FROM flights WHERE origin = 'JFK';
        CREATE SINK per_dest WITH (connector = 'memory', query_name = 'per_dest_t3');
        INSERT INTO per_dest SELECT dest, COUNT(*) AS n FROM jfk GROUP BY dest EMIT COMPLETE;
    """,
        tmp_path,
    )
    batch = _batch_flights(spark, folder).where("origin = 'JFK'")
    _same(spark.read.orc(str(out)), batch.select("carrier", "dest", "dep_delay"))
    _same(spark.table("per_dest_t3"), batch.groupBy("dest").count().withColumnRenamed("count", "n"))


def test_text_and_parquet_sources(spark, tmp_path):
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "a.txt").write_text("alpha\nbeta\ngamma\n")
    spark.createDataFrame([(1, "x"), (2, "y")], "id INT, tag STRING").write.parquet(
        str(tmp_path / "pq")
    )
    _run(
        spark,
        f"""
        CREATE STREAM lines (value STRING) WITH (connector = 'files', path = '{tmp_path / "text"}', format = 'text');
        CREATE STREAM rows (id INT, tag STRING) WITH (connector = 'files', path = '{tmp_path / "pq"}', format = 'parquet');
        CREATE SINK l WITH (connector = 'memory', query_name = 'lines_t4');
        CREATE SINK r WITH (connector = 'memory', query_name = 'rows_t4');
        INSERT INTO l SELECT upper(value) AS v FROM lines;
        INSERT INTO r SELECT id * 10 AS id, tag FROM rows;
    """,
        tmp_path,
    )
    assert sorted(r.v for r in spark.table("lines_t4").collect()) == ["ALPHA", "BETA", "GAMMA"]
    assert sorted((r.id, r.tag) for r in spark.table("rows_t4").collect()) == [(10, "x"), (20, "y")]


def test_infer_schema_reads_the_schema_from_the_files(spark, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("k,v\na,1\nb,2\na,3\n")
    _run(
        spark,
        f"""
        CREATE STREAM s WITH (connector = 'files', path = '{tmp_path / "in"}', format = 'csv',
                              header = true, infer_schema = true);
        CREATE SINK o WITH (connector = 'memory', query_name = 'inferred_t5');
        INSERT INTO o SELECT k, SUM(v) AS total FROM s GROUP BY k EMIT COMPLETE;
    """,
        tmp_path,
    )
    assert sorted((r.k, r.total) for r in spark.table("inferred_t5").collect()) == [
        ("a", 4),
        ("b", 2),
    ]


def test_set_applies_spark_settings(spark, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"a": 1}\n')
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        _run(
            spark,
            f"""
            SET 'spark.sql.shuffle.partitions' = '3';
            CREATE STREAM s (a INT) WITH (connector = 'files', path = '{tmp_path / "in"}', format = 'json');
            CREATE SINK o WITH (connector = 'noop');
            INSERT INTO o SELECT * FROM s;
        """,
            tmp_path,
        )
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


def test_rate_micro_batch_with_processing_time_trigger(spark, tmp_path):
    pipeline = sqlstream.compile("""
        CREATE STREAM ticks WITH (connector = 'rate_micro_batch', rows_per_batch = 5);
        CREATE SINK t WITH (connector = 'memory', query_name = 'ticks_t7');
        INSERT INTO t SELECT value, value % 2 = 0 AS even FROM ticks EMIT EVERY INTERVAL '200' MILLISECONDS;
    """)
    (query,) = pipeline.start(spark)
    try:
        deadline = time.time() + 60
        while len([p for p in query.recentProgress if p["numInputRows"]]) < 3:
            assert time.time() < deadline, "rate_micro_batch produced no batches"
            time.sleep(0.2)
    finally:
        query.stop()
    values = sorted(r.value for r in spark.table("ticks_t7").collect())
    assert len(values) >= 15 and values == list(range(len(values)))


def test_socket_source(spark, tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    def serve():
        conn, _ = server.accept()
        conn.sendall(b"one\ntwo\nthree\n")
        time.sleep(30)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    pipeline = sqlstream.compile(f"""
        CREATE STREAM lines WITH (connector = 'socket', host = '127.0.0.1', port = {port});
        CREATE SINK s WITH (connector = 'memory', query_name = 'socket_t8');
        INSERT INTO s SELECT value FROM lines EMIT EVERY INTERVAL '200' MILLISECONDS;
    """)
    (query,) = pipeline.start(spark)
    try:
        deadline = time.time() + 60
        while spark.table("socket_t8").count() < 3:
            assert time.time() < deadline, "no rows from the socket"
            time.sleep(0.2)
    finally:
        query.stop()
        server.close()
    assert sorted(r.value for r in spark.table("socket_t8").collect()) == ["one", "three", "two"]


def test_update_mode_emits_changed_rows(spark, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"k": "a"}\n{"k": "b"}\n{"k": "a"}\n')
    _run(
        spark,
        f"""
        CREATE STREAM s (k STRING) WITH (connector = 'files', path = '{tmp_path / "in"}', format = 'json');
        CREATE SINK o WITH (connector = 'memory', query_name = 'changes_t9');
        INSERT INTO o SELECT k, COUNT(*) AS n FROM s GROUP BY k EMIT CHANGES;
    """,
        tmp_path,
    )
    assert sorted((r.k, r.n) for r in spark.table("changes_t9").collect()) == [("a", 2), ("b", 1)]


def test_bad_input_data_fails_the_query_with_its_position(spark, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("1\nnot-a-number\n")
    pipeline = sqlstream.compile(
        f"""
        CREATE STREAM s (n INT) WITH (connector = 'files', path = '{tmp_path / "in"}',
                                      format = 'csv', mode = 'FAILFAST');
        CREATE SINK o WITH (connector = 'noop');
        INSERT INTO o SELECT n FROM s;
    """,
        path=str(tmp_path / "bad.ssql"),
    )
    with pytest.raises(QueryFailedError) as info:
        sqlstream.Session(spark).run(pipeline, available_now=True)
    rendered = info.value.render()
    assert rendered.startswith(f"{tmp_path / 'bad.ssql'}:5:9: SS501 query 'o' failed")
    assert "INSERT INTO o SELECT n FROM s;" in rendered and "^" in rendered
    assert "not-a-number" in rendered or "FAILFAST" in rendered or "Malformed" in rendered


def test_spark_refusing_a_source_is_positioned(spark, tmp_path):
    pipeline = sqlstream.compile(
        """
        CREATE STREAM s (n INT) WITH (connector = 'files', path = '/does/not/exist', format = 'json');
        CREATE SINK o WITH (connector = 'noop');
        INSERT INTO o SELECT n FROM s;
    """,
        path="p.ssql",
    )
    with pytest.raises(QueryFailedError) as info:
        pipeline.start(spark, available_now=True)
    assert info.value.span.line == 2 and "/does/not/exist" in info.value.message
