"""Flink's changelog spelling without a JVM (docs/cdc.md#flink-spelling): a sink's
``PRIMARY KEY (…) NOT ENFORCED`` and an ``INSERT`` from a ``debezium-json`` stream planned as
the ``AUTO CDC … STORED AS SCD TYPE 1`` flow (the same program printed), from another query
as an upsert by key, and what ``check`` refuses at its place (``SS108``, ``SS109``). The runs
into PostgreSQL: ``tests/connectors/test_flink_cdc_spark.py``."""

from __future__ import annotations

import json

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

STREAMS = """
CREATE STREAM changes (
    id BIGINT, name STRING, city STRING,
    op STRING METADATA FROM 'op', seq BIGINT METADATA FROM 'source.lsn'
) WITH (connector = 'files', path = 'changes', format = 'debezium-json');
CREATE STREAM unordered (id BIGINT, name STRING, city STRING, op STRING METADATA FROM 'op')
  WITH (connector = 'files', path = 'unordered', format = 'debezium-json');
CREATE STREAM no_op (id BIGINT, name STRING, city STRING)
  WITH (connector = 'files', path = 'no_op', format = 'debezium-json');
CREATE STREAM rows (id BIGINT, name STRING, city STRING)
  WITH (connector = 'files', path = 'rows', format = 'json');
CREATE VIEW renamed AS SELECT id, name, city FROM changes;
"""
TARGETS = {
    "postgres": "connector = 'postgres', url = 'postgresql://h:5432/d', table = 'customers'",
    "delta": "connector = 'delta', path = 'lake/customers'",
    "iceberg": "connector = 'iceberg', table = 'crm.customers'",
}
COLUMNS = "id BIGINT, name STRING, city STRING"


def _keyed(insert: str, target: str = "postgres", columns: str = COLUMNS) -> str:
    return (
        STREAMS + f"CREATE SINK customers ({columns}, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ({TARGETS[target]});\n{insert};\n"
    )


def _error(text: str) -> SqlStreamError:
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text, path="/tmp/p.ssql")
    return info.value


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_both_spellings_print_the_same_program(target):
    """The golden of the equivalence: the INSERT into a keyed sink is translated to the
    very program of the AUTO CDC flow it stands for, line for line."""
    flink = _keyed("INSERT INTO customers SELECT id, name, city FROM changes", target)
    auto = (
        STREAMS + f"CREATE SINK customers WITH ({TARGETS[target]});\n"
        "CREATE FLOW customers AS AUTO CDC INTO customers FROM STREAM(changes) KEYS (id) "
        "APPLY AS DELETE WHEN `op` = 'd' SEQUENCE BY `seq` COLUMNS id, name, city "
        "STORED AS SCD TYPE 1;\n"
    )
    printed = sqlstream.translate(flink, path="/tmp/p.ssql")
    assert printed == sqlstream.translate(auto, path="/tmp/p.ssql")
    assert "CdcApplier(" in printed and "arrival" not in printed


def test_from_a_changelog_the_plan_holds_the_auto_cdc_flow():
    pipeline = sqlstream.compile(
        _keyed("INSERT INTO customers SELECT id, name, city FROM changes"), path="/tmp/p.ssql"
    )
    (query,) = pipeline.plan.queries
    assert query.name == "customers" and query.output_mode == "append"
    flow = json.loads(dict(query.sink.settings)["auto_cdc"])
    assert flow["keys"] == ["id"] and flow["scd_type"] == 1 and flow["tracked"] == []
    assert flow["columns"] == ["id", "name", "city"] and "arrival" not in flow
    assert "(`seq`) AS `__sqlstream_sequence`" in query.sql
    assert "COALESCE((`op` = 'd'), FALSE) AS `__sqlstream_delete`" in query.sql


def test_without_a_log_position_the_changes_are_ordered_by_arrival():
    text = _keyed("INSERT INTO customers SELECT * EXCEPT (op) FROM unordered", "delta")
    text = text.replace("SELECT * EXCEPT (op)", "SELECT id, name, city")
    pipeline = sqlstream.compile(text, path="/tmp/p.ssql")
    (query,) = pipeline.plan.queries
    assert json.loads(dict(query.sink.settings)["auto_cdc"])["arrival"] is True
    assert "scd_type=1, tracked=[], arrival=True))" in pipeline.translate()


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_from_another_query_it_is_an_upsert_by_the_key(target):
    pipeline = sqlstream.compile(
        _keyed("INSERT INTO customers SELECT id, name, city FROM rows", target),
        path="/tmp/p.ssql",
    )
    (query,) = pipeline.plan.queries
    options = dict(query.sink.options)
    assert options["mode"] == "upsert" and options["key_columns"] == "id"
    assert "auto_cdc" not in dict(query.sink.settings)


def test_the_shorthand_as_select_means_the_same():
    text = STREAMS + (
        f"CREATE SINK customers ({COLUMNS}, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ({TARGETS['postgres']}) AS SELECT id, name, city FROM changes;"
    )
    (query,) = sqlstream.compile(text, path="/tmp/p.ssql").plan.queries
    assert "auto_cdc" in dict(query.sink.settings)


FILES = "connector = 'files', path = 'o', format = 'json'"


@pytest.mark.parametrize(
    "text, code, at",
    [
        # the key on a sink that appends
        (
            STREAMS + f"CREATE SINK o ({COLUMNS}, PRIMARY KEY (id) NOT ENFORCED) WITH ({FILES});",
            "SS109",
            "PRIMARY KEY (id) NOT",
        ),
        # Flink refuses an enforced key
        (_keyed("SELECT 1").replace("NOT ENFORCED", ""), "SS109", "PRIMARY KEY (id) )"),
        # columns without a key; a key without columns; a key not among them
        (STREAMS + f"CREATE SINK o (id BIGINT) WITH ({FILES});", "SS109", "id BIGINT"),
        (
            STREAMS + f"CREATE SINK o (PRIMARY KEY (id) NOT ENFORCED) WITH ({TARGETS['delta']});",
            "SS109",
            "PRIMARY",
        ),
        (
            _keyed("SELECT 1").replace("PRIMARY KEY (id)", "PRIMARY KEY (idd)"),
            "SS201",
            "idd",
        ),
        # key_columns beside the key
        (
            _keyed("SELECT 1").replace("table = 'customers'", "table = 'c', key_columns = 'id'"),
            "SS109",
            "key_columns",
        ),
        # two keys
        (
            _keyed("SELECT 1").replace(
                "NOT ENFORCED)", "NOT ENFORCED, PRIMARY KEY (name) NOT ENFORCED)"
            ),
            "SS101",
            "PRIMARY KEY (name)",
        ),
        # more than a projection of the changelog
        (
            _keyed("INSERT INTO customers SELECT id, name, city FROM changes WHERE id > 0"),
            "SS109",
            "SELECT id, name, city FROM changes WHERE",
        ),
        (
            _keyed("INSERT INTO customers SELECT id, upper(name) AS name, city FROM changes"),
            "SS109",
            "SELECT id, upper",
        ),
        # columns other than the sink's
        (
            _keyed("INSERT INTO customers SELECT id, city, name FROM changes"),
            "SS109",
            "SELECT id, city",
        ),
        # a changelog without its operation; through a view
        (
            _keyed("INSERT INTO customers SELECT id, name, city FROM no_op"),
            "SS109",
            "no_op;",
        ),
        (
            _keyed("INSERT INTO customers SELECT id, name, city FROM renamed"),
            "SS109",
            "renamed;",
        ),
        # one INSERT per keyed sink
        (
            _keyed(
                "INSERT INTO customers SELECT id, name, city FROM rows;\n"
                "INSERT INTO customers SELECT id, name, city FROM rows"
            ),
            "SS109",
            "INSERT INTO customers",
        ),
        # a key on a stream: SS108, with both spellings in the hint
        (
            "CREATE STREAM s (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (connector = "
            "'files', path = 's', format = 'json');",
            "SS108",
            "PRIMARY",
        ),
    ],
)
def test_what_cannot_be_meant_is_a_positioned_finding(text, code, at):
    error = _error(text)
    assert error.code == code, error.render()
    assert error.span is not None
    assert text[error.span.start :].startswith(at), error.render()
    assert error.hint


def test_ss108_hints_the_sink_spelling():
    error = _error(
        "CREATE TABLE t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH (connector = "
        "'postgres', url = 'postgresql://h/d', table = 't');"
    )
    assert error.code == "SS108"
    assert "CREATE SINK" in (error.hint or "") and "AUTO CDC" in (error.hint or "")


def test_check_reports_the_finding_at_its_line():
    text = _keyed("INSERT INTO customers SELECT id, name, city FROM no_op")
    findings = sqlstream.check(text, path="/tmp/p.ssql")
    (finding,) = [f for f in findings if f.code == "SS109"]
    assert finding.span is not None and finding.span.line == text.count("\n")


def test_a_kafka_changelog_in_flinks_option_names_is_a_changelog():
    text = (
        "CREATE STREAM k (id BIGINT, name STRING, city STRING, op STRING METADATA FROM 'op') "
        "WITH ('connector' = 'kafka', 'topic' = 'pg.public.customers', "
        "'properties.bootstrap.servers' = 'broker:9092', 'value.format' = 'debezium-json');\n"
        f"CREATE SINK customers ({COLUMNS}, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ({TARGETS['iceberg']});\n"
        "INSERT INTO customers SELECT id, name, city FROM k;\n"
    )
    (query,) = sqlstream.compile(text, path="/tmp/p.ssql").plan.queries
    flow = json.loads(dict(query.sink.settings)["auto_cdc"])
    assert flow["keys"] == ["id"] and flow["arrival"] is True


def test_an_unknown_column_is_reported_as_such():
    error = _error(_keyed("INSERT INTO customers SELECT id, nme, city FROM rows"))
    assert error.code == "SS205" and "nme" in error.message  # the unknown column
