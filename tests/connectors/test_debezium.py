"""``format = 'debezium-json'`` without a JVM: what ``check`` refuses, at its position, and
the decoding the program holds (the Spark runs are ``test_debezium_spark.py``)."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

FILES = "connector = 'files', path = 'changes', format = 'debezium-json'"
KAFKA = "connector = 'kafka', bootstrap_servers = 'b:9092', topic = 't', format = 'debezium-json'"


def _error(text: str) -> SqlStreamError:
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text, path="/tmp/p.ssql")
    return info.value


@pytest.mark.parametrize(
    "text, code, at",
    [
        (f"CREATE STREAM s WITH ({FILES}, infer_schema = true)", "SS290", "infer_schema"),
        (f"CREATE SINK o WITH ({FILES})", "SS290", "'debezium-json'"),
        (f"CREATE STREAM s WITH ({KAFKA})", "SS210", "s"),
        (
            f"CREATE STREAM s (id INT, v STRING METADATA FROM 'after.v') WITH ({FILES})",
            "SS201",
            "v",
        ),
        (
            f"CREATE STREAM s (id INT, v STRING METADATA FROM 'sauce.lsn') WITH ({KAFKA})",
            "SS201",
            "v",
        ),
        (f"CREATE STREAM s (id INT) WITH ({FILES}, on_error = 'skip')", "SS250", "'skip'"),
    ],
)
def test_what_check_refuses_is_a_positioned_finding(text, code, at):
    error = _error(text)
    assert error.code == code
    assert error.span is not None
    assert text[error.span.start :].startswith(at)


def test_metadata_keys_are_the_envelopes_and_the_connectors():
    pipeline = sqlstream.compile(
        f"""
        CREATE STREAM s (
            id BIGINT, op STRING METADATA FROM 'op', lsn BIGINT METADATA FROM 'source.lsn',
            at TIMESTAMP METADATA FROM 'source.ts_ms', tbl STRING METADATA FROM 'source.table',
            part INT METADATA FROM 'partition'
        ) WITH ({KAFKA}, on_error = 'drop');
        SELECT * FROM s;
        """,
        path="/tmp/p.ssql",
    )
    relation = pipeline.plan.relations[0]
    assert relation.columns == (
        ("id", "BIGINT"),
        ("op", "STRING"),
        ("lsn", "BIGINT"),
        ("at", "TIMESTAMP"),
        ("tbl", "STRING"),
        ("part", "INT"),
    )
    assert relation.decoding is not None and relation.decoding.on_error == "drop"
    program = pipeline.translate()
    assert "timestamp_millis(CAST(get_json_object(`__debezium`, '$.source.ts_ms')" in program
    assert "get_json_object(`__debezium`, '$.source.table')" in program
    assert "`__kafka`.`partition`" in program
    assert '.where("CAST(`value` AS STRING) IS NOT NULL' in program  # tombstones skipped
