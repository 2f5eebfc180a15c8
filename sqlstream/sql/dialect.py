"""The sqlstream SQL dialect: Spark SQL plus the streaming extensions of docs/dialect.md#streaming-clauses.

:class:`SqlStream` subclasses sqlglot's Spark dialect (sqlglot 30.x) and combines its own
tokenizer, parser and generator with Spark's; nothing in sqlglot is patched. Subclassing
:class:`sqlglot.dialects.Dialect` registers the dialect under its lower-cased class name, so
``sqlglot.parse_one(sql, read="sqlstream")`` works once this module is imported.

It closes four gaps of sqlglot's Spark dialect:

1. ``GROUP BY window(ts, '5 minutes')``: sqlglot stops its GROUP BY loop at the WINDOW
   token (the named-window clause ``WINDOW w AS (…)``). The tokenizer turns a WINDOW token
   that is directly followed by ``(`` into a plain name, so ``window(…)`` is a function
   call everywhere and ``WINDOW w AS (…)`` still is the clause.
2. ``FROM STREAM t`` / ``FROM STREAM(t)`` (Spark 4 declarative pipelines: read ``t`` as a
   stream). Parsed into the :class:`~sqlglot.expressions.Table` ``t`` with ``stream=True``;
   the generator prints only ``t`` (every sqlstream relation is already a streaming view).
   Spark 4.1 accepts both spellings itself, with or without an alias (verified).
3. Spark's ``WATERMARK col DELAY OF <interval>`` after a table or parenthesised subquery in
   FROM, before its alias (Spark 4.1 accepts it natively on tables and subqueries; after the
   alias it is a syntax error, verified). Parsed into :class:`Watermark`, stored as the
   ``watermark`` arg of the Table/Subquery and printed back in the same place; read it with
   :func:`sqlstream.sql.parsing.watermark_of`.
4. Flink's window table-valued functions ``TUMBLE``, ``HOP`` and ``SESSION`` in FROM, in
   every spelling: ``TUMBLE(rel, ts, size)``, ``TUMBLE(TABLE rel, DESCRIPTOR(ts), size)``,
   ``TABLE(TUMBLE(…))``, named arguments ``DATA => …, TIMECOL => …, SIZE => …``, and
   ``SESSION(TABLE rel PARTITION BY k, …)``. Parsed into :class:`WindowTVF`, which
   :mod:`sqlstream.sql.rewrite` replaces by Spark's ``window()`` / ``session_window()``.

And it prints what the user wrote (what is checked is what runs). sqlglot's Spark dialect
translates some literals on their way through: a time format is read into Python's
``strftime`` form and printed back in Spark's (``'YYYY'`` → ``'yyyy'``, ``'y'`` →
``'yyyy'``, ``'E'`` → ``'EEE'``: other patterns for Spark), a JSON path is parsed and printed
normalised (``'$["x"]'`` → ``'$.x'``, ``'a.b'`` → ``'$.a.b'``), a string's escapes are
decoded and re-encoded (``'\u0041'`` → ``'A'``, ``"s"`` → ``'s'``), adjacent strings become
``CONCAT(…)``, ``named_struct('k', v)`` becomes ``STRUCT(v AS k)`` (the name as an
identifier) and ``to_char(x, fmt)`` loses its format. Here the time and format mappings are
empty and :meth:`SqlStream.format_time` / :meth:`SqlStream.to_json_path` leave the literal
as it is; every string literal keeps the text it was written with (``meta["verbatim"]``),
which the generator prints; adjacent strings are one literal; ``named_struct`` and
``to_char`` are printed as written, and so is a call whose format sqlglot drops or
replaces (``to_date(x, 'yyyy-MM-dd')`` → ``TO_DATE(x)``, ``from_unixtime(x, 'yyyy-MM-dd
HH:mm:ss')`` → ``FROM_UNIXTIME(x)``) or whose unit it upper-cases (``date_trunc('yy', t)``). ``tests/sql/test_verbatim_literals.py`` checks each.

Positions: sqlglot keeps ``meta`` (``line``, ``col``, ``start``, ``end``; ``end``
inclusive) on identifiers and literals; :class:`WindowTVF` and :class:`Watermark` carry
the offsets of their whole text. :func:`sqlstream.sql.parsing.node_offsets` turns any node into
``(start, end_exclusive)`` offsets within the parsed text.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError
from sqlglot.generators.spark import SparkGenerator
from sqlglot.helper import seq_get
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sqlstream.sql.expressions import (
    TVF_KINDS, TVF_NAMED_PARAMS, TVF_PARAMS, TVF_SIGNATURES, Watermark, WindowTVF,
)

__all__ = ["SqlStream", "Watermark", "WindowTVF"]


def _is_var_text(token: Token | None, *texts: str) -> bool:
    return (
        token is not None
        and token.token_type not in (TokenType.STRING, TokenType.IDENTIFIER)
        and token.text.upper() in texts
    )


# Node types whose printing in sqlglot's Spark generator is a tree rewrite
# (``transforms.preprocess``); sqlstream prints them as they are (see SqlStream.Generator).
GENERATOR_REWRITES = (exp.Select, exp.Table)


def _verbatim(node: exp.Expr) -> str | None:
    """The text a string literal was written with, while its value is the one parsed."""
    recorded = node.meta.get("verbatim") if node._meta else None
    return recorded[1] if recorded and recorded[0] == node.this else None


def _build_named_struct(args: list) -> exp.Struct:
    """``named_struct('k', v, …)`` as sqlglot's :class:`~sqlglot.expressions.Struct` of
    ``k := v`` (what the type rules read), marked to be printed as ``named_struct`` again
    with each name literal as written."""
    fields = []
    for key, value in zip(args[::2], args[1::2]):
        field = exp.PropertyEQ(this=exp.to_identifier(key.name), expression=value)
        field.meta["name_literal"] = key
        fields.append(field)
    struct = exp.Struct(expressions=fields)
    struct.meta["named_struct"] = len(args) % 2 == 0 and all(a.is_string for a in args[::2])
    return struct


def _unit_as_written(kind: type[exp.Expr], unit: int, this: int):
    """A builder of ``DATE_TRUNC(unit, t)`` / ``TRUNC(t, unit)`` that remembers the unit's
    literal (sqlglot upper-cases it)."""
    def build(args: list) -> exp.Expr:
        node = kind(this=seq_get(args, this), unit=exp.var(seq_get(args, unit)))
        node.meta["unit_literal"] = seq_get(args, unit)
        return node
    return build


# Nodes sqlglot makes of a call with a format, and the Spark function that prints them with
# the format as written (sqlglot drops a format equal to Spark's default, or casts instead).
_FORMAT_CALLS = {exp.TsOrDsToDate: "TO_DATE", exp.StrToDate: "TO_DATE", exp.StrToTime: "TO_TIMESTAMP",
                 exp.UnixToStr: "FROM_UNIXTIME", exp.StrToUnix: "UNIX_TIMESTAMP"}
_UNIT_CALLS = {exp.TimestampTrunc: ("DATE_TRUNC", True), exp.DateTrunc: ("TRUNC", False)}


def _format_call(kind: type[exp.Expr]):
    name, fallback = _FORMAT_CALLS[kind], SparkGenerator.TRANSFORMS.get(kind)

    def sql(self, node: exp.Expr) -> str:
        written = node.args.get("format")
        if written is not None and _verbatim(written) is not None:
            return self.func(name, node.this, written)
        return fallback(self, node) if fallback else self.function_fallback_sql(node)
    return sql


def _unit_call(kind: type[exp.Expr]):
    (name, unit_first), fallback = _UNIT_CALLS[kind], SparkGenerator.TRANSFORMS[kind]

    def sql(self, node: exp.Expr) -> str:
        written = node.meta.get("unit_literal") if node._meta else None
        if written is None or _verbatim(written) is None:
            return fallback(self, node)
        return self.func(name, *((written, node.this) if unit_first else (node.this, written)))
    return sql


class SqlStream(Spark):
    """Spark SQL with the sqlstream extensions (window TVFs, ``STREAM t``, ``WATERMARK``),
    printing literals as written (see the module docstring)."""

    # No translation of time and number formats (Spark's patterns stay Spark's).
    TIME_MAPPING: dict[str, str] = {}
    FORMAT_MAPPING: dict[str, str] = {}

    @classmethod
    def format_time(cls, expression: str | exp.Expr | None) -> exp.Expr | None:
        """A format as it is: the literal itself (sqlglot's ``Dialect.format_time`` makes a
        new literal in Python's ``strftime`` form); a quoted default (``"'yyyy-MM-dd'"``) as
        a literal."""
        if isinstance(expression, str):
            return exp.Literal.string(expression[1:-1])
        return expression

    def to_json_path(self, path: exp.Expr | None) -> exp.Expr | None:
        """A JSON path as it is (sqlglot parses it into ``JSONPath`` and prints it
        normalised, logging the text of one it cannot parse)."""
        return path

    class Tokenizer(Spark.Tokenizer):
        """Spark's tokenizer; ``window`` followed by ``(`` is a function name, not WINDOW."""

        def tokenize(self, sql: str) -> list[Token]:
            tokens = super().tokenize(sql)
            for token, following in zip(tokens, tokens[1:]):
                if token.token_type == TokenType.WINDOW and following.token_type == TokenType.L_PAREN:
                    token.token_type = TokenType.VAR
            return tokens

    class Parser(SparkParser):
        """Spark's parser plus ``STREAM t``, ``WATERMARK … DELAY OF …`` and window TVFs;
        string literals keep the text they were written with."""

        FUNCTIONS = {**SparkParser.FUNCTIONS, "NAMED_STRUCT": _build_named_struct,
                     "DATE_TRUNC": _unit_as_written(exp.TimestampTrunc, 0, 1),
                     "TRUNC": _unit_as_written(exp.DateTrunc, 1, 0)}
        _STRINGS = {
            TokenType.STRING: lambda self, token: self._verbatim(
                exp.Literal(this=token.text, is_string=True), token),
            TokenType.RAW_STRING: lambda self, token: self._verbatim(
                exp.RawString(this=token.text), token),
        }
        PRIMARY_PARSERS = {**SparkParser.PRIMARY_PARSERS, **_STRINGS}
        STRING_PARSERS = {**SparkParser.STRING_PARSERS, **_STRINGS}

        def _verbatim(self, node: exp.Expr, token: Token) -> exp.Expr:
            node = self.expression(node, token)
            node.meta["verbatim"] = (node.this, self.sql[token.start:token.end + 1])
            return node

        def _parse_primary(self) -> exp.Expr | None:
            # Adjacent strings ('a' 'b', also 'it''s') are one value in Spark: one literal
            # printed as written, not sqlglot's CONCAT('a', 'b').
            if not (self._curr and self._next and self._curr.token_type == TokenType.STRING
                    and self._next.token_type == TokenType.STRING):
                return super()._parse_primary()
            tokens = []
            while self._match(TokenType.STRING):
                tokens.append(self._prev)
            literal = exp.Literal(this="".join(token.text for token in tokens), is_string=True)
            literal.update_positions(line=tokens[0].line, col=tokens[0].col,
                                     start=tokens[0].start, end=tokens[-1].end)
            gaps = (self.sql[a.end + 1:b.start] for a, b in zip(tokens, tokens[1:]))
            text = (self.sql[tokens[0].start:tokens[-1].end + 1] if all(not g.strip() for g in gaps)
                    else " ".join(self.sql[token.start:token.end + 1] for token in tokens))
            literal.meta["verbatim"] = (literal.this, text)
            return self.expression(literal)

        def raise_error(self, message: str, token: Token | None = None) -> None:
            # Record the offending token's offsets in the error record, so that callers
            # need not rebuild them from line/col (sqlglot's col is the token's last char).
            token = token or self._curr or self._prev
            count = len(self.errors)
            try:
                if token:
                    super().raise_error(message, token)
                else:
                    super().raise_error(message)
            except ParseError as error:
                _record_offsets(error, token)
                raise
            if len(self.errors) > count:
                _record_offsets(self.errors[-1], token)

        def _parse_table(self, schema=False, joins=False, alias_tokens=None, parse_bracket=False,
                         is_db_reference=False, parse_partition=False, consume_pipe=False) -> exp.Expr | None:
            if not schema and not is_db_reference:
                special = self._parse_window_tvf(alias_tokens) or self._parse_stream_read(alias_tokens)
                if special is not None:
                    if joins:
                        for join in self._parse_joins(alias_tokens=alias_tokens):
                            special.append("joins", join)
                    return special
            this = super()._parse_table(
                schema=schema, joins=joins, alias_tokens=alias_tokens,
                parse_bracket=parse_bracket, is_db_reference=is_db_reference,
                parse_partition=parse_partition, consume_pipe=consume_pipe,
            )
            return _hoist_watermark(this)

        def _parse_table_alias(self, alias_tokens=None) -> exp.TableAlias | None:
            # WATERMARK col DELAY OF interval [AS] alias: the clause sits before the alias, so it
            # is parsed here and carried on the TableAlias until _parse_table hoists it.
            watermark = self._parse_watermark_clause()
            alias = super()._parse_table_alias(alias_tokens)
            if watermark is None:
                return alias
            alias = alias or self.expression(exp.TableAlias())
            alias.set("watermark", watermark)
            return alias

        def _parse_watermark_clause(self) -> Watermark | None:
            """``WATERMARK <named expression> DELAY OF <interval>``; ``None`` if absent."""
            if not _is_var_text(self._curr, "WATERMARK") or self._next is None:
                return None
            if self._next.token_type in (TokenType.ALIAS, TokenType.L_PAREN):
                return None
            start, index = self._curr, self._index
            self._advance()
            column = self._try_parse(self._parse_assignment)
            if column is not None and self._match(TokenType.ALIAS):
                column = exp.alias_(column, self._parse_id_var(any_token=True), copy=False)
            if column is None or not _is_var_text(self._curr, "DELAY"):
                self._retreat(index)  # not the clause: WATERMARK is an alias
                return None
            self._advance()
            if not self._match_text_seq("OF"):
                self.raise_error("Expected DELAY OF <interval> in the WATERMARK clause")
            delay = self._parse_interval()
            if delay is None:
                self.raise_error("Expected an INTERVAL after WATERMARK … DELAY OF")
            return _with_positions(Watermark(this=column, expression=delay), start, self._prev)

        def _parse_stream_read(self, alias_tokens) -> exp.Table | None:
            """``STREAM t`` or ``STREAM(t)`` → Table ``t`` with ``stream=True``."""
            if not _is_var_text(self._curr, "STREAM") or self._next is None:
                return None
            following = self._next.token_type
            wrapped = following == TokenType.L_PAREN
            if not wrapped and following not in (TokenType.VAR, TokenType.IDENTIFIER):
                return None
            if not wrapped and _is_var_text(self._next, "WATERMARK"):
                return None
            self._advance()
            if wrapped:
                self._advance()
            table = self._parse_table_parts()
            if wrapped:
                self._match_r_paren()
            table.set("stream", True)
            alias = self._parse_table_alias(alias_tokens=alias_tokens or self.TABLE_ALIAS_TOKENS)
            if alias:
                table.set("alias", alias)
            return _hoist_watermark(table)

        def _parse_window_tvf(self, alias_tokens) -> WindowTVF | None:
            start = self._curr
            following = self._peek(1)
            offset = 0
            if (start and start.token_type == TokenType.TABLE
                    and following and following.token_type == TokenType.L_PAREN):
                offset = 2  # TABLE(TUMBLE(...))
            name = self._peek(offset)
            if not _is_var_text(name, *TVF_KINDS):
                return None
            paren = self._peek(offset + 1)
            if paren is None or paren.token_type != TokenType.L_PAREN:
                return None
            for _ in range(offset + 2):
                self._advance()
            kind = name.text.upper()
            args: dict[str, t.Any] = {"kind": kind}
            positional: list[exp.Expr] = []
            while True:
                self._parse_tvf_argument(kind, args, positional, name)
                if not self._match(TokenType.COMMA):
                    break
            self._match_r_paren()
            if offset:
                self._match_r_paren()
            end = self._prev
            self._assign_tvf_positionals(kind, args, positional, name)
            tvf = _with_positions(WindowTVF(**args), start, end)
            alias = self._parse_table_alias(alias_tokens=alias_tokens or self.TABLE_ALIAS_TOKENS)
            if alias is not None:
                if alias.args.get("watermark"):
                    self.raise_error("WATERMARK cannot follow a window TVF; put it on the relation "
                                     "(e.g. in a view) instead", start)
                tvf.set("alias", alias)
            return tvf

        def _peek(self, distance: int) -> Token | None:
            index = self._index + distance
            return self._tokens[index] if index < len(self._tokens) else None

        def _parse_tvf_argument(self, kind, args, positional, name_token) -> None:
            key = None
            if self._next and self._next.token_type == TokenType.FARROW and self._curr.text.upper() in TVF_NAMED_PARAMS:
                key = TVF_NAMED_PARAMS[self._curr.text.upper()]
                self._advance(2)
            if key == "this" or (key is None and not positional and "this" not in args):
                if "this" in args:
                    self.raise_error(f"Duplicate argument DATA of {kind}", name_token)
                args["this"], partition = self._parse_tvf_relation(kind)
                if partition:
                    args["partition_by"] = partition
                return
            if self._match_text_seq("DESCRIPTOR"):
                self._match_l_paren()
                value = self._parse_column()
                self._match_r_paren()
            else:
                value = self._parse_assignment()
            if value is None:
                self.raise_error(f"Expected an argument of {TVF_SIGNATURES[kind]}")
            if key is None:
                positional.append(value)
            elif key in args:
                self.raise_error(f"Duplicate argument {key.upper()} of {kind}", name_token)
            else:
                args[key] = value

        def _parse_tvf_relation(self, kind) -> tuple[exp.Expr, list[exp.Expr] | None]:
            self._match(TokenType.TABLE)
            if self._match(TokenType.L_PAREN, advance=False):
                relation = self._parse_select(table=True, parse_subquery_alias=False)
            else:
                relation = self._parse_table_parts()
            if relation is None:
                self.raise_error(f"Expected a relation as first argument of {TVF_SIGNATURES[kind]}")
            if self._match(TokenType.PARTITION_BY):
                if kind != "SESSION":
                    self.raise_error(f"PARTITION BY is only allowed in SESSION, not {kind}", self._prev)
                # Flink: PARTITION BY key or PARTITION BY (key, …); a bare list would swallow
                # the following arguments.
                if self._match(TokenType.L_PAREN, advance=False):
                    return relation, self._parse_wrapped_csv(self._parse_column)
                return relation, [self._parse_column()]
            return relation, None

        def _assign_tvf_positionals(self, kind, args, positional, name_token) -> None:
            names, required = TVF_PARAMS[kind]
            slots = ["time_column", *names]
            missing_named = [s for s in slots if s not in args]
            if len(positional) > len(missing_named):
                self.raise_error(f"Too many arguments; expected {TVF_SIGNATURES[kind]}", name_token)
            for slot, value in zip(missing_named, positional):
                args[slot] = value
            needed = ["this", "time_column", *names[:required]]
            if any(args.get(slot) is None for slot in needed):
                self.raise_error(f"Too few arguments; expected {TVF_SIGNATURES[kind]}", name_token)
            if not isinstance(args["time_column"], exp.Column):
                self.raise_error(f"The time column of {kind} must be a column name", name_token)

    class Generator(SparkGenerator):
        """Spark's generator; prints :class:`Watermark` in place and window TVFs in Flink's spelling.

        Spark's generator also rewrites trees while printing them (``QUALIFY`` → subquery,
        ``DISTINCT ON`` → ``ROW_NUMBER()``, ``UNNEST`` → ``explode`` …). Those tree
        transforms are turned off here (:data:`GENERATOR_REWRITES` lists them): the ones
        sqlstream needs are explicit steps of :data:`sqlstream.sql.rewrite.REWRITES`, which run
        before the checks, so the SQL the checks judged is the SQL that is printed and run.
        """

        TRANSFORMS = {
            **{kind: transform for kind, transform in SparkGenerator.TRANSFORMS.items()
               if kind not in GENERATOR_REWRITES},
            Watermark: lambda self, e: self.watermark_sql(e),
            WindowTVF: lambda self, e: self.windowtvf_sql(e),
            exp.ToChar: lambda self, e: self.func("TO_CHAR", e.this, e.args.get("format")),
            **{kind: _format_call(kind) for kind in _FORMAT_CALLS},
            **{kind: _unit_call(kind) for kind in _UNIT_CALLS},
        }

        def format_time(self, expression: exp.Expr, inverse_time_mapping=None,
                        inverse_time_trie=None) -> str | None:
            return self.sql(expression, "format") or None

        def literal_sql(self, expression: exp.Literal) -> str:
            return _verbatim(expression) or super().literal_sql(expression)

        def rawstring_sql(self, expression: exp.RawString) -> str:
            return _verbatim(expression) or super().rawstring_sql(expression)

        def struct_sql(self, expression: exp.Struct) -> str:
            if not expression.meta.get("named_struct") if expression._meta else True:
                return super().struct_sql(expression)
            args = []
            for field in expression.expressions:
                name = field.meta.get("name_literal") if field._meta else None
                args += [self.sql(name if name is not None and name.name == field.name
                                  else exp.Literal.string(field.name)), self.sql(field, "expression")]
            return self.func("NAMED_STRUCT", *args)

        def watermark_sql(self, expression: Watermark) -> str:
            return f"WATERMARK {self.sql(expression, 'this')} DELAY OF {self.sql(expression, 'expression')}"

        def windowtvf_sql(self, expression: WindowTVF) -> str:
            relation = expression.this
            relation_sql = self.sql(relation)
            if isinstance(relation, exp.Table):
                relation_sql = f"TABLE {relation_sql}"
            partition = self.expressions(expression, key="partition_by", flat=True)
            if len(expression.args.get("partition_by") or []) > 1:
                partition = f"({partition})"
            if partition:
                relation_sql = f"{relation_sql} PARTITION BY {partition}"
            kind = expression.kind
            names = ["time_column", *TVF_PARAMS[kind][0]]
            args = [relation_sql, f"DESCRIPTOR({self.sql(expression, 'time_column')})"]
            args += [self.sql(expression, n) for n in names[1:] if expression.args.get(n) is not None]
            alias = self.sql(expression, "alias")
            alias = f" AS {alias}" if alias else ""
            joins = self.expressions(expression, key="joins", sep="", flat=True)
            return f"{kind}({', '.join(args)}){alias}{joins}"

        def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
            watermark = expression.args.get("watermark")
            if watermark is None:
                return super().table_sql(expression, sep)
            if expression.args.get("alias"):
                return super().table_sql(expression, f" {self.sql(watermark)}{sep}")
            return f"{super().table_sql(expression, sep)} {self.sql(watermark)}"

        def subquery_sql(self, expression: exp.Subquery, sep: str = " AS ") -> str:
            watermark = expression.args.get("watermark")
            if watermark is None:
                return super().subquery_sql(expression, sep)
            alias = self.sql(expression, "alias")
            alias = f" {self.sql(watermark)}{sep}{alias}" if alias else f" {self.sql(watermark)}"
            pivots = self.expressions(expression, key="pivots", sep="", flat=True)
            sql = self.query_modifiers(expression, self.wrap(expression), alias, pivots)
            return self.prepend_ctes(expression, sql)


def _record_offsets(error: ParseError | dict, token: Token | None) -> None:
    records = error.errors if isinstance(error, ParseError) else [error]
    if token and records:
        records[0]["start"] = token.start
        records[0]["end"] = token.end + 1


def _with_positions(node: exp.Expression, first: Token, last: Token) -> exp.Expression:
    return node.update_positions(line=first.line, col=first.col, start=first.start, end=last.end)


def _hoist_watermark(relation: exp.Expr | None) -> exp.Expr | None:
    """Move a watermark parsed with the alias onto the relation itself."""
    alias = relation.args.get("alias") if relation is not None else None
    if isinstance(alias, exp.TableAlias) and alias.args.get("watermark") is not None:
        relation.set("watermark", alias.args.pop("watermark"))
        if not alias.this and not alias.args.get("columns"):
            relation.set("alias", None)
    return relation
