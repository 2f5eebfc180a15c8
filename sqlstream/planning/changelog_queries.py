"""The query of Flink's changelog ``INSERT`` (docs/cdc.md#flink-spelling): what it may
compute, the types it writes into the sink's declared columns, and the view the ``AUTO CDC``
flow reads when it computes more than the changelog's own columns.

Flink applies an ``INSERT INTO keyed_sink SELECT … FROM changelog WHERE …`` to each change
row by itself: the projection is computed on the row's image, and the filter too — an
update whose new image fails it emits the retraction of the old row (``-U``) and drops the
new one (``+U``), so the key leaves the table; one whose new image passes is an upsert.
Here the same query is one ``AUTO CDC … STORED AS SCD TYPE 1`` flow over a view of the
changelog, one row per change::

    SELECT <item> AS <sink column>, …                    -- CAST where the types differ
           (`op` = 'd' OR NOT COALESCE((<where>), FALSE)) AS `__sqlstream_delete`,
           `seq` AS `__sqlstream_sequence`                -- METADATA FROM 'source.lsn'
    FROM <the changelog stream>

and the flow ``KEYS (<primary key>) APPLY AS DELETE WHEN __sqlstream_delete SEQUENCE BY
__sqlstream_sequence COLUMNS <the sink's columns>``: a change whose image fails the
``WHERE`` (``FALSE`` or ``NULL``) deletes its key, sequenced like any change.

The sink's declared types are checked against the query's by Spark's store assignment
(:mod:`sqlstream.analysis.store_assignment`): a type that cannot be assigned is ``SS225`` at
the select item, an assignable one is converted with a ``CAST`` in the view. A key column is
a column of the stream (renamed or not, widened from a smaller integer type at most): its
values must identify the rows the changes apply to.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlstream.analysis.facts import function_name, outer_select
from sqlstream.analysis.spark_types import UNKNOWN, aggregate_call
from sqlstream.analysis.store_assignment import assignable, widening
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.planning.expectations import NON_DETERMINISTIC
from sqlstream.sql.parsing import node_offsets, to_spark_sql
from sqlstream.sql.tree_walks import find_all

DELETE_COLUMN, SEQUENCE_COLUMN = "__sqlstream_delete", "__sqlstream_sequence"
"""The view's columns the flow reads as its delete condition and its sequence."""
_GENERATORS = frozenset(
    {"explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer"}
    | {"stack", "json_tuple"}
)
"""Spark's generators: a row in, several rows out."""


class ChangelogQueryError(SqlStreamError):
    """A changelog ``INSERT`` into a keyed sink that cannot be one change per row
    (``SS109``), or a column whose type the sink's cannot take (``SS225``)."""

    code = "SS109"


@dataclass(frozen=True)
class Projection:
    """The changelog query read per change row.

    Attributes:
        items: one expression per written column, in order (a star expanded into the
            stream's columns it stands for), without their aliases.
        where: the ``WHERE`` condition, or ``None``.
        from_sql: the ``FROM`` clause as Spark SQL (``FROM changes AS c``).
        spans: where each item is written (a star's columns: the star).
    """

    items: tuple[exp.Expr, ...]
    where: exp.Expr | None
    from_sql: str
    spans: tuple[ast.Span, ...]


def projection(tree: exp.Expr, query: ast.SqlText, columns, sink: str, version: str) -> Projection:
    """The query over a changelog as a :class:`Projection`: ``SELECT items FROM stream
    [WHERE condition]``, each item a deterministic expression of the change's row.

    Args:
        tree: the compiled (rewritten) query.
        query: its text in the file (for positions).
        columns: its result columns ``(name, type)``, in order.
        sink: the sink's name (for the messages).
        version: the Spark minor judged for (its aggregate functions).

    Raises:
        ChangelogQueryError: ``SS109`` a join, aggregation, grouping, window, ``DISTINCT``,
            ``ORDER BY`` / ``LIMIT``, a CTE, a subquery, a generator, a non-deterministic
            function, or a ``FROM`` other than the stream itself.
    """
    hint = (
        f"compute in a view and apply it with CREATE FLOW … AS AUTO CDC INTO {sink} FROM "
        "STREAM(view) KEYS (…) APPLY AS DELETE WHEN op = 'd' SEQUENCE BY … (docs/cdc.md)"
    )
    allowed = ("expressions", "from_", "where")
    source = tree.args.get("from_") if isinstance(tree, exp.Select) else None
    if (
        source is None
        or any(v for k, v in tree.args.items() if k not in allowed)
        or not isinstance(source.this, exp.Table)
    ):
        raise ChangelogQueryError(
            f"a changelog is applied to '{sink}' one change at a time: the query is SELECT … "
            "FROM the changelog [WHERE …] (no join, aggregation, window, DISTINCT, ORDER BY "
            "or LIMIT)",
            query.span,
            hint=hint,
        )
    for node in find_all(tree, exp.Expr):
        offsets = node_offsets(node)
        at = query.locate(*offsets) if offsets else query.span
        name = function_name(node)
        if isinstance(node, (exp.Window, exp.Subquery, exp.Exists)) or aggregate_call(
            node, version, query.text
        ):
            what = "a subquery" if isinstance(node, (exp.Subquery, exp.Exists)) else "it"
            raise ChangelogQueryError(
                f"'{node.sql(dialect='spark')}' looks at other rows ({what} is not a function "
                "of one change): a changelog is applied to a table by key one change at a time",
                at,
                hint=hint,
            )
        if name in NON_DETERMINISTIC:
            raise ChangelogQueryError(
                f"'{name}()' is not a function of the change: a micro-batch replayed after a "
                "crash would write other values for the same changes",
                at,
                hint="compute columns and conditions from the change's own columns",
            )
        if name in _GENERATORS:
            raise ChangelogQueryError(
                "a generator makes several rows of one change: a changelog is applied to a "
                "table by key, one row per change",
                at,
                hint=hint,
            )
    assert isinstance(tree, exp.Select)  # (tested above)
    items, spans = _expanded(tree, query, len(columns), columns)
    where = tree.args.get("where")
    return Projection(items, where.this if where is not None else None, to_spark_sql(source), spans)


def _expanded(tree: exp.Select, query: ast.SqlText, count: int, columns):
    """The items of ``tree`` with a star replaced by the columns it stands for.

    Raises:
        ChangelogQueryError: ``SS109``, more than one star among other items.
    """
    stars = [e for e in tree.expressions if isinstance(e, exp.Star) or _qualified_star(e)]
    if len(stars) > 1:
        raise ChangelogQueryError(
            "more than one * in the select list of a changelog INSERT",
            query.span,
            hint="name the columns",
        )
    items: list[exp.Expr] = []
    spans: list[ast.Span] = []
    for item in tree.expressions:
        offsets = node_offsets(item)
        at = query.locate(*offsets) if offsets else query.span
        if item in stars:
            width = count - (len(tree.expressions) - 1)
            table = item.table if isinstance(item, exp.Column) else None
            for name, _ in columns[len(items) : len(items) + width]:
                items.append(exp.column(name, table=table, quoted=True))
                spans.append(at)
        else:
            items.append(item.this if isinstance(item, exp.Alias) else item)
            spans.append(at)
    return tuple(items), tuple(spans)


def _qualified_star(node: exp.Expr) -> bool:
    return isinstance(node, exp.Column) and isinstance(node.this, exp.Star)


def assignments(
    written: list[tuple[str, str]], declared: list[tuple[str, str]], spans, sink: str
) -> list[str | None]:
    """The ``CAST`` each written column needs into the sink's declared column: the declared
    type, or ``None`` (the same type, or a type not known here).

    Args:
        written: the query's columns ``(name, type)``, in order.
        declared: the sink's declared columns ``(name, type)``, in the same order.
        spans: where each written column is selected.
        sink: the sink's name.

    Raises:
        ChangelogQueryError: ``SS225``, a type Spark's store assignment refuses (both types
            named, at the select item).
    """
    casts: list[str | None] = []
    for (name, kind), (column, wanted), span in zip(written, declared, spans, strict=True):
        answer = assignable(kind, wanted)
        if answer is False:
            raise ChangelogQueryError(
                f"column '{name}' is {kind}; the sink '{sink}' declares '{column}' {wanted}, "
                f"which Spark does not assign from {kind} (ANSI store assignment)",
                span,
                code="SS225",
                hint=f"convert it in the query (CAST(… AS {wanted}), or try_cast(… AS "
                f"{wanted}) for NULL where it does not convert), or declare {column} {kind}",
            )
        casts.append(wanted if answer and kind != wanted and kind != UNKNOWN else None)
    return casts


def check_keys(
    projection: Projection,
    keys: list[str],
    declared: list[tuple[str, str]],
    written: list[tuple[str, str]],
    stream_columns: set[str],
) -> None:
    """Each key column of the sink is written from a column of the stream, renamed or not,
    at most widened (``INT`` into ``BIGINT``).

    Raises:
        ChangelogQueryError: ``SS109`` at the item: a computed key, or one converted to a
            type that can merge distinct values.
    """
    names = [n.lower() for n, _ in declared]
    for key in keys:
        index = names.index(key.lower())
        item, span = projection.items[index], projection.spans[index]
        plain = isinstance(item, exp.Column) and not isinstance(item.this, exp.Star)
        if not plain or item.name.lower() not in stream_columns:
            raise ChangelogQueryError(
                f"key column '{declared[index][0]}' is computed ({item.sql(dialect='spark')}): "
                "a change applies to the row of its key, and Flink's upsert key must be "
                "derivable from the changelog's columns",
                span,
                hint=f"select a column of the changelog as {declared[index][0]} (a rename, "
                f"col AS {declared[index][0]}, is fine); compute the other columns",
            )
        kind, wanted = written[index][1], declared[index][1]
        if kind != UNKNOWN and not widening(kind, wanted):
            raise ChangelogQueryError(
                f"key column '{declared[index][0]}' is declared {wanted} and written from "
                f"{kind}: the CAST could make two keys one",
                span,
                hint=f"declare {declared[index][0]} {kind}",
            )


def view_sql(
    projection: Projection,
    declared: list[tuple[str, str]],
    casts: list[str | None],
    op: str,
    sequence: str | None,
) -> str:
    """The view of one row per change that the flow reads (this module's docstring).

    Args:
        projection: the query, read by :func:`projection`.
        declared: the sink's columns ``(name, type)``: the view's first columns.
        casts: the declared type each item is cast to, or ``None`` (:func:`assignments`).
        op: the stream's ``METADATA FROM 'op'`` column.
        sequence: its ``METADATA FROM 'source.lsn'`` column, or ``None`` (arrival order).
    """
    items = []
    for item, (name, _), cast in zip(projection.items, declared, casts, strict=True):
        text = to_spark_sql(item)
        items.append(f"{f'CAST({text} AS {cast})' if cast else text} AS {quote(name)}")
    delete = f"{quote(op)} = 'd'"
    if projection.where is not None:
        delete += f" OR NOT COALESCE(({to_spark_sql(projection.where)}), FALSE)"
    items.append(f"({delete}) AS {quote(DELETE_COLUMN)}")
    if sequence is not None:
        items.append(f"{quote(sequence)} AS {quote(SEQUENCE_COLUMN)}")
    return f"SELECT {', '.join(items)} {projection.from_sql}"


def plain(projection: Projection, declared: list[tuple[str, str]], casts) -> bool:
    """Whether the query selects the sink's columns from the stream as they are: no
    ``WHERE``, no expression, rename or ``CAST`` (the flow then reads the stream itself)."""
    return projection.where is None and all(
        isinstance(item, exp.Column)
        and not isinstance(item.this, exp.Star)
        and item.name.lower() == name.lower()
        and cast is None
        for item, (name, _), cast in zip(projection.items, declared, casts, strict=True)
    )


def item_spans(tree: exp.Expr | None, query: ast.SqlText, count: int) -> list[ast.Span]:
    """Where each of the ``count`` result columns of ``tree`` is selected: its item of the
    outer ``SELECT``, or the whole query when the items are not the columns one for one (a
    star, a set operation)."""
    select = outer_select(tree) if tree is not None else None
    items = select.expressions if select is not None else []
    if len(items) != count or any(isinstance(i, exp.Star) or _qualified_star(i) for i in items):
        return [query.span] * count
    spans = []
    for item in items:
        offsets = node_offsets(item)
        spans.append(query.locate(*offsets) if offsets else query.span)
    return spans


def typed_query(query: ast.SqlText, columns, casts: list[str | None]) -> ast.SqlText:
    """``query`` as written when no column needs a ``CAST``, else ``SELECT CAST(`c` AS
    <declared>) AS `c`, … FROM (<query>) AS `__sqlstream_typed```: the query's own text kept
    at its place in the file, so its findings stay positioned."""
    if not any(casts):
        return query
    items = ", ".join(
        f"CAST({quote(name)} AS {cast}) AS {quote(name)}" if cast else quote(name)
        for (name, _), cast in zip(columns, casts, strict=True)
    )
    prefix, suffix = f"SELECT {items} FROM (", "\n) AS `__sqlstream_typed`"
    return ast.SqlText(
        prefix + query.text + suffix, query.start - len(prefix), query.span, query.source_map
    )
