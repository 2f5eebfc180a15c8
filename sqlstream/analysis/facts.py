"""Analysis of rewritten queries: streaming or not, stateful or not, watermarks, output mode.

Works on sqlglot expressions after :mod:`sqlstream.sql.rewrite`, with a catalog of what
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

Inference (docs/dialect.md#output-mode-inference) is in
:func:`sqlstream.analysis.output_modes.choose_mode`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from sqlstream.analysis.spark_types import aggregate_call
from sqlstream.sql.dialect import Watermark as WatermarkClause
from sqlstream.sql.tree_walks import find_all

MODES = ("append", "update", "complete")
WINDOW_FUNCTIONS = {"window", "session_window"}

CURRENT_TIME = frozenset(
    {"current_timestamp", "current_date", "now", "curdate", "localtimestamp", "current_datetime"}
)
"""Lower-case names of the functions of the current time (Spark evaluates them once per
micro-batch of a stream)."""

NONDETERMINISTIC = CURRENT_TIME | {
    # random values and ids (Spark's ``Nondeterministic`` expressions)
    "rand",
    "random",
    "randn",
    "randstr",
    "uniform",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
    "spark_partition_id",
}
"""Lower-case names of Spark functions whose value differs between two runs over the same
rows: the current time (per micro-batch in a stream, per query in a batch) and Spark's
nondeterministic expressions (``Rand``, ``Uuid``, ``Shuffle``, ``MonotonicallyIncreasingID``,
``SparkPartitionID``: ``deterministic = false`` in ``sql/catalyst/.../expressions``)."""


@dataclass(frozen=True)
class RelationInfo:
    """What the analysis knows of a relation (a stream, table or view).

    Attributes:
        streaming: it is unbounded (a stream, or a view over one).
        watermarks: lower-case names of its columns that carry an event-time watermark.
        processing_time: lower-case names of its computed columns whose value is the time
            of the micro-batch or otherwise differs from run to run (``pt AS PROCTIME()``,
            ``current_timestamp()``, ``rand()``: :data:`NONDETERMINISTIC`).
    """

    streaming: bool
    watermarks: frozenset[str] = frozenset()
    aggregate: bool = False
    watermarked_key: bool = False
    session_window: bool = False
    poisoned: bool = False  # its declaration failed; nothing is known of it
    processing_time: frozenset[str] = frozenset()


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


def function_name(node: exp.Expr) -> str | None:
    """The lower-case name of a function call (``window``, ``count``), or ``None`` for a node
    that is not a call."""
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return None


def outer_select(expression: exp.Expr) -> exp.Select | None:
    """The SELECT that produces a query's rows: through parentheses, the left branch of a
    set operation; ``None`` when there is none (e.g. ``VALUES``)."""
    node = expression
    while isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.SetOperation):
        return outer_select(node.left)
    return node if isinstance(node, exp.Select) else None


def _inner_select(select: exp.Select) -> exp.Select | None:
    """The SELECT of a FROM that is a single subquery (no joins), else ``None``."""
    source = select.args.get("from_") or select.args.get("from")
    if source is None or select.args.get("joins"):
        return None
    relation = source.this
    if isinstance(relation, exp.Subquery):
        return outer_select(relation.this)
    return None


def is_aggregate(select: exp.Select, version: str) -> bool:
    """Whether ``select`` aggregates: it has a GROUP BY, or an aggregate function in its
    projection outside window functions and subqueries (Spark plans an ``Aggregate``).
    Aggregate functions are those of Spark ``version`` (a major.minor;
    :func:`sqlstream.analysis.spark_types.aggregate_call`: ``try_sum`` and
    ``histogram_numeric`` count, as for SS209)."""
    if select.args.get("group"):
        return True
    for projection in select.expressions:
        for node in find_all(projection, exp.Expr):
            if aggregate_call(node, version) and not node.find_ancestor(exp.Window, exp.Subquery):
                return True
    return False


def analyze(
    expression: exp.Expr,
    catalog: Mapping[str, RelationInfo],
    scope: StreamingScope,
) -> QueryInfo:
    """Return the :class:`QueryInfo` of a rewritten query.

    Args:
        expression: the query after :func:`sqlstream.sql.rewrite.rewrite`.
        catalog: relation name (lower case) → :class:`RelationInfo`; unknown names count as
            bounded relations without watermarks.
        scope: the :class:`StreamingScope` of ``expression`` shared with the other passes
            (its Spark minor decides which functions aggregate).
    """
    version = scope.version
    ctes = scope.ctes
    relations = frozenset(
        table.name.lower()
        for table in find_all(expression, exp.Table)
        if table.name and table.name.lower() not in ctes
    )
    streaming = any(catalog.get(r, RelationInfo(False)).streaming for r in relations)
    watermarks: set[str] = set()
    for r in relations:
        watermarks |= catalog.get(r, RelationInfo(False)).watermarks
    for clause in find_all(expression, WatermarkClause):
        watermarks.add(clause.this.alias_or_name.lower())
    cte_bodies = scope.ctes
    select = outer_select(expression)
    if select is None:
        return QueryInfo(streaming, False, False, False, frozenset(), relations)
    # A projection over a subquery is as stateful as the subquery (e.g. window_time over a
    # windowed aggregation): analyse the innermost aggregating SELECT.
    inner = select
    while not is_aggregate(inner, version) and (deeper := _inner_select(inner)) is not None:
        inner = deeper
    if is_aggregate(inner, version):
        select_for_keys = inner
    else:
        select_for_keys = select
        stateful = [catalog[r] for r in relations if r in catalog and catalog[r].aggregate]
        if stateful:  # reads an aggregated view: the query is stateful too
            return QueryInfo(
                streaming,
                True,
                all(r.watermarked_key for r in stateful),
                any(r.session_window for r in stateful),
                _output_watermarks(select, watermarks, False),
                relations,
            )
    aggregate = is_aggregate(select_for_keys, version)
    watermarks |= _visible_watermarks(select_for_keys, catalog, cte_bodies, version)
    watermarked_key, session = _grouping_keys(select_for_keys, watermarks)
    if aggregate:  # append mode needs every streaming aggregation watermarked, not only this one
        watermarked_key = watermarked_key and _inner_aggregations_watermarked(
            expression, select_for_keys, catalog, relations, cte_bodies, version
        )
    return QueryInfo(
        streaming,
        aggregate,
        watermarked_key,
        session,
        _output_watermarks(select, watermarks, aggregate),
        relations,
    )


def _grouping_keys(select: exp.Select, watermarks: set[str]) -> tuple[bool, bool]:
    """Whether a grouping key of ``select`` is a watermarked column or a window on one, and
    whether one is a ``session_window``. A key given by ordinal (``GROUP BY 1``) or by a
    SELECT alias is judged as the expression it names."""
    watermarked_key = session = False
    group = select.args.get("group")
    for written in group.expressions if group else ():
        key = grouping_key(select, written, watermarks)
        name = function_name(key)
        if name in WINDOW_FUNCTIONS | {"window_time"}:
            session = session or name == "session_window"
            if _on_watermark(key, watermarks):
                watermarked_key = True
        elif isinstance(key, exp.Column) and key.name.lower() in watermarks:
            watermarked_key = True
    return watermarked_key, session


def grouping_key(
    select: exp.Select, key: exp.Expr, columns: set[str] | frozenset[str] = frozenset()
) -> exp.Expr:
    """The expression a grouping key stands for: ``GROUP BY 2`` is the second SELECT item,
    ``GROUP BY w`` the item aliased ``w`` — unless ``w`` is one of ``columns`` (an input
    column wins over an alias, as in Spark); any other key is itself."""
    items = select.expressions
    if isinstance(key, exp.Literal) and key.is_int:
        index = int(key.name)
        if 1 <= index <= len(items):
            item = items[index - 1]
            return item.this if isinstance(item, exp.Alias) else item
    elif isinstance(key, exp.Column) and not key.table and key.name.lower() not in columns:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias.lower() == key.name.lower():
                return item.this
    return key


def _on_watermark(call: exp.Expr, watermarks: set[str]) -> bool:
    """``window(ts, …)``, ``session_window(ts, …)`` or ``window_time(w)`` whose first
    argument is a watermarked column, or such a call itself (``window(window_time(w), …)``,
    a chained window): Spark marks the result as event time too."""
    first = (
        call.expressions[0] if isinstance(call, exp.Anonymous) and call.expressions else call.this
    )
    if isinstance(first, exp.Column):
        return first.name.lower() in watermarks
    return function_name(first) in WINDOW_FUNCTIONS | {"window_time"} and _on_watermark(
        first, watermarks
    )


def _inner_aggregations_watermarked(
    expression: exp.Expr,
    outer: exp.Select,
    catalog: Mapping[str, RelationInfo],
    relations,
    ctes: CteMap,
    version: str,
) -> bool:
    """Every streaming aggregation below ``outer`` (subqueries, CTEs, aggregated views) has
    a watermarked grouping key. Spark checks only the outermost one when the query starts
    and fails the first batch for an inner one without (UnsupportedOperationChecker does
    not see it; ``StateStoreSaveExec`` does)."""
    if any(
        catalog[r].aggregate and not catalog[r].watermarked_key
        for r in relations
        if r in catalog and catalog[r].streaming
    ):
        return False
    for select in find_all(expression, exp.Select):
        if select is outer or not is_aggregate(select, version):
            continue
        names = names_under(select, ctes)
        if not any(catalog.get(n, RelationInfo(False)).streaming for n in names):
            continue
        marks = {c.this.alias_or_name.lower() for c in find_all(select, WatermarkClause)}
        for name in names:
            marks |= catalog.get(name, RelationInfo(False)).watermarks
        marks |= _visible_watermarks(select, catalog, ctes, version)
        if not _grouping_keys(select, marks)[0]:
            return False
    return True


def _output_watermarks(select: exp.Select, watermarks: set[str], aggregate: bool) -> frozenset[str]:
    """Columns of the result that still carry a watermark (Spark's event-time marker): a
    watermarked column, plain or renamed; ``window(…)``, ``session_window(…)`` or
    ``window_time(…)`` of one; in an aggregation, the window struct (also the ``window``
    column of a ``GROUP BY window(…)``). Any other expression (``w.start``, ``CAST``,
    ``date_trunc``) loses it (docs/streaming-rules.md, A13–A16, A43, A44)."""
    out: set[str] = set()
    windowed = aggregate and _grouping_keys(select, watermarks)[0]
    for projection in select.expressions:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            if not aggregate:
                out |= watermarks
            continue
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        name = function_name(inner)
        if (
            isinstance(inner, exp.Column)
            and (
                inner.name.lower() in watermarks
                or (windowed and inner.name.lower() in WINDOW_FUNCTIONS)
            )
            or name in WINDOW_FUNCTIONS | {"window_time"}
            and (aggregate or _on_watermark(inner, watermarks))
        ):
            out.add(projection.alias_or_name.lower())
    return frozenset(out)


def _visible_watermarks(
    select: exp.Select, catalog: Mapping[str, RelationInfo], ctes: CteMap, version: str
) -> set[str]:
    """Event-time columns that the relations in ``select``'s FROM (and joins) output:
    a stream's or view's watermarks, a subquery's or CTE's output watermarks, a WATERMARK
    clause's column. Each SELECT is judged once per ``ctes`` (a CTE read by many is not
    followed again; one that reads itself adds nothing)."""
    memo = ctes.watermarks
    if id(select) in memo:
        return set(memo[id(select)])
    memo[id(select)] = frozenset()  # while in progress: a CTE that reads itself
    marks: set[str] = set()
    for relation in from_relations(select):
        clause = relation.args.get("watermark")
        if clause is not None:
            marks.add(clause.this.alias_or_name.lower())
        body = None
        if isinstance(relation, exp.Subquery):
            body = relation.this
        elif isinstance(relation, exp.Table):
            name = relation.name.lower()
            if name in ctes:
                body = ctes[name]
            else:
                marks |= catalog.get(name, RelationInfo(False)).watermarks
        inner = outer_select(body) if body is not None else None
        if inner is not None:
            visible = _visible_watermarks(inner, catalog, ctes, version)
            marks |= _output_watermarks(inner, visible, is_aggregate(inner, version))
    memo[id(select)] = frozenset(marks)
    return marks


def from_relations(select: exp.Select) -> list[exp.Expr]:
    """The relations of ``select``'s FROM clause and joins, in order (tables, subqueries,
    table functions)."""
    source = select.args.get("from_") or select.args.get("from")
    items = [source.this] if source is not None else []
    return items + [join.this for join in select.args.get("joins") or ()]


class CteMap(Mapping):
    """The CTEs of one query tree (lower-case name → body) and, computed once per name, the
    relations each one reads: a chain of n CTEs is followed in time linear in n.

    Args:
        tree: a query; every ``WITH`` in it counts (sqlglot's ``find_all(exp.CTE)``).
        bodies: instead of ``tree``, the name → body mapping itself.
    """

    def __init__(
        self, tree: exp.Expr | None = None, bodies: Mapping[str, exp.Expr] | None = None
    ) -> None:
        found = find_all(tree, exp.CTE) if tree is not None else ()
        self._bodies = dict(bodies or {cte.alias_or_name.lower(): cte.this for cte in found})
        self._reads: dict[str, frozenset[str]] = {}
        self._direct: dict[str, list[str]] | None = None
        self.watermarks: dict[int, frozenset[str]] = {}  # id(SELECT) → its visible watermarks

    def __getitem__(self, name: str) -> exp.Expr:
        return self._bodies[name]

    def __iter__(self):
        return iter(self._bodies)

    def __len__(self) -> int:
        return len(self._bodies)

    def reads(self, name: str) -> frozenset[str]:
        """Lower-case names of the relations CTE ``name`` reads, through the CTEs it reads
        (a CTE that reads one being followed, or its own name, is a relation of that name)."""
        if name in self._reads:
            return self._reads[name]
        if self._direct is None:
            self._direct = {
                n: [t.name.lower() for t in find_all(body, exp.Table) if t.name]
                for n, body in self._bodies.items()
            }
        direct = self._direct
        path: set[str] = set()
        stack: list[tuple[str, bool]] = [(name, False)]
        while stack:  # depth-first, post-order, without recursion
            current, done = stack.pop()
            if current in self._reads:
                continue
            if not done:
                path.add(current)
                stack.append((current, True))
                stack.extend(
                    (d, False)
                    for d in direct[current]
                    if d in self._bodies and d not in path and d not in self._reads
                )
                continue
            names: set[str] = set()
            for d in direct[current]:
                if d in self._reads and d != current:
                    names |= self._reads[d]
                else:
                    names.add(d)
            self._reads[current] = frozenset(names)
            path.discard(current)
        return self._reads[name]


def names_under(node: exp.Expr, ctes: Mapping[str, exp.Expr]) -> set[str]:
    """Lower-case names of the relations ``node`` reads, following the CTEs in ``ctes``
    (name → body; a :class:`CteMap` keeps what it followed for the next call) to the
    relations they read."""
    if not isinstance(ctes, CteMap):
        ctes = CteMap(bodies=ctes)
    names: set[str] = set()
    for table in find_all(node, exp.Table):
        name = table.name.lower()
        if name in ctes:
            names |= ctes.reads(name)
        elif name:
            names.add(name)
    return names


class StreamingScope:
    """One query tree judged against the relations it reads: its CTEs (one :class:`CteMap`)
    and, answered once per node, whether a node reads a stream. Built once per compiled
    tree and handed to every pass over it (:func:`analyze`,
    :func:`~sqlstream.analysis.operators.collect_operators`,
    :func:`~sqlstream.analysis.state_signature.operators_of`,
    :func:`~sqlstream.analysis.dedup.find_deduplication`), so that each decides
    "streaming?" the same way and none builds its own CTE map.

    Args:
        tree: a query after :func:`sqlstream.sql.rewrite.rewrite`; it must not change
            while the scope is used (answers are kept by node identity).
        infos: lower-case relation name → :class:`RelationInfo`; unknown names count as
            bounded relations without watermarks.
        version: the Spark major.minor judged for (the compile context's): which
            functions aggregate (:func:`is_aggregate`).
    """

    def __init__(self, tree: exp.Expr, infos: Mapping[str, RelationInfo], version: str) -> None:
        self.tree = tree
        self.infos = infos
        self.version = version
        self.ctes = CteMap(tree)
        self._streaming: dict[int, bool] = {}

    def info(self, name: str) -> RelationInfo:
        """What is known of relation ``name`` (lower case); bounded when unknown."""
        return self.infos.get(name, RelationInfo(False))

    def names_under(self, node: exp.Expr) -> set[str]:
        """Lower-case names of the relations ``node`` reads, through the tree's CTEs."""
        return names_under(node, self.ctes)

    def streaming(self, node: exp.Expr) -> bool:
        """Whether ``node`` (a part of the tree) reads a streaming relation."""
        key = id(node)
        if key not in self._streaming:
            self._streaming[key] = any(self.info(n).streaming for n in self.names_under(node))
        return self._streaming[key]
