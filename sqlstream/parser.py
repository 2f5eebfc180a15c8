"""Parser: `.ssql` text → :class:`~sqlstream.ast.Script` (LANGUAGE.md §1, §2, §3.5).

Stages: :func:`sqlstream.variables.substitute` replaces ``${…}``; the Lark LALR grammar
``grammar/ssql.lark`` (shipped in the package) parses the statement envelope; this
module turns the Lark tree into frozen AST nodes. Query bodies and column expressions are
kept as :class:`~sqlstream.ast.SqlText` for sqlglot.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Tree
from lark.lexer import PatternStr
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from sqlstream import ast
from sqlstream.errors import CompileError, ParseError, SemanticError, did_you_mean
from sqlstream.limits import MAX_NESTING, NestingError, check_nesting, nesting_error
from sqlstream.literals import duration_problem, quote_identifier
from sqlstream.source import Source, Span
from sqlstream.variables import SourceMap, substitute

GRAMMAR_FILE = "ssql.lark"


def _grammar_text() -> str:
    """Read the grammar from the installed package (``sqlstream/grammar/``).

    In a source checkout installed in editable mode the package has no copy; the
    repository's ``grammar/`` folder is used then.
    """
    packaged = resources.files("sqlstream").joinpath("grammar").joinpath(GRAMMAR_FILE)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parent.parent / "grammar" / GRAMMAR_FILE).read_text("utf-8")


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    """The LALR parser. Trees keep every token (``keep_all_tokens``): a node's span runs
    from its first token to its last (:meth:`_Builder.span`), which costs nothing at parse
    time, where Lark's ``propagate_positions`` was half of the grammar's time
    (``bench/README.md``, "Compile scaling"). :func:`_kept` drops the keyword and
    punctuation tokens when the builder reads a node's children."""
    return Lark(
        _grammar_text(),
        parser="lalr",
        lexer="contextual",
        keep_all_tokens=True,
        maybe_placeholders=False,
        cache=True,  # LALR tables cached in the temp folder, keyed by the grammar's hash
    )


@functools.lru_cache(maxsize=1)
def _punctuation() -> frozenset[str]:
    """Terminals written as literal strings in the grammar ("CREATE"i, "(", …): the tokens
    Lark drops from trees unless ``keep_all_tokens``. Every named terminal of the grammar
    is a regular expression, so a string pattern marks one (tests/test_parser.py checks
    the set against what Lark drops)."""
    return frozenset(t.name for t in _lark().terminals if isinstance(t.pattern, PatternStr))


def _kept(node: Tree) -> list[Tree | Token]:
    """``node``'s children without keyword and punctuation tokens (:func:`_punctuation`):
    the children Lark gives without ``keep_all_tokens``."""
    punctuation = _punctuation()
    return [c for c in node.children if type(c) is Tree or c.type not in punctuation]


def _first_token(node: Tree | Token) -> Token:
    while type(node) is Tree:
        node = node.children[0]
    return node


def _last_token(node: Tree | Token) -> Token:
    while type(node) is Tree:
        node = node.children[-1]
    return node


def parse(
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ast.Script:
    """Parse a `.ssql` file.

    Args:
        text: the file's text.
        variables: values for ``${name}``.
        path: the file's path, used only in messages.
        environ: environment for ``${env:NAME}`` (default :data:`os.environ`).

    Returns:
        The :class:`~sqlstream.ast.Script`.

    Raises:
        VariableError: an undefined or malformed variable reference.
        ParseError: text the statement grammar does not accept.
        SemanticError: an unknown column type or a malformed interval.
        NestingError: parentheses or nested types deeper than
            :data:`~sqlstream.limits.MAX_NESTING` (``SS103``).
    """
    source_map = substitute(Source(text, path), variables, environ)
    try:
        check_nesting(source_map.text, source_map.span)
    except NestingError as error:
        raise error.with_source(source_map.source) from None
    tree = _parse_reporting_all(source_map)
    builder = _Builder(source_map)
    statements = tuple(builder.statement(child) for child in tree.children if type(child) is Tree)
    return ast.Script(statements, source_map)


# A string, quoted identifier or comment (skipped), or a statement-ending `;`.
_STATEMENT_END = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|(;)", re.S)
MAX_SYNTAX_ERRORS = 20


def _parse_reporting_all(source_map: SourceMap) -> Tree:
    """Parse; after a syntax error, blank out the text up to the end of the failing
    statement and go on, so that one run reports the syntax errors of every statement (at
    most ``MAX_SYNTAX_ERRORS``). Each new attempt starts where the last one failed (the
    blanks are skipped as white space): time linear in the length of the text.

    Raises:
        ParseError: the only syntax error, or CompileError holding all of them.
    """
    text = source_map.text
    errors: list[ParseError] = []
    ends: list[int] | None = None
    while True:
        try:
            tree = _lark().parse(text)
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
    "SEMICOLON": "';'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','", "EQUAL": "'='",
    "LESSTHAN": "'<'", "MORETHAN": "'>'", "COLON": "':'", "IDENT": "a name",
    "QUOTED_IDENT": "a name", "STRING": "a string", "NUMBER": "a number",
    "SIGNED_NUMBER": "a number", "QUERY_START": "a query (SELECT …)", "OP": "an operator",
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
        found = f"unexpected {str(exc.token)!r}"
    elif isinstance(exc, UnexpectedCharacters):
        start, end = exc.pos_in_stream, exc.pos_in_stream + 1
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
        hint = "see the statement forms in LANGUAGE.md §2; every statement ends with ';'"
    return ParseError(message, source_map.span(start, max(end, start + 1)), source_map.source, hint=hint)


# ---- types ---------------------------------------------------------------------------------

_SIMPLE_TYPES = {
    "STRING": "STRING", "VARCHAR": "STRING", "CHAR": "STRING", "TEXT": "STRING",
    "INT": "INT", "INTEGER": "INT", "BIGINT": "BIGINT", "LONG": "BIGINT",
    "SMALLINT": "SMALLINT", "SHORT": "SMALLINT", "TINYINT": "TINYINT", "BYTE": "TINYINT",
    "DOUBLE": "DOUBLE", "FLOAT": "FLOAT", "REAL": "FLOAT", "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN", "DATE": "DATE", "TIMESTAMP": "TIMESTAMP", "TIMESTAMP_LTZ": "TIMESTAMP",
    "TIMESTAMP_NTZ": "TIMESTAMP_NTZ", "BINARY": "BINARY", "VARBINARY": "BINARY",
    "BYTES": "BINARY", "DECIMAL": "DECIMAL", "DEC": "DECIMAL", "NUMERIC": "DECIMAL",
    "VARIANT": "VARIANT",
}
_NESTED_TYPES = {"ARRAY": 1, "MAP": 2, "STRUCT": None}

# ---- intervals -----------------------------------------------------------------------------

_UNITS = {
    "MICROSECOND": "microseconds", "MILLISECOND": "milliseconds", "SECOND": "seconds",
    "MINUTE": "minutes", "HOUR": "hours", "DAY": "days", "WEEK": "weeks",
}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*\Z")


def _unquote_string(raw: str) -> str:
    quote = raw[0]
    body = raw[1:-1]
    body = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
    return body.replace(quote * 2, quote)


def _unquote_ident(raw: str) -> str:
    return raw[1:-1].replace("``", "`") if raw.startswith("`") else raw


class _Builder:
    """Turns Lark trees into AST nodes; positions mapped through the :class:`SourceMap`."""

    def __init__(self, source_map: SourceMap) -> None:
        self.source_map = source_map
        self.source = source_map.source

    # -- helpers
    @staticmethod
    def offsets(node: Tree | Token) -> tuple[int, int]:
        """``(start, end)`` of ``node`` in the substituted text: its first token's start and
        its last token's end (every rule of the grammar matches at least one token)."""
        return _first_token(node).start_pos, _last_token(node).end_pos

    def span(self, node: Tree | Token) -> Span:
        return self.source_map.span(*self.offsets(node))

    def sql(self, node: Tree) -> ast.SqlText:
        start, end = self.offsets(node)
        return ast.SqlText(self.source_map.text[start:end], start, self.span(node), self.source_map)

    def error(self, cls, message: str, node, hint: str | None = None):
        return cls(message, self.span(node), self.source, hint=hint)

    def name(self, node: Tree) -> ast.Name:
        token = node.children[0]
        return ast.Name(_unquote_ident(str(token)), self.span(token))

    @staticmethod
    def find(node: Tree, data: str) -> Tree | None:
        return next((c for c in node.children if isinstance(c, Tree) and c.data == data), None)

    # -- statements
    def statement(self, node: Tree):
        return getattr(self, f"_{node.data}")(node)

    def _set_stmt(self, node: Tree) -> ast.SetStatement:
        return ast.SetStatement(self.option(node), self.span(node))

    def _create_stream(self, node: Tree) -> ast.CreateStream:
        columns, watermark = self.columns(self.find(node, "column_list"))
        query, emit = self.as_query(self.find(node, "as_query"))
        return ast.CreateStream(
            name=self.name(self.find(node, "name")),
            columns=columns,
            watermark=watermark,
            options=self.options(self.find(node, "with_clause")),
            if_not_exists=self.find(node, "if_not_exists") is not None,
            query=query,
            emit=emit,
            span=self.span(node),
            has_schema=self.find(node, "column_list") is not None,
        )

    def _create_table(self, node: Tree) -> ast.CreateTable:
        column_list = self.find(node, "column_list")
        columns, watermark = self.columns(column_list)
        if watermark is not None:
            raise self.error(
                SemanticError, "a TABLE is bounded and cannot have a WATERMARK", column_list,
                hint="declare it with CREATE STREAM to read it as a stream",
            )
        return ast.CreateTable(
            name=self.name(self.find(node, "name")),
            columns=columns,
            options=self.options(self.find(node, "with_clause")),
            if_not_exists=self.find(node, "if_not_exists") is not None,
            span=self.span(node),
            has_schema=column_list is not None,
        )

    def _create_view(self, node: Tree) -> ast.CreateView:
        return ast.CreateView(
            self.name(self.find(node, "name")), self.sql(self.find(node, "query")), self.span(node)
        )

    def _create_sink(self, node: Tree) -> ast.CreateSink:
        query, emit = self.as_query(self.find(node, "as_query"))
        return ast.CreateSink(
            name=self.name(self.find(node, "name")),
            options=self.options(self.find(node, "with_clause")),
            query=query,
            emit=emit,
            span=self.span(node),
        )

    def _insert_stmt(self, node: Tree) -> ast.Insert:
        return ast.Insert(
            self.name(self.find(node, "name")),
            self.sql(self.find(node, "query")),
            self.emit(self.find(node, "emit")),
            self.span(node),
        )

    def _select_stmt(self, node: Tree) -> ast.Select:
        return ast.Select(
            self.sql(self.find(node, "query")), self.emit(self.find(node, "emit")), self.span(node)
        )

    def as_query(self, node: Tree | None) -> tuple[ast.SqlText | None, ast.Emit | None]:
        if node is None:
            return None, None
        return self.sql(self.find(node, "query")), self.emit(self.find(node, "emit"))

    # -- columns
    def columns(self, node: Tree | None) -> tuple[tuple[ast.Column, ...], ast.WatermarkDef | None]:
        if node is None:
            return (), None
        columns: list[ast.Column] = []
        watermark = None
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            parts = _kept(child)
            if child.data == "column_def":
                columns.append(ast.ColumnDef(self.name(parts[0]), self.type(parts[1]), self.span(child)))
            elif child.data == "metadata_column":
                key = next((_unquote_string(str(t)) for t in child.children
                            if isinstance(t, Token) and t.type == "STRING"), None)
                columns.append(ast.MetadataColumn(
                    self.name(parts[0]), self.type(parts[1]), key, self.span(child)
                ))
            elif child.data == "computed_column":
                columns.append(ast.ComputedColumn(self.name(parts[0]), self.sql(parts[1]), self.span(child)))
            elif child.data == "watermark_def":
                if watermark is not None:
                    raise self.error(SemanticError, "a stream has at most one WATERMARK", child,
                                     hint="keep one WATERMARK FOR …; Spark keeps one per stream")
                watermark = ast.WatermarkDef(self.name(parts[0]), self.sql(parts[1]), self.span(child))
        return tuple(columns), watermark

    def type(self, node: Tree, depth: int = 1) -> str:
        if depth > MAX_NESTING and node.data == "nested_type":
            raise nesting_error("types", self.span(node)).with_source(self.source)
        type_name = node.children[0].children[0]
        upper = str(type_name).upper()
        args = _kept(node)[1:]
        if node.data == "nested_type":
            if upper not in _NESTED_TYPES:
                raise self.error(
                    SemanticError, f"unknown nested type '{type_name}'"
                    + did_you_mean(upper, _NESTED_TYPES), type_name,
                    hint="nested types: ARRAY<T>, MAP<K, V>, STRUCT<name: T, …>",
                )
            if upper == "STRUCT":
                fields = []
                for arg in args:
                    if arg.data != "field":
                        raise self.error(SemanticError, "STRUCT fields are written 'name: TYPE'", arg,
                                         hint="for example STRUCT<lat: DOUBLE, lon: DOUBLE>")
                    field_name, field_type = _kept(arg)[:2]
                    fields.append(f"{quote_identifier(self.name(field_name).value)}: "
                                  f"{self.type(field_type, depth + 1)}")
                return f"STRUCT<{', '.join(fields)}>"
            if len(args) != _NESTED_TYPES[upper] or any(a.data == "field" for a in args):
                raise self.error(
                    SemanticError, f"{upper} takes {_NESTED_TYPES[upper]} type argument(s)", node,
                    hint="for example ARRAY<STRING> or MAP<STRING, INT>",
                )
            return f"{upper}<{', '.join([self.type(a, depth + 1) for a in args])}>"
        if upper not in _SIMPLE_TYPES:
            raise self.error(
                SemanticError, f"unknown type '{type_name}'"
                + did_you_mean(upper, list(_SIMPLE_TYPES) + list(_NESTED_TYPES)), type_name,
                hint="types: " + ", ".join(sorted(set(_SIMPLE_TYPES.values()))) + ", ARRAY<…>, MAP<…, …>, "
                "STRUCT<name: TYPE, …>",
            )
        spark = _SIMPLE_TYPES[upper]
        numbers = [str(a) for a in args if isinstance(a, Token)]
        if spark == "DECIMAL" and numbers:
            return f"DECIMAL({', '.join(numbers)})"
        return spark

    # -- options
    def options(self, node: Tree | None) -> tuple[ast.Option, ...]:
        if node is None:
            return ()
        seen: dict[str, ast.Option] = {}
        for child in node.children:
            if isinstance(child, Tree) and child.data == "option":
                option = self.option(child)
                if option.key.lower() in seen:
                    raise SemanticError(
                        f"option '{option.key}' is given twice", option.key_span, self.source,
                        hint="remove one of the two",
                    )
                seen[option.key.lower()] = option
        return tuple(seen.values())

    def option(self, node: Tree) -> ast.Option:
        key_node, value_node = _kept(node)
        key_tokens = _kept(key_node)
        if key_tokens[0].type == "STRING":
            key = _unquote_string(str(key_tokens[0]))
        else:
            key = ".".join(str(t) for t in key_tokens)
        token = value_node.children[0]
        raw = str(token)
        value: str | bool | int | float
        if token.type == "STRING":
            value = _unquote_string(raw)
        elif token.type in ("NUMBER", "SIGNED_NUMBER"):
            try:
                value = int(raw)
            except ValueError:
                try:
                    value = float(raw)
                except ValueError:
                    value = raw
        elif raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            value = raw
        return ast.Option(key, value, self.span(node), self.span(key_node), self.span(value_node))

    # -- EMIT
    def emit(self, node: Tree | None) -> ast.Emit | None:
        if node is None:
            return None
        mode = trigger = None
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            if child.data in ("changes", "final", "on_window_close", "complete"):
                mode = {"changes": "update", "complete": "complete"}.get(child.data, "append")
            elif child.data == "every":
                trigger = ast.Trigger("processing_time", self.interval(_kept(child)[0]),
                                      self.span(child))
            elif child.data in ("once", "available_now"):
                trigger = ast.Trigger("available_now", None, self.span(child))
            elif child.data == "continuous":
                every = _kept(child)  # CONTINUOUS [EVERY interval]
                interval = self.interval(every[0]) if every else "1 second"
                trigger = ast.Trigger("continuous", interval, self.span(child))
        return ast.Emit(mode, trigger, self.span(node))

    def interval(self, node: Tree) -> str:
        """``INTERVAL '10' SECONDS`` / ``INTERVAL 10 SECOND`` / ``INTERVAL '10 seconds'`` → ``10 seconds``."""
        value_token, *rest = _kept(node)
        raw = _unquote_string(str(value_token)) if value_token.type == "STRING" else str(value_token)
        unit = str(rest[0]) if rest else None
        match = _DURATION.match(raw)
        if match and unit is None:
            amount, unit = match.group(1), match.group(2)
        elif match and match.group(2) is None:
            amount = match.group(1)
        else:
            amount = None
        canonical = _UNITS.get((unit or "").upper().rstrip("S")) if unit else None
        if amount is None or canonical is None:
            raise self.error(
                SemanticError, f"cannot read interval {self.source_map.text[slice(*self.offsets(node))]!r}",
                node, hint="write e.g. INTERVAL '10' SECONDS or INTERVAL '1' MINUTE",
            )
        if float(amount) == 1:
            canonical = canonical.rstrip("s")
        problem = duration_problem(f"{amount} {canonical}", "trigger")
        if problem:  # Spark: Trigger.ProcessingTime / Continuous refuse it
            raise self.error(SemanticError, f"a trigger interval Spark refuses: {problem}", node,
                             hint="write e.g. INTERVAL '10' SECONDS or INTERVAL '1.5' SECONDS")
        return f"{amount} {canonical}"
