"""State signatures (:class:`~sqlstream.ir.plan.StateSignature`): what a streaming query keeps
in Spark's state store, and what it reads and writes.

A restart on an existing checkpoint location is safe only if the state signature is
compatible with the one the checkpoint was written with (Spark guide, *Recovery Semantics
after Changes in a Streaming Query*): the stateful operators (aggregations with their
grouping keys and aggregate functions, deduplications with their keys, stream-stream joins
with their type and keys), the watermarks, the output mode, the sources and the sink.
:func:`operators_of` and :func:`watermarks_of` read them off one rewritten tree (the tree
the checks judged and the SQL that runs was printed from) when it is compiled; the compiled
record keeps them, and :func:`state_signature` puts together those of the query and of the
views it reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from sqlglot import exp

from sqlstream.analysis.facts import RelationInfo, StreamingScope, grouping_key, is_aggregate
from sqlstream.analysis.lineage import Definitions, Lineage, normalized, zoned
from sqlstream.analysis.operators import conjuncts, join_kind
from sqlstream.analysis.spark_types import aggregate_call
from sqlstream.ir import plan
from sqlstream.ir.caches import CompileCaches
from sqlstream.sql.dialect import Watermark as WatermarkClause
from sqlstream.sql.parsing import to_spark_sql
from sqlstream.sql.tree_walks import find_all


def _sql(nodes, caches: CompileCaches | None = None) -> tuple[str, ...]:
    return tuple(to_spark_sql(node, caches) for node in nodes)


def _join_keys(join: exp.Join) -> tuple[str, ...]:
    using = join.args.get("using") or []
    if using:
        return tuple(f"USING {u.name}" for u in using)
    return tuple(sorted(to_spark_sql(c) for c in _equalities(join)))


def _equalities(join: exp.Join) -> list[exp.Expr]:
    return [c for c in conjuncts(join.args.get("on")) if isinstance(c, (exp.EQ, exp.NullSafeEQ))]


def _unresolved(nodes, select: exp.Select, lineage: Lineage) -> tuple[tuple[str, ...], bool]:
    return (), False


def _resolved(nodes, select: exp.Select, lineage: Lineage) -> tuple[tuple[str, ...], bool]:
    """The resolved, normalized text of ``nodes`` (expressions of ``select``) and whether
    one depends on the session time zone."""
    resolved = [lineage.resolve(node, select) for node in nodes]
    texts = tuple(to_spark_sql(normalized(node)) for node in resolved)
    return texts, any(zoned(node) for node in resolved)


def operators_of(
    tree: exp.Expr,
    infos: Mapping[str, RelationInfo],
    scope: StreamingScope,
    caches: CompileCaches | None = None,
    definitions: Definitions | None = None,
    resolve: bool = True,
) -> tuple[plan.StatefulOperator, ...]:
    """The stateful operators in one rewritten query tree.

    Args:
        tree: a query after :func:`sqlstream.sql.rewrite.rewrite`.
        infos: lower-case relation name → what is known of it (streaming or not).
        scope: the :class:`~sqlstream.analysis.facts.StreamingScope` of ``tree`` shared with
            the other passes (its Spark minor decides which functions aggregate).
        caches: the compile context's stores (printed SQL,
            :func:`~sqlstream.sql.parsing.to_spark_sql`), or ``None``.
        definitions: the meaning of the columns of each relation the tree reads by name
            (:meth:`sqlstream.planning.catalog.Catalog.lineage`); ``None``: every relation
            is read as it is.
        resolve: resolve keys and aggregates by meaning; ``False`` leaves
            ``resolved_keys`` / ``resolved_aggregates`` empty and ``zoned`` false (a compile
            that starts no query: :attr:`~sqlstream.ir.context.CompileContext.state_lineage`).

    Returns:
        Aggregations and ``SELECT DISTINCT`` on streaming data, and joins of two streams,
        in the order of the tree (outermost first), with ``relation`` ``None``:
        :func:`state_signature` names the view they are in. Each carries its keys and
        aggregates as written and by meaning (``resolved_keys``, ``resolved_aggregates``,
        ``zoned``).
    """
    streaming, version = scope.streaming, scope.version
    lineage = Lineage(definitions or (lambda name: None))
    _meaning = _resolved if resolve else _unresolved

    found = []
    for select in find_all(tree, exp.Select):
        if not streaming(select):
            continue
        if is_aggregate(select, version):
            group = select.args.get("group")
            calls = [
                node
                for item in select.expressions
                for node in find_all(item, exp.Expr)
                if aggregate_call(node, version) and not node.find_ancestor(exp.Window)
            ]
            aggregates = dict.fromkeys(to_spark_sql(node, caches) for node in calls)
            keys = [grouping_key(select, key) for key in group.expressions] if group else []
            resolved_keys, zoned_keys = _meaning(keys, select, lineage)
            resolved_calls, zoned_calls = _meaning(calls, select, lineage)
            found.append(
                plan.StatefulOperator(
                    "aggregation",
                    _sql(keys, caches),
                    tuple(aggregates),
                    resolved_keys=resolved_keys,
                    resolved_aggregates=tuple(dict.fromkeys(resolved_calls)),
                    zoned=zoned_keys or zoned_calls,
                )
            )
        elif select.args.get("distinct") is not None:
            resolved, zoned_columns = _meaning(select.expressions, select, lineage)
            found.append(
                plan.StatefulOperator(
                    "distinct",
                    _sql(select.expressions, caches),
                    resolved_keys=resolved,
                    zoned=zoned_columns,
                )
            )
        source = select.args.get("from_")
        left_streaming = source is not None and streaming(source)
        for join in select.args.get("joins") or ():
            if left_streaming and streaming(join.this):
                resolved, zoned_keys = _meaning(_equalities(join), select, lineage)
                using = join.args.get("using") or []
                resolved = resolved or tuple(f"USING {u.name.lower()}" for u in using)
                found.append(
                    plan.StatefulOperator(
                        "stream_stream_join",
                        _join_keys(join),
                        join_type=join_kind(join),
                        resolved_keys=tuple(sorted(resolved)),
                        zoned=zoned_keys,
                    )
                )
    return tuple(found)


def watermarks_of(tree: exp.Expr) -> tuple[plan.WatermarkDef, ...]:
    """The ``WATERMARK`` clauses of one query tree (``relation`` empty: :func:`state_signature`
    names the view they are in)."""
    return tuple(
        plan.WatermarkDef("", clause.this.alias_or_name.lower(), to_spark_sql(clause.expression))
        for clause in find_all(tree, WatermarkClause)
    )


def source_identity(source: plan.SourceRelation) -> plan.SourceIdentity:
    """The identity of a source read (connector and path or table)."""
    return plan.SourceIdentity(source.name.lower(), source.connector, source.path)


def sink_identity(sink: plan.Sink) -> tuple[str, str | None, str | None]:
    """``(connector, format, path or table)`` of a sink."""
    return sink.connector, sink.format, sink.path


def deduplications_of(
    steps, relation: str | None, columns, definitions: Definitions | None = None
) -> list[plan.StatefulOperator]:
    """The :class:`~sqlstream.ir.plan.Deduplicate` steps among ``steps``: ``deduplicate`` or
    ``deduplicate_within_watermark`` with their keys (every column of the input, from
    ``columns``: relation name → ``(name, type)`` pairs, when the keys are all columns), and
    the keys by meaning: through ``definitions`` (the input's columns' meanings,
    :mod:`sqlstream.analysis.lineage`) when given, else the names case-folded."""
    found = []
    for step in steps:
        if isinstance(step, plan.Deduplicate):
            keys = step.keys or tuple(c for c, _ in columns.get(step.input.lower()) or ())
            kind = "deduplicate_within_watermark" if step.within_watermark else "deduplicate"
            meanings = (definitions(step.input.lower()) if definitions else None) or {}
            resolved = tuple(
                to_spark_sql(normalized(meanings[k.lower()]))
                if k.lower() in meanings
                else k.lower()
                for k in keys
            )
            found.append(
                plan.StatefulOperator(
                    kind,
                    keys,
                    relation=relation,
                    resolved_keys=resolved,
                    zoned=any(zoned(meanings[k.lower()]) for k in keys if k.lower() in meanings),
                )
            )
    return found


def state_signature(
    operators,
    watermarks,
    steps,
    reads,
    mode: str,
    sink: plan.Sink,
    definitions: Definitions | None = None,
) -> plan.StateSignature:
    """The state signature of a query, from the facts its compile step found and those of
    the views it reads (nothing is walked again).

    Args:
        operators: the query's own stateful operators (:func:`operators_of`, as its compiled
            record keeps them).
        watermarks: its own ``WATERMARK`` clauses (:func:`watermarks_of`).
        steps: the query's own plan steps (its deduplications).
        reads: the catalog relations it reads, views' relations included
            (:meth:`sqlstream.planning.catalog.Catalog.closure`): each has ``name``, ``source``
            (a :class:`~sqlstream.ir.plan.SourceRelation` or ``None``) and ``query`` (a
            compiled view with its own ``stateful``, ``watermark_defs`` and ``steps``, or
            ``None``).
        mode: its output mode; ``sink`` where it writes.
        definitions: the meaning of each relation's columns
            (:meth:`sqlstream.planning.catalog.Catalog.lineage`), for the deduplication keys.

    Returns:
        The :class:`~sqlstream.ir.plan.StateSignature`.
    """
    columns = {r.name.lower(): r.columns for r in reads}
    operators = deduplications_of(steps, None, columns, definitions) + list(operators)
    watermarks = list(watermarks)
    sources = []
    for relation in reads:
        name = relation.name.lower()
        if relation.query is not None:
            operators += deduplications_of(relation.query.steps, name, columns, definitions)
            operators += [replace(o, relation=name) for o in relation.query.stateful]
            watermarks += [replace(w, relation=name) for w in relation.query.watermark_defs]
        if relation.source is not None and not relation.source.bounded:
            sources.append(source_identity(relation.source))
            if relation.source.watermark is not None:
                w = relation.source.watermark
                watermarks.append(plan.WatermarkDef(name, w.column.lower(), w.delay))
    return plan.StateSignature(
        tuple(sources), tuple(operators), tuple(watermarks), mode, sink_identity(sink)
    )
