"""Analysis of rewritten queries: streaming or not, stateful or not, watermarks, output mode.

Works on sqlglot expressions after :mod:`sqlstream.rewrite`, with a catalog of what
each relation is (:class:`RelationInfo`). The output-mode rules are Spark's
``UnsupportedOperationChecker`` (Spark 4.1) as verified on Spark here:

* a query without a streaming aggregation supports ``append`` and ``update``, not
  ``complete`` ("Complete output mode not supported when there are no streaming
  aggregations");
* a streaming aggregation supports ``append`` only when a grouping key is the
  watermarked event-time column or a ``window``/``session_window`` on it ("Append output
  mode not supported when there are streaming aggregations … without watermark");
  ``update`` except for session windows; ``complete`` always;
* a sink restricts further (``files``: append only — Spark: "Data source … does not
  support Update output mode").

Inference (LANGUAGE.md §3.5) picks the first of append, update, complete allowed by both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from sqlstream.dialect import Watermark as WatermarkClause

MODES = ("append", "update", "complete")
WINDOW_FUNCTIONS = {"window", "session_window"}


@dataclass(frozen=True)
class RelationInfo:
    """What the analysis knows of a relation (a stream, table or view).

    Attributes:
        streaming: it is unbounded (a stream, or a view over one).
        watermarks: lower-case names of its columns that carry an event-time watermark.
    """

    streaming: bool
    watermarks: frozenset[str] = frozenset()
    aggregate: bool = False
    watermarked_key: bool = False
    session_window: bool = False
    poisoned: bool = False  # its declaration failed; nothing is known of it


@dataclass(frozen=True)
class QueryInfo:
    """Facts about one query.

    Attributes:
        streaming: it reads at least one stream.
        aggregate: its outermost SELECT is an aggregation (``GROUP BY`` or aggregate functions).
        watermarked_key: a grouping key is a watermarked column or a window on one.
        session_window: a grouping key is a ``session_window``.
        watermarks: lower-case names of the result's columns that carry a watermark.
        relations: lower-case names of the relations it reads.
    """

    streaming: bool
    aggregate: bool
    watermarked_key: bool
    session_window: bool
    watermarks: frozenset[str]
    relations: frozenset[str]


def _function_name(node: exp.Expression) -> str | None:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None


def _outer_select(expression: exp.Expression) -> exp.Select | None:
    node = expression
    while isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.SetOperation):
        return _outer_select(node.left)
    return node if isinstance(node, exp.Select) else None


def _inner_select(select: exp.Select) -> exp.Select | None:
    """The SELECT of a FROM that is a single subquery (no joins), else ``None``."""
    source = select.args.get("from_") or select.args.get("from")
    if source is None or select.args.get("joins"):
        return None
    relation = source.this
    if isinstance(relation, exp.Subquery):
        return _outer_select(relation.this)
    return None


def _is_aggregate(select: exp.Select) -> bool:
    if select.args.get("group"):
        return True
    for projection in select.expressions:
        for node in projection.walk():
            if isinstance(node, exp.Window):
                continue
            if isinstance(node, exp.AggFunc) and not node.find_ancestor(exp.Window, exp.Subquery):
                return True
    return False


def analyze(expression: exp.Expression, catalog: Mapping[str, RelationInfo]) -> QueryInfo:
    """Return the :class:`QueryInfo` of a rewritten query.

    Args:
        expression: the query after :func:`sqlstream.rewrite.rewrite`.
        catalog: relation name (lower case) → :class:`RelationInfo`; unknown names count as
            bounded relations without watermarks.
    """
    ctes = {cte.alias_or_name.lower() for cte in expression.find_all(exp.CTE)}
    relations = frozenset(
        table.name.lower() for table in expression.find_all(exp.Table)
        if table.name and table.name.lower() not in ctes
    )
    streaming = any(catalog.get(r, RelationInfo(False)).streaming for r in relations)
    watermarks: set[str] = set()
    for r in relations:
        watermarks |= catalog.get(r, RelationInfo(False)).watermarks
    for clause in expression.find_all(WatermarkClause):
        watermarks.add(clause.this.name.lower())
    select = _outer_select(expression)
    if select is None:
        return QueryInfo(streaming, False, False, False, frozenset(), relations)
    # A projection over a subquery is as stateful as the subquery (e.g. window_time over a
    # windowed aggregation): analyse the innermost aggregating SELECT.
    inner = select
    while not _is_aggregate(inner) and (deeper := _inner_select(inner)) is not None:
        inner = deeper
    if _is_aggregate(inner):
        select_for_keys = inner
    else:
        select_for_keys = select
        stateful = [catalog[r] for r in relations if r in catalog and catalog[r].aggregate]
        if stateful:  # reads an aggregated view: the query is stateful too
            return QueryInfo(
                streaming, True, all(r.watermarked_key for r in stateful),
                any(r.session_window for r in stateful),
                _output_watermarks(select, watermarks, False), relations,
            )
    aggregate = _is_aggregate(select_for_keys)
    watermarked_key = session = False
    group = select_for_keys.args.get("group")
    for key in (group.expressions if group else ()):
        name = _function_name(key)
        if name in WINDOW_FUNCTIONS:
            session = session or name == "session_window"
            first = key.expressions[0] if isinstance(key, exp.Anonymous) and key.expressions else key.this
            if isinstance(first, exp.Column) and first.name.lower() in watermarks:
                watermarked_key = True
        elif isinstance(key, exp.Column) and key.name.lower() in watermarks:
            watermarked_key = True
    return QueryInfo(
        streaming, aggregate, watermarked_key, session,
        _output_watermarks(select, watermarks, aggregate), relations,
    )


def _output_watermarks(select: exp.Select, watermarks: set[str], aggregate: bool) -> frozenset[str]:
    """Columns of the result that still carry a watermark (kept through projections)."""
    out: set[str] = set()
    for projection in select.expressions:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            if not aggregate:
                out |= watermarks
            continue
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(inner, exp.Column) and inner.name.lower() in watermarks:
            out.add(projection.alias_or_name.lower())
        elif _function_name(inner) in WINDOW_FUNCTIONS | {"window_time"} and aggregate:
            out.add(projection.alias_or_name.lower())
    return frozenset(out)


def allowed_modes(info: QueryInfo) -> dict[str, str | None]:
    """Map each output mode to ``None`` if Spark allows it for this query, else the reason not."""
    if not info.aggregate:
        return {
            "append": None,
            "update": None,
            "complete": "complete mode needs an aggregation (the whole result table is "
            "rewritten every trigger)",
        }
    return {
        "append": None if info.watermarked_key else (
            "append mode needs a watermark on the aggregation: group by a window on the "
            "watermarked event-time column (or by that column)"
        ),
        "update": "session windows do not support update mode" if info.session_window else None,
        "complete": None,
    }


def choose_output_mode(
    info: QueryInfo, requested: str | None, sink_modes: frozenset[str], sink_label: str
) -> tuple[str, str]:
    """Pick the output mode of a query (LANGUAGE.md §3.5).

    Args:
        info: the query's :class:`QueryInfo`.
        requested: the mode from ``EMIT`` or ``None`` to infer.
        sink_modes: the modes the sink supports.
        sink_label: how to name the sink in messages (e.g. ``files sink 'out'``).

    Returns:
        ``(mode, reason)``; the reason is one sentence for ``translate``.

    Raises:
        ValueError: with a user-facing sentence when the requested mode is not allowed or
            no mode fits; the planner turns it into a :class:`~sqlstream.errors.StreamingError`.
    """
    allowed = allowed_modes(info)
    for mode in MODES:
        if allowed[mode] is None and mode not in sink_modes:
            allowed[mode] = f"the {sink_label} supports only {', '.join(sorted(sink_modes))} mode"
    if requested is not None:
        if allowed[requested] is not None:
            raise ValueError(f"output mode {requested} is not possible here: {allowed[requested]}")
        return requested, "from EMIT"
    for mode in MODES:
        if allowed[mode] is None:
            if not info.aggregate:
                why = "no aggregation"
            elif mode == "append":
                why = "aggregation grouped by a window on a watermarked column"
            else:
                why = f"aggregation; append impossible ({allowed['append']})"
            return mode, f"inferred: {why}"
    reasons = "; ".join(f"{m}: {allowed[m]}" for m in MODES)
    raise ValueError(f"no output mode fits this query and sink ({reasons})")


# ---- operators that streaming rules look at (LANGUAGE.md §6) -------------------------------


@dataclass(frozen=True)
class JoinInfo:
    """One join of a query, as Spark's join support matrix sees it.

    Attributes:
        kind: ``inner``, ``left``, ``right``, ``full``, ``semi``, ``anti`` or ``cross``.
        left_streaming, right_streaming: whether each side reads a stream.
        left_watermark, right_watermark: whether each side has an event-time watermark.
        time_condition: the join condition compares a watermarked column of one side with
            a column of the other (an event-time range, e.g. ``BETWEEN … AND … + INTERVAL``).
        node: the sqlglot ``Join`` node (positions for messages).
    """

    kind: str
    left_streaming: bool
    right_streaming: bool
    left_watermark: bool
    right_watermark: bool
    time_condition: bool
    node: exp.Expression


@dataclass(frozen=True)
class Operators:
    """Operators of a query that streaming rules restrict, each as a sqlglot node or ``None``.

    Attributes:
        limit: a ``LIMIT`` on streaming data.
        order: an ``ORDER BY`` on streaming data; ``order_after_aggregation`` whether it
            sorts the result of an aggregation.
        distinct: a ``SELECT DISTINCT`` on streaming data.
        window_function: an ``OVER (…)`` window function on streaming data.
        aggregations: how many streaming aggregations are chained (one over another's
            result, through subqueries and views).
        global_session: an aggregation whose only grouping key is a ``session_window``.
        joins: every join, in order.
    """

    limit: exp.Expression | None
    order: exp.Expression | None
    order_after_aggregation: bool
    distinct: exp.Expression | None
    window_function: exp.Expression | None
    aggregations: int
    global_session: exp.Expression | None
    joins: tuple[JoinInfo, ...]

    @property
    def map_like(self) -> bool:
        """Only projections and filters (what a continuous trigger supports)."""
        return not (self.limit or self.order or self.distinct or self.window_function
                    or self.aggregations or self.joins)


def _from_relations(select: exp.Select) -> list[exp.Expression]:
    source = select.args.get("from_") or select.args.get("from")
    items = [source.this] if source is not None else []
    return items + [join.this for join in select.args.get("joins") or ()]


def _names_under(node: exp.Expression, ctes: Mapping[str, exp.Expression]) -> set[str]:
    names = set()
    for table in node.find_all(exp.Table):
        name = table.name.lower()
        if name in ctes:
            names |= _names_under(ctes[name], {k: v for k, v in ctes.items() if k != name})
        elif name:
            names.add(name)
    return names


def collect_operators(expression: exp.Expression, catalog: Mapping[str, RelationInfo]) -> Operators:
    """Find the operators of a rewritten query that Spark's streaming checks restrict.

    Args:
        expression: the query after :func:`sqlstream.rewrite.rewrite`.
        catalog: as for :func:`analyze`.
    """
    ctes = {cte.alias_or_name.lower(): cte.this for cte in expression.find_all(exp.CTE)}

    def info(name: str) -> RelationInfo:
        return catalog.get(name, RelationInfo(False))

    def streaming(node: exp.Expression) -> bool:
        return any(info(n).streaming for n in _names_under(node, ctes))

    def watermarked(node: exp.Expression) -> set[str]:
        marks = set()
        for name in _names_under(node, ctes):
            marks |= info(name).watermarks
        marks |= {c.this.name.lower() for c in node.find_all(WatermarkClause)}
        return marks

    limit = order = distinct = window_function = global_session = None
    order_after_aggregation = False
    joins: list[JoinInfo] = []

    def depth(select: exp.Select) -> int:
        """Chained streaming aggregations in ``select`` and what it reads."""
        below = 0
        for relation in _from_relations(select):
            if isinstance(relation, exp.Subquery):
                inner = _outer_select(relation.this)
                below = max(below, depth(inner) if inner is not None else 0)
            elif isinstance(relation, exp.Table):
                name = relation.name.lower()
                if name in ctes and (inner := _outer_select(ctes[name])) is not None:
                    below = max(below, depth(inner))
                else:
                    below = max(below, 1 if info(name).aggregate else 0)
        own = 1 if _is_aggregate(select) and streaming(select) else 0
        return below + own

    outer = _outer_select(expression)
    for select in expression.find_all(exp.Select):
        if not streaming(select):
            continue
        aggregated = _is_aggregate(select)
        if select.args.get("limit") is not None and limit is None:
            limit = select.args["limit"]
        if select.args.get("order") is not None and order is None:
            order, order_after_aggregation = select.args["order"], aggregated
        if select.args.get("distinct") is not None and distinct is None:
            distinct = select.args["distinct"]
        if window_function is None:
            window_function = next((w for w in select.find_all(exp.Window)
                                    if w.find_ancestor(exp.Select) is select), None)
        group = select.args.get("group")
        keys = group.expressions if group else []
        if len(keys) == 1 and _function_name(keys[0]) == "session_window":
            global_session = global_session or keys[0]
        joins.extend(_joins(select, streaming, watermarked))
    if isinstance(expression, exp.Subquery) and expression.args.get("order") is not None:
        order = order or expression.args["order"]
    aggregations = depth(outer) if outer is not None else 0
    return Operators(limit, order, order_after_aggregation, distinct, window_function,
                     aggregations, global_session, tuple(joins))


def _joins(select: exp.Select, streaming, watermarked) -> list[JoinInfo]:
    source = select.args.get("from_") or select.args.get("from")
    if source is None:
        return []
    left: list[exp.Expression] = [source.this]
    found = []
    for join in select.args.get("joins") or ():
        side = (join.args.get("side") or "").lower()
        kind = (join.args.get("kind") or "").lower()
        if kind in ("semi", "anti"):
            name = kind if side in ("", "left") else f"{side} {kind}"
        elif kind == "cross":
            name = "cross"
        else:
            name = side or "inner"
        left_marks = set().union(*(watermarked(r) for r in left))
        right_marks = watermarked(join.this)
        found.append(JoinInfo(
            kind=name,
            left_streaming=any(streaming(r) for r in left),
            right_streaming=streaming(join.this),
            left_watermark=bool(left_marks),
            right_watermark=bool(right_marks),
            time_condition=_time_condition(join.args.get("on"), left_marks | right_marks),
            node=join,
        ))
        left.append(join.this)
    return found


def _time_condition(condition: exp.Expression | None, marks: set[str]) -> bool:
    """A comparison or BETWEEN in the join condition that involves a watermarked column on
    one side and a column on the other (Spark: a "time range condition" that lets it drop
    state)."""
    if condition is None:
        return False
    for node in condition.find_all(exp.Between, exp.GT, exp.GTE, exp.LT, exp.LTE):
        columns = list(node.find_all(exp.Column))
        tables = {c.table.lower() for c in columns if c.table}
        if any(c.name.lower() in marks for c in columns) and (len(tables) >= 2 or len(columns) >= 2):
            return True
    return False
