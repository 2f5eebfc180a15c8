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

It also keeps time linear in the depth of nesting where sqlglot's Spark dialect is not:
``ARRAY(…)``, ``MAP(…)`` and ``STRUCT(…)`` are calls, never tried as types first; a nested
type is parsed with Hive's CHAR/VARCHAR rewrite once, not once per level; a lambda body's
columns are searched once, not again by every enclosing lambda; a struct's named fields are
moved, not copied, when printed. A nested type where a value belongs (``SELECT ARRAY<INT>``)
is a syntax error, as in Spark.

Positions: sqlglot keeps ``meta`` (``line``, ``col``, ``start``, ``end``; ``end``
inclusive) on identifiers and literals; :class:`WindowTVF` and :class:`Watermark` carry
the offsets of their whole text. :func:`sqlstream.sql.parsing.node_offsets` turns any node into
``(start, end_exclusive)`` offsets within the parsed text.
"""

from __future__ import annotations

import itertools

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import Token, TokenType

from sqlstream.sql.dialect_generator import SqlStreamGenerator
from sqlstream.sql.dialect_parser import SqlStreamParser
from sqlstream.sql.expressions import Watermark, WindowTVF

__all__ = ["SqlStream", "Watermark", "WindowTVF"]


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
            for token, following in itertools.pairwise(tokens):
                if (
                    token.token_type == TokenType.WINDOW
                    and following.token_type == TokenType.L_PAREN
                ):
                    token.token_type = TokenType.VAR
            return tokens

    Parser = SqlStreamParser
    Generator = SqlStreamGenerator
