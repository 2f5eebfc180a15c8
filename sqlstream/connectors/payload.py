"""The payload of a connector's records, as malformed-record handling decodes it.

:class:`Payload` says where a record's payload is and how it decodes (``kafka``'s
``value`` as JSON, CSV or Avro; ``files``' lines), for ``on_error = 'drop'`` /
``'dead_letter'`` (:mod:`sqlstream.planning.malformed`, :mod:`sqlstream.lowering.decoding`).
"""

from __future__ import annotations

from dataclasses import dataclass

# The column holding a record's payload decoded into its declared types (sqlstream.planning.malformed).
DECODED = "__sqlstream_t"


@dataclass(frozen=True)
class Payload:
    """The payload of a connector's records as :mod:`sqlstream.planning.malformed` decodes it
    (:meth:`~sqlstream.connectors.base.Connector.payload`), all as Spark SQL over the columns Spark's reader gives.

    Attributes:
        format: the payload's format: ``json``, ``csv`` (parsed twice, as strings and as
            the declared types) or ``avro`` (decoded once, ``typed``).
        text: the payload as the parser reads it (``CAST(`value` AS STRING)``).
        raw: the payload as a dead letter keeps it (a string; ``base64(`value`)`` for
            binary Avro).
        columns: ``(name, Spark type)`` of the decoded payload, in order (``None``: the
            declared columns, the relation's ``schema``).
        kept: ``selectExpr`` items kept beside the payload (the record's position and
            metadata, e.g. ``struct(`topic`, …) AS `__kafka```), and ``kept_names`` the
            columns they make.
        position: ``(name, type, SQL)`` of the dead-letter columns that say where a
            record was read (``kafka``: ``topic``, ``partition``, ``offset``).
        typed: ``avro``: the SQL decoding ``value`` into a struct of ``columns`` without
            failing (Spark's ``PERMISSIVE`` mode); ``failed``: the SQL condition, over the
            kept items and :data:`DECODED` (that struct), of a record it could not decode.
        record: the SQL of the record's own value and key (over the kept columns), for a
            sink that writes dead letters as records (:meth:`~sqlstream.connectors.base.Connector.dead_letter_row`).
        start_caveat: why, on a new checkpoint, the dead-letter query may not read the
            records the other queries read (warning ``SS256``), or ``None``.
        skip: the SQL condition, over the reader's columns, of the records decoded at all
            (``debezium-json``: not a tombstone nor a blank line), or ``None``: every one.
        malformed: the reason's words for a payload that does not parse, or ``None``
            (``not a JSON object``, …).
    """

    format: str
    text: str
    raw: str
    columns: tuple[tuple[str, str], ...] | None
    kept: tuple[str, ...]
    kept_names: tuple[str, ...]
    position: tuple[tuple[str, str, str], ...]
    typed: str | None = None
    failed: str | None = None
    record: tuple[str, str] | None = None
    start_caveat: str | None = None
    skip: str | None = None
    malformed: str | None = None
