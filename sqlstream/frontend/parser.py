"""Parser: `.ssql` text → :class:`~sqlstream.frontend.ast.Script` (docs/dialect.md: lexical rules, statements, EMIT).

Stages: :func:`sqlstream.frontend.variables.substitute` replaces ``${…}``; the Lark LALR grammar
(:mod:`sqlstream.frontend.grammar`) parses the statement envelope, every syntax error of the
file reported at once; :class:`sqlstream.frontend.builder.TreeBuilder` turns the Lark tree into
frozen AST nodes.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping

from lark import Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sqlstream.diagnostics.errors import CompileError, ParseError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.frontend.builder import TreeBuilder
from sqlstream.frontend.grammar import as_token, as_tree, lark_parser
from sqlstream.frontend.limits import NestingError, check_nesting
from sqlstream.frontend.variables import SourceMap, substitute


def parse(
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    environ: Mapping[str, str] | None = None,
    keep_trees: bool = False,
) -> ast.Script:
    """Parse a `.ssql` file.

    Args:
        text: the file's text.
        variables: values for ``${name}``.
        path: the file's path, used only in messages.
        environ: environment for ``${env:NAME}`` (default :data:`os.environ`).
        keep_trees: keep the grammar's trees in ``Script.chunks``, for a :func:`reparse`
            of the next version (the language server); ``check`` keeps none.

    Returns:
        The :class:`~sqlstream.frontend.ast.Script`.

    Raises:
        VariableError: an undefined or malformed variable reference.
        ParseError: text the statement grammar does not accept.
        SemanticError: an unknown column type or a malformed interval.
        NestingError: parentheses or nested types deeper than
            :data:`~sqlstream.frontend.limits.MAX_NESTING` (``SS103``).
    """
    return _parse(_substitute(text, variables, path, environ), chunks={} if keep_trees else None)


def reparse(
    previous: ast.Script,
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ast.Script:
    """:func:`parse` ``text``, an edited version of the text ``previous`` was parsed from,
    reusing the statements of ``previous`` before the edit and the grammar's trees of the
    unchanged statements after it.

    The cut is the last top-level ``;`` of ``previous`` (``Script.ends``) before the first
    character where the two texts differ, both as written and after substitution, with
    the same ``${…}`` references up to it and the same ``path``. The statements before the
    cut are ``previous``'s own objects (they are equal to what :func:`parse` would build:
    same text, same positions). From the cut on, the text is taken one piece at a time,
    each up to the next ``;`` outside strings and comments: the grammar is LALR and is in
    the same state after every top-level ``;`` (``start: _chunk (";" _chunk)*``), so a
    piece starting there parses as it would in the whole text when it parses alone and
    ends with its only top-level ``;``. A piece ``previous`` had (``Script.chunks``: the
    same substituted text) is built from its trees, moved to where it now is
    (:class:`~sqlstream.frontend.builder.TreeBuilder`'s ``delta``); another is parsed
    alone. At the first piece that does not parse alone (an error, or a ``;`` that is
    not top-level, inside ``EXECUTE STATEMENT SET … END``) or does not build, and after
    the last ``;``, the rest is parsed as one text (what is before it blanked out, so
    every offset, line and column is that of the whole text), with every error reported
    as :func:`parse` reports it.

    Args, Returns and Raises: as :func:`parse` (the same script, the same errors).
    """
    source_map = _substitute(text, variables, path, environ)
    cut = _cut(previous, source_map)
    kept_before = source_map.original_offset(cut)
    statements = [s for s in previous.statements if s.span.start < kept_before] if cut else []
    ends = [e for e in previous.ends if e <= cut]
    old_text, new_text, start = previous.source_map.text, source_map.text, 0
    chunks = {}
    for end in ends:  # the pieces before the cut, as they were
        piece = old_text[start:end]
        if piece in previous.chunks:
            chunks[piece] = previous.chunks[piece]
        start = end
    builder = TreeBuilder(source_map)
    position = cut
    stops = [m.end(1) for m in _STATEMENT_END.finditer(new_text, cut) if m.group(1)]
    index = 0
    while index < len(stops):
        found = None
        for end in stops[index : index + 1 + MAX_INNER_ENDS]:  # (more than one: ``;`` inside
            piece = new_text[position:end]  # a statement set ``previous`` had)
            if (found := previous.chunks.get(piece) or chunks.get(piece)) is not None:
                break
        if found is None:
            end = stops[index]
            piece = new_text[position:end]
            found = _parse_alone(piece)
        if found is None:
            break
        index = bisect.bisect_right(stops, end)
        trees, origin = found
        builder.delta = position - origin
        try:
            built = [builder.statement(tree) for tree in trees]
        except SqlStreamError:
            break  # reported by the parse of the rest, after any syntax error there
        for one in built:
            statements.extend(one if isinstance(one, tuple) else (one,))
        ends.append(end)
        chunks[piece] = found
        position = end
    return _parse(source_map, position, tuple(statements), tuple(ends), chunks)


MAX_INNER_ENDS = 32
"""How many ``;`` further :func:`reparse` looks for a piece ``previous`` had, when the
text up to the next one does not parse alone (``EXECUTE STATEMENT SET BEGIN …; …; END;``)."""


def _parse_alone(piece: str) -> tuple[tuple[Tree, ...], int] | None:
    """``(trees, 0)``: the statements of ``piece`` parsed alone, when it parses and ends
    with its only top-level ``;``; else ``None``."""
    try:
        tree = lark_parser().parse(piece)
    except UnexpectedInput:
        return None
    children = tree.children
    if (
        not children
        or [c for c in children if type(c) is not Tree] != [children[-1]]
        or children[-1] != ";"
        or as_token(children[-1]).end_pos != len(piece)
    ):
        return None
    return tuple(as_tree(c) for c in children[:-1]), 0


def _substitute(text: str, variables, path, environ) -> SourceMap:
    source_map = substitute(Source(text, path), variables, environ)
    try:
        check_nesting(source_map.text, source_map.span)
    except NestingError as error:
        raise error.with_source(source_map.source) from None
    return source_map


def _parse(
    source_map: SourceMap,
    cut: int = 0,
    kept: tuple = (),
    ends: tuple = (),
    chunks: dict | None = None,
) -> ast.Script:
    """The script of ``source_map``'s text from offset ``cut`` on, after the statements
    ``kept``, the statement ends ``ends`` and the pieces ``chunks`` (``Script.chunks``)
    that come before it; ``chunks`` ``None``: keep no trees."""
    tree = _parse_reporting_all(source_map, cut)
    builder = TreeBuilder(source_map)
    statements = list(kept)
    ends_at = list(ends)
    trees: list[Tree] = []
    start = cut
    for child in tree.children:
        if isinstance(child, Tree):
            built = builder.statement(child)
            statements.extend(built if isinstance(built, tuple) else (built,))
            trees.append(child)
        elif child == ";":
            end = child.end_pos
            assert end is not None  # the parser's tokens have positions
            ends_at.append(end)
            if chunks is not None:
                chunks.setdefault(source_map.text[start:end], (tuple(trees), start))
            trees, start = [], end
    return ast.Script(tuple(statements), source_map, tuple(ends_at), chunks or {})


def _cut(previous: ast.Script, source_map: SourceMap) -> int:
    """Where :func:`reparse` may start the grammar: a top-level statement end of
    ``previous`` before the first difference of the two texts (0: nowhere)."""
    old = previous.source_map
    if old.source.path != source_map.source.path or not previous.ends:
        return 0
    same = _common_prefix(old.text, source_map.text)
    written = _common_prefix(old.source.text, source_map.source.text)
    for cut in reversed(previous.ends[: bisect.bisect_right(previous.ends, same)]):
        at = source_map.original_offset(cut)
        if (
            at <= written
            and old.original_offset(cut) == at
            and [r for r in old.replacements if r[0] < cut]
            == [r for r in source_map.replacements if r[0] < cut]
        ):
            return cut
    return 0


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (a binary search of
    slice comparisons, which run in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


# A string, quoted identifier or comment (skipped), or a statement-ending `;`.
_STATEMENT_END = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|(;)", re.S
)
MAX_SYNTAX_ERRORS = 20


def _parse_reporting_all(source_map: SourceMap, cut: int = 0) -> Tree:
    """Parse (the text before offset ``cut`` blanked out); after a syntax error, blank out the text up to the end of the failing
    statement and go on, so that one run reports the syntax errors of every statement (at
    most ``MAX_SYNTAX_ERRORS``). Each new attempt starts where the last one failed (the
    blanks are skipped as white space): time linear in the length of the text.

    Raises:
        ParseError: the only syntax error, or CompileError holding all of them.
    """
    text = " " * cut + source_map.text[cut:] if cut else source_map.text
    errors: list[ParseError] = []
    ends: list[int] | None = None
    while True:
        try:
            tree = lark_parser().parse(text)
            break
        except UnexpectedInput as exc:
            error = _syntax_error(exc, source_map)
            errors.append(error)
            position = getattr(exc, "pos_in_stream", None) or 0
            if isinstance(exc, UnexpectedToken):
                position = exc.token.start_pos if exc.token.type != "$END" else len(text)
            if ends is None:
                ends = [m.start(1) for m in _STATEMENT_END.finditer(source_map.text) if m.group(1)]
            following = bisect.bisect_left(ends, position)
            stop = ends[following] if following < len(ends) else len(text)
            if len(errors) >= MAX_SYNTAX_ERRORS or stop >= len(text):
                break
            text = " " * stop + text[stop:]
    if errors:
        raise errors[0] if len(errors) == 1 else CompileError(list(errors))
    return tree


# ---- syntax errors -----------------------------------------------------------------------

_TERMINAL_TEXT = {
    "SEMICOLON": "';'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "EQUAL": "'='",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "COLON": "':'",
    "IDENT": "a name",
    "QUOTED_IDENT": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "SIGNED_NUMBER": "a number",
    "QUERY_START": "a query (SELECT …)",
    "OP": "an operator",
    "$END": "end of file",
}


def _describe(terminal: str) -> str:
    if terminal in _TERMINAL_TEXT:
        return _TERMINAL_TEXT[terminal]
    return terminal.removeprefix("__ANON_").upper() if terminal.isupper() else terminal


def _syntax_error(exc: UnexpectedInput, source_map: SourceMap) -> ParseError:
    text = source_map.text
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        start, end = exc.token.start_pos, exc.token.end_pos
        assert start is not None and end is not None  # the parser's tokens have positions
        found = f"unexpected {str(exc.token)!r}"
    elif isinstance(exc, UnexpectedCharacters):
        start = exc.pos_in_stream
        assert start is not None  # the lexer's position where no token matched
        end = start + 1
        found = f"unexpected character {text[start]!r}"
        if text[start] in "'\"`":
            found = f"unterminated {'identifier' if text[start] == '`' else 'string literal'}"
    else:
        start = end = len(text.rstrip())
        found = "unexpected end of file"
    expected = sorted({_describe(t) for t in getattr(exc, "expected", None) or ()})
    if isinstance(exc, UnexpectedToken):
        expected = sorted({_describe(t) for t in exc.accepts or exc.expected})
    message = found
    if expected and len(expected) <= 12 and not found.startswith("unterminated"):
        message += "; expected " + ", ".join(expected)
    if isinstance(exc, UnexpectedEOF | UnexpectedToken) and start >= len(text.rstrip()):
        start = end = len(text.rstrip())
    if found.startswith("unterminated"):
        hint = f"close it with {text[start]}; inside it, write the quote twice or escape it with \\"
    else:
        hint = (
            "see the statement forms in docs/dialect.md#statements; every statement ends with ';'"
        )
    return ParseError(
        message, source_map.span(start, max(end, start + 1)), source_map.source, hint=hint
    )
