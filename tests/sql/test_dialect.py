"""Unit tests for :mod:`sqlstream.sql.dialect` (no Spark).

The round-trip queries below were also run on Spark 4.1, original against regenerated
text, on batch views (same rows, same column names) and on streaming views (analysis).
"""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from sqlstream.diagnostics.errors import SqlSyntaxError
from sqlstream.sql.dialect import SqlStream, Watermark, WindowTVF
from sqlstream.sql.parsing import (
    node_offsets,
    parse_expression,
    parse_query,
    to_spark_sql,
    watermark_of,
)
from tests.conftest import PROGRAMS, program_variables


def roundtrip(sql: str) -> str:
    return to_spark_sql(parse_query(sql))


# --- gap 1: GROUP BY window(...) ---------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*) FROM t GROUP BY window(ts, '5 minutes'), origin",
        "SELECT COUNT(*) FROM t GROUP BY origin, window(ts, '5 minutes')",
        "SELECT COUNT(*) FROM t GROUP BY session_window(ts, '5 minutes'), origin",
        "SELECT COUNT(*) FROM t GROUP BY window(ts, '10 minutes', '5 minutes')",
    ],
)
def test_group_by_window_function(sql: str) -> None:
    tree = parse_query(sql)
    keys = tree.args["group"].expressions
    assert any(
        isinstance(k, exp.Anonymous) and k.name.lower() in ("window", "session_window")
        for k in keys
    )
    assert roundtrip(sql) == sql


def test_named_window_clause_still_parses() -> None:
    sql = "SELECT a, SUM(b) OVER w FROM t GROUP BY a WINDOW w AS (PARTITION BY a)"
    tree = parse_query(sql)
    assert tree.args["windows"][0].name == "w"
    assert roundtrip(sql) == sql


def test_window_struct_fields_in_select() -> None:
    sql = (
        "SELECT window.start, window.end, window_time(window) FROM t GROUP BY window(ts, '1 hour')"
    )
    assert roundtrip(sql) == sql


# --- gap 2: FROM STREAM t ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM STREAM t", "SELECT * FROM t"),
        ("SELECT * FROM STREAM(t)", "SELECT * FROM t"),
        ("SELECT * FROM STREAM(t) AS x", "SELECT * FROM t AS x"),
        (
            "SELECT * FROM STREAM t x JOIN STREAM(u) AS y ON x.a = y.a",
            "SELECT * FROM t AS x JOIN u AS y ON x.a = y.a",
        ),
    ],
)
def test_stream_read(sql: str, expected: str) -> None:
    tree = parse_query(sql)
    tables = list(tree.find_all(exp.Table))
    assert all(table.args.get("stream") for table in tables)
    assert tables[0].name == "t"
    assert to_spark_sql(tree) == expected


def test_table_named_stream_is_still_a_table() -> None:
    for sql in ("SELECT * FROM stream", "SELECT * FROM stream AS s"):
        table = parse_query(sql).find(exp.Table)
        assert table.name == "stream" and not table.args.get("stream")


# --- gap 3: WATERMARK col DELAY OF interval -------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT * FROM clicks WATERMARK click_time DELAY OF INTERVAL 10 MINUTES AS c",
            "SELECT * FROM clicks WATERMARK click_time DELAY OF INTERVAL '10' MINUTES AS c",
        ),
        (
            "SELECT * FROM clicks WATERMARK click_time DELAY OF INTERVAL '10' MINUTES",
            None,
        ),
        (
            "SELECT * FROM clicks WATERMARK click_time DELAY OF INTERVAL '10' MINUTES c WHERE c.x > 1",
            "SELECT * FROM clicks WATERMARK click_time DELAY OF INTERVAL '10' MINUTES AS c WHERE c.x > 1",
        ),
        ("SELECT * FROM (SELECT * FROM x) WATERMARK ts DELAY OF INTERVAL '1' HOUR AS s", None),
        ("SELECT * FROM (SELECT * FROM x) WATERMARK ts DELAY OF INTERVAL '1' HOUR", None),
        (
            "SELECT * FROM STREAM t WATERMARK ts DELAY OF INTERVAL '1' HOUR AS x",
            "SELECT * FROM t WATERMARK ts DELAY OF INTERVAL '1' HOUR AS x",
        ),
    ],
)
def test_watermark_clause(sql: str, expected: str | None) -> None:
    tree = parse_query(sql)
    relation = tree.args["from_"].this
    assert isinstance(relation.args["watermark"], Watermark)
    assert watermark_of(relation)[0] in ("click_time", "ts")
    assert isinstance(watermark_of(relation)[1], exp.Interval)
    out = to_spark_sql(tree)
    assert out == (expected or sql)
    assert roundtrip(out) == out


def test_watermark_on_joined_relations_and_named_expression() -> None:
    sql = (
        "SELECT * FROM a WATERMARK CAST(s AS TIMESTAMP) AS ts DELAY OF INTERVAL '1' HOUR AS x "
        "JOIN b WATERMARK ts DELAY OF INTERVAL '5' SECONDS AS y ON x.k = y.k"
    )
    tree = parse_query(sql)
    marks = [watermark_of(t) for t in tree.find_all(exp.Table)]
    assert [(name, delay.sql("spark")) for name, delay in marks] == [
        ("ts", "INTERVAL '1' HOUR"),
        ("ts", "INTERVAL '5' SECONDS"),
    ]
    assert roundtrip(sql) == sql


def test_watermark_positions() -> None:
    sql = "SELECT * FROM clicks WATERMARK ts DELAY OF INTERVAL '10' MINUTES AS c"
    watermark = parse_query(sql).find(Watermark)
    start, end = node_offsets(watermark)
    assert sql[start:end] == "WATERMARK ts DELAY OF INTERVAL '10' MINUTES"


def test_watermark_as_alias_name_still_works() -> None:
    assert roundtrip("SELECT * FROM clicks watermark WHERE watermark.a = 1") == (
        "SELECT * FROM clicks AS watermark WHERE watermark.a = 1"
    )
    assert watermark_of(parse_query("SELECT * FROM clicks").find(exp.Table)) is None


@pytest.mark.parametrize(
    ("sql", "at"),
    [
        ("SELECT * FROM t WATERMARK ts DELAY INTERVAL 1 HOUR", "INTERVAL"),
        ("SELECT * FROM t WATERMARK ts DELAY OF 5", "5"),
        ("SELECT * FROM t AS x WATERMARK ts DELAY OF INTERVAL 1 HOUR", "WATERMARK"),
    ],
)
def test_watermark_errors(sql: str, at: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_query(sql)
    assert sql[info.value.offset_start : info.value.offset_end] == at


# --- gap 4: window TVFs ------------------------------------------------------------------

TUMBLE_SPELLINGS = [
    "SELECT * FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR) AS w",
    "SELECT * FROM TUMBLE(TABLE flights, DESCRIPTOR(time_hour), INTERVAL '1' HOUR) AS w",
    "SELECT * FROM TABLE(TUMBLE(TABLE flights, DESCRIPTOR(time_hour), INTERVAL '1' HOUR)) w",
    "SELECT * FROM TUMBLE(DATA => TABLE flights, TIMECOL => DESCRIPTOR(time_hour), SIZE => INTERVAL '1' HOUR) AS w",
    "SELECT * FROM tumble(flights, DESCRIPTOR(time_hour), SIZE => INTERVAL '1' HOUR) AS w",
]


@pytest.mark.parametrize("sql", TUMBLE_SPELLINGS)
def test_tumble_spellings_parse_to_one_node(sql: str) -> None:
    tvf = parse_query(sql).find(WindowTVF)
    assert tvf.kind == "TUMBLE"
    assert tvf.this.name == "flights" and tvf.args["time_column"].name == "time_hour"
    assert tvf.args["size"].sql("spark") == "INTERVAL '1' HOUR"
    assert tvf.alias == "w"
    start, end = node_offsets(tvf)
    assert sql[start:end].upper().startswith(("TUMBLE(", "TABLE(TUMBLE("))
    assert sql[end - 1] == ")"
    expected = "SELECT * FROM TUMBLE(TABLE flights, DESCRIPTOR(time_hour), INTERVAL '1' HOUR) AS w"
    assert roundtrip(sql) == expected


def test_hop_and_session_arguments() -> None:
    hop = parse_query(
        "SELECT * FROM HOP(t, ts, INTERVAL '5' MINUTES, INTERVAL '1' HOUR, INTERVAL '1' MINUTE)"
    ).find(WindowTVF)
    assert [hop.args[k].sql("spark") for k in ("slide", "size", "offset")] == [
        "INTERVAL '5' MINUTES",
        "INTERVAL '1' HOUR",
        "INTERVAL '1' MINUTE",
    ]
    session = parse_query(
        "SELECT * FROM SESSION(TABLE t PARTITION BY (k, j), DESCRIPTOR(ts), "
        "CASE WHEN k = 1 THEN INTERVAL '1' MINUTE ELSE INTERVAL '5' MINUTES END)"
    ).find(WindowTVF)
    assert session.kind == "SESSION" and isinstance(session.args["gap"], exp.Case)
    assert [c.name for c in session.args["partition_by"]] == ["k", "j"]


def test_tvf_over_subquery_and_in_join() -> None:
    sql = (
        "SELECT * FROM HOP((SELECT * FROM f WHERE x > 1), DESCRIPTOR(ts), INTERVAL '5' MINUTES, "
        "INTERVAL '1' HOUR) AS h JOIN b ON h.k = b.k"
    )
    tvf = parse_query(sql).find(WindowTVF)
    assert isinstance(tvf.this, exp.Subquery)
    assert roundtrip(sql) == sql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM SESSION(TABLE flights PARTITION BY origin, DESCRIPTOR(time_hour), INTERVAL '5' MINUTES)",
        "SELECT * FROM SESSION(TABLE flights PARTITION BY (origin, dest), DESCRIPTOR(time_hour), INTERVAL '5' MINUTES) AS s",
    ],
)
def test_tvf_generation_is_stable(sql: str) -> None:
    assert roundtrip(sql) == sql


@pytest.mark.parametrize(
    ("sql", "message", "at"),
    [
        ("SELECT * FROM TUMBLE(flights, time_hour)", "Too few arguments", "TUMBLE"),
        (
            "SELECT * FROM HOP(f, ts, '1 hour', '2 hours', '3 hours', '4')",
            "Too many arguments",
            "HOP",
        ),
        (
            "SELECT * FROM TUMBLE(TABLE f PARTITION BY a, DESCRIPTOR(ts), '1 hour')",
            "only allowed in SESSION",
            "PARTITION BY",
        ),
        ("SELECT * FROM TUMBLE(f, ts + 1, '1 hour')", "must be a column name", "TUMBLE"),
    ],
)
def test_tvf_syntax_errors(sql: str, message: str, at: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_query(sql)
    assert message in info.value.message
    assert sql[info.value.offset_start : info.value.offset_end] == at


# --- entry points, errors, registration --------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "at"),
    [
        ("SELECT * FROM x WHERE (a", "a"),
        ("SELECT a FROM t\nWHERE b = = 1", "="),
        ("SELECT COUNT(*) FROM t GROUP BY window(ts, '5 minutes' origin", "origin"),
        ("SELECT a FROM t\n  WHERE (bb", "bb"),
    ],
)
def test_syntax_error_offsets(sql: str, at: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_query(sql)
    error = info.value
    assert error.span is None and error.code == "SS102"
    assert sql[error.offset_start : error.offset_end] == at


def test_tokenizer_error_and_statement_count() -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_query("SELECT 'abc")
    assert 0 <= info.value.offset_start < info.value.offset_end <= len("SELECT 'abc")
    with pytest.raises(SqlSyntaxError, match="one statement"):
        parse_query("SELECT 1; SELECT 2")
    assert to_spark_sql(parse_query("SELECT 1;")) == "SELECT 1"


def test_parse_expression() -> None:
    assert (
        to_spark_sql(parse_expression("time_hour - INTERVAL '1' HOUR"))
        == "time_hour - INTERVAL '1' HOUR"
    )
    assert isinstance(parse_expression("dep_delay > 15"), exp.GT)
    with pytest.raises(SqlSyntaxError) as info:
        parse_expression("a + ")
    assert info.value.offset_end <= len("a + ") + 1


def test_to_spark_sql_is_one_line_without_comments() -> None:
    sql = "SELECT a, -- first\n  /* second\n  line */ b\nFROM t"
    assert to_spark_sql(parse_query(sql)) == "SELECT a, b FROM t"


def test_dialect_is_registered_without_touching_spark() -> None:
    assert isinstance(sqlglot.Dialect.get_or_raise("sqlstream"), SqlStream)
    assert (
        sqlglot.parse_one("SELECT * FROM STREAM(t)", read="sqlstream").find(exp.Table).name == "t"
    )
    # Spark's own dialect is unchanged: STREAM is still a table name there
    assert (
        sqlglot.parse_one("SELECT * FROM STREAM t", read="spark").find(exp.Table).name == "STREAM"
    )
    with pytest.raises(sqlglot.errors.ParseError):
        sqlglot.parse_one("SELECT 1 FROM t GROUP BY window(ts, '5 minutes')", read="spark")


# --- plain Spark SQL round trips ----------------------------------------------------------

# (input, expected output or None when unchanged). Verified on Spark 4.1: same rows and columns.
ROUND_TRIPS = [
    (
        "SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 HOUR",
        "SELECT a.k, a.v, b.w FROM a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR",
    ),
    (
        "SELECT a.k, b.w FROM a LEFT OUTER JOIN b ON a.k = b.k AND b.ts >= a.ts AND b.ts <= a.ts + INTERVAL '10' MINUTE",
        None,
    ),
    (
        "SELECT window(ts, '10 minutes', '5 minutes') AS w, COUNT(*) AS n FROM a GROUP BY window(ts, '10 minutes', '5 minutes')",
        None,
    ),
    (
        "SELECT k, session_window.start AS s, COUNT(*) AS n FROM a GROUP BY k, session_window(ts, '5 minutes')",
        None,
    ),
    (
        "SELECT k, COUNT(*) AS n FROM a GROUP BY k, session_window(ts, CASE WHEN k = 'x' THEN '5 minutes' ELSE '10 minutes' END)",
        None,
    ),
    (
        "SELECT window.start AS hour_start, SUM(cnt) AS total FROM (SELECT window_time(window) AS wt, cnt FROM "
        "(SELECT window, COUNT(*) AS cnt FROM a GROUP BY window(ts, '5 minutes'))) GROUP BY window(wt, '1 hour')",
        None,
    ),
    (
        "WITH f AS (SELECT k, v * 2 AS v2, ts FROM a WHERE v > 0), g AS (SELECT k, v2 FROM f WHERE v2 < 100) "
        "SELECT k, SUM(v2) AS total FROM g GROUP BY k",
        None,
    ),
    (
        "SELECT CASE WHEN v > 10 THEN 'big' WHEN v > 5 THEN 'mid' ELSE 'small' END AS size, CASE k WHEN 'x' THEN 1 ELSE 0 END AS isx FROM a",
        None,
    ),
    (
        "SELECT s.x, s.y.z FROM (SELECT named_struct('x', v, 'y', named_struct('z', k)) AS s FROM a)",
        "SELECT s.x, s.y.z FROM (SELECT NAMED_STRUCT('x', v, 'y', NAMED_STRUCT('z', k)) AS s FROM a)",
    ),
    (
        "SELECT from_json(payload, 'a INT, b STRING').a AS a, get_json_object(payload, '$.b') AS b FROM a",
        "SELECT FROM_JSON(payload, 'a INT, b STRING').a AS a, GET_JSON_OBJECT(payload, '$.b') AS b FROM a",
    ),
    (
        "SELECT transform(arr, x -> x + 1) AS t, filter(arr, x -> x > 1) AS f, exists(arr, x -> x = 2) AS e "
        "FROM (SELECT array(v, v + 1) AS arr FROM a)",
        "SELECT TRANSFORM(arr, x -> x + 1) AS t, FILTER(arr, x -> x > 1) AS f, EXISTS(arr, x -> x = 2) AS e "
        "FROM (SELECT ARRAY(v, v + 1) AS arr FROM a)",
    ),
    (
        "SELECT k, v FROM a WHERE ts > TIMESTAMP '2013-01-01 00:00:00'",
        "SELECT k, v FROM a WHERE ts > CAST('2013-01-01 00:00:00' AS TIMESTAMP)",
    ),
    ("SELECT `my col`, `select` FROM (SELECT k AS `my col`, v AS `select` FROM a)", None),
    (
        "SELECT date_format(ts, 'yyyy-MM-dd HH:mm') AS d, date_trunc('hour', ts) AS h FROM a",
        "SELECT DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm') AS d, DATE_TRUNC('hour', ts) AS h FROM a",
    ),
    ("SELECT k, e FROM a LATERAL VIEW EXPLODE(ARRAY(v, v + 1)) t AS e", None),
    (
        "SELECT k, v, ts FROM a WHERE v % 2 = 0 UNION ALL SELECT k, v, ts FROM a WHERE v % 2 = 1",
        None,
    ),
    ("SELECT a.k, s.name FROM a LEFT OUTER JOIN s ON a.k = s.k", None),
]


@pytest.mark.parametrize(
    ("sql", "expected"), ROUND_TRIPS, ids=[f"q{i:02}" for i in range(len(ROUND_TRIPS))]
)
def test_round_trip(sql: str, expected: str | None) -> None:
    out = roundtrip(sql)
    assert out == (expected or sql)
    assert roundtrip(out) == out


def test_find_all_equals_sqlglots_over_every_query():
    """sqlstream's fast ``find_all`` yields what sqlglot's ``Expression.find_all`` yields, in
    the same order, for every query body of the tests and examples and the node types the
    compiler looks for (leaves included)."""
    from sqlstream.diagnostics.errors import SqlStreamError
    from sqlstream.frontend.parser import parse
    from sqlstream.sql.tree_walks import find_all, find_own

    kinds = [
        (exp.Expr,),
        (exp.Table,),
        (exp.Column,),
        (exp.Identifier,),
        (exp.Literal, exp.Select),
        (exp.Join, exp.Subquery),
        (exp.Boolean,),
        (exp.Var, exp.Null),
        (exp.AggFunc,),
        (WindowTVF,),
    ]
    queries = 0
    for path in PROGRAMS:
        text = path.read_text("utf-8-sig")
        try:
            statements = parse(text, program_variables(text)).statements
        except SqlStreamError:
            continue
        for statement in statements:
            text = getattr(statement, "query", None)
            try:
                tree = parse_query(text.text) if text is not None else None
            except SqlStreamError:
                continue
            if tree is None:
                continue
            queries += 1
            for types in kinds:
                assert [id(n) for n in find_all(tree, *types)] == [
                    id(n) for n in tree.find_all(*types)
                ]
            for select in tree.find_all(exp.Select):  # find_own: the nodes of this SELECT only
                for types in ((exp.Window, exp.AggFunc, exp.Func), (exp.Lateral,), (exp.Column,)):
                    assert [id(n) for n in find_own(select, *types)] == [
                        id(n)
                        for n in tree.find_all(*types)
                        if n.find_ancestor(exp.Select) is select
                    ]
    assert queries > 300


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT transform(arr, x -> x + 1) FROM s",
        "SELECT transform(arr, x -> transform(x, y -> y + x.f + a + x.g.h)) FROM s",
        "SELECT filter(m, (k, v) -> k.z > v AND b) FROM s",
        "SELECT aggregate(arr, 0, (acc, x) -> acc + x, acc -> acc * 10) FROM s",
        "SELECT transform(a, x -> transform(b, y -> transform(c, z -> x + y + z + w + exists(d, q -> q = x)))) FROM s",
        "SELECT transform(a, x -> transform(x, y -> x)) FROM s",
        "SELECT struct(a, struct(b AS c)) AS s1, struct(struct(a AS g) AS f) AS s2 FROM s",
        "SELECT CAST(a AS ARRAY<VARCHAR(3)>), CAST(b AS STRUCT<x: CHAR(2), y: MAP<STRING, ARRAY<VARCHAR(1)>>>) FROM s",
    ],
)
def test_linear_time_rewrites_keep_sqlglots_trees_and_text(sql):
    """The dialect's linear-time lambda resolution, struct printing and type parsing give
    sqlglot's Spark trees and SQL (which took time quadratic or exponential in the depth)."""
    import sqlglot

    tree = parse_query(sql)
    assert tree == sqlglot.parse_one(sql, read="spark")
    assert to_spark_sql(tree) == sqlglot.parse_one(sql, read="spark").sql("spark")


def test_nested_named_struct_prints_as_written_in_linear_time():
    """``named_struct`` keeps its spelling (the field names are string literals, as
    written), nested too; printing moves, never copies, so depth costs linear time."""
    sql = "SELECT named_struct('f', named_struct('g', a)) AS s2 FROM s"
    assert (
        to_spark_sql(parse_query(sql))
        == "SELECT NAMED_STRUCT('f', NAMED_STRUCT('g', a)) AS s2 FROM s"
    )
