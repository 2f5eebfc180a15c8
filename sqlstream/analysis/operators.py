"""Operators of a query that Spark's streaming rules restrict (docs/dialect.md#checks).

:func:`collect_operators` walks a rewritten query (and the subqueries and CTEs it reads)
and records, as sqlglot nodes, what :mod:`sqlstream.analysis.checks` judges: ``LIMIT``, sorts,
``DISTINCT``, window functions, generators, current-time functions, set operations,
aggregations (chained or not) and every join with the facts of Spark's join support matrix
(:class:`JoinInfo`). The facts of what each relation is (stream or table, watermarks) come
from :mod:`sqlstream.analysis.facts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from sqlstream.analysis.facts import (
    CURRENT_TIME,
    NONDETERMINISTIC,
    RelationInfo,
    StreamingScope,
    from_relations,
    function_name,
    grouping_key,
    is_aggregate,
    outer_select,
)
from sqlstream.sql.dialect import Watermark as WatermarkClause
from sqlstream.sql.tree_walks import find_all, find_own

GENERATORS = {
    "explode",
    "explode_outer",
    "posexplode",
    "posexplode_outer",
    "inline",
    "inline_outer",
    "stack",
    "json_tuple",
}


@dataclass(frozen=True)
class JoinInfo:
    """One join of a query, as Spark's join support matrix sees it.

    Attributes:
        kind: ``inner``, ``left``, ``right``, ``full``, ``semi``, ``anti`` or ``cross``.
        left_streaming, right_streaming: whether each side reads a stream.
        left_watermark, right_watermark: whether each side has an event-time watermark.
        equality: ``ON`` has an equality conjunct between the two sides (or ``USING``);
            Spark plans no stream-stream join without one.
        watermark_in_keys: an equality key is an event-time column of its side (Spark's
            ``isWatermarkInJoinKeys``: e.g. ``a.ts = b.ts``, or two windowed aggregates
            joined on ``window_time``).
        bounds_left, bounds_right: a conjunct of ``ON`` bounds that side's time from below
            by the other side's watermarked event time (Spark's ``getStateValueWatermark``:
            ``b.ts <= a.ts + INTERVAL 1 MINUTE`` bounds ``a``), so Spark can drop that
            side's old rows and emit its unmatched ones.
        node: the sqlglot ``Join`` node (positions for messages).
    """

    kind: str
    left_streaming: bool
    right_streaming: bool
    left_watermark: bool
    right_watermark: bool
    equality: bool
    watermark_in_keys: bool
    bounds_left: bool
    bounds_right: bool
    node: exp.Expr

    @property
    def stream_stream(self) -> bool:
        return self.left_streaming and self.right_streaming

    def state_bounded(self, side: str) -> bool:
        """Whether Spark drops old rows of ``side`` (``left`` or ``right``), and so writes
        its unmatched rows in an outer join: Spark evicts a side's state only when that
        side has a watermark itself and the event time is a join key or ``ON`` bounds the
        side by the other's event time (``StreamingSymmetricHashJoinHelper.
        getOneSideStateWatermarkPredicate``)."""
        own = self.left_watermark if side == "left" else self.right_watermark
        bound = self.bounds_left if side == "left" else self.bounds_right
        return own and (self.watermark_in_keys or bound)


@dataclass(frozen=True)
class DedupInfo:
    """A :class:`~sqlstream.ir.plan.Deduplicate` step the query reads (docs/dialect.md#deduplication).

    Attributes:
        spelling: what the user wrote (``SELECT DISTINCT``, ``DISTINCT ON``, ``QUALIFY``,
            ``ROW_NUMBER``).
        keys: the keys of ``dropDuplicates`` (``()``: every column).
        within_watermark: ``dropDuplicatesWithinWatermark``.
        bounded: Spark drops old keys from its state (within the watermark, or a watermarked
            column among the keys); else the state grows with every new key (SS350).
        node: the node the user wrote, for positions.
        order: the event-time column a ``ROW_NUMBER … ORDER BY`` keep-first orders by (not
            among the keys), or ``None``: Spark keeps the first row to arrive, the SQL the
            one earliest in that column (SS361).
    """

    spelling: str
    keys: tuple[str, ...]
    within_watermark: bool
    bounded: bool
    node: exp.Expr
    order: str | None = None


@dataclass(frozen=True)
class Operators:
    """Operators of a query that streaming rules restrict, each as a sqlglot node or ``None``.

    Attributes:
        limit: a ``LIMIT`` on streaming data.
        order: an ``ORDER BY`` / ``SORT BY`` / ``CLUSTER BY`` on streaming data: the first
            one without a streaming aggregation below it, else the first one;
            ``order_after_aggregation`` whether that one sorts (a result that contains)
            an aggregation.
        distinct: a ``SELECT DISTINCT`` (or ``UNION`` without ``ALL``) on streaming data
            that Spark plans as an aggregation, the outermost: one over an aggregation (a
            ``SELECT DISTINCT`` over a stream is otherwise a deduplication step, see
            ``deduplications``).
        window_function: an ``OVER (…)`` window function on streaming data.
        aggregations: how many streaming aggregations (``DISTINCT`` included) are chained
            (one over another's result, through subqueries and views).
        global_session: an aggregation whose only grouping key is a ``session_window``.
        joins: every join, in order.
        offset: an ``OFFSET`` anywhere in the query (Spark refuses it in a streaming plan).
        distinct_aggregate: an aggregate function with ``DISTINCT`` (``COUNT(DISTINCT x)``).
        set_operations: ``(problem, node)`` of set operations Spark refuses on streams:
            ``union_static`` (a stream and a static relation), ``intersect``,
            ``except_right`` (a stream on the right of EXCEPT), ``except`` (a stream EXCEPT
            a static relation: an aggregation after the start checks, append mode fails).
        not_map_like: ``(what, node)`` of operations a continuous trigger refuses that no
            other field records: a watermark, a set operation, a generator (``explode``),
            the current time.
        watermark_redefined: a ``WATERMARK`` clause on a relation that has a watermark.
        deduplications: the deduplication steps the query reads (:class:`DedupInfo`),
            through the views it reads.
        nondeterministic: ``(what, node)`` of the calls on streaming data whose value
            differs from run to run (:data:`~sqlstream.analysis.facts.NONDETERMINISTIC`),
            and of the processing-time columns of its sources it reads (SS362).
    """

    limit: exp.Expr | None
    order: exp.Expr | None
    order_after_aggregation: bool
    distinct: exp.Expr | None
    window_function: exp.Expr | None
    aggregations: int
    global_session: exp.Expr | None
    joins: tuple[JoinInfo, ...]
    offset: exp.Expr | None = None
    distinct_aggregate: exp.Expr | None = None
    set_operations: tuple[tuple[str, exp.Expr], ...] = ()
    not_map_like: tuple[tuple[str, exp.Expr | None], ...] = ()
    watermark_redefined: exp.Expr | None = None
    deduplications: tuple[DedupInfo, ...] = ()
    nondeterministic: tuple[tuple[str, exp.Expr], ...] = ()

    @property
    def map_like(self) -> bool:
        """Only projections and filters (what a continuous trigger supports)."""
        return not (
            self.limit
            or self.order
            or self.distinct
            or self.window_function
            or self.aggregations
            or self.joins
            or self.offset
            or self.not_map_like
            or self.deduplications
        )

    @property
    def stream_stream_joins(self) -> tuple[JoinInfo, ...]:
        return tuple(j for j in self.joins if j.stream_stream)

    def merged(self, view: Operators) -> Operators:
        """These operators plus those of a view the query reads (Spark checks the whole
        plan); ``aggregations`` is the query's own, which already counts its views."""
        return Operators(
            self.limit or view.limit,
            self.order or view.order,
            self.order_after_aggregation if self.order else view.order_after_aggregation,
            self.distinct or view.distinct,
            self.window_function or view.window_function,
            self.aggregations,
            self.global_session or view.global_session,
            self.joins + view.joins,
            self.offset or view.offset,
            self.distinct_aggregate or view.distinct_aggregate,
            self.set_operations + view.set_operations,
            self.not_map_like + view.not_map_like,
            self.watermark_redefined or view.watermark_redefined,
            self.deduplications + view.deduplications,
            self.nondeterministic + view.nondeterministic,
        )


def _sorts(node: exp.Expr) -> list[exp.Expr]:
    return [node.args[k] for k in ("order", "sort", "cluster") if node.args.get(k) is not None]


def collect_operators(
    expression: exp.Expr,
    catalog: Mapping[str, RelationInfo],
    scope: StreamingScope,
) -> Operators:
    """Find the operators of a rewritten query that Spark's streaming checks restrict.

    Args:
        expression: the query after :func:`sqlstream.sql.rewrite.rewrite`.
        catalog: as for :func:`~sqlstream.analysis.facts.analyze`.
        scope: the :class:`~sqlstream.analysis.facts.StreamingScope` of ``expression``
            shared with the other passes (its Spark minor decides which functions aggregate).
    """
    ctes = scope.ctes
    info = scope.info
    streaming = scope.streaming

    def watermarked(node: exp.Expr) -> set[str]:
        marks: set[str] = set()
        for name in scope.names_under(node):
            marks |= info(name).watermarks
        marks |= {c.this.alias_or_name.lower() for c in find_all(node, WatermarkClause)}
        return marks

    def depth(node: exp.Expr | None) -> int:
        """Chained streaming aggregations in ``node`` (a query) and what it reads."""
        while isinstance(node, exp.Subquery):
            node = node.this
        if isinstance(node, exp.SetOperation):
            own = 1 if node.args.get("distinct") and streaming(node) else 0
            return own + max(depth(node.left), depth(node.right))
        if not isinstance(node, exp.Select):
            return 0
        below = 0
        for relation in from_relations(node):
            if isinstance(relation, exp.Subquery):
                below = max(below, depth(relation.this))
            elif isinstance(relation, exp.Table):
                name = relation.name.lower()
                if name in ctes:
                    below = max(below, depth(ctes[name]))
                else:
                    below = max(below, 1 if info(name).aggregate else 0)
        stateful = is_aggregate(node, scope.version) or node.args.get("distinct") is not None
        return below + (1 if stateful and streaming(node) else 0)

    limit = distinct = window_function = global_session = offset = None
    distinct_aggregate = watermark_redefined = None
    sorts: list[tuple[exp.Expr, bool]] = []
    joins: list[JoinInfo] = []
    set_operations: list[tuple[str, exp.Expr]] = []
    not_map_like: list[tuple[str, exp.Expr | None]] = []
    nondeterministic: list[tuple[str, exp.Expr]] = []

    for select in find_all(expression, exp.Select):
        if offset is None and select.args.get("offset") is not None:
            offset = select.args["offset"]  # refused even on a static subquery
        if not streaming(select):
            continue
        if select.args.get("limit") is not None and limit is None:
            limit = select.args["limit"]
        sorts.extend((sort, depth(select) > 0) for sort in _sorts(select))
        if select.args.get("distinct") is not None and distinct is None:
            distinct = select.args["distinct"]
        own = list(find_own(select, exp.Window, exp.AggFunc, exp.Func))
        if window_function is None:
            window_function = next((n for n in own if isinstance(n, exp.Window)), None)
        if distinct_aggregate is None:
            distinct_aggregate = next(
                (n for n in own if isinstance(n, exp.AggFunc) and isinstance(n.this, exp.Distinct)),
                None,
            )
        for node in own:
            name = function_name(node)
            if name in GENERATORS or isinstance(node, exp.Explode):
                not_map_like.append((f"{name or 'explode'}()", node))
            elif name in CURRENT_TIME:
                not_map_like.append((f"{name}()", node))
            if name in NONDETERMINISTIC:
                nondeterministic.append((f"{name}()", node))
        processing_time: set[str] = set()
        for name in scope.names_under(select):
            processing_time |= info(name).processing_time
        nondeterministic.extend(
            (f"the processing-time column `{column.name}`", column)
            for column in find_own(select, exp.Column)
            if column.name.lower() in processing_time
        )
        for lateral in find_own(select, exp.Lateral):
            not_map_like.append(("LATERAL VIEW", lateral))
        group = select.args.get("group")
        keys = [grouping_key(select, k) for k in (group.expressions if group else [])]
        if len(keys) == 1 and function_name(keys[0]) == "session_window":
            global_session = global_session or keys[0]
        joins.extend(_joins(select, streaming, watermarked))

    for operation in find_all(expression, exp.SetOperation):
        left, right = streaming(operation.left), streaming(operation.right)
        if not (left or right):
            continue
        sorts.extend((sort, depth(operation) > 0) for sort in _sorts(operation))
        not_map_like.append((type(operation).__name__.upper(), operation))
        if isinstance(operation, exp.Union):
            if left != right:
                set_operations.append(("union_static", operation))
            elif operation.args.get("distinct") and distinct is None:
                distinct = operation
        elif isinstance(operation, exp.Intersect):
            set_operations.append(("intersect", operation))
        elif right:
            set_operations.append(("except_right", operation))
        else:
            set_operations.append(("except", operation))
    if isinstance(expression, exp.Subquery):
        sorts.extend((sort, depth(expression) > 0) for sort in _sorts(expression))

    for relation in find_all(expression, exp.Table, exp.Subquery):
        clause = relation.args.get("watermark")
        if clause is None or not streaming(relation):
            continue
        not_map_like.append(("a WATERMARK clause", clause))
        if isinstance(relation, exp.Subquery):
            existing = watermarked(relation.this)
        else:
            name = relation.name.lower()
            existing = set(info(name).watermarks) | (
                watermarked(ctes[name]) if name in ctes else set()
            )
        if existing:
            watermark_redefined = watermark_redefined or clause
    if not any(what == "a WATERMARK clause" for what, _ in not_map_like) and any(
        info(name).streaming and info(name).watermarks for name in scope.names_under(expression)
    ):
        not_map_like.append(("a watermark (WATERMARK FOR)", None))

    order, after = None, False
    if sorts:
        order, after = next(((s, a) for s, a in sorts if not a), sorts[0])
    outer = outer_select(expression)
    aggregations = depth(expression) if outer is not None else 0
    return Operators(
        limit,
        order,
        after,
        distinct,
        window_function,
        aggregations,
        global_session,
        tuple(joins),
        offset,
        distinct_aggregate,
        tuple(set_operations),
        tuple(not_map_like),
        watermark_redefined,
        nondeterministic=tuple(nondeterministic),
    )


# ---- joins ---------------------------------------------------------------------------------------


def join_kind(join: exp.Join) -> str:
    """The kind of a join as Spark's join support matrix names it: ``inner``, ``left``,
    ``right``, ``full``, ``semi``, ``anti`` or ``cross``."""
    side = (join.args.get("side") or "").lower()
    kind = (join.args.get("kind") or "").lower()
    if kind in ("semi", "anti"):
        return kind if side in ("", "left") else f"{side} {kind}"
    if kind == "cross":
        return "cross"
    return side or "inner"


def _aliases(relation: exp.Expr) -> set[str]:
    names = {relation.alias_or_name.lower()} if relation.alias_or_name else set()
    if isinstance(relation, exp.Table) and relation.name:
        names.add(relation.name.lower())
    return names


def _joins(select: exp.Select, streaming, watermarked) -> list[JoinInfo]:
    source = select.args.get("from_") or select.args.get("from")
    if source is None:
        return []
    left: list[exp.Expr] = [source.this]
    found = []
    for join in select.args.get("joins") or ():
        left_marks = set().union(*(watermarked(r) for r in left))
        right_marks = watermarked(join.this)
        sides = _Sides(
            set().union(*(_aliases(r) for r in left)), _aliases(join.this), left_marks, right_marks
        )
        condition = _JoinCondition(join, sides)
        found.append(
            JoinInfo(
                kind=join_kind(join),
                left_streaming=any(streaming(r) for r in left),
                right_streaming=streaming(join.this),
                left_watermark=bool(left_marks),
                right_watermark=bool(right_marks),
                equality=condition.equality,
                watermark_in_keys=condition.watermark_in_keys,
                bounds_left=condition.bounds("left"),
                bounds_right=condition.bounds("right"),
                node=join,
            )
        )
        left.append(join.this)
    return found


@dataclass(frozen=True)
class _Sides:
    """Which side of a join a column belongs to: by its qualifier, else (unqualified) by
    being an event-time column of exactly one side."""

    left_names: set[str]
    right_names: set[str]
    left_marks: set[str]
    right_marks: set[str]

    def of(self, column: exp.Column) -> str | None:
        table = column.table.lower() if column.table else ""
        if table:
            if table in self.left_names and table not in self.right_names:
                return "left"
            if table in self.right_names and table not in self.left_names:
                return "right"
            return None
        name = column.name.lower()
        if (name in self.left_marks) != (name in self.right_marks):
            return "left" if name in self.left_marks else "right"
        return None

    def event_time(self, column: exp.Column, side: str) -> bool:
        return column.name.lower() in (self.left_marks if side == "left" else self.right_marks)


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    """The terms of ``condition``'s top-level ``AND`` (through parentheses); ``[]`` for none."""
    if condition is None:
        return []
    while isinstance(condition, exp.Paren):
        condition = condition.this
    if isinstance(condition, exp.And):
        return conjuncts(condition.this) + conjuncts(condition.expression)
    return [condition]


_MONTHS = ("YEAR", "MONTH", "QUARTER")


def _linear(node: exp.Expr, sides: _Sides):
    """``node`` as a sum of columns (coefficient ±1) plus constants, the form Spark can
    solve for a state watermark: ``{(side, column node): coefficient}``, or ``None`` when
    it has another form (functions, products, month or year intervals, unknown columns)."""
    while isinstance(node, (exp.Paren, exp.Cast, exp.TryCast)):
        node = node.this
    if isinstance(node, exp.Column):
        side = sides.of(node)
        return None if side is None else [(side, node, 1)]
    if isinstance(node, exp.Interval):
        unit = str(node.args.get("unit") or "").upper()
        text = node.this.name.upper() if node.this is not None else ""
        return None if any(m in unit or m in text for m in _MONTHS) else []
    if isinstance(node, exp.Literal) and not node.is_string:
        return []
    if isinstance(node, exp.Neg):
        inner = _linear(node.this, sides)
        return None if inner is None else [(s, c, -k) for s, c, k in inner]
    if isinstance(node, (exp.Add, exp.Sub)):
        a, b = _linear(node.this, sides), _linear(node.expression, sides)
        if a is None or b is None:
            return None
        sign = 1 if isinstance(node, exp.Add) else -1
        return a + [(s, c, sign * k) for s, c, k in b]
    return None


class _JoinCondition:
    """What Spark's stream-stream join checks find in a join's ``ON`` (or ``USING``)."""

    def __init__(self, join: exp.Join, sides: _Sides):
        self.sides = sides
        self.equality = self.watermark_in_keys = False
        using = join.args.get("using") or []
        if using:
            self.equality = True
            names = {u.name.lower() for u in using}
            self.watermark_in_keys = bool(names & (sides.left_marks | sides.right_marks))
        self.ranges: list[tuple[exp.Expr, exp.Expr]] = []  # lower < upper
        for conjunct in conjuncts(join.args.get("on")):
            if isinstance(conjunct, (exp.EQ, exp.NullSafeEQ)):
                self._equality(conjunct.this, conjunct.expression)
            elif isinstance(conjunct, (exp.LT, exp.LTE)):
                self.ranges.append((conjunct.this, conjunct.expression))
            elif isinstance(conjunct, (exp.GT, exp.GTE)):
                self.ranges.append((conjunct.expression, conjunct.this))
            elif isinstance(conjunct, exp.Between):
                self.ranges.append((conjunct.args["low"], conjunct.this))
                self.ranges.append((conjunct.this, conjunct.args["high"]))

    def _equality(self, a: exp.Expr, b: exp.Expr) -> None:
        a_sides = {self.sides.of(c) for c in find_all(a, exp.Column)}
        b_sides = {self.sides.of(c) for c in find_all(b, exp.Column)}
        if not a_sides or not b_sides:
            return  # a constant: a filter, not a join key
        if len(a_sides) == 1 and a_sides == b_sides and None not in a_sides:
            return  # both sides of = read the same side of the join
        self.equality = True
        for node, node_sides in ((a, a_sides), (b, b_sides)):
            side = next(iter(node_sides))
            if (
                isinstance(node, exp.Column)
                and side is not None
                and self.sides.event_time(node, side)
            ):
                self.watermark_in_keys = True

    def bounds(self, side: str) -> bool:
        """Some ``lower < upper`` solves to ``side.t > other.event_time + c``."""
        other = "right" if side == "left" else "left"
        for lower, upper in self.ranges:
            low, up = _linear(lower, self.sides), _linear(upper, self.sides)
            if low is None or up is None:
                continue
            terms = up + [(s, c, -k) for s, c, k in low]  # upper - lower > 0
            mine = [(c, k) for s, c, k in terms if s == side]
            theirs = [(c, k) for s, c, k in terms if s == other]
            if len(mine) != 1 or len(theirs) != 1:
                continue
            (_, k_mine), (column, k_theirs) = mine[0], theirs[0]
            if k_mine > 0 and k_theirs < 0 and self.sides.event_time(column, other):
                return True
        return False
