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
        # more than a function of one change
        (
            _keyed(
                "INSERT INTO customers SELECT id, name, city FROM changes GROUP BY id, name, city"
            ),
            "SS109",
            "SELECT id, name, city FROM changes GROUP",
        ),
        (
            _keyed(
                "INSERT INTO customers SELECT c.id, c.name, r.city FROM changes c "
                "JOIN rows r ON c.id = r.id"
            ),
            "SS109",
            "changes c JOIN",
        ),
        (
            _keyed("INSERT INTO customers SELECT id, name, uuid() AS city FROM changes"),
            "SS109",
            "uuid()",
        ),
        (
            _keyed("INSERT INTO customers SELECT id, name, city FROM changes WHERE rand() > 0.5"),
            "SS109",
            "rand()",
        ),
        (
            _keyed(
                "INSERT INTO customers SELECT id, name, CAST(current_timestamp() AS STRING) "
                "AS city FROM changes"
            ),
            "SS109",
            "current_timestamp()",
        ),
        (
            _keyed("INSERT INTO customers SELECT DISTINCT id, name, city FROM changes"),
            "SS109",
            "changes;",
        ),
        (
            _keyed(
                "INSERT INTO customers SELECT id, name, city FROM changes "
                "WHERE id IN (SELECT id FROM rows)"
            ),
            "SS109",
            "changes WHERE id IN",
        ),
        (
            _keyed(
                "INSERT INTO customers SELECT id, name, city FROM TUMBLE(TABLE changes, "
                "DESCRIPTOR(at), INTERVAL '1' HOUR)"
            ).replace("'source.lsn'", "'source.lsn', at TIMESTAMP METADATA FROM 'ts_ms'"),
            "SS109",
            "SELECT id, name, city FROM TUMBLE",
        ),
        (
            _keyed(
                "INSERT INTO customers SELECT id, name, explode(array(city)) AS city FROM changes"
            ),
            "SS109",
            "explode(",
        ),
        # a computed key; a key cast that could merge two keys
        (
            _keyed("INSERT INTO customers SELECT id + 1 AS id, name, city FROM changes"),
            "SS109",
            "id + 1 AS id",
        ),
        (
            _keyed("INSERT INTO customers SELECT id, name, city FROM changes").replace(
                "id BIGINT, name STRING, city STRING, PRIMARY",
                "id INT, name STRING, city STRING, PRIMARY",
            ),
            "SS109",
            "id, name, city FROM changes;",
        ),
        # a type the sink's declared column cannot take (Spark's ANSI store assignment)
        (
            _keyed("INSERT INTO customers SELECT id, name, city FROM changes").replace(
                "city STRING, PRIMARY", "city BIGINT, PRIMARY"
            ),
            "SS225",
            "city FROM changes;",
        ),
        (
            _keyed("INSERT INTO customers SELECT id, name, id > 3 AS city FROM changes").replace(
                "city STRING, PRIMARY", "city INT, PRIMARY"
            ),
            "SS225",
            "id > 3 AS city",
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


COMPUTED = (
    "INSERT INTO customers SELECT c.id AS customer_id, upper(name) AS name, city, score "
    "FROM changes c WHERE city <> 'Oslo'"
)
SCORED = STREAMS.replace("city STRING,\n    op", "city STRING, score INT,\n    op")
SCORED_SINK = (
    "customer_id BIGINT, name STRING, city STRING, score DOUBLE, "
    "PRIMARY KEY (customer_id) NOT ENFORCED"
)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_filter_and_expressions_print_the_auto_cdc_flow_over_a_view(target):
    """The golden of WHERE and expressions: the INSERT is translated to the very program of
    the AUTO CDC flow over a hand-written view of one row per change (its WHERE in the
    delete condition, a renamed key, the declared types as CASTs), line for line."""
    flink = (
        SCORED + f"CREATE SINK customers ({SCORED_SINK}) WITH ({TARGETS[target]});\n{COMPUTED};\n"
    )
    view = (
        "SELECT c.id AS `customer_id`, upper(name) AS `name`, city AS `city`, "
        "CAST(score AS DOUBLE) AS `score`, "
        "(`op` = 'd' OR NOT COALESCE((city <> 'Oslo'), FALSE)) AS `__sqlstream_delete`, "
        "`seq` AS `__sqlstream_sequence` FROM changes AS c"
    )
    auto = (
        SCORED + f"CREATE SINK customers WITH ({TARGETS[target]});\n"
        f"CREATE VIEW __customers_changes AS {view}; "
        "CREATE FLOW customers AS AUTO CDC INTO customers FROM STREAM(__customers_changes) "
        "KEYS (customer_id) APPLY AS DELETE WHEN `__sqlstream_delete` "
        "SEQUENCE BY `__sqlstream_sequence` COLUMNS customer_id, name, city, score "
        "STORED AS SCD TYPE 1;\n"
    )
    printed = sqlstream.translate(flink, path="/tmp/p.ssql")
    assert printed == sqlstream.translate(auto, path="/tmp/p.ssql")
    assert "NOT COALESCE((city <> 'Oslo'), FALSE)) AS `__sqlstream_delete`" in printed
    assert "c.id AS `customer_id`" in printed and "CAST(score AS DOUBLE)" in printed
    assert "keys=['customer_id'], columns=['customer_id', 'name', 'city', 'score']" in printed


def test_a_filter_alone_is_a_delete_condition_sequenced_like_any_change():
    pipeline = sqlstream.compile(
        _keyed("INSERT INTO customers SELECT id, name, city FROM changes WHERE id > 0"),
        path="/tmp/p.ssql",
    )
    (view,) = [r for r in pipeline.plan.relations if r.name == "__customers_changes"]
    assert view.sql == (
        "SELECT id AS `id`, name AS `name`, city AS `city`, "
        "(`op` = 'd' OR NOT COALESCE((id > 0), FALSE)) AS `__sqlstream_delete`, "
        "`seq` AS `__sqlstream_sequence` FROM changes"
    )
    (query,) = pipeline.plan.queries
    assert "FROM `__customers_changes`" in query.sql
    assert "(`__sqlstream_sequence`) AS `__sqlstream_sequence`" in query.sql


def test_without_a_log_position_a_filtered_view_is_ordered_by_arrival():
    text = _keyed("INSERT INTO customers SELECT id, lower(name) AS name, city FROM unordered")
    pipeline = sqlstream.compile(text, path="/tmp/p.ssql")
    (view,) = [r for r in pipeline.plan.relations if r.name == "__customers_changes"]
    assert "__sqlstream_sequence" not in view.sql
    (query,) = pipeline.plan.queries
    assert json.loads(dict(query.sink.settings)["auto_cdc"])["arrival"] is True


def test_a_plain_projection_reads_the_stream_itself():
    pipeline = sqlstream.compile(
        _keyed("INSERT INTO customers SELECT * EXCEPT (op, seq) FROM changes"), path="/tmp/p.ssql"
    )
    assert [r.name for r in pipeline.plan.relations] == [
        "changes",
        "unordered",
        "no_op",
        "rows",
        "renamed",
    ]


def test_a_type_refused_names_both_types():
    error = _error(
        _keyed("INSERT INTO customers SELECT id, name, city FROM changes").replace(
            "city STRING, PRIMARY", "city BIGINT, PRIMARY"
        )
    )
    assert error.code == "SS225"
    assert "STRING" in error.message and "BIGINT" in error.message


def test_an_upsert_writes_the_declared_types():
    """From a query that is not a changelog, too: widened by CASTs around the query (its
    text kept), or SS225 at the select item."""
    text = STREAMS + (
        "CREATE SINK customers (id BIGINT, name STRING, n DOUBLE, PRIMARY KEY (id) NOT ENFORCED) "
        f"WITH ({TARGETS['delta']});\n"
        "INSERT INTO customers SELECT id, name, length(city) AS n FROM rows;\n"
    )
    (query,) = sqlstream.compile(text, path="/tmp/p.ssql").plan.queries
    assert query.sql == (
        "SELECT `id`, `name`, CAST(`n` AS DOUBLE) AS `n` FROM (SELECT id, name, LENGTH(city) "
        "AS n FROM rows) AS `__sqlstream_typed`"
    )
    assert query.columns == (("id", "BIGINT"), ("name", "STRING"), ("n", "DOUBLE"))
    refused = text.replace("n DOUBLE", "n DATE")
    error = _error(refused)
    assert error.code == "SS225" and error.span is not None
    assert refused[error.span.start :].startswith("length(city) AS n")
