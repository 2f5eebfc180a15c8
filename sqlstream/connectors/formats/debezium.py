"""``format = 'debezium-json'``: Debezium's JSON change records decoded as SQL, for the
``files`` and ``kafka`` sources (Flink's format name).

A change record is Debezium's envelope, ``{"before": {…}, "after": {…}, "op": "c", "ts_ms":
…, "source": {…}}``, optionally wrapped as ``{"schema": {…}, "payload": <envelope>}`` (Kafka
Connect's ``JsonConverter`` with ``schemas.enable``). The declared columns are decoded from
the row image the operation carries: ``after`` for ``c`` (create), ``r`` (snapshot read) and
``u`` (update), ``before`` for ``d`` (delete). A record with another ``op`` (a truncate,
``t``), no ``op`` or no image for it is malformed (``on_error``). Records with no value
(Kafka tombstones, which Debezium writes after a delete for log compaction) and blank lines
are skipped, as Flink's ``debezium-json`` skips them.

``METADATA FROM`` keys: ``op``, ``ts_ms`` (epoch milliseconds: ``BIGINT``, or ``TIMESTAMP``,
converted with ``timestamp_millis``) and ``source.<field>`` (any field of the envelope's
``source`` block: ``lsn``, ``ts_ms``, ``db``, ``table``, ``txId``, …), each read from the
envelope's JSON and cast to the declared type. The envelope is kept beside the decoded row as
its JSON text in the column ``__debezium`` while metadata columns read it.

Sources: Debezium's *PostgreSQL connector* documentation (*Data change events*: the envelope,
``op`` values, tombstones); Flink's *Debezium Format* page (``debezium-json``, its metadata
keys); Spark SQL ``get_json_object``, ``from_json``, ``raise_error``, ``timestamp_millis``.
"""

from __future__ import annotations

import re

from sqlstream.diagnostics.errors import UnknownNameError, did_you_mean
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.frontend.literals import string_literal as literal

DEBEZIUM = "debezium-json"
ENVELOPE = "__debezium"
IMAGE = "__debezium_image"
OPS_WITH_AFTER = ("c", "r", "u")
# `source.<field>`: a JSON field name of the source block (letters, digits, `_`).
_SOURCE_KEY = re.compile(r"source\.[A-Za-z_][A-Za-z0-9_]*\Z")
_TIMESTAMP_KEYS = ("ts_ms", "source.ts_ms")
MALFORMED = (
    "not a Debezium change record (a JSON envelope whose op is c, r, u or d and whose "
    "row image, after or before for d, is an object)"
)


def envelope_sql(text: str) -> str:
    """The SQL of the envelope's JSON text from a record's text ``text`` (SQL of a
    string): the ``payload`` of a ``schema``/``payload`` wrapping, else the record itself."""
    return f"coalesce(get_json_object({text}, '$.payload'), {text})"


def image_sql(envelope: str) -> str:
    """The SQL of the row image's JSON text in the envelope ``envelope`` (SQL of a string):
    ``after`` for ``c``, ``r``, ``u``; ``before`` for ``d``; ``NULL`` for anything else
    (a malformed record)."""
    op = f"get_json_object({envelope}, '$.op')"
    ops = ", ".join(literal(o) for o in OPS_WITH_AFTER)
    return (
        f"CASE WHEN {op} IN ({ops}) THEN get_json_object({envelope}, '$.after') "
        f"WHEN {op} = 'd' THEN get_json_object({envelope}, '$.before') END"
    )


def skip_sql(text: str) -> str:
    """The condition that keeps a record whose text is ``text``: not a tombstone (no value,
    or JSON ``null``), not a blank line."""
    return f"{text} IS NOT NULL AND trim({text}) NOT IN ('', 'null')"


def metadata_key(key: str) -> bool:
    """Whether ``key`` (lower case) is a ``METADATA FROM`` key of the format."""
    return key in ("op", "ts_ms") or bool(_SOURCE_KEY.match(key))


def metadata(statement, known: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """``METADATA FROM`` key → ``(Spark SQL over the envelope column, type)``: the
    connector's own keys ``known`` and the format's keys that ``statement``'s metadata
    columns name (``source.<field>`` is any field, so the format's keys are those
    declared). A key of :data:`_TIMESTAMP_KEYS` declared ``TIMESTAMP`` is converted from
    epoch milliseconds.

    Raises:
        UnknownNameError: ``SS201`` at a metadata column whose key is neither the
            connector's nor the format's.
    """
    found = dict(known)
    for column in statement.columns:
        if not isinstance(column, ast.MetadataColumn):
            continue
        written = column.key or column.name.value
        key = written.lower()
        if key in known:
            continue
        if not metadata_key(key):
            keys = ("op", "ts_ms", "source.<field>", *known)
            raise UnknownNameError(
                f"'{written}' is not a metadata key of debezium-json nor of the connector"
                + did_you_mean(key, keys)
                + f" (keys: {', '.join(keys)})",
                column.span,
                hint="the row image's fields are declared as columns; METADATA FROM reads the "
                "envelope: 'op', 'ts_ms', 'source.lsn', 'source.ts_ms', 'source.table', …",
            )
        path = "$." + (written if key.startswith("source.") else key)
        expr = f"get_json_object({quote(ENVELOPE)}, {literal(path)})"
        if key in _TIMESTAMP_KEYS and column.type.upper().startswith("TIMESTAMP"):
            expr = f"timestamp_millis(CAST({expr} AS BIGINT))"
        found[key] = (expr, column.type)
    return found


def uses_metadata(statement) -> bool:
    """Whether ``statement`` declares a metadata column of the format (the envelope is
    then kept beside the row)."""
    return any(
        isinstance(c, ast.MetadataColumn) and metadata_key((c.key or c.name.value).lower())
        for c in statement.columns
    )


def decode_items(
    text: str, ddl: str, first: tuple[str, ...], kept: tuple[str, ...], envelope_kept: bool
) -> tuple[tuple[str, ...], ...]:
    """The ``selectExpr`` items of the four steps that decode records whose text is
    ``text`` (after :func:`skip_sql`) into the columns ``ddl`` (a Spark DDL string), failing
    the query on a malformed record (``on_error = 'fail'``: ``raise_error`` naming the
    envelope; ``from_json`` in ``FAILFAST`` on a value of the wrong type): the envelope, its
    row image, the image decoded, the row's columns.

    Args:
        text: SQL of the record's text over the reader's columns.
        ddl: the declared columns as a Spark DDL string.
        first: items of the first step kept beside the envelope (``_metadata``,
            ``struct(`key`, …) AS `__kafka```), and ``kept`` the names they make.
        envelope_kept: metadata columns read the envelope: it stays beside the row.
    """
    envelope, image = quote(ENVELOPE), quote(IMAGE)
    error = f"raise_error(concat({literal('malformed: ' + MALFORMED + ': ')}, {envelope}))"
    decoded = (
        f"CASE WHEN {image} IS NULL THEN {error} ELSE "
        f"from_json({image}, {literal(ddl)}, map('mode', 'FAILFAST')) END AS `__value`"
    )
    tail = (envelope, *kept) if envelope_kept else ()
    return (
        (f"{envelope_sql(text)} AS {envelope}", *first),
        (f"{image_sql(envelope)} AS {image}", envelope, *kept),
        (decoded, envelope, *kept),
        ("`__value`.*", *tail),
    )
