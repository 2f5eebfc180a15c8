"""``CREATE FLOW … AS AUTO CDC`` without a JVM: the grammar, what ``check`` refuses at its
position, and the query and applier the plan holds (the runs into PostgreSQL are
``tests/connectors/test_auto_cdc_spark.py``)."""

from __future__ import annotations

import json

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

STREAM = """
CREATE STREAM changes (
    id BIGINT, name STRING, city STRING, tags ARRAY<STRING>,
    op STRING METADATA FROM 'op', seq BIGINT METADATA FROM 'source.lsn'
) WITH (connector = 'files', path = 'changes', format = 'debezium-json');
CREATE TABLE snapshot (id BIGINT) WITH (connector = 'files', path = 's', format = 'json');
CREATE SINK target WITH (connector = 'postgres', url = 'postgresql://h:5432/d', table = 't');
CREATE SINK upserted WITH (connector = 'postgres', url = 'postgresql://h:5432/d', table = 'u',
                           key_columns = 'id');
CREATE SINK files_out WITH (connector = 'files', path = 'o', format = 'json');
"""


def _flow(body: str) -> str:
    return STREAM + f"CREATE FLOW f AS AUTO CDC INTO {body};"


GOOD = "target FROM STREAM(changes) KEYS (id) APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq"


def _error(text: str) -> SqlStreamError:
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text, path="/tmp/p.ssql")
    return info.value


@pytest.mark.parametrize(
    "body, code, at",
    [
        ("files_out FROM STREAM(changes) KEYS (id) SEQUENCE BY seq", "SS292", "files_out"),
        ("upserted FROM STREAM(changes) KEYS (id) SEQUENCE BY seq", "SS292", "key_columns"),
        ("nowhere FROM STREAM(changes) KEYS (id) SEQUENCE BY seq", "SS201", "nowhere"),
        ("target FROM STREAM(chnges) KEYS (id) SEQUENCE BY seq", "SS201", "chnges"),
        ("target FROM STREAM(snapshot) KEYS (id) SEQUENCE BY id", "SS294", "snapshot"),
        ("target FROM STREAM(changes) KEYS (idd) SEQUENCE BY seq", "SS201", "idd"),
        ("target FROM STREAM(changes) KEYS (tags) SEQUENCE BY seq", "SS291", "tags"),
        ("target FROM STREAM(changes) KEYS (id) SEQUENCE BY tags", "SS291", "tags"),
        (
            "target FROM STREAM(changes) KEYS (id) APPLY AS DELETE WHEN op SEQUENCE BY seq",
            "SS291",
            "op SEQ",
        ),
        (
            "target FROM STREAM(changes) KEYS (id) SEQUENCE BY seq COLUMNS * EXCEPT (id)",
            "SS291",
            "id)",
        ),
        (GOOD + " STORED AS SCD TYPE 3", "SS293", "3"),
        (GOOD + " STORED AS SCD TYPE 1 TRACK HISTORY ON name", "SS293", "TRACK"),
        (GOOD + " COLUMNS id, name STORED AS SCD TYPE 2 TRACK HISTORY ON city", "SS293", "city"),
        (GOOD + " COLUMNS id, nme", "SS201", "nme"),
        ("target FROM STREAM(changes) SEQUENCE BY seq", "SS101", "SEQUENCE"),
        (GOOD + "; CREATE FLOW g AS AUTO CDC INTO " + GOOD, "SS292", "target"),
        (GOOD + "; INSERT INTO target SELECT id FROM changes", "SS292", "target"),
    ],
)
def test_what_check_refuses_is_a_positioned_finding(body, code, at):
    text = _flow(body)
    error = _error(text)
    assert error.code == code, error.render()
    assert error.span is not None
    assert text[error.span.start :].startswith(at), error.render()


def test_the_flow_is_a_query_of_changes_into_the_applier():
    pipeline = sqlstream.compile(
        _flow(
            GOOD + " COLUMNS * EXCEPT (op, seq, tags) STORED AS SCD TYPE 2 "
            "TRACK HISTORY ON * EXCEPT (city)"
        ),
        path="/tmp/p.ssql",
    )
    (query,) = pipeline.plan.queries
    assert query.name == "f" and query.output_mode == "append"
    assert [n for n, _ in query.columns] == [
        "id",
        "name",
        "city",
        "__sqlstream_sequence",
        "__sqlstream_delete",
    ]
    flow = json.loads(dict(query.sink.settings)["auto_cdc"])
    assert flow["keys"] == ["id"] and flow["scd_type"] == 2
    assert flow["columns"] == ["id", "name", "city"] and flow["tracked"] == ["name"]
    program = pipeline.translate()
    assert (
        "CdcApplier(target=importlib.import_module('sqlstream.connectors.cdc.postgres_cdc')"
        in program
    )
    assert "raise_error(" in program  # a NULL key or sequence stops the query (on_error fail)


def test_a_dropping_source_leaves_null_keys_out():
    text = _flow(GOOD).replace(
        "format = 'debezium-json'", "format = 'debezium-json', on_error = 'drop'"
    )
    (query,) = sqlstream.compile(text, path="/tmp/p.ssql").plan.queries
    assert "raise_error" not in query.sql and "NOT (`id` IS NULL OR (seq) IS NULL)" in query.sql


def test_the_graph_shows_the_flow():
    from sqlstream.graph.dot import to_mermaid
    from sqlstream.graph.model import build

    text = to_mermaid(build(sqlstream.compile(_flow(GOOD), path="/tmp/p.ssql").plan))
    assert "AUTO CDC, SCD type 1, keys id" in text
    assert "stream_changes --> query_f" in text and "query_f --> sink_target" in text
