"""State signatures: what a streaming query keeps in Spark's state store, and what it reads
and writes, as plain data.

A restart on an existing checkpoint location is safe only if the state signature is
compatible with the one the checkpoint was written with (Spark guide, *Recovery Semantics
after Changes in a Streaming Query*): the stateful operators (aggregations with their
grouping keys and aggregate functions, deduplications with their keys, stream-stream joins
with their type and keys), the watermarks, the output mode, the sources and the sink.
:func:`state_signature` computes it from the rewritten query tree (the tree the checks
judged and the SQL that runs was printed from) and the trees of the views it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from sqlstream import plan
from sqlstream.analysis import RelationInfo, is_aggregate, names_under
from sqlstream.dialect import Watermark as WatermarkClause, to_spark_sql
from sqlstream.operators import join_kind


@dataclass(frozen=True)
class StatefulOperator:
    """One operator that keeps state across micro-batches.

    Attributes:
        kind: ``aggregation`` (``GROUP BY`` or aggregate functions on a stream),
            ``distinct`` (``SELECT DISTINCT``: an aggregation over every column for Spark),
            ``deduplicate`` (a ``Deduplicate`` plan step: ``dropDuplicates``) or
            ``stream_stream_join``.
        keys: the grouping keys, the distinct columns, the deduplication keys or the join's
            equality conditions, as Spark SQL text.
        aggregates: the aggregate function calls (aggregations only), as Spark SQL text.
        join_type: ``inner``, ``left``, ``right``, ``full``, ``semi``, ``anti`` (joins only).
        relation: ``None`` for the query itself, else the lower-case name of the view the
            operator is in.
    """

    kind: str
    keys: tuple[str, ...]
    aggregates: tuple[str, ...] = ()
    join_type: str | None = None
    relation: str | None = None


@dataclass(frozen=True)
class SourceIdentity:
    """A source a query reads: its relation, connector and what it reads (path, table)."""

    relation: str
    connector: str
    target: str | None


@dataclass(frozen=True)
class WatermarkDef:
    """An event-time watermark: on ``column`` of ``relation`` with ``delay`` (Spark's
    duration text, e.g. ``1 hour``, or the SQL of a ``WATERMARK`` clause's interval)."""

    relation: str
    column: str
    delay: str


@dataclass(frozen=True)
class StateSignature:
    """What a restart on the same checkpoint location must keep (Spark guide, *Recovery
    Semantics after Changes in a Streaming Query*).

    Attributes:
        sources: every source read, through views, in declaration order.
        operators: the stateful operators of the query and of the views it reads.
        watermarks: the watermarks of those sources and of ``WATERMARK`` clauses.
        output_mode: ``append``, ``update`` or ``complete``.
        sink: ``(connector, format, path or table)`` of the sink.
    """

    sources: tuple[SourceIdentity, ...]
    operators: tuple[StatefulOperator, ...]
    watermarks: tuple[WatermarkDef, ...]
    output_mode: str
    sink: tuple[str, str | None, str | None]

    @property
    def stateful(self) -> bool:
        """The query keeps state (Spark's state store) across micro-batches."""
        return bool(self.operators)


def _sql(nodes) -> tuple[str, ...]:
    return tuple(to_spark_sql(node) for node in nodes)


def _join_keys(join: exp.Join) -> tuple[str, ...]:
    using = join.args.get("using") or []
    if using:
        return tuple(f"USING {u.name}" for u in using)
    condition = join.args.get("on")
    conjuncts = list(condition.flatten()) if isinstance(condition, exp.And) else [condition]
    return tuple(sorted(to_spark_sql(c) for c in conjuncts
                        if isinstance(c, (exp.EQ, exp.NullSafeEQ))))


def operators_of(tree: exp.Expression, infos: Mapping[str, RelationInfo],
                 relation: str | None = None) -> tuple[StatefulOperator, ...]:
    """The stateful operators in one rewritten query tree.

    Args:
        tree: a query after :func:`sqlstream.rewrite.rewrite`.
        infos: lower-case relation name → what is known of it (streaming or not).
        relation: the view the tree defines, or ``None`` for a query.

    Returns:
        Aggregations and ``SELECT DISTINCT`` on streaming data, and joins of two streams,
        in the order of the tree (outermost first).
    """
    ctes = {cte.alias_or_name.lower(): cte.this for cte in tree.find_all(exp.CTE)}

    def streaming(node: exp.Expression) -> bool:
        return any(infos.get(n, RelationInfo(False)).streaming for n in names_under(node, ctes))

    found = []
    for select in tree.find_all(exp.Select):
        if not streaming(select):
            continue
        if is_aggregate(select):
            group = select.args.get("group")
            aggregates = dict.fromkeys(
                to_spark_sql(node) for item in select.expressions for node in item.find_all(exp.AggFunc)
                if not node.find_ancestor(exp.Window))
            found.append(StatefulOperator("aggregation", _sql(group.expressions) if group else (),
                                          tuple(aggregates), relation=relation))
        elif select.args.get("distinct") is not None:
            found.append(StatefulOperator("distinct", _sql(select.expressions), relation=relation))
        source = select.args.get("from_")
        left_streaming = source is not None and streaming(source)
        for join in select.args.get("joins") or ():
            if left_streaming and streaming(join.this):
                found.append(StatefulOperator("stream_stream_join", _join_keys(join),
                                              join_type=join_kind(join), relation=relation))
    return tuple(found)


def watermarks_of(tree: exp.Expression, relation: str | None) -> tuple[WatermarkDef, ...]:
    """The ``WATERMARK`` clauses of one query tree."""
    return tuple(
        WatermarkDef(relation or "", clause.this.alias_or_name.lower(),
                     to_spark_sql(clause.expression))
        for clause in tree.find_all(WatermarkClause))


def source_identity(source: plan.SourceRelation) -> SourceIdentity:
    """The identity of a source read (connector and path or table)."""
    return SourceIdentity(source.name.lower(), source.connector, source.path)


def sink_identity(sink: plan.Sink) -> tuple[str, str | None, str | None]:
    """``(connector, format, path or table)`` of a sink."""
    return sink.connector, sink.format, sink.path
