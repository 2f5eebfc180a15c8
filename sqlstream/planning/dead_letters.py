"""The query that writes the dead letters of a source with ``on_error = 'dead_letter'``
(one per source: see :mod:`sqlstream.planning.malformed`).
"""

from __future__ import annotations

from sqlstream.analysis.state_signature import sink_identity, source_identity
from sqlstream.connectors import connector
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.frontend.literals import string_literal as literal
from sqlstream.ir import plan
from sqlstream.planning.malformed import ERROR, FILE_POSITION, RAW


def dead_letter_query(
    relation: plan.SourceRelation,
    name: str,
    sink: plan.Sink,
    trigger: plan.Trigger | None,
    checkpoint: str | None,
) -> plan.Query:
    """The query that writes the dead letters of ``relation`` (``on_error = 'dead_letter'``)
    into ``sink``: append mode, stateless, ``trigger`` of the first query reading the
    source (so that ``EMIT … ONCE`` pipelines still end), columns
    ``raw, reason, source, file, time`` for a files source; for a connector's payload (Kafka)
    its position columns (``topic``, ``partition``, ``offset``) in place of ``file``, or
    the sink's own record shape (:meth:`~sqlstream.connectors.base.Connector.dead_letter_row`:
    a Kafka sink gets the record's value and key, the rest as headers). It reads the
    source's decoded view (its ``reads``).

    Raises:
        ValueError: ``relation`` has no decoded view (no ``on_error = 'dead_letter'``).
    """
    decoded = relation.decoding.decoded_view if relation.decoding is not None else None
    if decoded is None:
        raise ValueError(f"source '{relation.name}' writes no dead letters")
    payload = connector(relation.connector).payload(relation)
    position = FILE_POSITION if payload is None else payload.position
    drops = [e for e in relation.expectations if e.action == "drop"]
    fields = (
        ("reason", "STRING", quote(REASON) if drops else quote(ERROR)),
        ("source", "STRING", literal(relation.name)),
        *position,
        ("time", "TIMESTAMP", "current_timestamp()"),
    )
    row = (
        None
        if payload is None or payload.record is None
        else connector(sink.connector).dead_letter_row(fields, payload.record)
    )
    items, columns = row or (
        (f"{quote(RAW)} AS `raw`", *(f"{e} AS {quote(n)}" for n, _, e in fields)),
        (("raw", "STRING"), *((n, t) for n, t, _ in fields)),
    )
    sql = f"SELECT {', '.join(items)} FROM {quote(decoded)} WHERE {quote(ERROR)} IS NOT NULL"
    if drops:  # a row a DROP ROW rule drops is a dead letter too, its reason the rule's name
        sql = f"SELECT {', '.join(items)} FROM ({_ruled(relation, decoded, drops)}) AS `ruled` WHERE {quote(REASON)} IS NOT NULL"
    state = plan.StateSignature(
        sources=(source_identity(relation),),
        operators=(),
        watermarks=(),
        output_mode="append",
        sink=sink_identity(sink),
    )
    return plan.Query(
        name,
        sql,
        sink,
        "append",
        f"dead letters of {relation.name}",
        trigger,
        checkpoint,
        relation.span,
        columns,
        state,
        (plan.RelationRef(decoded, relation.span),),
    )


REASON = "__sqlstream_reason"
"""The column of a dead letter's reason when the source has ``DROP ROW`` rules: why the
record is malformed, else the name of the first rule it violates, else ``NULL``."""


def _ruled(relation: plan.SourceRelation, decoded: str, drops: list[plan.Expectation]) -> str:
    """The source's decoded view with its computed and metadata columns (the projection's
    items that are not a column as read) and :data:`REASON`: the rules are written over
    the stream's columns (docs/dialect.md#expectations)."""
    read = {n.lower() for n, _ in relation.decoding.columns} if relation.decoding else set()
    extra = [  # `expr AS `name``, not a column the decoded view has already
        item
        for item in relation.projection
        if " AS " in item and item.rsplit(" AS ", 1)[1].strip("`").lower() not in read
    ]
    cases = " ".join(f"WHEN NOT ({e.condition}) THEN {literal(e.name)}" for e in drops)
    reason = f"coalesce({quote(ERROR)}, CASE {cases} END) AS {quote(REASON)}"
    return f"SELECT *, {', '.join([*extra, reason])} FROM {quote(decoded)}"


def reading_trigger(queries, relation: plan.SourceRelation) -> plan.Trigger | None:
    """The trigger of the first of ``queries`` (:class:`~sqlstream.ir.plan.Query`) that reads
    the source ``relation`` (by its state signature's sources), or ``None``: a dead-letter
    query runs with it."""
    key = relation.name.lower()
    return next(
        (
            q.trigger
            for q in queries
            if q.state is not None and any(s.relation == key for s in q.state.sources)
        ),
        None,
    )
