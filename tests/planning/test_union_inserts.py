"""Several ``INSERT INTO`` one sink as one query over ``UNION ALL`` (sqlstream.planning.union_inserts),
and ksqlDB's ``CREATE TABLE t AS SELECT`` as a query into the sink ``t``. No JVM; on Spark:
tests/sql/test_ksql_windows_spark.py."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

STREAMS = """\
CREATE STREAM eu (id STRING, amount DOUBLE, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '/data/eu', format = 'json');
CREATE STREAM us (id STRING, amount DOUBLE, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '/data/us', format = 'json');
CREATE SINK out WITH (connector = 'memory');
"""


def _queries(text: str):
    return sqlstream.compile(STREAMS + text).plan.queries


def _refusal(text: str) -> SqlStreamError:
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(STREAMS + text)
    return info.value


def test_two_inserts_are_one_query_over_union_all():
    (query,) = _queries(
        "INSERT INTO out SELECT id, amount FROM eu;\n"
        "INSERT INTO out SELECT id, amount FROM us WHERE amount > 1;\n"
    )
    assert query.name == "out" and query.output_mode == "append"
    assert (
        query.sql
        == "SELECT id, amount FROM eu UNION ALL SELECT id, amount FROM us WHERE amount > 1"
    )
    assert query.span.line == 6  # the first INSERT


def test_three_inserts_and_a_create_sink_as_select():
    text = STREAMS.replace("CREATE SINK out WITH (connector = 'memory');\n", "")
    text += (
        "CREATE SINK out WITH (connector = 'memory') AS SELECT id FROM eu;\n"
        "INSERT INTO out SELECT id FROM us;\nINSERT INTO out SELECT 'x' AS id FROM us;\n"
    )
    (query,) = sqlstream.compile(text).plan.queries
    assert query.sql.count("UNION ALL") == 2


def test_a_body_with_order_or_cte_is_a_subquery():
    (query,) = _queries(
        "INSERT INTO out SELECT id FROM eu;\n"
        "INSERT INTO out WITH x AS (SELECT id FROM us) SELECT id FROM x;\n"
    )
    assert query.sql.endswith(
        "UNION ALL SELECT * FROM (WITH x AS (SELECT id FROM us) SELECT id FROM x) AS __part_2"
    )


def test_aggregations_side_by_side_keep_their_mode():
    (query,) = _queries(
        "INSERT INTO out SELECT id, SUM(amount) AS total FROM eu GROUP BY id EMIT CHANGES;\n"
        "INSERT INTO out SELECT id, SUM(amount) AS total FROM us GROUP BY id EMIT CHANGES;\n"
    )
    assert query.output_mode == "update"


def test_columns_that_differ_in_type_are_named():
    error = _refusal(
        "INSERT INTO out SELECT id, amount FROM eu;\nINSERT INTO out SELECT id, ts FROM us;\n"
    )
    assert error.code == "SS265" and error.span.line == 7
    assert "its column 2 is ts TIMESTAMP, the first's is amount DOUBLE" in error.message
    assert "CAST(… AS DOUBLE) AS amount" in error.hint
    assert "INSERT INTO out SELECT id, amount FROM eu UNION ALL SELECT id, ts FROM us" in error.hint


def test_columns_that_differ_in_name_are_named():
    error = _refusal(
        "INSERT INTO out SELECT id, amount FROM eu;\n"
        "INSERT INTO out SELECT id, amount AS value FROM us;\n"
    )
    assert "its column 2 is value DOUBLE, the first's is amount DOUBLE" in error.message


def test_modes_and_triggers_that_differ_are_named():
    error = _refusal(
        "INSERT INTO out SELECT id FROM eu EMIT CHANGES;\n"
        "INSERT INTO out SELECT id FROM us EMIT COMPLETE;\n"
    )
    assert "update (EMIT CHANGES) mode, the first in" not in error.message
    assert "complete (EMIT COMPLETE) mode, the first in update (EMIT CHANGES) mode" in error.message
    error = _refusal(
        "INSERT INTO out SELECT id FROM eu EMIT EVERY INTERVAL '1' MINUTE;\n"
        "INSERT INTO out SELECT id FROM us;\n"
    )
    assert "trigger" in error.message


def test_the_inferred_mode_of_each_body_is_compared():
    error = _refusal(
        "INSERT INTO out SELECT id FROM eu;\nINSERT INTO out SELECT id FROM us GROUP BY id;\n"
    )
    assert "update (EMIT CHANGES) mode, the first in append (EMIT FINAL) mode" in error.message


def test_ksql_create_table_as_select_writes_into_the_declared_sink():
    (query,) = _queries("CREATE TABLE out AS SELECT id, COUNT(*) AS n FROM eu GROUP BY id;\n")
    assert query.sink.name == "out" and query.output_mode == "update"
    (query,) = _queries(
        "CREATE TABLE out AS SELECT id, window_start, COUNT(*) AS n "
        "FROM TUMBLE(eu, ts, INTERVAL '1' HOUR) GROUP BY id, window_start, window_end "
        "EMIT FINAL;\n"
    )
    assert query.output_mode == "append"


def test_ksql_create_table_with_options_declares_its_sink():
    (query,) = _queries(
        "CREATE TABLE counts WITH (connector = 'console') AS "
        "SELECT id, COUNT(*) AS n FROM eu GROUP BY id EMIT EVERY INTERVAL '10' SECONDS;\n"
    )
    assert (query.sink.name, query.sink.connector, query.output_mode) == (
        "counts",
        "console",
        "update",
    )
    assert query.trigger.interval == "10 seconds"


def test_ksql_create_table_without_a_sink_says_to_declare_it():
    error = _refusal("CREATE TABLE counts AS SELECT id, COUNT(*) AS n FROM eu GROUP BY id;\n")
    assert error.code == "SS201" and "CREATE SINK counts WITH (connector = …)" in error.hint


def test_a_body_reading_a_failed_declaration_reports_that_alone():
    text = STREAMS + (
        "CREATE STREAM bad (id STRING) WITH (connector = 'nope');\n"
        "INSERT INTO out SELECT id FROM bad;\nINSERT INTO out SELECT id FROM eu;\n"
    )
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text)
    assert info.value.code != "SS265" and "nope" in info.value.render()
