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
    fields = (
        ("reason", "STRING", quote(ERROR)),
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
