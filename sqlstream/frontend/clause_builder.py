"""The parts of statements that the tree builder shares: names and positions, column lists,
constraints, types, ``WITH`` options, ``EMIT`` and intervals.

:class:`ClauseBuilder` is the base of :class:`~sqlstream.frontend.builder.TreeBuilder`: each
method turns one clause's Lark tree into its AST value, positioned through the
:class:`~sqlstream.frontend.variables.SourceMap`. Types are spelled as Spark SQL spells them
(``VARCHAR`` → ``STRING``, nested types at most :data:`~sqlstream.frontend.limits.MAX_NESTING`
deep); intervals as Spark's duration strings (``INTERVAL '10' SECONDS`` → ``10 seconds``),
those Spark's triggers refuse refused here.
"""

from __future__ import annotations

import re

from lark import Token, Tree

from sqlstream.diagnostics.errors import SemanticError, did_you_mean
from sqlstream.diagnostics.source_text import Span
from sqlstream.frontend import ast
from sqlstream.frontend.flow_builder import primary_key_error
from sqlstream.frontend.grammar import as_token, as_tree, first_token, kept_children, last_token
from sqlstream.frontend.limits import MAX_NESTING, nesting_error
from sqlstream.frontend.literals import duration, duration_problem, quote_identifier
from sqlstream.frontend.variables import SourceMap

# ---- types ---------------------------------------------------------------------------------

_SIMPLE_TYPES = {
    "STRING": "STRING",
    "VARCHAR": "STRING",
    "CHAR": "STRING",
    "TEXT": "STRING",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "LONG": "BIGINT",
    "SMALLINT": "SMALLINT",
    "SHORT": "SMALLINT",
    "TINYINT": "TINYINT",
    "BYTE": "TINYINT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "FLOAT",
    "REAL": "FLOAT",
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP",
    "TIMESTAMP_LTZ": "TIMESTAMP",
    "TIMESTAMP_NTZ": "TIMESTAMP_NTZ",
    "BINARY": "BINARY",
    "VARBINARY": "BINARY",
    "BYTES": "BINARY",
    "DECIMAL": "DECIMAL",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
    "VARIANT": "VARIANT",
}
_NESTED_TYPES = {"ARRAY": 1, "MAP": 2, "STRUCT": None}

# ---- intervals -----------------------------------------------------------------------------

_UNITS = {
    "MICROSECOND": "microseconds",
    "MILLISECOND": "milliseconds",
    "SECOND": "seconds",
    "MINUTE": "minutes",
    "HOUR": "hours",
    "DAY": "days",
    "WEEK": "weeks",
}
REAL_TIME_DEFAULT = "5 minutes"
"""The checkpoint interval of ``EMIT … REAL TIME`` without ``CHECKPOINT EVERY``: Spark's
default for ``Trigger.RealTime()`` (PySpark requires a value, so it is always written)."""
REAL_TIME_MINIMUM_MICROS = 5_000_000
"""Spark's ``spark.sql.streaming.realTimeMode.minBatchDuration`` default (5000 ms), in
microseconds: a shorter real-time interval fails at start."""


def _micros(text: str) -> int:
    """A duration string without months (the builder refused those) in microseconds."""
    value = duration(text)
    return value.days * 86_400_000_000 + value.microseconds


_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)?\s*\Z")


def unquote_string(raw: str) -> str:
    """A string literal's value: quotes removed, ``\\n``/``\\t`` escapes and doubled quotes read."""
    quote = raw[0]
    body = raw[1:-1]
    body = re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)
    return body.replace(quote * 2, quote)


def _unquote_ident(raw: str) -> str:
    return raw[1:-1].replace("``", "`") if raw.startswith("`") else raw


class ClauseBuilder:
    """Turns the Lark trees of clauses into AST values; positions mapped through the
    :class:`SourceMap`."""

    def __init__(self, source_map: SourceMap, delta: int = 0) -> None:
        self.source_map = source_map
        self.source = source_map.source
        self.delta = delta
        """Added to every token position: a tree parsed from a piece of the text alone
        (positions from the piece's start) is built where the piece is in the text."""

    # -- helpers
    @staticmethod
    def offsets(node: Tree | Token) -> tuple[int, int]:
        """``(start, end)`` of ``node`` in the substituted text: its first token's start and
        its last token's end (every rule of the grammar matches at least one token)."""
        start, end = first_token(node).start_pos, last_token(node).end_pos
        assert start is not None and end is not None  # the parser's tokens have positions
        return start, end

    def at(self, node: Tree | Token) -> tuple[int, int]:
        """:meth:`offsets` moved by :attr:`delta`: ``(start, end)`` in the substituted text."""
        start, end = self.offsets(node)
        return start + self.delta, end + self.delta

    def span(self, node: Tree | Token) -> Span:
        return self.source_map.span(*self.at(node))

    def sql(self, node: Tree | Token | None) -> ast.SqlText:
        if node is None:
            raise TypeError("a query or expression expected (the grammar puts one here)")
        start, end = self.at(node)
        return ast.SqlText(self.source_map.text[start:end], start, self.span(node), self.source_map)

    def error(self, cls, message: str, node, hint: str | None = None):
        return cls(message, self.span(node), self.source, hint=hint)

    def name(self, node: Tree | Token | None) -> ast.Name:
        token = as_tree(node).children[0]
        return ast.Name(_unquote_ident(str(token)), self.span(token))

    @staticmethod
    def find(node: Tree, data: str) -> Tree | None:
        return next((c for c in node.children if isinstance(c, Tree) and c.data == data), None)

    # -- columns
    def columns(self, node: Tree | None) -> tuple[tuple[ast.Column, ...], ast.WatermarkDef | None]:
        if node is None:
            return (), None
        columns: list[ast.Column] = []
        watermark = None
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            parts = kept_children(child)
            if child.data == "column_def":
                columns.append(
                    ast.ColumnDef(self.name(parts[0]), self.type(parts[1]), self.span(child))
                )
            elif child.data == "metadata_column":
                key = next(
                    (
                        unquote_string(str(t))
                        for t in child.children
                        if isinstance(t, Token) and t.type == "STRING"
                    ),
                    None,
                )
                columns.append(
                    ast.MetadataColumn(
                        self.name(parts[0]), self.type(parts[1]), key, self.span(child)
                    )
                )
            elif child.data == "computed_column":
                columns.append(
                    ast.ComputedColumn(self.name(parts[0]), self.sql(parts[1]), self.span(child))
                )
            elif child.data == "primary_key":
                raise primary_key_error(self, child)
            elif child.data == "watermark_def":
                if watermark is not None:
                    raise self.error(
                        SemanticError,
                        "a stream has at most one WATERMARK",
                        child,
                        hint="keep one WATERMARK FOR …; Spark keeps one per stream",
                    )
                watermark = ast.WatermarkDef(
                    self.name(parts[0]), self.sql(parts[1]), self.span(child)
                )
        return tuple(columns), watermark

    def constraints(self, node: Tree | None) -> tuple[ast.Expectation, ...]:
        """The ``CONSTRAINT name EXPECT (cond) [ON VIOLATION …]`` elements of a column or
        constraint list, in order (docs/dialect.md#expectations)."""
        found = []
        for child in node.children if node is not None else ():
            if isinstance(child, Tree) and child.data == "constraint_def":
                parts = kept_children(child)
                action = next(
                    (
                        {"drop_row": "drop", "fail_update": "fail"}[c.data]
                        for c in child.children
                        if isinstance(c, Tree) and c.data in ("drop_row", "fail_update")
                    ),
                    "keep",
                )
                found.append(
                    ast.Expectation(
                        self.name(parts[0]),
                        self.sql(self.find(child, "expr")),
                        action,
                        self.span(child),
                    )
                )
        return tuple(found)

    def type(self, node: Tree | Token | None, depth: int = 1) -> str:
        node = as_tree(node)
        if depth > MAX_NESTING and node.data == "nested_type":
            raise nesting_error("types", self.span(node)).with_source(self.source)
        type_name = as_tree(node.children[0]).children[0]
        upper = str(type_name).upper()
        args = kept_children(node)[1:]
        if node.data == "nested_type":
            if upper not in _NESTED_TYPES:
                raise self.error(
                    SemanticError,
                    f"unknown nested type '{type_name}'" + did_you_mean(upper, _NESTED_TYPES),
                    type_name,
                    hint="nested types: ARRAY<T>, MAP<K, V>, STRUCT<name: T, …>",
                )
            if upper == "STRUCT":
                fields = []
                for arg in args:
                    if not isinstance(arg, Tree) or arg.data != "field":
                        raise self.error(
                            SemanticError,
                            "STRUCT fields are written 'name: TYPE'",
                            arg,
                            hint="for example STRUCT<lat: DOUBLE, lon: DOUBLE>",
                        )
                    field_name, field_type = kept_children(arg)[:2]
                    fields.append(
                        f"{quote_identifier(self.name(field_name).value)}: "
                        f"{self.type(field_type, depth + 1)}"
                    )
                return f"STRUCT<{', '.join(fields)}>"
            if len(args) != _NESTED_TYPES[upper] or any(
                isinstance(a, Tree) and a.data == "field" for a in args
            ):
                raise self.error(
                    SemanticError,
                    f"{upper} takes {_NESTED_TYPES[upper]} type argument(s)",
                    node,
                    hint="for example ARRAY<STRING> or MAP<STRING, INT>",
                )
            return f"{upper}<{', '.join([self.type(a, depth + 1) for a in args])}>"
        if upper not in _SIMPLE_TYPES:
            raise self.error(
                SemanticError,
                f"unknown type '{type_name}'"
                + did_you_mean(upper, list(_SIMPLE_TYPES) + list(_NESTED_TYPES)),
                type_name,
                hint="types: "
                + ", ".join(sorted(set(_SIMPLE_TYPES.values())))
                + ", ARRAY<…>, MAP<…, …>, "
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
                        f"option '{option.key}' is given twice",
                        option.key_span,
                        self.source,
                        hint="remove one of the two",
                    )
                seen[option.key.lower()] = option
        return tuple(seen.values())

    def option(self, node: Tree) -> ast.Option:
        key_node, value_node = kept_children(node)
        key_tokens = kept_children(key_node)
        if as_token(key_tokens[0]).type == "STRING":
            key = unquote_string(str(key_tokens[0]))
        else:
            key = ".".join(str(t) for t in key_tokens)
        token = as_token(as_tree(value_node).children[0])
        raw = str(token)
        value: str | bool | int | float
        if token.type == "STRING":
            value = unquote_string(raw)
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
                trigger = ast.Trigger(
                    "processing_time", self.interval(kept_children(child)[0]), self.span(child)
                )
            elif child.data in ("once", "available_now"):
                trigger = ast.Trigger("available_now", None, self.span(child))
            elif child.data == "continuous":
                every = kept_children(child)  # CONTINUOUS [EVERY interval]
                interval = self.interval(every[0]) if every else "1 second"
                trigger = ast.Trigger("continuous", interval, self.span(child))
            elif child.data == "real_time":
                every = kept_children(child)  # REAL TIME [CHECKPOINT EVERY interval]
                interval = self.interval(every[0]) if every else REAL_TIME_DEFAULT
                if every and _micros(interval) < REAL_TIME_MINIMUM_MICROS:
                    # Spark: INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL at start
                    raise self.error(
                        SemanticError,
                        f"a real-time checkpoint interval of {interval} is shorter "
                        "than Spark's minimum of 5 seconds "
                        "(spark.sql.streaming.realTimeMode.minBatchDuration)",
                        every[0],
                        hint="the interval is how often the query checkpoints, not its latency "
                        "(rows are written as they arrive): write 5 seconds or more, or leave "
                        "CHECKPOINT EVERY out (5 minutes)",
                    )
                trigger = ast.Trigger("real_time", interval, self.span(child))
        return ast.Emit(mode, trigger, self.span(node))

    def interval(self, node: Tree | Token) -> str:
        """``INTERVAL '10' SECONDS`` / ``INTERVAL 10 SECOND`` / ``INTERVAL '10 seconds'`` → ``10 seconds``."""
        value_token, *rest = kept_children(node)
        raw = (
            unquote_string(str(value_token))
            if as_token(value_token).type == "STRING"
            else str(value_token)
        )
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
                SemanticError,
                f"cannot read interval {self.source_map.text[slice(*self.at(node))]!r}",
                node,
                hint="write e.g. INTERVAL '10' SECONDS or INTERVAL '1' MINUTE",
            )
        if float(amount) == 1:
            canonical = canonical.rstrip("s")
        problem = duration_problem(f"{amount} {canonical}", "trigger")
        if problem:  # Spark: Trigger.ProcessingTime / Continuous refuse it
            raise self.error(
                SemanticError,
                f"a trigger interval Spark refuses: {problem}",
                node,
                hint="write e.g. INTERVAL '10' SECONDS or INTERVAL '1.5' SECONDS",
            )
        return f"{amount} {canonical}"
