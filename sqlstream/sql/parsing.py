"""Query text → sqlglot tree in the sqlstream dialect, and tree → Spark SQL text.

The entry points of the sql stage: :func:`parse_query` and :func:`parse_expression` read
text with :class:`~sqlstream.sql.dialect.SqlStream` and turn sqlglot's errors into positioned
``SS102`` findings; :func:`to_spark_sql` prints a tree as the Spark SQL that runs;
:func:`node_offsets` and :func:`watermark_of` read positions and watermarks off a tree.
"""

from __future__ import annotations

import functools
import re

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from sqlstream.diagnostics.errors import SqlStreamError, SqlSyntaxError
from sqlstream.frontend.literals import literal_problem, split_interval_offsets
from sqlstream.ir.caches import CompileCaches
from sqlstream.sql.dialect import SqlStream
from sqlstream.sql.foreign import ksql_window_problem
from sqlstream.sql.tree_walks import copy_tree, find_all, tree_key

__all__ = [
    "check_sqlglot_build",
    "node_offsets",
    "parse_expression",
    "parse_query",
    "to_spark_sql",
    "watermark_of",
]

_DIALECT = SqlStream()
_KSQL_WINDOW = re.compile(r"\bWINDOW\s+(TUMBLING|HOPPING|SESSION)\s*\(", re.I)


def _recall(kind: str, sql: str, parse, caches: CompileCaches | None) -> exp.Expr:
    """``parse(sql)``, or a copy of the tree kept for ``(kind, sql)`` in ``caches.parses``.

    The trees depend on the text only (one fixed dialect), so a kept one answers the same
    text again, copied (callers rewrite the trees they get; a copy costs about a tenth of a
    parse); failures are not kept. The language server's stores keep them: it checks a
    file again after each keystroke, with most statements' text unchanged."""
    remembered = caches.parses if caches is not None else None
    if remembered is None:
        return parse(sql)
    tree = remembered.get((kind, sql))
    if tree is None:
        tree = parse(sql)
        remembered.keep((kind, sql), copy_tree(tree))
        return tree
    return copy_tree(tree)


def node_offsets(node: exp.Expr) -> tuple[int, int] | None:
    """Return ``(start, end)`` character offsets of ``node`` within the parsed text.

    ``end`` is exclusive. Uses the node's own ``meta`` when present (window TVFs, watermarks,
    identifiers, literals), else the smallest range covering its descendants' positions.

    Returns:
        The offsets, or ``None`` for a node built by a rewrite (no position anywhere inside).
    """
    meta = node.meta if node._meta else {}
    if meta.get("start") is not None and meta.get("end") is not None:
        return meta["start"], meta["end"] + 1
    starts, ends = [], []
    for child in find_all(node, exp.Expr):
        child_meta = child._meta
        if child_meta and child_meta.get("start") is not None and child_meta.get("end") is not None:
            starts.append(child_meta["start"])
            ends.append(child_meta["end"] + 1)
    return (min(starts), max(ends)) if starts else None


def watermark_of(relation: exp.Expr) -> tuple[str, exp.Expr] | None:
    """Return ``(column_name, delay)`` of a relation's ``WATERMARK`` clause, or ``None``.

    Args:
        relation: a Table or Subquery from a parsed query.

    Returns:
        The event-time column's output name (the alias of ``expr AS name``) and the delay
        expression (an :class:`~sqlglot.expressions.Interval`).
    """
    watermark = relation.args.get("watermark")
    if watermark is None:
        return None
    return watermark.this.alias_or_name, watermark.expression


# sqlglot's function builders raise ValueError, TypeError or IndexError on calls with the
# wrong arguments (``date_trunc()``): Spark refuses those calls too.
_PARSE_ERRORS = (ParseError, TokenError, ValueError, TypeError, IndexError)


def _syntax_error(sql: str, error: Exception) -> SqlSyntaxError:
    if isinstance(error, ParseError) and error.errors:
        record = error.errors[0]
        start, end = record.get("start"), record.get("end")
        if start is None and record.get("line") is not None:
            start, end = _offsets_from_line_col(
                sql, record["line"], record["col"], record.get("highlight") or ""
            )
        message = _readable(
            record.get("description") or str(error), sql[start:end] if start is not None else ""
        )
        more = len(error.errors) - 1
        if more > 0:
            message = f"{message} … and {more} more"
    elif isinstance(error, TokenError):
        start, end = error.start, error.end
        message = str(error).split("\n")[0]
    else:
        start, end, message = None, None, str(error)
    result = SqlSyntaxError(
        f"invalid SQL: {message}",
        hint="a query body is Spark SQL (SELECT …) plus window TVFs and WATERMARK; "
        "see docs/dialect.md#streaming-clauses",
    )
    result.offset_start = start if start is not None else 0
    result.offset_end = end if end is not None else len(sql)
    return result


_REQUIRED = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _readable(description: str, token: str) -> str:
    """Say sqlglot's internal messages in SQL terms (``Required keyword: 'expression'
    missing for <class '…Add'>`` → ``incomplete expression: Add needs a right operand``)."""
    match = _REQUIRED.search(description)
    if match is None:
        return description
    near = f" near '{token}'" if token.strip() else ""
    return f"incomplete expression{near}: {match.group(2)} is missing its {match.group(1)}"


def _offsets_from_line_col(sql: str, line: int, col: int, highlight: str) -> tuple[int, int]:
    """sqlglot reports the 1-based line and the column of the token's *last* character."""
    line_start = 0
    for _ in range(line - 1):
        line_start = sql.index("\n", line_start) + 1
    end = line_start + col
    return max(0, end - len(highlight)), end


def _check_leftovers(sql: str, tree: exp.Expr) -> None:
    for alias in find_all(tree, exp.TableAlias):
        watermark = alias.args.get("watermark")
        if watermark is not None:
            error = SqlSyntaxError(
                "invalid SQL: WATERMARK is only allowed after a table or a "
                "parenthesised subquery in FROM",
                hint="write FROM t WATERMARK ts DELAY OF INTERVAL … (docs/dialect.md#watermark-in-from)",
            )
            error.offset_start, error.offset_end = node_offsets(watermark) or (0, len(sql))
            raise error


def _check_literals(sql: str, tree: exp.Expr) -> None:
    """Refuse the typed literals Spark's parser refuses (``INVALID_INTERVAL_FORMAT``,
    ``INVALID_TYPED_LITERAL``), at the literal."""
    for node in find_all(tree, exp.Interval, exp.Cast):
        problem = literal_problem(node)
        if problem:
            error = SqlSyntaxError(
                problem,
                hint="for example INTERVAL '10' MINUTES, INTERVAL "
                "'1 hour 30 minutes', DATE '2024-01-31', TIMESTAMP '2024-01-31 12:00:00'",
            )
            error.offset_start, error.offset_end = node_offsets(node) or split_interval_offsets(
                sql, node
            )
            raise error


@functools.lru_cache(maxsize=1)
def _build_problem() -> str | None:
    try:  # mypyc: "interpreted classes cannot inherit from compiled"
        _DIALECT.parser(), _DIALECT.generator()
    except TypeError as error:
        return str(error)
    return None


def check_sqlglot_build() -> None:
    """Refuse sqlglot's compiled build (``sqlglotc``, ``sqlglot[c]``): its mypyc classes
    cannot be instantiated through the Python subclasses of :class:`SqlStream` (sqlglot
    issue 7923, kept so by its maintainers), so every query would fail.

    Raises:
        SqlStreamError: ``SS003`` when ``sqlglotc`` is installed (probed once per process).
    """
    if (problem := _build_problem()) is not None:
        raise SqlStreamError(
            "sqlglot's compiled build (the sqlglotc package) is installed; sqlstream "
            f"extends sqlglot's parser and needs its Python build ({problem})",
            code="SS003",
            hint="pip uninstall sqlglotc (sqlglot itself stays)",
        )


def parse_query(sql: str, caches: CompileCaches | None = None) -> exp.Expr:
    """Parse one Spark SQL statement (normally a query) in the sqlstream dialect.

    Args:
        sql: the statement's text; a trailing ``;`` is allowed.
        caches: the compile context's stores: a tree kept in ``parses`` for the same text
            answers with a copy (:func:`_recall`); ``None``: parse.

    Returns:
        The sqlglot tree; positions in ``meta`` are offsets within ``sql``.

    Raises:
        SqlSyntaxError: the text is not one valid statement. ``span`` is ``None``;
            ``offset_start``/``offset_end`` (end exclusive) locate the offending token in ``sql``;
            also a typed literal Spark's parser refuses (``INTERVAL 'abc' HOUR``,
            ``TIMESTAMP '2024-13-01'``, :mod:`sqlstream.frontend.literals`).
    """
    return _recall("query", sql, _parse_query, caches)


def _parse_query(sql: str) -> exp.Expr:
    check_sqlglot_build()
    try:
        trees = [tree for tree in _DIALECT.parse(sql) if tree is not None]
    except _PARSE_ERRORS as exc:
        syntax = _syntax_error(sql, exc)
        if _KSQL_WINDOW.search(sql):  # a ksqlDB WINDOW clause where it cannot be taken
            try:
                problem = ksql_window_problem(sql, _DIALECT.tokenize(sql))
            except _PARSE_ERRORS:
                problem = None
            at = getattr(syntax, "offset_start", None)
            if problem is not None and (
                at is None or problem.offset_start <= at <= problem.offset_end
            ):
                raise problem from None
        raise syntax from None
    if len(trees) != 1:
        error = SqlSyntaxError(
            f"invalid SQL: expected one statement, found {len(trees)}",
            hint="end the statement with ';' before the next one",
        )
        second = node_offsets(trees[1]) if len(trees) > 1 else None
        error.offset_start, error.offset_end = second or (0, len(sql))
        raise error
    _check_leftovers(sql, trees[0])
    _check_literals(sql, trees[0])
    return trees[0]


def parse_expression(sql: str, caches: CompileCaches | None = None) -> exp.Expr:
    """Parse one scalar Spark SQL expression (e.g. a computed column or a watermark bound).

    Args:
        sql: the expression's text.
        caches: as for :func:`parse_query`.

    Returns:
        The sqlglot expression; positions in ``meta`` are offsets within ``sql``.

    Raises:
        SqlSyntaxError: as :func:`parse_query`, also when text is left after the expression.
    """
    return _recall("expression", sql, _parse_expression, caches)


def _parse_expression(sql: str) -> exp.Expr:
    check_sqlglot_build()
    try:
        tree = _DIALECT.parse_into(exp.Expr, sql)[0]
    except _PARSE_ERRORS as exc:
        raise _syntax_error(sql, exc) from None
    if tree is None:
        error = SqlSyntaxError(
            "invalid SQL: expected an expression",
            hint="write a Spark SQL expression, e.g. dep_delay > 15",
        )
        error.offset_start, error.offset_end = 0, len(sql)
        raise error
    _check_literals(sql, tree)
    return tree


def to_spark_sql(expression: exp.Expr, caches: CompileCaches | None = None) -> str:
    """Return Spark SQL text for ``expression`` on one line (not pretty, no comments).

    Sqlstream-only nodes are printed too (:class:`Watermark` as Spark's own clause,
    :class:`WindowTVF` in Flink's spelling, for debugging); run :func:`sqlstream.sql.rewrite.rewrite`
    first to get SQL that Spark runs.

    Args:
        expression: the tree to print.
        caches: the compile context's stores: with ``printed`` on, the text printed for
            a tree is kept under everything the tree holds
            (:func:`~sqlstream.sql.tree_walks.tree_key`; a tree it cannot key is printed
            each time) and an equal tree is answered from it: the printed text depends on
            the tree only (one fixed dialect and options). The language server's stores
            keep them (after a keystroke most queries are what they were); ``None``: print.
    """
    printed = caches.printed if caches is not None else None
    key = tree_key(expression) if printed is not None else None
    if printed is not None and key is not None and (sql := printed.get(key)) is not None:
        return sql
    # generate(copy=True) would copy with Expression.copy: the same copy, made faster
    sql = _DIALECT.generate(
        copy_tree(expression), copy=False, comments=False, normalize_functions=False
    )
    if printed is not None and key is not None:
        printed.keep(key, sql)
    return sql
