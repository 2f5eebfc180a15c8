"""Window TVFs (``TUMBLE``, ``HOP``, ``CUMULATE``, ``SESSION``) lowered to Spark's ``window()`` /
``session_window()``: one step of :data:`sqlstream.sql.rewrite.REWRITES`.

Errors are :class:`~sqlstream.diagnostics.errors.SemanticError` with ``offset_start``/``offset_end``
(end exclusive) within the parsed query text.

Window TVFs (docs/dialect.md#window-tvfs), as verified on Spark 4.1 (local, file and rate streams,
``availableNow`` into a memory sink, compared with the batch result of the same data):

* Spark's ``window()`` and ``session_window()`` refuse interval literals: ``window(ts,
  INTERVAL 10 MINUTES)`` fails ("must be an integer, long or string literal") and
  ``session_window(ts, INTERVAL '5' SECOND)`` fails ("must be CalendarIntervalType, but got
  DayTimeIntervalType"). Durations are therefore written as strings: ``INTERVAL '1' HOUR``
  → ``'1 hour'``, also inside a dynamic session gap (a ``CASE`` of intervals becomes a
  ``CASE`` of strings, which Spark accepts).
* Aggregated query (GROUP BY holds ``window_start``/``window_end``/``window_time``, bare or
  qualified by the TVF's alias or relation name): the TVF becomes its relation (alias kept)
  and those keys become ONE key, ``window(ts, size[, slide[, offset]])`` or
  ``session_window(ts, gap)``; ``window_start``/``window_end`` become ``window.start`` /
  ``window.end`` (``session_window.start`` …), keeping their output names. This is what
  append mode needs (a grouping key that is a window on the watermarked column) and what
  makes session windows merge. Observed: TUMBLE, HOP (overlapping windows, each row counted
  in size/slide windows) and SESSION (static and dynamic gap) in append mode with a watermark
  give the batch result for every window closed by the watermark.
* ``window_time`` in an aggregated query: Spark refuses ``window_time(window)`` next to the
  aggregate ([MISSING_AGGREGATION]); it only works one level up. A bare ``window_time``
  select item is therefore computed by an outer query, ``SELECT …, window_time(__window) AS
  window_time, … FROM (<aggregate>, window AS __window)``, which keeps Spark's event-time
  metadata: a later TUMBLE over that ``window_time`` (cascading windows) runs in append mode.
  Grouping by both ``window(…)`` and ``window_time(window(…))`` fails at run time ("More
  than one event time columns are available"), so the outer query is the only way found.
  Unaliased non-column items of such a query are named by their SQL text in the inner
  query (``count(*)``; Spark alone would say ``count(1)``): alias them to choose the name.
  Inside larger expressions, HAVING and ORDER BY it is ``window.end - INTERVAL '1'
  MICROSECOND`` (same value; ``window.end - …`` carries no watermark, so a window on it
  would be refused in append mode — verified). Observed: ``window_time = window_end - 1 µs``.
* Non-aggregated TUMBLE/HOP (per-row window assignment, Flink's "window TVF" output): the TVF
  becomes ``(SELECT * EXCEPT (__window), __window.start AS window_start, __window.end AS
  window_end, window_time(__window) AS window_time FROM (SELECT *, window(ts, …) AS __window
  FROM rel)) AS <alias or rel>``. Spark 4.1 accepts ``* EXCEPT``; HOP yields one row per
  overlapping window; the ``window_time`` column keeps the watermark, so it can feed another
  windowed aggregation in append mode.
* CUMULATE becomes a hopping ``window()`` filtered to the cumulating windows; its window
  columns are read from the hidden ``__w`` / ``__cs`` columns (:mod:`sqlstream.sql.cumulate`).
* SESSION without aggregation is refused: Spark merges sessions only inside an aggregate.
  (Spark itself refuses a session-window aggregation in update mode: "not supported for
  session window streaming aggregations".)
* ``availableNow`` runs a final no-data batch, so the append output of a run equals the
  batch result restricted to windows whose end is at or before max(event time) − delay.
* ``FROM STREAM t`` (dropped by :func:`sqlstream.sql.rewrite.drop_stream_markers`): Spark 4.1
  accepts it (and ``STREAM(t)``) on a streaming temp view, but refuses it on a batch view.
"""

from __future__ import annotations

from sqlglot import exp

from sqlstream.sql.cumulate import rewrite_cumulate_aggregated, rewrite_cumulate_per_row
from sqlstream.sql.dialect import WindowTVF
from sqlstream.sql.parsing import node_offsets
from sqlstream.sql.tree_walks import find_all
from sqlstream.sql.window_durations import dynamic_duration, window_duration, window_error
from sqlstream.sql.window_grouping import HIDDEN_WINDOW, group_by_window, minus_micro, window_ref

__all__ = ["rewrite_window_tvfs"]


def _owning_select(tvf: WindowTVF) -> exp.Select:
    parent = tvf.parent
    if (
        isinstance(parent, (exp.From, exp.Join))
        and isinstance(parent.parent, exp.Select)
        and not tvf.args.get("joins")
    ):
        return parent.parent
    raise window_error(f"{tvf.kind} must be a relation of a FROM clause or a JOIN", tvf)


def _depth(node: exp.Expr) -> int:
    depth = 0
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def rewrite_window_tvfs(expression: exp.Expr) -> exp.Expr:
    """Replace ``TUMBLE``/``HOP``/``SESSION`` by Spark's ``window()``/``session_window()``.

    Each SELECT scope is rewritten on its own, innermost first (see the module docstring for
    the shapes and why).

    Args:
        expression: a parsed query; it is modified in place.

    Returns:
        The rewritten tree (a new root when the top query had to be wrapped).

    Raises:
        SemanticError: two TVFs in one SELECT; SESSION without ``GROUP BY window_start,
            window_end``; a SESSION ``PARTITION BY`` key missing from GROUP BY; a size,
            slide or offset that is not a constant duration; a TVF outside FROM/JOIN.
    """
    by_select: dict[int, tuple[exp.Select, WindowTVF]] = {}
    for tvf in sorted(find_all(expression, WindowTVF), key=lambda n: node_offsets(n) or (0, 0)):
        select = _owning_select(tvf)
        if id(select) in by_select:
            raise window_error(
                f"only one window TVF per SELECT is supported; found a second {tvf.kind}",
                tvf,
                hint="move one of them into a subquery or a view",
            )
        by_select[id(select)] = (select, tvf)
    for select, tvf in sorted(by_select.values(), key=lambda pair: -_depth(pair[0])):
        replacement = _rewrite_scope(select, tvf)
        if select is expression:
            expression = replacement
    return expression


def _qualifiers(tvf: WindowTVF) -> set[str]:
    if tvf.alias:
        return {tvf.alias.lower()}
    return {tvf.this.name.lower()} if isinstance(tvf.this, exp.Table) else set()


def _rewrite_scope(select: exp.Select, tvf: WindowTVF) -> exp.Expr:
    qualifiers = _qualifiers(tvf)
    group = select.args.get("group")
    keys = group.expressions if group else []
    for key in keys:  # GROUP BY 1 naming window_start: the window column itself
        if (
            isinstance(key, exp.Literal)
            and key.is_int
            and 1 <= int(key.name) <= len(select.expressions)
        ):
            item = select.expressions[int(key.name) - 1]
            item = item.this if isinstance(item, exp.Alias) else item
            if window_ref(item, qualifiers):
                key.replace(item.copy())
    keys = group.expressions if group else []
    aggregated = any(window_ref(key, qualifiers) for key in keys)
    if tvf.kind == "SESSION" and not aggregated:
        raise window_error(
            "SESSION windows must be aggregated: GROUP BY window_start, window_end",
            tvf,
            hint="Spark merges rows into sessions only inside an aggregation",
        )
    if tvf.kind == "CUMULATE":
        if aggregated:
            return rewrite_cumulate_aggregated(select, tvf, qualifiers)
        rewrite_cumulate_per_row(tvf)
        return select
    if aggregated:
        return _rewrite_aggregated(select, tvf, qualifiers)
    _rewrite_per_row(tvf)
    return select


def _window_call(tvf: WindowTVF, qualifier: str | None) -> exp.Anonymous:
    def qualify(column: exp.Column) -> exp.Column:
        column.set("table", exp.to_identifier(qualifier) if qualifier else None)
        column.set("db", None)
        column.set("catalog", None)
        return column

    time_column = qualify(tvf.args["time_column"].copy())
    kind = tvf.kind
    if kind == "SESSION":
        gap = dynamic_duration(tvf.args["gap"])
        if qualifier:
            for column in find_all(gap, exp.Column):
                if not column.table:
                    qualify(column)
        return exp.Anonymous(this="session_window", expressions=[time_column, gap])
    size = window_duration(tvf.args["size"], "size", kind)
    slide = window_duration(tvf.args["slide"], "slide", kind) if kind == "HOP" else size.copy()
    offset = tvf.args.get("offset")
    args = [time_column, size]
    if kind == "HOP" or offset is not None:
        args.append(slide)
    if offset is not None:
        args.append(window_duration(offset, "offset", kind))
    return exp.Anonymous(this="window", expressions=args)


# --- aggregated scope ---------------------------------------------------------------------


def _rewrite_aggregated(select: exp.Select, tvf: WindowTVF, qualifiers: set[str]) -> exp.Expr:
    struct = "session_window" if tvf.kind == "SESSION" else "window"
    relation_name = tvf.alias or (tvf.this.name if isinstance(tvf.this, exp.Table) else None)
    qualifier = relation_name if select.args.get("joins") else None
    call = _window_call(tvf, qualifier)

    relation = tvf.this
    if tvf.args.get("alias"):
        relation.set("alias", tvf.args["alias"])

    def fields(ref: str) -> exp.Expr:
        if ref == "window_start":
            return exp.column("start", table=struct)
        end = exp.column("end", table=struct)
        if ref == "window_end":
            return end
        return minus_micro(end)

    return group_by_window(select, tvf, qualifiers, [call], relation, fields, struct)


# --- per-row scope -----------------------------------------------------------------------


def _rewrite_per_row(tvf: WindowTVF) -> None:
    """TUMBLE/HOP without aggregation: each row gets window_start, window_end, window_time."""
    relation = tvf.this
    alias = tvf.alias or (relation.name if isinstance(relation, exp.Table) else None)
    hidden = exp.column(HIDDEN_WINDOW)
    assign = exp.Select(
        expressions=[exp.Star(), exp.alias_(_window_call(tvf, None), HIDDEN_WINDOW)]
    )
    assign.set("from_", exp.From(this=relation))
    expand = exp.Select(
        expressions=[
            exp.Star(except_=[hidden.copy()]),
            exp.alias_(exp.column("start", table=HIDDEN_WINDOW), "window_start"),
            exp.alias_(exp.column("end", table=HIDDEN_WINDOW), "window_end"),
            exp.alias_(
                exp.Anonymous(this="window_time", expressions=[hidden.copy()]), "window_time"
            ),
        ]
    )
    expand.set("from_", exp.From(this=exp.Subquery(this=assign)))
    subquery = exp.Subquery(this=expand)
    if alias:
        subquery.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    tvf.replace(subquery)
