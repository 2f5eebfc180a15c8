"""One compile path per query body: parse → names → rewrite → schema → facts → checks.

:func:`compile_query` turns the text of a query body (a view, an ``INSERT``, a ``SELECT``)
into a frozen :class:`~sqlstream.planning.compiled_query.CompiledQuery`. Every step works on
the same tree, in this order:

1. parse (:func:`sqlstream.sql.parsing.parse_query`) and check that every relation it reads is
   declared (:class:`~sqlstream.planning.catalog.Catalog`);
2. rewrite (:data:`sqlstream.sql.rewrite.REWRITES`: window TVFs, ``DISTINCT ON``, ``QUALIFY`` …;
   the generator itself rewrites nothing);
3. schema (:func:`sqlstream.analysis.schema.query_schema`) of the rewritten tree: output columns,
   unknown names and type errors;
4. facts (:func:`sqlstream.analysis.facts.analyze`, :func:`sqlstream.analysis.operators.collect_operators`,
   merged with those of the views it reads, as Spark checks the whole plan);
5. for a query that writes to a sink, :func:`check_query`: the output mode and the
   streaming rules (:mod:`sqlstream.analysis.checks`), then its :class:`~sqlstream.ir.plan.StateSignature`.

The Spark SQL is printed once, from the tree the checks judged: what ``check`` judges is
what ``translate`` prints and ``exec`` runs.
"""

from __future__ import annotations

import re
import typing
from dataclasses import replace

from sqlglot import exp

from sqlstream.analysis.checks import run_rules
from sqlstream.analysis.dedup import TIME_TYPES, find_deduplication
from sqlstream.analysis.facts import QueryInfo, StreamingScope, analyze
from sqlstream.analysis.operators import DedupInfo, collect_operators
from sqlstream.analysis.output_modes import choose_mode
from sqlstream.analysis.realtime import real_time_rules
from sqlstream.analysis.rule_context import Context
from sqlstream.analysis.schema import query_schema
from sqlstream.analysis.state_signature import operators_of, state_signature, watermarks_of
from sqlstream.connectors import CONNECTORS, connector
from sqlstream.diagnostics.errors import (
    SqlStreamError,
    SqlSyntaxError,
    StreamingError,
    UnknownNameError,
    did_you_mean,
)
from sqlstream.frontend import ast
from sqlstream.ir import plan
from sqlstream.ir.context import CompileContext
from sqlstream.planning.catalog import Catalog
from sqlstream.planning.compiled_query import CompiledQuery
from sqlstream.sql.meta import DEDUP_REFUSED
from sqlstream.sql.parsing import node_offsets, to_spark_sql
from sqlstream.sql.query_text import rewritten_query
from sqlstream.sql.rewrite import relation_names

# Sources Spark's continuous processing reads (Spark guide, *Continuous Processing*).
CONTINUOUS_SOURCES = tuple(sorted(n for n, c in CONNECTORS.items() if c.continuous_source))


def locate(error: SqlStreamError, text: ast.SqlText) -> SqlStreamError:
    """Give ``error`` a span in the file from its offsets within ``text`` (``offset_start``
    / ``offset_end``), or ``text``'s whole span; an error that has a span keeps it.

    Returns:
        ``error`` itself.
    """
    if error.span is None:
        start = getattr(error, "offset_start", None)
        end = getattr(error, "offset_end", None)
        error.span = text.locate(start, end) if start is not None else text.span
    return error


def compile_query(
    text: ast.SqlText, catalog: Catalog, context: CompileContext, name: str = "query"
) -> CompiledQuery:
    """Compile one query body against the relations declared before it.

    A deduplication over a stream (:mod:`sqlstream.analysis.dedup`) is split off: its input rows
    become a view ``__<name>_dedup_input``, a :class:`~sqlstream.ir.plan.Deduplicate` step
    ``__<name>_dedup`` (``_2``, … for more) reads it, and the query reads that step. Both
    are registered in ``catalog`` and returned, in order, in ``CompiledQuery.steps``.

    Args:
        text: the body as written (its span maps positions back to the file).
        catalog: what is declared so far.
        context: the Spark minor judged for, the user functions defined so far, and the
            stores each step may answer from (the parse, the rewrite, the schema, the
            printed SQL: each consults its own).
        name: the view or query the body defines (names the deduplication steps).

    Returns:
        The :class:`CompiledQuery`; its ``findings`` are the schema problems found (the
        caller decides whether they stop the plan).

    Raises:
        SqlStreamError: a syntax error (``SS102``), an unknown relation (``SS201``), an
            invalid window TVF (``SS203``), a query that reads no stream (``SS309``) —
            positioned in the file.
    """

    names_read: list[tuple[str, int, int]] = []

    def read(tree: exp.Expr | None, names: list[tuple[str, int, int]]) -> None:
        names_read[:] = names
        if tree is not None and not isinstance(tree, (exp.Query, exp.Values)):
            raise _not_a_query(tree, text)
        for relation, start, end in names:
            if relation not in catalog:
                raise UnknownNameError(
                    f"unknown relation '{relation}'"
                    f"{did_you_mean(relation, catalog.names(hidden=False))}",
                    text.locate(start, end),
                    hint="declare it with CREATE STREAM, CREATE TABLE or CREATE VIEW before "
                    "this statement",
                )

    try:
        tree = rewritten_query(
            text.text, context.caches, read, lambda relation: event_time(catalog, relation)
        )
        tree, steps, findings = deduplicate(tree, text, catalog, name, context)
    except SqlStreamError as error:
        raise locate(error, text) from None
    compiled = _compile_tree(tree, text, catalog, context)
    if not compiled.info.streaming:
        raise StreamingError(
            "this query reads no stream: it reads only tables",
            text.span,
            hint="a streaming query must read at least one CREATE STREAM relation",
            code="SS309",
        )
    return replace(
        compiled,
        steps=steps,
        findings=findings + compiled.findings,
        reads=relation_refs(names_read, text),
    )


def relation_refs(names, text: ast.SqlText) -> tuple[plan.RelationRef, ...]:
    """The :func:`~sqlstream.sql.rewrite.relation_names` of a body (``(name, start, end)``,
    offsets in ``text``) as references placed in the file; one without offsets (a node the
    compiler made) takes the body's span."""
    return tuple(
        plan.RelationRef(name, text.locate(start, end) if start >= 0 else text.span)
        for name, start, end in names
    )


def event_time(catalog: Catalog, name: str) -> tuple[str | None, str | None] | None:
    """The event-time column of relation ``name`` (its only watermarked column, else
    ``None``) and its watermark's delay (a Spark duration string; ``None`` for a view),
    or ``None`` when there is no such relation; for ksqlDB's windows
    (:mod:`sqlstream.sql.ksql_windows`)."""
    relation = catalog.get(name)
    if relation is None:
        return None
    marks = sorted(relation.info.watermarks)
    source = relation.source
    if source is not None and source.watermark is not None:
        return source.watermark.column, source.watermark.delay
    return (marks[0] if len(marks) == 1 else None), None


def _not_a_query(tree: exp.Expr, text: ast.SqlText) -> SqlSyntaxError:
    """``SS102`` for a body the grammar took for a query that sqlglot parsed as something
    else: ``(a = 1, b = 2)``, ``(SELECT …) AS x``, ``TABLE t`` (read by sqlglot as the
    column ``TABLE`` aliased ``t``)."""
    if (
        isinstance(tree, exp.Alias)
        and isinstance(tree.this, exp.Column)
        and tree.this.name.upper() == "TABLE"
        and not tree.this.this.quoted
    ):
        return SqlSyntaxError(
            "invalid SQL: TABLE t is not supported as a query",
            text.span,
            hint=f"write SELECT * FROM {tree.alias}",
        )
    if isinstance(tree, exp.Alias):
        return SqlSyntaxError(
            "invalid SQL: expected a query (SELECT …), found an aliased expression",
            text.span,
            hint="a query takes no alias: remove AS …, or write SELECT … FROM (…) AS name",
        )
    return SqlSyntaxError(  # e.g. "(a = 1, b = 2);"
        "invalid SQL: expected a query (SELECT …), found an expression",
        text.span,
        hint="a query body starts with SELECT, FROM, WITH, VALUES or TABLE",
    )


def _compile_tree(
    tree, text: ast.SqlText, catalog: Catalog, context: CompileContext
) -> CompiledQuery:
    """Schema and facts of a rewritten tree (no dedup split, no SS309)."""
    try:
        columns, findings = query_schema(tree, catalog.schemas(), text.text, context)
    except SqlStreamError as error:
        raise locate(error, text) from None
    infos = catalog.infos()
    # one CTE map and streaming test for every pass
    scope = StreamingScope(tree, infos, context.spark_version)
    info = analyze(tree, infos, scope)
    operators, node_texts = _operators(tree, info, text, catalog, scope)
    return CompiledQuery(
        sql=to_spark_sql(tree, context.caches),
        text=text,
        columns=columns,
        info=info,
        operators=operators,
        findings=tuple(locate(f, text) for f in findings),
        tree=tree,
        node_texts=node_texts,
        stateful=operators_of(
            tree, infos, scope, context.caches, catalog.lineage, context.state_lineage
        ),
        definitions=catalog.lineage,
        watermark_defs=watermarks_of(tree),
    )


def compile_union(
    parts: list[CompiledQuery], catalog: Catalog, context: CompileContext
) -> CompiledQuery:
    """One query over ``UNION ALL`` of compiled bodies (:mod:`sqlstream.planning.union_inserts`),
    in their order; a body that is not a plain ``SELECT`` (``WITH``, ``ORDER BY``, ``LIMIT``, a
    set operation) is read as a subquery. Its facts and operators are those of the whole
    plan, as Spark checks it; positions of its operators point into the body each was written
    in. The bodies' schema findings and plan steps were recorded when each was compiled; the
    steps are kept for the state signature.

    Returns:
        The :class:`CompiledQuery` (``text`` is the first body's).
    """
    texts: dict[int, ast.SqlText] = {}
    trees: list[exp.Expr] = []
    for index, part in enumerate(parts, start=1):
        tree = part.tree
        assert tree is not None  # (a compiled part keeps its tree)
        texts.update({id(node): part.text for node in tree.walk()})
        texts.update(part.node_texts)
        plain = isinstance(tree, exp.Select) and not any(
            tree.args.get(k) for k in ("with_", "order", "limit", "offset")
        )
        query = typing.cast(exp.Query, tree)  # a query body
        trees.append(tree if plain else exp.select("*").from_(query.subquery(f"__part_{index}")))
    union = trees[0]
    for tree in trees[1:]:
        union = exp.union(union, tree, distinct=False, copy=False)
    compiled = _compile_tree(union, parts[0].text, catalog, context)
    node_texts = {**compiled.node_texts, **{k: texts[k] for k in compiled.node_texts if k in texts}}
    return replace(
        compiled,
        findings=(),
        node_texts=node_texts,
        steps=tuple(step for part in parts for step in part.steps),
        reads=tuple(read for part in parts for read in part.reads),
    )


def deduplicate(tree, text: ast.SqlText, catalog: Catalog, name: str, context: CompileContext):
    """Split every deduplication of ``tree`` off into an input view and a
    :class:`~sqlstream.ir.plan.Deduplicate` step, innermost first (see :func:`compile_query`).

    ``dropDuplicatesWithinWatermark`` is chosen for ``DISTINCT ON`` and ``ROW_NUMBER``
    when the input has a watermark and the keys do not hold its event-time column
    (docs/dialect.md#deduplication); ``SELECT DISTINCT`` is ``dropDuplicates()`` of every column. A
    ``ROW_NUMBER`` ordered by a column that is not a time is refused (SS325, by the checks).

    Returns:
        ``(tree, steps, findings)``: the query reading the deduplicated relations, the
        plan steps (:class:`~sqlstream.ir.plan.SqlView` of the input, then the
        ``Deduplicate``), and the schema findings of the inputs.
    """
    steps: list[plan.Relation] = []
    findings: tuple[SqlStreamError, ...] = ()
    while (found := find_deduplication(tree, catalog.infos(), context.spark_version)) is not None:
        rows = _compile_tree(found.input, text, catalog, context)
        types = dict((c.lower(), t) for c, t in rows.columns or ())
        if (
            found.order is not None
            and types.get(found.order.lower(), "TIMESTAMP") not in TIME_TYPES
        ):
            found.node.meta[DEDUP_REFUSED] = (
                f"it orders by `{found.order}` ({types[found.order.lower()]}), "
                "not by a time column: Spark's deduplication keeps the "
                "first row that arrives"
            )
            continue
        base = _fresh_name(catalog, name)
        marks = rows.info.watermarks
        keys = found.keys
        within = (
            found.spelling != "SELECT DISTINCT"
            and bool(marks)
            and not ({k.lower() for k in keys} & marks)
        )
        state_keys = keys or tuple(c for c, _ in rows.columns or ())
        bounded = within or bool({k.lower() for k in state_keys} & marks)
        dedup = DedupInfo(found.spelling, keys, within, bounded, found.node, found.order)
        input_name = base + "_input"
        catalog.add_view(ast.Name(input_name, text.span), rows)
        reading = _compile_tree(
            exp.select("*").from_(exp.to_table(input_name)), text, catalog, context
        )
        reading = replace(
            reading,
            operators=replace(
                reading.operators, deduplications=reading.operators.deduplications + (dedup,)
            ),
            node_texts={**reading.node_texts, id(found.node): text},
        )
        catalog.add_view(ast.Name(base, text.span), reading)
        steps += [
            plan.SqlView(
                input_name,
                rows.sql,
                text.span,
                rows.columns,
                relation_refs(relation_names(found.input), text),
            ),
            plan.Deduplicate(base, input_name, keys, within, text.span, rows.columns, found.order),
        ]
        findings += rows.findings
        tree = found.split(tree, base)
    return tree, tuple(steps), findings


def _fresh_name(catalog: Catalog, name: str) -> str:
    """``__<name>_dedup``, or ``__<name>_dedup_2``, … when taken (a view and a sink may
    share a name; a query may deduplicate twice); ``name`` reduced to an identifier."""
    stem = "__" + re.sub(r"\W", "_", name) + "_dedup"
    candidate, number = stem, 1
    while candidate in catalog or f"{candidate}_input" in catalog:
        number += 1
        candidate = f"{stem}_{number}"
    return candidate


def _operators(tree, info: QueryInfo, text: ast.SqlText, catalog: Catalog, scope: StreamingScope):
    """The query's operators plus those of the views it reads; where each node was written."""
    operators = collect_operators(tree, scope.infos, scope)
    nodes = [
        operators.limit,
        operators.order,
        operators.distinct,
        operators.window_function,
        operators.global_session,
        *(j.node for j in operators.joins),
    ]
    node_texts = {id(node): text for node in nodes if node is not None}
    for name in sorted(info.relations):
        view = catalog.get(name)
        if view is not None and view.query is not None:
            operators = operators.merged(view.query.operators)
            node_texts = {**view.query.node_texts, **node_texts}
    return operators, node_texts


def check_query(
    compiled: CompiledQuery,
    emit: ast.Emit | None,
    sink: plan.Sink,
    reads,
    context: CompileContext,
) -> tuple[CompiledQuery, tuple[SqlStreamError, ...]]:
    """Choose the output mode of a query writing to ``sink``, run the streaming rules and
    compute its state signature.

    Args:
        compiled: the compiled query.
        emit: its ``EMIT`` clause, or ``None``.
        sink: where it writes (its connector says the output modes and triggers it supports).
        reads: the catalog relations it reads, views' relations included
            (:meth:`~sqlstream.planning.catalog.Catalog.closure` of ``compiled.info.relations``,
            taken once by the caller): their connectors, for trigger rules, and the state of
            the views.
        context: the compile context (the Spark minor the rules judge for).

    Returns:
        ``(checked, findings)``: ``compiled`` with ``output_mode`` (``None`` when no mode
        fits), ``output_mode_reason`` and ``state`` set, and the rule findings (errors and
        warnings), positioned in the file. Nothing is raised.
    """
    requested = emit.output_mode if emit else None
    trigger = emit.trigger.kind if emit is not None and emit.trigger is not None else None
    streams = {
        connector(r.source.connector)
        for r in reads
        if r.source is not None and not r.source.bounded
    }
    sink_connector = connector(sink.connector)
    sink_modes = sink_connector.sink_modes
    real_time = trigger == "real_time"
    mode, reason, findings = choose_mode(
        compiled.info,
        compiled.operators,
        "update" if real_time and requested is None else requested,
        sink.connector,
        sink_modes,
        context.spark_version,
    )
    if real_time and requested is None:
        reason = "real-time mode (EMIT … REAL TIME) writes in update mode only"
    if mode is not None:
        rules_context = Context(
            compiled.info,
            compiled.operators,
            mode,
            requested is not None,
            sink.connector,
            sink_modes,
            trigger,
            frozenset(c.name for c in streams if not c.continuous_source),
            CONTINUOUS_SOURCES,
            sink_connector.continuous_sink,
            context.spark_version,
            frozenset(c.name for c in streams if c.empty_available_now),
            frozenset(c.name for c in streams if not c.real_time_source),
            sink_connector.real_time_sink,
        )
        findings += run_rules(rules_context) + list(real_time_rules(rules_context))
    positioned = tuple(_position(f, compiled, emit) for f in findings)
    state = (
        None
        if mode is None
        else state_signature(
            compiled.stateful,
            compiled.watermark_defs,
            compiled.steps,
            reads,
            mode,
            sink,
            compiled.definitions,
        )
    )
    return replace(compiled, output_mode=mode, output_mode_reason=reason, state=state), positioned


def _position(finding, compiled: CompiledQuery, emit: ast.Emit | None) -> StreamingError:
    text = compiled.text
    span = text.span
    if finding.node is not None:
        where = compiled.node_texts.get(id(finding.node), text)
        offsets = node_offsets(finding.node)
        span = where.locate(*offsets) if offsets else where.span
    elif finding.at == "emit" and emit is not None:
        span = emit.span
    return StreamingError(
        finding.message, span, hint=finding.hint, code=finding.code, severity=finding.severity
    )
