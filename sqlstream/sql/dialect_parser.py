"""The parser of the sqlstream dialect (:class:`~sqlstream.sql.dialect.SqlStream`): Spark's
parser plus ``STREAM t``, ``WATERMARK … DELAY OF …`` and window TVFs, string literals kept as
written, nesting parsed in time linear in its depth (as sqlglot keeps ``parsers/spark.py``
beside its dialect).
"""

from __future__ import annotations

import functools
import itertools
import typing as t

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.helper import seq_get
from sqlglot.parser import Parser
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sqlstream.sql.expressions import (
    TVF_KINDS,
    TVF_NAMED_PARAMS,
    TVF_PARAMS,
    TVF_SIGNATURES,
    Watermark,
    WindowTVF,
)

E = t.TypeVar("E", bound=exp.Expr)


def _is_var_text(token: Token | None, *texts: str) -> t.TypeGuard[Token]:
    return (
        token is not None
        and token.token_type not in (TokenType.STRING, TokenType.IDENTIFIER)
        and token.text.upper() in texts
    )


def _build_named_struct(args: list) -> exp.Struct:
    """``named_struct('k', v, …)`` as sqlglot's :class:`~sqlglot.expressions.Struct` of
    ``k := v`` (what the type rules read), marked to be printed as ``named_struct`` again
    with each name literal as written."""
    fields = []
    # strict=False: an odd last argument (a name without a value) has no pair: left out
    for key, value in zip(args[::2], args[1::2], strict=False):
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


class SqlStreamParser(SparkParser):
    """Spark's parser plus ``STREAM t``, ``WATERMARK … DELAY OF …`` and window TVFs;
    string literals keep the text they were written with."""

    FUNCTIONS = {
        **SparkParser.FUNCTIONS,
        "NAMED_STRUCT": _build_named_struct,
        "DATE_TRUNC": _unit_as_written(exp.TimestampTrunc, 0, 1),
        "TRUNC": _unit_as_written(exp.DateTrunc, 1, 0),
    }
    _STRINGS = {
        TokenType.STRING: lambda self, token: self._verbatim(
            exp.Literal(this=token.text, is_string=True), token
        ),
        TokenType.RAW_STRING: lambda self, token: self._verbatim(
            exp.RawString(this=token.text), token
        ),
    }
    PRIMARY_PARSERS = {**SparkParser.PRIMARY_PARSERS, **_STRINGS}
    STRING_PARSERS = {**SparkParser.STRING_PARSERS, **_STRINGS}

    def _verbatim(self, node: exp.Expr, token: Token) -> exp.Expr:
        node = self.expression(node, token)
        node.meta["verbatim"] = (node.this, self.sql[token.start : token.end + 1])
        return node

    def _parse_primary(self) -> exp.Expr | None:
        # Adjacent strings ('a' 'b', also 'it''s') are one value in Spark: one literal
        # printed as written, not sqlglot's CONCAT('a', 'b').
        if not (
            self._curr
            and self._next
            and self._curr.token_type == TokenType.STRING
            and self._next.token_type == TokenType.STRING
        ):
            return super()._parse_primary()
        tokens = []
        while self._match(TokenType.STRING):
            tokens.append(self._prev)
        literal = exp.Literal(this="".join(token.text for token in tokens), is_string=True)
        literal.update_positions(
            line=tokens[0].line, col=tokens[0].col, start=tokens[0].start, end=tokens[-1].end
        )
        gaps = (self.sql[a.end + 1 : b.start] for a, b in itertools.pairwise(tokens))
        text = (
            self.sql[tokens[0].start : tokens[-1].end + 1]
            if all(not g.strip() for g in gaps)
            else " ".join(self.sql[token.start : token.end + 1] for token in tokens)
        )
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

    def _parse_types(
        self,
        check_func: bool = False,
        schema: bool = False,
        allow_identifiers: bool = True,
        with_collation: bool = False,
    ) -> exp.Expr | None:
        # Spark writes nested types with angle brackets only (ARRAY<INT>, STRUCT<a: INT>);
        # ARRAY(…), MAP(…) and STRUCT(…) are always calls. sqlglot first tries such a call
        # as a ClickHouse/DuckDB-style type and backtracks, which for STRUCT(STRUCT(…))
        # takes time exponential in the depth (measured: 16 levels 6 s, 20 over 30 s).
        if (
            self._curr is not None
            and self._next is not None
            and self._curr.token_type in self.NESTED_TYPE_TOKENS
            and self._next.token_type == TokenType.L_PAREN
        ):
            return None
        # Hive's parser rewrites CHAR/VARCHAR in the whole type after parsing each level
        # of it (time quadratic in the depth: CAST(x AS ARRAY<ARRAY<…>>) of 300 levels
        # took 8 s): the levels inside are parsed by sqlglot's base parser, so the
        # rewrite runs once, over the outermost type.
        parse = (
            super()._parse_types
            if not self._type_depth
            else functools.partial(Parser._parse_types, self)
        )
        self._type_depth += 1
        try:
            return parse(
                check_func=check_func,
                schema=schema,
                allow_identifiers=allow_identifiers,
                with_collation=with_collation,
            )
        finally:
            self._type_depth -= 1

    def _parse_type(
        self, parse_interval: bool = True, fallback_to_identifier: bool = False
    ) -> exp.Expr | None:
        # A nested type where a value belongs (SELECT ARRAY<INT> FROM s, BigQuery's typed
        # constructors ARRAY<INT>[1] and STRUCT<a INT>(1)): Spark's parser refuses them;
        # sqlglot would read the type as a column or a CAST. A column named like the type
        # is written quoted (`array`).
        if (
            not fallback_to_identifier
            and self._curr is not None
            and self._next is not None
            and self._curr.token_type in self.NESTED_TYPE_TOKENS
            and self._next.token_type == TokenType.LT
        ):
            name = self._curr.text.upper()
            self.raise_error(
                f"{name}<…> is a data type, not a value: a type is written in "
                f"CAST(… AS {name}<…>); a column named {self._curr.text} is "
                f"written `{self._curr.text}`",
                self._curr,
            )
        return super()._parse_type(
            parse_interval=parse_interval, fallback_to_identifier=fallback_to_identifier
        )

    def _replace_lambda(
        self, node: exp.Expr | None, expressions: list[exp.Expr]
    ) -> exp.Expr | None:
        # sqlglot's rule (a column named like a lambda variable becomes that variable),
        # but the columns a nested lambda left (not its own variables) are remembered on
        # its body and not searched for again: sqlglot walks each lambda's whole body, so
        # x -> f(y -> f(z -> …)) took time quadratic in the depth (500 levels: 17 s).
        if not node:
            return node
        lambda_types = {e.name: e.args.get("to") or False for e in expressions}
        left = []
        for column in self._lambda_columns(node):
            typ = lambda_types.get(column.parts[0].name)
            if typ is None:
                left.append(column)
                continue
            dot_or_id = column.to_dot() if column.table else column.this
            if isinstance(typ, exp.DataType):
                dot_or_id = self.expression(exp.Cast(this=dot_or_id, to=typ.copy()))
            parent = column.parent
            while isinstance(parent, exp.Dot):
                if not isinstance(parent.parent, exp.Dot):
                    parent.replace(dot_or_id)
                    break
                parent = parent.parent
            else:
                if column is node:
                    node = dot_or_id
                else:
                    column.replace(dot_or_id)
        self._lambda_bodies[id(node)] = (node, left)
        return node

    def reset(self) -> None:
        super().reset()
        # id(body) → (body, the columns it kept) of each lambda parsed so far
        self._lambda_bodies: dict[int, tuple[exp.Expr, list[exp.Column]]] = {}
        self._type_depth = 0  # _parse_types calls under way

    def _lambda_columns(self, node: exp.Expr) -> list[exp.Column]:
        """The columns under ``node``; below a nested lambda's body, those it kept."""
        found, stack = [], [node]
        while stack:
            current = stack.pop()
            known = self._lambda_bodies.get(id(current))
            if known is not None and known[0] is current and current is not node:
                found.extend(known[1])
                continue
            if isinstance(current, exp.Column):
                found.append(current)
            stack.extend(current.iter_expressions())
        return found

    def _parse_table(
        self,
        schema=False,
        joins=False,
        alias_tokens=None,
        parse_bracket=False,
        is_db_reference=False,
        parse_partition=False,
        consume_pipe=False,
    ) -> exp.Expr | None:
        if not schema and not is_db_reference:
            special = self._parse_window_tvf(alias_tokens) or self._parse_stream_read(alias_tokens)
            if special is not None:
                if joins:
                    for join in self._parse_joins(alias_tokens=alias_tokens):
                        special.append("joins", join)
                return special
        this = super()._parse_table(
            schema=schema,
            joins=joins,
            alias_tokens=alias_tokens,
            parse_bracket=parse_bracket,
            is_db_reference=is_db_reference,
            parse_partition=parse_partition,
            consume_pipe=consume_pipe,
        )
        return self._parse_ksql_window(_hoist_watermark(this))

    def _parse_ksql_window(self, relation: exp.Expr | None) -> exp.Expr | None:
        """ksqlDB's ``WINDOW TUMBLING (SIZE …)``, ``WINDOW HOPPING (SIZE …, ADVANCE BY …)``,
        ``WINDOW SESSION (gap)`` after a relation (each with ``GRACE PERIOD …`` and
        ``RETENTION …`` optional) → the :class:`WindowTVF` it means, marked
        ``meta["ksql"]`` (its ``GRACE PERIOD`` interval or ``None``) and with a placeholder
        time column that :mod:`sqlstream.sql.ksql_windows` replaces by the relation's
        event-time column. ``relation`` unchanged if no such clause follows."""
        kind_token, paren = self._peek(1), self._peek(2)
        if (
            relation is None
            or self._curr is None
            or self._curr.token_type != TokenType.WINDOW
            or not _is_var_text(kind_token, *KSQL_WINDOWS)
            or (paren is None or paren.token_type != TokenType.L_PAREN)
        ):
            return relation
        start = self._curr
        self._advance(3)
        parts: dict[str, exp.Expr] = {}
        while True:
            key = ""
            for words in (("SIZE",), ("ADVANCE", "BY"), ("GRACE", "PERIOD"), ("RETENTION",)):
                if self._match_text_seq(*words):
                    key = " ".join(words)
                    break
            if key in parts:
                self.raise_error(f"Duplicate {key} in the WINDOW clause", self._prev)
            parts[key] = self._parse_ksql_duration()
            if not self._match(TokenType.COMMA):
                break
        self._match_r_paren()
        kind = KSQL_WINDOWS[kind_token.text.upper()]
        needed = {"TUMBLE": ("SIZE",), "HOP": ("SIZE", "ADVANCE BY"), "SESSION": ("",)}[kind]
        allowed = set(needed) | {"GRACE PERIOD", "RETENTION"}
        if any(k not in parts for k in needed) or any(k not in allowed for k in parts):
            expected = {
                "TUMBLE": "(SIZE <n> <unit>)",
                "HOP": "(SIZE <n> <unit>, ADVANCE BY <n> <unit>)",
                "SESSION": "(<n> <unit>)",
            }[kind]
            self.raise_error(f"Expected WINDOW {kind_token.text.upper()} {expected}", kind_token)
        args = {
            "TUMBLE": {"size": parts.get("SIZE")},
            "HOP": {"size": parts.get("SIZE"), "slide": parts.get("ADVANCE BY")},
            "SESSION": {"gap": parts.get("")},
        }[kind]
        alias = relation.args.get("alias")
        if alias is not None:
            relation.set("alias", None)
        tvf = WindowTVF(
            this=relation,
            kind=kind,
            time_column=exp.column(KSQL_TIME_PLACEHOLDER),
            alias=alias,
            **args,
        )
        tvf = _with_positions(tvf, start, self._prev)
        tvf.meta["ksql"] = parts.get("GRACE PERIOD")
        return tvf

    def _parse_ksql_duration(self) -> exp.Interval:
        """``<number> <unit>`` (ksqlDB's durations: ``10 MINUTES``) as ``INTERVAL '10' MINUTE``."""
        number, unit = self._curr, self._next
        if (
            number is None
            or number.token_type != TokenType.NUMBER
            or unit is None
            or unit.token_type in (TokenType.STRING, TokenType.COMMA, TokenType.R_PAREN)
        ):
            self.raise_error("Expected a duration such as 10 MINUTES in the WINDOW clause", number)
        self._advance(2)
        word = unit.text.upper()
        word = word[:-1] if word.endswith("S") else word
        return _with_positions(
            exp.Interval(this=exp.Literal.string(number.text), unit=exp.var(word)), number, unit
        )

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
            alias = t.cast("exp.Identifier | None", self._parse_id_var(any_token=True))
            column = exp.alias_(column, alias, copy=False)
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

    def _parse_stream_read(self, alias_tokens) -> exp.Expr | None:
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
        assert table is not None  # a name follows STREAM (checked above)
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
        if (
            start
            and start.token_type == TokenType.TABLE
            and following
            and following.token_type == TokenType.L_PAREN
        ):
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
                self.raise_error(
                    "WATERMARK cannot follow a window TVF; put it on the relation "
                    "(e.g. in a view) instead",
                    start,
                )
            tvf.set("alias", alias)
        return tvf

    def _peek(self, distance: int) -> Token | None:
        index = self._index + distance
        return self._tokens[index] if index < len(self._tokens) else None

    def _parse_tvf_argument(self, kind, args, positional, name_token) -> None:
        key = None
        if (
            self._next
            and self._next.token_type == TokenType.FARROW
            and self._curr.text.upper() in TVF_NAMED_PARAMS
        ):
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

    def _parse_tvf_relation(
        self, kind
    ) -> tuple[exp.Expr | None, list[exp.Expr] | list[exp.Expr | None] | None]:
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
        # strict=False: fewer positional arguments than free slots fill the first slots
        for slot, value in zip(missing_named, positional, strict=False):
            args[slot] = value
        needed = ["this", "time_column", *names[:required]]
        if any(args.get(slot) is None for slot in needed):
            self.raise_error(f"Too few arguments; expected {TVF_SIGNATURES[kind]}", name_token)
        if not isinstance(args["time_column"], exp.Column):
            self.raise_error(f"The time column of {kind} must be a column name", name_token)


# ksqlDB's window kinds and the window TVFs they are; the placeholder time column that
# sqlstream.sql.ksql_windows replaces by the relation's event-time column.
KSQL_WINDOWS = {"TUMBLING": "TUMBLE", "HOPPING": "HOP", "SESSION": "SESSION"}
KSQL_TIME_PLACEHOLDER = "__ksql_event_time"


def _record_offsets(error: ParseError | dict, token: Token | None) -> None:
    records = error.errors if isinstance(error, ParseError) else [error]
    if token and records:
        records[0]["start"] = token.start
        records[0]["end"] = token.end + 1


def _with_positions(node: E, first: Token, last: Token) -> E:
    return node.update_positions(line=first.line, col=first.col, start=first.start, end=last.end)


def _hoist_watermark(relation: E | None) -> E | None:
    """Move a watermark parsed with the alias onto the relation itself."""
    alias = relation.args.get("alias") if relation is not None else None
    if (
        relation is not None
        and isinstance(alias, exp.TableAlias)
        and alias.args.get("watermark") is not None
    ):
        relation.set("watermark", alias.args.pop("watermark"))
        if not alias.this and not alias.args.get("columns"):
            relation.set("alias", None)
    return relation
