"""Golden tests for :mod:`sqlstream.sql.rewrite` (no Spark).

Each ``tests/fixtures/rewrite/*.sql`` holds a query, a line ``-- expected:`` and the expected
output: the Spark SQL of the rewrite, or ``ERROR <code> [start:end] '<text>': <message>``
(offsets within the query text, end exclusive). Every rewrite shape was run on Spark 4.1
(see the docstring of :mod:`sqlstream.sql.rewrite`); these tests pin the generated text.

Regenerate after an intended change, then review the diff like code::

    SQLSTREAM_UPDATE_GOLDEN=1 python -m pytest tests/sql/test_rewrite.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlglot import exp

from sqlstream.diagnostics.errors import SemanticError, SqlSyntaxError
from sqlstream.sql.parsing import parse_query, to_spark_sql
from sqlstream.sql.rewrite import REWRITES, relation_names, rewrite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rewrite"
MARKER = "-- expected:"
UPDATE = os.environ.get("SQLSTREAM_UPDATE_GOLDEN") == "1"


def _render(sql: str) -> str:
    try:
        return to_spark_sql(rewrite(parse_query(sql)))
    except (SemanticError, SqlSyntaxError) as error:
        start, end = error.offset_start, error.offset_end
        return f"ERROR {error.code} [{start}:{end}] {sql[start:end]!r}: {error.message}"


def _cases() -> list[Path]:
    return sorted(FIXTURES.glob("*.sql"))


@pytest.mark.parametrize("path", _cases(), ids=lambda p: p.stem)
def test_golden(path: Path) -> None:
    text = path.read_text()
    query, _, expected = text.partition(f"\n{MARKER}\n")
    assert _, f"{path.name}: no '{MARKER}' line"
    actual = _render(query)
    if UPDATE:
        path.write_text(f"{query}\n{MARKER}\n{actual}\n")
        return
    assert actual == expected.strip()


def test_fixture_count() -> None:
    assert len(_cases()) >= 15


def test_rewritten_sql_reparses_to_the_same_tree() -> None:
    for path in _cases():
        query = path.read_text().partition(f"\n{MARKER}\n")[0]
        try:
            out = to_spark_sql(rewrite(parse_query(query)))
        except (SemanticError, SqlSyntaxError):
            continue
        assert to_spark_sql(parse_query(out)) == out, path.name


def test_rewrite_copies_by_default() -> None:
    tree = parse_query("SELECT * FROM TUMBLE(ev, ts, '1 minute')")
    before = to_spark_sql(tree)
    rewrite(tree)
    assert to_spark_sql(tree) == before
    rewrite(tree, copy=False)
    assert to_spark_sql(tree) != before


def test_rewrites_are_an_ordered_tuple_of_functions() -> None:
    assert isinstance(REWRITES, tuple) and all(callable(step) for step in REWRITES)


def test_error_offsets_point_at_the_tvf() -> None:
    sql = "SELECT *\nFROM SESSION(ev, ts, INTERVAL '5' MINUTES) AS s"
    with pytest.raises(SemanticError) as info:
        rewrite(parse_query(sql))
    error = info.value
    assert sql[error.offset_start : error.offset_end] == "SESSION(ev, ts, INTERVAL '5' MINUTES)"
    assert error.span is None and error.code == "SS203"
    assert "GROUP BY window_start, window_end" in error.message


def test_no_tvf_leaves_query_unchanged() -> None:
    sql = "SELECT k, COUNT(*) AS n FROM ev WHERE v > 1 GROUP BY k"
    assert (
        to_spark_sql(rewrite(parse_query(sql)))
        == "SELECT k, COUNT(*) AS n FROM ev WHERE v > 1 GROUP BY k"
    )


def test_no_window_tvf_nodes_survive() -> None:
    from sqlstream.sql.dialect import WindowTVF

    for path in _cases():
        query = path.read_text().partition(f"\n{MARKER}\n")[0]
        try:
            tree = rewrite(parse_query(query))
        except (SemanticError, SqlSyntaxError):
            continue
        assert not list(tree.find_all(WindowTVF)), path.name
        assert not any(t.args.get("stream") for t in tree.find_all(exp.Table)), path.name


# --- relation_names ---------------------------------------------------------------------


def _names(sql: str) -> list[tuple[str, str]]:
    return [(name, sql[start:end]) for name, start, end in relation_names(parse_query(sql))]


def test_relation_names_simple_join() -> None:
    assert _names("SELECT * FROM flights AS f JOIN airlines a ON f.c = a.c") == [
        ("flights", "flights"),
        ("airlines", "airlines"),
    ]


def test_relation_names_inside_tvfs_subqueries_and_stream() -> None:
    sql = (
        "SELECT * FROM TUMBLE(TABLE clicks, DESCRIPTOR(ts), '1 minute') AS w "
        "JOIN (SELECT * FROM STREAM(users) WHERE x IN (SELECT id FROM banned)) u ON w.u = u.id"
    )
    assert [name for name, _ in _names(sql)] == ["clicks", "users", "banned"]


def test_relation_names_excludes_ctes_but_not_shadowed_sources() -> None:
    sql = (
        "WITH flights AS (SELECT * FROM flights WHERE d > 0), late AS (SELECT * FROM flights) "
        "SELECT * FROM late JOIN airlines ON late.c = airlines.c"
    )
    names = relation_names(parse_query(sql))
    # the first CTE reads the real `flights`; `late` reads the CTE; the body reads the CTE `late`
    assert [n for n, _, _ in names] == ["flights", "airlines"]
    assert (
        sql[names[0][1] : names[0][2]] == "flights" and names[0][1] == sql.index("FROM flights") + 5
    )


def test_relation_names_dotted_and_table_functions() -> None:
    assert [n for n, _, _ in relation_names(parse_query("SELECT * FROM db.t, range(10)"))] == [
        "db.t"
    ]


def test_relation_names_watermark_clause() -> None:
    sql = "SELECT * FROM clicks WATERMARK ts DELAY OF INTERVAL 10 MINUTES AS c"
    assert _names(sql) == [("clicks", "clicks")]


def test_lookup_join_without_from_is_a_positioned_finding():
    """``SELECT 1 JOIN t FOR SYSTEM_TIME AS OF …`` (found by the fuzzer): no left side to
    look up from is SS335 at the join's table, not an internal error."""
    import sqlstream

    findings = sqlstream.check(
        "CREATE STREAM s (a INT, ts TIMESTAMP) WITH (connector = 'rate');\n"
        "CREATE TABLE t (a INT) WITH (connector = 'files', path = 'x', format = 'json');\n"
        "SELECT 1 JOIN t FOR SYSTEM_TIME AS OF s.ts ON s.a = t.a;\n",
        path="p.ssql",
    )
    rendered = [f.render() for f in findings]
    assert any(
        r.startswith(
            "p.ssql:3:15: SS335 a lookup join (FOR SYSTEM_TIME AS OF) needs a stream on its left"
        )
        for r in rendered
    ), rendered
