"""The fast path of :func:`sqlstream.schema.expression_type` (plain scalar expressions, no
qualify) gives exactly what the full path gives: the same type and the same findings at
the same offsets; expressions outside its reach take the full path."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sqlstream import schema as S
from sqlstream.dialect import parse_expression

ROW = (("a", "INT"), ("b", "STRING"), ("ts", "TIMESTAMP"), ("d", "DECIMAL(10, 2)"),
       ("x", "DOUBLE"), ("flag", "BOOLEAN"), ("day", "DATE"), ("big", "BIGINT"),
       ("s", "STRUCT<f: INT, g: STRING>"), ("arr", "ARRAY<INT>"), ("m", "MAP<STRING, INT>"))

SIMPLE = [
    "a * 2", "A + 1", "`a` - big", "a / 2", "d * 3", "d + x", "x > 1.5", "flag AND a > 1",
    "upper(b)", "concat(b, '-', CAST(a AS STRING))", "CAST(b AS INT)", "length(b) + a",
    "CASE WHEN a > 1 THEN 'x' ELSE b END", "coalesce(a, big)", "ts + INTERVAL 1 HOUR",
    "ts + 1", "ts - a", "date_trunc('HOUR', ts)", "to_date(ts)", "day + 1", "hour(ts)",
    "no_such_function(a)", "abs(d)", "a IN (1, 2, 3)", "b LIKE 'x%'", "a BETWEEN 1 AND 3",
    "NOT flag", "-a", "a % 7", "timestamp_seconds(big)", "unix_timestamp(ts)",
    "element_at(arr, 1)", "size(arr)", "m['k']", "arr[0]", "nvl(b, 'none')", "round(x, 2)",
]
FULL_ONLY = ["s.f", "sum(a)", "count(*)", "(SELECT 1)", "transform(arr, v -> v + 1)",
             "nosuch + 1", "row_number() OVER (ORDER BY a)", "window(ts, '1 hour')", "t.a"]


def _full(tree, sql):
    query = exp.Select(expressions=[tree.copy()]).from_(exp.Table(this=exp.to_identifier(S.ROW)))
    result, findings = S._analyze(query, {S.ROW: ROW}, sql)
    return (result[0][1] if result else S.UNKNOWN), _shape(findings)


def _shape(findings):
    return [(f.code, f.message, f.offset_start, f.offset_end) for f in findings]


@pytest.mark.parametrize("sql", SIMPLE)
def test_fast_path_agrees_with_full_path(sql):
    tree = parse_expression(sql)
    fast = S._simple_expression_type(tree, ROW, sql)
    assert fast is not None, "expected the fast path to apply"
    assert (fast[0], _shape(fast[1])) == _full(tree, sql)


@pytest.mark.parametrize("sql", FULL_ONLY)
def test_other_expressions_take_the_full_path(sql):
    assert S._simple_expression_type(parse_expression(sql), ROW, sql) is None


def test_findings_of_the_fast_path_are_the_users():
    kind, findings = S.expression_type("ts + 1", ROW)
    assert [f.code for f in findings] == ["SS208"]
    kind, findings = S.expression_type("no_such_function(a)", ROW)
    assert [f.code for f in findings] == ["SS206"]
