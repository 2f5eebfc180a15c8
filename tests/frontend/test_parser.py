"""The statement grammar: every statement form of docs/dialect.md (statements, EMIT) → AST."""

from __future__ import annotations

import pytest

from sqlstream.diagnostics.errors import ParseError, SemanticError
from sqlstream.frontend import ast
from sqlstream.frontend.parser import parse
from tests.conftest import PROGRAMS, program_variables

STREAM = """
CREATE STREAM IF NOT EXISTS flights (
    carrier    STRING,
    tags       ARRAY<STRUCT<a: INT, b MAP<STRING, INT>>>,
    amount     DECIMAL(10, 2),
    name       VARCHAR(20),
    at         TIMESTAMP_LTZ(3),
    delayed    AS dep_delay > 15,                       -- computed column
    f2         AS CAST(a AS INT) + coalesce(x, 1),
    src_file   STRING METADATA FROM 'file_path',
    WATERMARK FOR at AS at - INTERVAL '1' HOUR
) WITH (
    connector = 'files', path = 'data/flights', format = 'csv',
    header = true, maxFilesPerTrigger = 1, ratio = 0.5, kafka.bootstrap.servers = 'h:9092',
);
"""


def only(text: str, **kw):
    (statement,) = parse(text, **kw).statements
    return statement


def test_create_stream_columns_watermark_and_options():
    s = only(STREAM)
    assert isinstance(s, ast.CreateStream) and s.if_not_exists and s.query is None
    assert s.name.value == "flights"
    kinds = [(type(c).__name__, c.name.value) for c in s.columns]
    assert kinds == [
        ("ColumnDef", "carrier"),
        ("ColumnDef", "tags"),
        ("ColumnDef", "amount"),
        ("ColumnDef", "name"),
        ("ColumnDef", "at"),
        ("ComputedColumn", "delayed"),
        ("ComputedColumn", "f2"),
        ("MetadataColumn", "src_file"),
    ]
    types = [c.type for c in s.columns if isinstance(c, ast.ColumnDef)]
    assert types == [
        "STRING",
        "ARRAY<STRUCT<`a`: INT, `b`: MAP<STRING, INT>>>",
        "DECIMAL(10, 2)",
        "STRING",
        "TIMESTAMP",
    ]
    assert s.columns[6].expression.text == "CAST(a AS INT) + coalesce(x, 1)"
    assert s.columns[7].key == "file_path"
    assert s.watermark.column.value == "at"
    assert s.watermark.expression.text == "at - INTERVAL '1' HOUR"
    options = {o.key: o.value for o in s.options}
    assert options == {
        "connector": "files",
        "path": "data/flights",
        "format": "csv",
        "header": True,
        "maxFilesPerTrigger": 1,
        "ratio": 0.5,
        "kafka.bootstrap.servers": "h:9092",
    }


def test_spans_are_positions_in_the_file():
    s = only(STREAM, path="f.ssql")
    assert (s.name.span.line, s.name.span.column) == (2, 29)
    delayed = s.columns[5]
    assert (delayed.expression.span.line, delayed.expression.span.column) == (8, 19)


@pytest.mark.parametrize(
    ("text", "mode", "trigger"),
    [
        ("SELECT 1 FROM s", None, None),
        ("SELECT 1 FROM s EMIT CHANGES", "update", None),
        ("SELECT 1 FROM s EMIT FINAL", "append", None),
        ("SELECT 1 FROM s EMIT ON WINDOW CLOSE", "append", None),
        ("SELECT 1 FROM s EMIT COMPLETE", "complete", None),
        ("SELECT 1 FROM s EMIT EVERY INTERVAL '1' MINUTE", None, ("processing_time", "1 minute")),
        (
            "SELECT 1 FROM s EMIT FINAL EVERY INTERVAL 10 SECONDS",
            "append",
            ("processing_time", "10 seconds"),
        ),
        (
            "SELECT 1 FROM s EMIT CHANGES EVERY INTERVAL '2 hours'",
            "update",
            ("processing_time", "2 hours"),
        ),
        ("SELECT 1 FROM s EMIT ONCE", None, ("available_now", None)),
        ("SELECT 1 FROM s emit final available now", "append", ("available_now", None)),
        ("SELECT 1 FROM s EMIT CONTINUOUS", None, ("continuous", "1 second")),
        (
            "SELECT 1 FROM s EMIT CONTINUOUS EVERY INTERVAL '5' SECOND",
            None,
            ("continuous", "5 seconds"),
        ),
        ("SELECT 1 FROM s EMIT CHANGES REAL TIME", "update", ("real_time", "5 minutes")),
        (
            "SELECT 1 FROM s EMIT REAL TIME CHECKPOINT EVERY INTERVAL '5' SECONDS",
            None,
            ("real_time", "5 seconds"),
        ),
        (
            "SELECT 1 FROM s emit changes real time checkpoint every interval '1 minute'",
            "update",
            ("real_time", "1 minute"),
        ),
    ],
)
def test_emit_clauses(text, mode, trigger):
    s = only(text)
    assert isinstance(s, ast.Select) and s.query.text == "SELECT 1 FROM s"
    got_mode = s.emit.output_mode if s.emit else None
    got_trigger = (
        (s.emit.trigger.kind, s.emit.trigger.interval) if s.emit and s.emit.trigger else None
    )
    assert (got_mode, got_trigger) == (mode, trigger)


@pytest.mark.parametrize("interval", ["INTERVAL '4' SECONDS", "INTERVAL '4999' MILLISECONDS"])
def test_real_time_checkpoint_interval_below_spark_minimum(interval):
    """Spark refuses a real-time batch duration under 5 seconds when the query starts
    (``INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL``): refused at the interval."""
    text = f"SELECT 1 FROM s EMIT CHANGES REAL TIME CHECKPOINT EVERY {interval}"
    with pytest.raises(SemanticError) as caught:
        parse(text)
    assert caught.value.code == "SS203"
    assert "shorter than Spark's minimum of 5 seconds" in caught.value.message
    assert caught.value.span.start == text.index("INTERVAL")


def test_query_bodies_end_at_top_level_semicolon_or_emit():
    script = parse(
        "CREATE VIEW v AS SELECT ';' AS a, `emit` FROM t /* ; EMIT */ WHERE f(x, ';');\n"
        "INSERT INTO out WITH c AS (SELECT 1) SELECT * FROM c EMIT ONCE;\n"
        "CREATE SINK k WITH (connector = 'console') AS (SELECT 1) UNION ALL (SELECT 2);\n"
        "CREATE STREAM d WITH (connector = 'memory') AS SELECT * FROM v EMIT CHANGES\n"
    )
    view, insert, sink, derived = script.statements
    assert view.query.text == "SELECT ';' AS a, `emit` FROM t /* ; EMIT */ WHERE f(x, ';')"
    assert insert.sink.value == "out" and insert.query.text.startswith("WITH c AS")
    assert insert.emit.trigger.kind == "available_now"
    assert sink.query.text == "(SELECT 1) UNION ALL (SELECT 2)"
    assert derived.query.text == "SELECT * FROM v" and derived.emit.output_mode == "update"


def test_set_table_and_view_forms():
    script = parse(
        "SET 'spark.sql.shuffle.partitions' = '4';\n"
        "SET spark.sql.session.timeZone = 'UTC';\n"
        "CREATE TABLE airlines (carrier STRING, name STRING) WITH (connector = 'files', "
        "path = 'a.csv', format = 'csv');\n"
        "CREATE OR REPLACE TEMPORARY VIEW v AS SELECT * FROM s;;\n"
    )
    first, second, table, view = script.statements
    assert (first.option.key, first.option.value) == ("spark.sql.shuffle.partitions", "4")
    assert second.option.key == "spark.sql.session.timeZone"
    assert isinstance(table, ast.CreateTable) and len(table.columns) == 2
    assert isinstance(view, ast.CreateView) and view.name.value == "v"


def test_empty_file_and_comments_only():
    assert parse("").statements == ()
    assert parse("-- nothing\n/* at all */\n;").statements == ()


@pytest.mark.parametrize(
    ("text", "error", "message", "column"),
    [
        ("CREATE STREAM x (a INT WITH (connector='rate')", ParseError, "unexpected 'WITH'", 24),
        ("CREATE SINK s;", ParseError, "unexpected ';'; expected '(', WITH", 14),
        ("CREATE VIEW v AS", ParseError, "unexpected end of file", 17),
        ("SELECT 'abc", ParseError, "unterminated string literal", 8),
        (
            "CREATE STREAM x (a STRIN) WITH (connector='rate')",
            SemanticError,
            "unknown type 'STRIN'; did you mean 'STRING'?",
            20,
        ),
        (
            "CREATE STREAM x (a ARRAY<INT, INT>) WITH (connector='rate')",
            SemanticError,
            "ARRAY takes 1 type argument(s)",
            20,
        ),
        (
            "CREATE TABLE t (a TIMESTAMP, WATERMARK FOR a AS a - INTERVAL '1' SECOND) WITH (c=1)",
            SemanticError,
            "cannot have a WATERMARK",
            16,
        ),
        (
            "CREATE STREAM x (a INT) WITH (connector='rate', Connector='x')",
            SemanticError,
            "option 'Connector' is given twice",
            49,
        ),
    ],
)
def test_errors_are_positioned(text, error, message, column):
    with pytest.raises(error) as info:
        parse(text, path="e.ssql")
    assert message in info.value.message
    assert info.value.span.column == column


# ---- spans from tokens (keep_all_tokens) equal Lark's propagate_positions -------------------


def test_punctuation_is_what_lark_drops():
    """The tokens the builder skips are exactly those Lark itself drops from trees, and no
    terminal is both dropped (written as a literal) and kept (used by name)."""
    from lark import Lark

    from sqlstream.frontend import grammar

    plain = Lark(
        grammar.grammar_text(), parser="lalr", lexer="contextual", maybe_placeholders=False
    )
    dropped = {s.name for r in plain.rules for s in r.expansion if s.is_term and s.filter_out}
    named = {s.name for r in plain.rules for s in r.expansion if s.is_term and not s.filter_out}
    assert dropped == grammar.punctuation() and not dropped & named


def test_spans_equal_lark_positions_over_every_program():
    """Every node of every program of the tests and examples: the children the builder
    reads and each node's (start, end) equal what Lark gives with ``propagate_positions``
    and without ``keep_all_tokens`` (how spans were taken before)."""
    import re

    from lark import Lark, Token
    from lark.exceptions import UnexpectedInput

    from sqlstream.diagnostics.source_text import Source
    from sqlstream.frontend import builder, grammar
    from sqlstream.frontend.variables import substitute

    positioned = Lark(
        grammar.grammar_text(),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
    )
    compared = 0
    for path in PROGRAMS:
        text = path.read_text("utf-8-sig")
        environ = {n: "secret" for n in re.findall(r"\$\{env:(\w+)\}", text)}
        text = substitute(Source(text), program_variables(text), environ).text
        try:
            expected = positioned.parse(text)
        except UnexpectedInput:  # a syntax-error fixture
            continue
        pairs = [(expected, grammar.lark_parser().parse(text))]
        while pairs:
            old, new = pairs.pop()
            if isinstance(old, Token):
                assert isinstance(new, Token) and (old.type, old.start_pos) == (
                    new.type,
                    new.start_pos,
                )
                continue
            assert old.data == new.data, path
            if old.data != "start":
                assert (old.meta.start_pos, old.meta.end_pos) == builder.TreeBuilder.offsets(new), (
                    path,
                    old,
                )
                compared += 1
            kept = grammar.kept_children(new)
            assert len(old.children) == len(kept), (path, old)
            pairs += zip(old.children, kept, strict=True)
    assert len(PROGRAMS) > 300 and compared > 5000
