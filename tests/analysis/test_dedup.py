"""Deduplication (docs/dialect.md#deduplication): which queries :mod:`sqlstream.analysis.dedup` recognises, how the
compiler splits them (input view, ``Deduplicate`` step, the query over it), what ``check``
judges and what it refuses. No JVM: the Spark side is the check corpus (075–081, 204–215)
and ``tests/analysis/test_dedup_spark.py``."""

from __future__ import annotations

import pytest
from sqlglot import exp

import sqlstream
from sqlstream.analysis.dedup import find_deduplication
from sqlstream.analysis.facts import RelationInfo
from sqlstream.ir import plan as p
from sqlstream.ir import spark_versions
from sqlstream.sql.meta import DEDUP_REFUSED
from sqlstream.sql.parsing import parse_query, to_spark_sql
from sqlstream.sql.rewrite import rewrite

HEAD = """CREATE STREAM s (k STRING, v STRING, ts TIMESTAMP) WITH (connector = 'files', path = 's', format = 'json');
CREATE STREAM w (k STRING, v STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
  WITH (connector = 'files', path = 'w', format = 'json');
CREATE TABLE t (k STRING, v STRING, ts TIMESTAMP) WITH (connector = 'files', path = 't', format = 'json');
CREATE SINK out WITH (connector = 'memory');
"""
INFOS = {
    "s": RelationInfo(True),
    "w": RelationInfo(True, frozenset({"ts"})),
    "t": RelationInfo(False),
}


def _plan(body: str) -> p.Plan:
    return sqlstream.compile(HEAD + body).plan


def _steps(plan: p.Plan) -> list:
    return [r for r in plan.relations if not isinstance(r, p.SourceRelation)]


def _codes(body: str) -> set[str]:
    return {f.code for f in sqlstream.check(HEAD + body)}


def _found(sql: str):
    return find_deduplication(rewrite(parse_query(sql)), INFOS, spark_versions.default())


# ---- recognition -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql, spelling, keys",
    [
        ("SELECT DISTINCT k, v FROM s", "SELECT DISTINCT", ()),
        ("SELECT DISTINCT ON (k) * FROM s", "DISTINCT ON", ("k",)),
        ("SELECT DISTINCT ON (k, v) k, v, ts FROM s ORDER BY k, v, ts", "DISTINCT ON", ("k", "v")),
        (
            "SELECT k, v FROM s QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) = 1",
            "QUALIFY",
            ("k",),
        ),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM s) "
            "WHERE rn = 1",
            "ROW_NUMBER",
            ("k",),
        ),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts ASC) AS rn FROM s) "
            "AS x WHERE 1 = rn AND v > 'a'",
            "ROW_NUMBER",
            ("k",),
        ),
        (
            "SELECT k, COUNT(*) FROM (SELECT DISTINCT k, v FROM s) AS d GROUP BY k",
            "SELECT DISTINCT",
            (),
        ),
    ],
)
def test_recognised(sql, spelling, keys):
    found = _found(sql)
    assert found is not None and found.spelling == spelling and found.keys == keys


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT DISTINCT k, v FROM t",  # a table: Spark SQL runs it
        "SELECT DISTINCT k, COUNT(*) AS n FROM s GROUP BY k",  # DISTINCT of an aggregation
        "SELECT DISTINCT k FROM (SELECT k, COUNT(*) AS n FROM s GROUP BY k) AS a",  # dedup after aggregation
        "SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM s",  # no filter: SS314
        "SELECT s.k FROM s JOIN (SELECT DISTINCT ON (k) * FROM t) AS d ON s.k = d.k",
    ],
)
def test_not_a_deduplication(sql):
    assert _found(sql) is None


@pytest.mark.parametrize(
    "sql, why",
    [
        (
            "SELECT k FROM s QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) = 1",
            "last row",
        ),
        ("SELECT DISTINCT ON (k) * FROM s ORDER BY k, ts DESC", "last row"),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM s) WHERE rn <= 3",
            "rn <= 3",
        ),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM s) WHERE rn = 2",
            "rn = 2",
        ),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY lower(k) ORDER BY ts) AS rn FROM s) "
            "WHERE rn = 1",
            "PARTITION BY",
        ),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY ts) AS rn FROM s) WHERE rn = 1",
            "PARTITION BY",
        ),
        (
            "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts, v) AS rn FROM s) "
            "WHERE rn = 1",
            "more than one",
        ),
    ],
)
def test_refused_patterns_are_marked(sql, why):
    tree = rewrite(parse_query(sql))
    assert find_deduplication(tree, INFOS, spark_versions.default()) is None
    (window,) = list(tree.find_all(exp.Window))
    assert why in window.meta[DEDUP_REFUSED]


# ---- the split and the plan --------------------------------------------------------------------


def test_select_distinct_is_drop_duplicates_of_every_column():
    plan = _plan("INSERT INTO out SELECT DISTINCT k, v FROM s WHERE v <> 'x';")
    view, dedup = _steps(plan)
    assert view == p.SqlView(
        "__out_dedup_input",
        "SELECT k, v FROM s WHERE v <> 'x'",
        view.span,
        (("k", "STRING"), ("v", "STRING")),
        view.reads,
    )
    (read,) = view.reads  # the input reads what the body names, where it names it
    assert read.name == "s" and plan.source.text[read.span.start : read.span.end] == "s"
    assert read.span.start > plan.source.text.index("SELECT DISTINCT")
    assert (dedup.name, dedup.input, dedup.keys, dedup.within_watermark) == (
        "__out_dedup",
        "__out_dedup_input",
        (),
        False,
    )
    (query,) = plan.queries
    assert query.sql == "SELECT * FROM __out_dedup"
    assert query.output_mode == "append" and "deduplication" in query.output_mode_reason
    assert query.columns == (("k", "STRING"), ("v", "STRING"))
    (operator,) = query.state.operators
    assert (operator.kind, operator.keys) == ("deduplicate", ("k", "v"))


def test_distinct_on_within_watermark_unless_the_keys_hold_the_event_time():
    plan = _plan("INSERT INTO out SELECT DISTINCT ON (k) * FROM w;")
    view, dedup = _steps(plan)
    assert view.sql == "SELECT * FROM w"
    assert dedup.keys == ("k",) and dedup.within_watermark
    assert plan.queries[0].sql == "SELECT * FROM __out_dedup AS _t"
    assert plan.queries[0].state.operators[0].kind == "deduplicate_within_watermark"
    plan = _plan("INSERT INTO out SELECT DISTINCT ON (k, ts) * FROM w;")
    assert not _steps(plan)[1].within_watermark
    plan = _plan("INSERT INTO out SELECT DISTINCT ON (k) * FROM s;")  # no watermark
    assert not _steps(plan)[1].within_watermark


def test_distinct_on_key_not_selected_is_kept_in_the_input():
    plan = _plan("INSERT INTO out SELECT DISTINCT ON (k) v, ts FROM w;")
    view, dedup = _steps(plan)
    assert [c for c, _ in view.columns] == ["v", "ts", "k"] and dedup.keys == ("k",)
    assert plan.queries[0].columns == (("v", "STRING"), ("ts", "TIMESTAMP"))


def test_flink_pattern_keeps_rn_when_the_query_selects_it():
    plan = _plan(
        "INSERT INTO out SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k "
        "ORDER BY ts) AS rn FROM w) WHERE rn = 1;"
    )
    view, _ = _steps(plan)
    assert view.sql == "SELECT *, 1 AS rn FROM w"
    assert plan.queries[0].sql == "SELECT * FROM __out_dedup"
    assert [c for c, _ in plan.queries[0].columns] == ["k", "v", "ts", "rn"]


@pytest.mark.parametrize(
    "body, relation, owner",
    [
        (
            "CREATE VIEW d AS SELECT DISTINCT k, v, ts FROM w;\nINSERT INTO out SELECT k FROM d;",
            "d",
            "d",
        ),
        # the query of CREATE STREAM … AS SELECT is the view's body: the step is its own
        (
            "CREATE STREAM d WITH (connector = 'memory') AS SELECT k, ts FROM w "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) = 1;",
            "d",
            None,
        ),
    ],
)
def test_views_and_derived_streams(body, relation, owner):
    plan = _plan(body)
    names = [r.name for r in plan.relations]
    assert names.count(f"__{relation}_dedup") == 1  # the steps once, before the view
    assert names.index(f"__{relation}_dedup") < names.index(relation)
    state = plan.queries[0].state
    assert [(o.kind.startswith("deduplicate"), o.relation) for o in state.operators] == [
        (True, owner)
    ]


def test_two_deduplications_in_one_query():
    plan = _plan("INSERT INTO out SELECT DISTINCT k FROM (SELECT DISTINCT ON (k) * FROM w) AS f;")
    assert [r.name for r in _steps(plan)] == [
        "__out_dedup_input",
        "__out_dedup",
        "__out_dedup_2_input",
        "__out_dedup_2",
    ]
    assert plan.queries[0].sql == "SELECT * FROM __out_dedup_2"
    assert len(plan.queries[0].state.operators) == 2


def test_translate_prints_the_deduplication():
    text = sqlstream.translate(HEAD + "INSERT INTO out SELECT DISTINCT ON (k) * FROM w;")
    assert (
        "spark.table('__out_dedup_input').dropDuplicatesWithinWatermark(['k'])"
        ".createOrReplaceTempView('__out_dedup')"
    ) in text


# ---- what check judges -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, codes",
    [
        ("INSERT INTO out SELECT DISTINCT k, v FROM s;", {"SS350"}),  # unbounded state
        ("INSERT INTO out SELECT DISTINCT k, v FROM w EMIT FINAL;", {"SS350"}),  # keys without ts
        ("INSERT INTO out SELECT DISTINCT k, ts FROM w EMIT FINAL;", set()),  # ts among the keys
        (
            "INSERT INTO out SELECT DISTINCT ON (k) * FROM w EMIT CHANGES;",
            set(),
        ),  # within watermark
        ("INSERT INTO out SELECT DISTINCT k FROM s EMIT COMPLETE;", {"SS302", "SS350"}),
        (
            "INSERT INTO out SELECT k FROM w QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) = 1;",
            {"SS325"},
        ),
        (
            "INSERT INTO out SELECT k FROM w QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY v) = 1;",
            {"SS325"},
        ),
        (
            "INSERT INTO out SELECT k, SUM(1) OVER (PARTITION BY k ORDER BY ts) AS n FROM w;",
            {"SS314"},
        ),
    ],
)
def test_check(body, codes):
    assert _codes(body) == codes


def test_refusal_names_the_reason():
    (finding,) = sqlstream.check(
        HEAD + "INSERT INTO out SELECT * FROM (SELECT *, ROW_NUMBER() OVER "
        "(PARTITION BY k ORDER BY ts) AS rn FROM w) WHERE rn <= 3;"
    )
    assert finding.code == "SS325" and "rn <= 3" in finding.message


def test_checked_sql_is_printed_from_the_tree():
    plan = _plan(
        "CREATE VIEW d AS SELECT DISTINCT ON (k) * FROM w;\nINSERT INTO out SELECT k FROM d;"
    )
    for relation in plan.relations:
        if isinstance(relation, p.SqlView):
            assert to_spark_sql(parse_query(relation.sql)) == relation.sql


def test_step_names_are_unique_identifiers():
    plan = _plan(
        "CREATE VIEW out AS SELECT DISTINCT k FROM s;\n"
        "CREATE SINK x WITH (connector = 'memory', query_name = 'my-query');\n"
        "INSERT INTO out SELECT DISTINCT k FROM out;\n"
        "INSERT INTO x SELECT DISTINCT ON (k) * FROM s;"
    )
    names = [r.name for r in _steps(plan) if isinstance(r, p.Deduplicate)]
    assert names == ["__out_dedup", "__out_dedup_2", "__my_query_dedup"]
