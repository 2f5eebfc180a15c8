"""``reparse`` (the language server's parse of an edited text) gives what ``parse`` gives —
the same statements with the same spans, the same statement ends, every ``SqlText``
with a source map that locates it where it is, or the same errors — after random edits
anywhere in a file of many statements (quotes, comments, ``;``, statement sets, ``${…}``
typed in), reusing the grammar's trees of the unchanged statements after the edit. No JVM."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstream.diagnostics.errors import CompileError, SqlStreamError
from sqlstream.frontend import ast, parser
from sqlstream.frontend.parser import parse, reparse

VARIABLES = {"dir": "/data", "n": "2"}

TEXT = """SET 'spark.sql.shuffle.partitions' = '${n}';
-- a comment; with a ; in it
CREATE STREAM s (a INT, b STRING, ts TIMESTAMP, c AS a * ${n},
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '${dir}/in', format = 'json');
CREATE FUNCTION f(x INT) RETURNS INT RETURN x + 1;
CREATE VIEW v AS SELECT a, b, ts FROM s WHERE b <> ';' /* ; */ AND a > 1;
CREATE SINK o WITH (connector = 'memory');
INSERT INTO o SELECT window_start, b, COUNT(*) AS n
FROM TUMBLE(v, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, b EMIT FINAL;
EXECUTE STATEMENT SET BEGIN INSERT INTO o SELECT a FROM s; INSERT INTO o SELECT f(a) FROM v; END;
CREATE VIEW `w;` AS SELECT a FROM s;
SELECT a FROM v;
CREATE VIEW u AS SELECT a FROM s;
SELECT b FROM u;
"""

SNIPPETS = [
    "",
    ";",
    "'",
    "`",
    "a",
    " ",
    "\n",
    "--",
    "/*",
    "*/",
    "(",
    ")",
    "${dir}",
    "${n}",
    "x",
    "SELECT a FROM s;",
    "CREATE VIEW z AS SELECT b FROM v;",
    "END;",
    "BEGIN",
    "INTERVAL 'x' HOUR",
    "EMIT CHANGES",
    '"',
    ";;",
    "CREATE STREAM q (a FOO);",
]

_EDITS = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 10), st.sampled_from(SNIPPETS)),
    min_size=1,
    max_size=4,
)


def _texts(node, found: list) -> list:
    """Every ``SqlText`` under ``node``."""
    if isinstance(node, ast.SqlText):
        found.append(node)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for item in dataclasses.fields(node):
            _texts(getattr(node, item.name), found)
    elif isinstance(node, tuple):
        for item in node:
            _texts(item, found)
    return found


def _outcome(function, *args):
    try:
        return function(*args, VARIABLES)
    except CompileError as error:
        return [(f.code, f.message, f.span) for f in error.findings]
    except SqlStreamError as error:
        return [(error.code, error.message, error.span)]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(edits=_EDITS)
def test_reparse_after_random_edits_is_a_parse(edits):
    text, previous = TEXT, parse(TEXT, VARIABLES, keep_trees=True)
    for where, removed, inserted in edits:
        at = int(where * len(text))
        text = text[:at] + inserted + text[at + removed :]
        script, whole = _outcome(reparse, previous, text), _outcome(parse, text)
        assert script == whole
        if isinstance(whole, ast.Script):
            assert script.ends == whole.ends
            for piece in _texts(script.statements, []):  # its map locates it where it is
                assert (
                    piece.source_map.text[piece.start : piece.start + len(piece.text)] == piece.text
                )
                assert piece.locate(0, len(piece.text)) == piece.span
            previous = script


def test_an_edit_at_the_top_builds_the_later_statements_from_their_trees(monkeypatch):
    previous = parse(TEXT, VARIABLES, keep_trees=True)
    parsed = []
    real = parser._parse_alone
    monkeypatch.setattr(parser, "_parse_alone", lambda piece: parsed.append(piece) or real(piece))
    at = TEXT.index("a > 1")
    edited = TEXT[:at] + "a >= 1" + TEXT[at + len("a > 1") :]
    script = reparse(previous, edited, VARIABLES)
    assert script == parse(edited, VARIABLES) and script.ends == parse(edited, VARIABLES).ends
    assert len(parsed) == 1 and "a >= 1" in parsed[0]  # only the edited view parsed again
    view = next(s for s in script.statements if isinstance(s, ast.Select))
    assert view.query.text == "SELECT a FROM v" and view.span.start == edited.index(
        "SELECT a FROM v"
    )


def test_a_check_keeps_no_trees_and_a_reparse_without_them_is_a_parse():
    previous = parse(TEXT, VARIABLES)
    assert previous.chunks == {}
    edited = TEXT.replace("a > 1", "a >= 1")
    script = reparse(previous, edited, VARIABLES)
    assert script == parse(edited, VARIABLES) and script.ends == parse(edited, VARIABLES).ends
    assert script.chunks  # the next version can reuse them
