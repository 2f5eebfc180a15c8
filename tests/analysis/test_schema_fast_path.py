"""The plain path of :mod:`sqlstream.analysis.schema` (``_qualify_plain``: columns qualified here,
without sqlglot's ``qualify``) gives exactly what the full path gives — for computed
columns (:func:`~sqlstream.analysis.schema.expression_type`) and for queries: the same types and
the same findings at the same offsets; anything outside its reach takes the full path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlstream.analysis import schema as S
from sqlstream.api import check_plan
from sqlstream.sql.parsing import parse_expression
from tests.conftest import PROGRAMS, ROOT, program_variables

ROW = (
    ("a", "INT"),
    ("b", "STRING"),
    ("ts", "TIMESTAMP"),
    ("d", "DECIMAL(10, 2)"),
    ("x", "DOUBLE"),
    ("flag", "BOOLEAN"),
    ("day", "DATE"),
    ("big", "BIGINT"),
    ("s", "STRUCT<f: INT, g: STRING>"),
    ("arr", "ARRAY<INT>"),
    ("m", "MAP<STRING, INT>"),
)

SIMPLE = [
    "a * 2",
    "A + 1",
    "`a` - big",
    "a / 2",
    "d * 3",
    "d + x",
    "x > 1.5",
    "flag AND a > 1",
    "upper(b)",
    "concat(b, '-', CAST(a AS STRING))",
    "CAST(b AS INT)",
    "length(b) + a",
    "CASE WHEN a > 1 THEN 'x' ELSE b END",
    "coalesce(a, big)",
    "ts + INTERVAL 1 HOUR",
    "ts + 1",
    "ts - a",
    "date_trunc('HOUR', ts)",
    "to_date(ts)",
    "day + 1",
    "hour(ts)",
    "no_such_function(a)",
    "abs(d)",
    "a IN (1, 2, 3)",
    "b LIKE 'x%'",
    "a BETWEEN 1 AND 3",
    "NOT flag",
    "-a",
    "a % 7",
    "timestamp_seconds(big)",
    "unix_timestamp(ts)",
    "element_at(arr, 1)",
    "size(arr)",
    "m['k']",
    "arr[0]",
    "nvl(b, 'none')",
    "round(x, 2)",
    "sum(a)",
    "count(*)",
    "window(ts, '1 hour')",
    "a + count(*)",
]
FULL_ONLY = [
    "s.f",
    "(SELECT 1)",
    "transform(arr, v -> v + 1)",
    "nosuch + 1",
    "row_number() OVER (ORDER BY a)",
    "t.a",
    "count(s.*)",
]


def _typed(sql, monkeypatch, plain=True):
    """``expression_type`` of ``sql`` over ``ROW`` as ``(type, findings)``, and whether the
    plain path was taken; ``plain=False`` turns that path off (the full path decides)."""
    taken = []
    original = S._qualify_plain
    monkeypatch.setattr(
        S,
        "_qualify_plain",
        (lambda *args: taken.append(original(*args)) or taken[-1])
        if plain
        else (lambda *args: False),
    )
    kind, findings = S.expression_type(parse_expression(sql), ROW, sql)
    monkeypatch.setattr(S, "_qualify_plain", original)
    return (kind, _shape(findings)), any(taken)


def _shape(findings):
    return [(f.code, f.message, f.offset_start, f.offset_end) for f in findings]


@pytest.mark.parametrize("sql", SIMPLE)
def test_fast_path_agrees_with_full_path(sql, monkeypatch):
    fast, taken = _typed(sql, monkeypatch)
    assert taken, "expected the fast path to apply"
    assert fast == _typed(sql, monkeypatch, plain=False)[0]


@pytest.mark.parametrize("sql", FULL_ONLY)
def test_other_expressions_take_the_full_path(sql, monkeypatch):
    assert not _typed(sql, monkeypatch)[1]


def test_findings_of_the_fast_path_are_the_users():
    kind, findings = S.expression_type("ts + 1", ROW)
    assert [f.code for f in findings] == ["SS208"]
    kind, findings = S.expression_type("no_such_function(a)", ROW)
    assert [f.code for f in findings] == ["SS206"]


# ---- queries: SELECT … FROM one relation [WHERE …] without qualify ------------------------


def _outcome(path: Path):
    text = path.read_text(encoding="utf-8")
    findings, plan = check_plan(text, program_variables(text), str(path))
    shown = [(f.code, str(f)) for f in findings]
    if plan is None:
        return shown, None
    return shown, (
        [(q.name, q.sql, q.columns, q.output_mode) for q in plan.queries],
        [(getattr(r, "name", None), getattr(r, "columns", None)) for r in plan.relations],
    )


def test_plain_queries_get_what_qualify_gives(monkeypatch):
    """Every program of the tests and examples (the check corpus included) compiles to the
    same findings, query SQL, columns and output modes with and without the plain-query
    path of :func:`sqlstream.analysis.schema._analyze`, and that path is taken many times."""
    taken = []
    plain = S._qualify_plain

    def counting(*args):
        result = plain(*args)
        taken.append(result)
        return result

    fast = {}
    monkeypatch.setattr(S, "_qualify_plain", counting)
    for path in PROGRAMS:
        fast[path] = _outcome(path)
    monkeypatch.setattr(S, "_qualify_plain", lambda *args: False)
    for path in PROGRAMS:
        assert _outcome(path) == fast[path], path.relative_to(ROOT)
    assert len(PROGRAMS) > 250 and sum(taken) >= 60, (len(PROGRAMS), sum(taken), len(taken))


ROW_STREAM = (
    "CREATE STREAM s (a INT, b STRING, ts TIMESTAMP, A2 DOUBLE, `x y` INT, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
    "WITH (connector = 'files', path = '/tmp/in', format = 'json');\nCREATE SINK o WITH (connector = 'console');\n"
)
PLAIN_OR_NOT = [
    "SELECT b AS a FROM s WHERE a > 1",
    "SELECT a AS b, b FROM s",
    "SELECT s.a, S.b FROM s",
    "SELECT t.a FROM s t",
    "SELECT T.a FROM s AS t WHERE t.b = 'x'",
    "SELECT A, B FROM s",
    "SELECT `a`, `x y` FROM s",
    "SELECT a2, A2 FROM s",
    "SELECT a + 1, upper(b), ts FROM s",
    "SELECT a AS x FROM s WHERE x > 1",
    "SELECT nosuch FROM s",
    "SELECT a FROM s WHERE nosuch(a)",
    "SELECT ts + 1 FROM s",
    "SELECT CAST(a AS STRING) || b AS c FROM s",
    "SELECT a, a FROM s",
    "SELECT a AS `A`, b AS B FROM s",
    "SELECT current_timestamp(), a FROM s",
    "SELECT try_sum(a) FROM s",
    "SELECT every(a > 1) FROM s",
    "SELECT a FROM s WHERE b IN ('x', 'y')",
    "SELECT CASE WHEN a > 1 THEN b END AS c FROM s",
    "SELECT b, ts FROM s WHERE ts > TIMESTAMP '2024-01-01 00:00:00'",
    "SELECT 1 AS one, a FROM s",
    "SELECT a FROM s WHERE a > 1 AND b LIKE 'x%'",
    "SELECT s.* FROM s",
    "SELECT * FROM s",
    "SELECT a, count(*) OVER (PARTITION BY b) FROM s",
    "SELECT window(ts, '1 hour'), a FROM s",
    "SELECT a FROM STREAM s",
    "SELECT a FROM s WATERMARK ts DELAY OF INTERVAL 1 MINUTE",
    # aggregations (the plain path with the grouping check) and what takes the full path
    "SELECT b, count(*) AS n, max(a) FROM s GROUP BY b",
    "SELECT b, a, count(*) FROM s GROUP BY b",
    "SELECT count(*), sum(a) FROM s",
    "SELECT a, count(*) FROM s",
    "SELECT upper(b), count(DISTINCT a) FROM s GROUP BY upper(b)",
    "SELECT window.start, window.end, b, count(*) FROM s GROUP BY window(ts, '10 minutes'), b",
    "SELECT w.start FROM s GROUP BY window(ts, '1 hour')",
    "SELECT window.start, a FROM s GROUP BY window(ts, '1 hour')",
    "SELECT window, count(*) FROM s GROUP BY window(ts, '1 hour')",
    "SELECT b AS k, count(*) FROM s GROUP BY k",
    "SELECT b, count(*) FROM s GROUP BY 1",
    "SELECT b, count(*) FROM s GROUP BY ALL",
    "SELECT b, count(*) FROM s GROUP BY (b)",
    "SELECT b, count(*) FROM s GROUP BY b HAVING count(*) > 1",
    "SELECT b, count(*) FROM s GROUP BY ROLLUP(b)",
    "SELECT a AS b, count(*) FROM s GROUP BY b",
    "SELECT b, sum(a) FILTER (WHERE a > 1) FROM s GROUP BY b",
    "SELECT session_window.start, count(*) FROM s GROUP BY session_window(ts, '5 minutes')",
    "SELECT window_start, b, count(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, b",
    "SELECT t.b, count(*) FROM s AS t GROUP BY t.b",
    "SELECT b, nosuch(a) FROM s GROUP BY b",
    "SELECT ts + 1, count(*) FROM s GROUP BY ts",
    "SELECT b, try_sum(a), every(a > 1) FROM s GROUP BY b",
    # names as Spark resolves them: case and quotes do not matter (no SS209)
    "SELECT b, count(*) FROM s GROUP BY B",
    "SELECT `B`, count(*) FROM s GROUP BY b",
    "SELECT upper(b) AS ub, count(*) FROM s GROUP BY upper(`B`)",
    "SELECT b, A2, count(*) FROM s GROUP BY b, a2",
    "SELECT WINDOW.start, count(*) FROM s GROUP BY window(ts, '1 hour')",
    "SELECT `x y`, count(*) FROM s GROUP BY `X Y`",
    "SELECT a + 1, count(*) FROM s GROUP BY a",
    "SELECT a, count(*) FROM s GROUP BY a + 1",
    "SELECT window(ts, '1 hour'), count(*) FROM s GROUP BY window(ts, '1 hour')",
    "SELECT b, count(*) FROM s t GROUP BY s.b",
    "SELECT window.start, window.end, max(a) FROM s GROUP BY window(ts, '1 hour'), window(ts, '2 hours')",
    "SELECT b, CASE WHEN count(*) > 1 THEN 'many' END FROM s GROUP BY b",
    "SELECT a > 1, count(*) FROM s GROUP BY a > 1",
    "SELECT b, count(*) OVER () FROM s GROUP BY b",
    "SELECT b, count(a) FILTER (WHERE b = 'x') FROM s GROUP BY b",
]


@pytest.mark.parametrize("query", PLAIN_OR_NOT)
def test_one_query_with_and_without_the_plain_path(query, monkeypatch):
    """Aliases shadowing columns, qualifiers in any case, quoted names, unknown names and
    functions, type errors: the same findings and columns either way."""
    path = ROOT / "tests" / "plain_query.ssql"  # not read: the text is given

    def outcome():
        findings, plan = check_plan(ROW_STREAM + f"INSERT INTO o {query};\n", path=str(path))
        return (
            [str(f) for f in findings],
            None if plan is None else [(q.sql, q.columns, q.output_mode) for q in plan.queries],
        )

    fast = outcome()
    monkeypatch.setattr(S, "_qualify_plain", lambda *args: False)
    assert outcome() == fast
