"""Results that depend on arrival order or on the run (docs/dialect.md#deduplication):
``SS361`` at a keep-first deduplication by event time, ``SS362`` at a value that differs from
run to run. No JVM: the Spark side is the check corpus (153, 206, 210, 363-365)."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

HEAD = """CREATE STREAM s (k STRING, v STRING, ts TIMESTAMP, pt AS PROCTIME(),
    WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
  WITH (connector = 'files', path = 's', format = 'json');
CREATE TABLE t (k STRING, v STRING, ts TIMESTAMP) WITH (connector = 'files', path = 't', format = 'json');
CREATE SINK out WITH (connector = 'memory');
"""


def _warnings(body: str) -> list[SqlStreamError]:
    return [f for f in sqlstream.check(HEAD + body) if f.code in ("SS361", "SS362")]


@pytest.mark.parametrize(
    "body, codes",
    [
        # keep-first by event time: the SQL means the earliest row, Spark keeps the first to arrive
        (
            "INSERT INTO out SELECT k, v, ts FROM (SELECT *, ROW_NUMBER() OVER "
            "(PARTITION BY k ORDER BY ts) AS rn FROM s) AS r WHERE rn = 1;",
            ["SS361"],
        ),
        (
            "INSERT INTO out SELECT k, v, ts FROM s "
            "QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) = 1;",
            ["SS361"],
        ),
        # the order column among the keys, or none: the same event whichever arrives first
        (
            "INSERT INTO out SELECT k, v, ts FROM (SELECT *, ROW_NUMBER() OVER "
            "(PARTITION BY k, ts ORDER BY ts) AS rn FROM s) AS r WHERE rn = 1;",
            [],
        ),
        ("INSERT INTO out SELECT DISTINCT ON (k, ts) * FROM s;", []),
        # values that differ from run to run, on the stream and through a view
        ("INSERT INTO out SELECT k, uuid() AS id FROM s;", ["SS362"]),
        ("INSERT INTO out SELECT k, current_timestamp() AS at FROM s;", ["SS362"]),
        ("INSERT INTO out SELECT k, pt FROM s;", ["SS362"]),
        (
            "CREATE VIEW sampled AS SELECT k, rand() AS r FROM s;\n"
            "INSERT INTO out SELECT k FROM sampled WHERE r < 0.5;",
            ["SS362"],
        ),
        # a static relation is read once per micro-batch as a whole: no warning
        (
            "INSERT INTO out SELECT s.k, x.r FROM s JOIN (SELECT k, rand() AS r FROM t) AS x "
            "ON s.k = x.k;",
            [],
        ),
        ("INSERT INTO out SELECT k, v FROM s;", []),
    ],
)
def test_warned(body, codes):
    assert [w.code for w in _warnings(body)] == codes


def test_the_warning_names_the_column_and_points_at_the_call():
    (found,) = _warnings("INSERT INTO out SELECT k, rand() AS a, uuid() AS b FROM s;")
    assert "rand(), uuid() give other values" in found.message
    line = (HEAD + "INSERT").count("\n") + 1
    assert (found.span.line, found.span.column) == (line, len("INSERT INTO out SELECT k, ") + 1)
    (keep_first,) = _warnings(
        "INSERT INTO out SELECT k, v, ts FROM s QUALIFY ROW_NUMBER() OVER "
        "(PARTITION BY k ORDER BY ts) = 1;"
    )
    assert "not the one with the earliest `ts`" in keep_first.message


def test_warnings_do_not_fail_check():
    findings = sqlstream.check(HEAD + "INSERT INTO out SELECT k, rand() AS r FROM s;")
    assert [(f.code, f.severity) for f in findings] == [("SS362", "warning")]
