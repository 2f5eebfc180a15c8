"""A compiled plan as a graph: sources → views → queries → sinks.

Nodes are the relations a user declared (streams, tables, views), the queries and their
sinks; the compiler's internal views (names starting ``__``: deduplication steps, decoded
lines) are contracted, so an edge runs from what the user wrote to what reads it. Everything
comes from the plan: which relations a view or query reads (``reads``, as the compiler
found them), watermarks, output modes, triggers (:func:`~sqlstream.ir.plan.describe_trigger`)
and stateful operators.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from sqlstream.ir import plan as p
from sqlstream.lowering.expectation_listing import ON_VIOLATION

INTERNAL = "__"
"""Prefix of the temporary views the compiler adds (never a user's relation)."""


@dataclass(frozen=True)
class Node:
    """One box of the picture.

    Attributes:
        id: a unique identifier (``kind:name`` lower-case).
        kind: ``stream``, ``table``, ``view``, ``query`` or ``sink``.
        name: the relation's, query's or sink's name.
        details: lines shown under the name (connector, watermark, output mode, a
            stream's or sink's expectations ``expect name: condition [→ action]``, …).
        marks: flags that change how it is drawn: ``stateful``, ``join`` (a stream-stream
            join), ``dead_letter`` (a query writing dead letters).
    """

    id: str
    kind: str
    name: str
    details: tuple[str, ...] = ()
    marks: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Edge:
    """An arrow: ``source`` is read by (or written to) ``target``; ``kind`` is ``reads``,
    ``join`` (an input of a stream-stream join), ``dead_letter`` (a source's malformed
    records to its dead-letter query) or ``writes`` (a query to its sink)."""

    source: str
    target: str
    kind: str = "reads"


@dataclass
class Graph:
    """The pipeline's nodes (in plan order: sources, views, queries, sinks) and edges."""

    name: str
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def node(self, node_id: str) -> Node:
        """The node with ``node_id``.

        Raises:
            KeyError: no such node.
        """
        for node in self.nodes:
            if node.id == node_id:
                return node
        raise KeyError(node_id)


def _reads(step: p.SqlView | p.Query) -> set[str]:
    """The relations (lower case) a view or query reads, as the compiler found them."""
    return {read.key for read in step.reads}


def _source_details(relation: p.SourceRelation) -> tuple[str, ...]:
    target = relation.format or ""
    lines = [
        f"{relation.connector}"
        + (f" ({target})" if target and target != relation.connector else "")
    ]
    if relation.path:
        lines.append(_short(relation.path))
    if relation.watermark is not None:
        lines.append(f"watermark {relation.watermark.column} − {relation.watermark.delay}")
    if relation.decoding is not None:
        lines.append(f"on_error = {relation.decoding.on_error}")
    return tuple(lines) + _expectation_details(relation.expectations)


def _expectation_details(rules: tuple[p.Expectation, ...]) -> tuple[str, ...]:
    """One line per rule of a stream or sink: ``expect name: condition`` and its action
    (``→ DROP ROW``, ``→ FAIL UPDATE``; none for a rule that only counts), the condition
    shortened to fit a box."""
    return tuple(
        f"expect {rule.name}: {_head(rule.condition, 40)}"
        + (
            f" → {ON_VIOLATION[rule.action].removeprefix('ON VIOLATION ')}"
            if rule.action != "keep"
            else ""
        )
        for rule in rules
    )


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _head(text: str, width: int) -> str:
    """``text``, or its first ``width - 1`` characters and ``…``."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _operator_line(operator: p.StatefulOperator) -> str:
    where = f" in {operator.relation}" if operator.relation else ""
    if operator.kind == "stream_stream_join":
        return f"stream-stream {operator.join_type} join{where} on {', '.join(operator.keys)}"
    keys = ", ".join(operator.keys) or "all columns"
    return f"{operator.kind.replace('_', ' ')}{where} by {keys}"


def _query_details(query: p.Query) -> tuple[str, ...]:
    lines = [
        f"output mode {query.output_mode}",
        f"trigger: {p.describe_trigger(query.trigger)['label']}",
    ]
    state = query.state
    for operator in state.operators if state else ():
        lines.append(_short(_operator_line(operator), 60))
    if state and not state.operators:
        lines.append("stateless")
    flow = dict(query.sink.settings).get("auto_cdc")
    if flow is not None:  # CREATE FLOW … AUTO CDC: what the applier does (planning/flows.py)
        cdc = json.loads(flow)
        lines.append(f"AUTO CDC, SCD type {cdc['scd_type']}, keys {', '.join(cdc['keys'])}")
    return tuple(lines)


def _sink_details(sink: p.Sink, rules: tuple[p.Expectation, ...]) -> tuple[str, ...]:
    lines = [
        sink.connector
        + (f" ({sink.format})" if sink.format and sink.format != sink.connector else "")
    ]
    if sink.path:
        lines.append(_short(sink.path))
    return tuple(lines) + _expectation_details(rules)


def build(plan: p.Plan) -> Graph:
    """The :class:`Graph` of ``plan``.

    Every relation the user declared is a node (``stream``, ``table`` or ``view``; a
    deduplication the user named is a view); every query is a ``query`` node with an edge to
    its ``sink`` node. A view's or query's inputs are the relations it reads, with the
    compiler's internal views replaced by what they read; a dead-letter query's input is the
    source whose malformed records it writes (edge kind ``dead_letter``); the inputs of a
    query or view with a stream-stream join are ``join`` edges.
    """
    graph = Graph(plan.name)
    inputs: dict[str, set[str]] = {}  # relation (lower case) -> relations it reads
    decoded: dict[str, str] = {}  # decoded view -> its source
    ids: dict[str, str] = {}
    joined = _joined_relations(plan)
    for relation in plan.relations:
        key = relation.name.lower()
        if isinstance(relation, p.SourceRelation):
            inputs[key] = set()
            if relation.decoding is not None and relation.decoding.decoded_view:
                decoded[relation.decoding.decoded_view.lower()] = key
        elif isinstance(relation, p.SqlView):
            inputs[key] = _reads(relation)
        else:
            inputs[key] = {relation.input.lower()}
        if key.startswith(INTERNAL):
            continue
        if isinstance(relation, p.SourceRelation):
            kind = "table" if relation.bounded else "stream"
            details = _source_details(relation)
        else:
            kind, details = "view", ()
        marks = frozenset({"join"}) if key in joined else frozenset()
        ids[key] = f"{kind}:{key}"
        graph.nodes.append(Node(ids[key], kind, relation.name, details, marks))

    def visible(names: set[str], seen: frozenset[str] = frozenset()) -> set[str]:
        found = set()
        for name in names:
            if name in ids:
                found.add(name)
            elif name in inputs and name not in seen:
                found |= visible(inputs[name], seen | {name})
        return found

    for key, node_id in ids.items():
        edge = "join" if key in joined else "reads"
        for input_name in sorted(visible(inputs[key])):
            graph.edges.append(Edge(ids[input_name], node_id, edge))
    sinks: dict[str, str] = {}
    for query in plan.queries:
        read = _reads(query)
        dead = {decoded[t] for t in read if t in decoded}
        stateful = bool(query.state and query.state.stateful)
        join = any(
            o.kind == "stream_stream_join" and o.relation is None
            for o in (query.state.operators if query.state else ())
        )
        query_marks = {"stateful"} if stateful else set()
        query_marks |= {"join"} if join else set()
        query_marks |= {"dead_letter"} if dead else set()
        query_id = f"query:{query.name.lower()}"
        graph.nodes.append(
            Node(query_id, "query", query.name, _query_details(query), frozenset(query_marks))
        )
        for source in sorted(dead):
            graph.edges.append(Edge(ids[source], query_id, "dead_letter"))
        for name in sorted(visible(read - set(decoded))):
            graph.edges.append(Edge(ids[name], query_id, "join" if join else "reads"))
        sink_key = query.sink.name.lower()
        if sink_key not in sinks:
            sinks[sink_key] = f"sink:{sink_key}"
            graph.nodes.append(
                Node(
                    sinks[sink_key],
                    "sink",
                    query.sink.name,
                    _sink_details(query.sink, query.expectations),
                )
            )
        graph.edges.append(Edge(query_id, sinks[sink_key], "writes"))
    redact = plan.source.redact  # a path or option may hold a ${env:…} secret
    graph.nodes = [
        Node(n.id, n.kind, n.name, tuple(redact(d) for d in n.details), n.marks)
        for n in graph.nodes
    ]
    return graph


def _joined_relations(plan: p.Plan) -> set[str]:
    """The views (lower case) holding a stream-stream join, from the queries' operators."""
    return {
        o.relation.lower()
        for q in plan.queries
        for o in (q.state.operators if q.state else ())
        if o.kind == "stream_stream_join" and o.relation
    }
