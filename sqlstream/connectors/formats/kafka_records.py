"""Kafka's records as SQL: the ``value`` of a record decoded (``format``: ``json``, ``csv``,
``avro``, ``raw``) and a query's rows encoded into ``key`` / ``value`` / ``headers``, for
:class:`sqlstream.connectors.kafka.Kafka` (whose methods of the same names call these).

Sources: Spark "Structured Streaming + Kafka Integration Guide" (the source's columns, the
sink's); "Apache Avro Data Source Guide" (``from_avro``, ``to_avro``); Spark SQL
``from_json``, ``from_csv``, ``to_json``, ``to_csv``, ``raise_error``.
"""

from __future__ import annotations

import json
from typing import Any

from sqlstream.connectors.call_sequence import schema_ddl
from sqlstream.connectors.formats import debezium
from sqlstream.connectors.formats.avro import avro_columns, null_record
from sqlstream.connectors.payload import DECODED, Payload
from sqlstream.diagnostics.errors import OptionError
from sqlstream.frontend.literals import quote_identifier as _quote
from sqlstream.frontend.literals import string_literal as sql_string
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Step

KAFKA_COLUMNS = (
    ("key", "BINARY"),
    ("value", "BINARY"),
    ("topic", "STRING"),
    ("partition", "INT"),
    ("offset", "BIGINT"),
    ("timestamp", "TIMESTAMP"),
    ("timestampType", "INT"),
)
HEADERS_TYPE = "ARRAY<STRUCT<`key`: STRING, `value`: BINARY>>"
FAILFAST = "map('mode', 'FAILFAST')"
TEXT = "CAST(`value` AS STRING)"
TOMBSTONE_ERROR = (
    "raise_error(concat('a Kafka record with no value (a tombstone) in topic ', "
    "`topic`, ', partition ', `partition`, ', offset ', `offset`, ': on_error = "
    "fail stops the query, drop or dead_letter set such records aside'))"
)
LATEST = (
    "with starting_offsets = 'latest' (Spark's default) each query of a new checkpoint starts "
    "at the end of the topic: a malformed record arriving between the starts of a query "
    "reading the stream and of its dead-letter query gets no dead letter"
)


def decode_steps(relation: p.SourceRelation) -> tuple[Step, ...]:
    """The ``selectExpr`` steps that decode ``value`` (none for a raw stream whose
    declared types are Kafka's). Decoding is ``FAILFAST`` (``on_error = 'fail'``): a
    value that does not decode fails the query, and so does a null value (a tombstone,
    which Spark's decoding would make a row of NULLs): ``raise_error`` with its topic,
    partition and offset (Spark SQL function reference, ``raise_error``)."""
    settings = dict(relation.settings)
    fmt = settings.get("format", "raw")
    if fmt == "raw":
        declared = dict(relation.columns or ())
        casts = [
            f"CAST({_quote(n)} AS {declared[n]}) AS {_quote(n)}"
            for n, t in KAFKA_COLUMNS
            if declared.get(n, t) != t
        ]
        if not casts:
            return ()
        kept = [_quote(n) for n, _ in KAFKA_COLUMNS if declared.get(n, _) == _]
        if _reads_headers(relation):
            kept.append("`headers`")
        return (Step("selectExpr", tuple(casts + kept)),)
    if fmt == debezium.DEBEZIUM:
        return _debezium_steps(relation, settings.get("metadata") == "true")
    if fmt == "avro":
        value = _from_avro(settings, "FAILFAST")
    else:
        value = f"from_{fmt}(CAST(`value` AS STRING), {sql_string(schema_ddl(relation) or '')}, {FAILFAST})"
    value = f"CASE WHEN `value` IS NULL THEN {TOMBSTONE_ERROR} ELSE {value} END"
    first, second = [f"{value} AS `__value`"], ["`__value`.*"]
    if settings.get("metadata") == "true":
        first.append(_kafka_struct(relation))
        second.append("`__kafka`")
    return Step("selectExpr", tuple(first)), Step("selectExpr", tuple(second))


def payload(relation: p.SourceRelation) -> Payload | None:
    """``value`` as :mod:`sqlstream.planning.malformed` decodes it (``on_error``): ``json`` /
    ``csv``: the text ``CAST(value AS STRING)``, so kept in a dead letter; ``avro``: the
    bytes, by ``from_avro(value, schema, map('mode', 'PERMISSIVE'))``, kept as base64.
    Kafka's columns are kept beside it (``__kafka``); a dead letter's position is
    ``topic``, ``partition``, ``offset`` (as in Kafka Connect's dead-letter headers).
    ``None`` for ``raw``. Spark's ``PERMISSIVE`` Avro decoding gives a struct of nulls
    for bytes it cannot decode (Spark 4.1), as for a record of nulls, told apart by its
    bytes (:func:`~sqlstream.connectors.formats.avro.null_record`); Spark ignores bytes after
    a record."""
    settings = dict(relation.settings)
    if (fmt := settings.get("format", "raw")) == "raw":
        return None
    spark = relation.spark_options
    latest = spark.get("startingoffsets", "latest").strip().lower() == "latest" and not (
        {"startingoffsetsbytimestamp", "startingtimestamp"} & spark.keys()
    )
    common: dict[str, Any] = dict(
        kept=("`value`", _kafka_struct(relation)),
        kept_names=("`value`", "`__kafka`"),
        position=tuple((n, t, f"`__kafka`.{_quote(n)}") for n, t in KAFKA_COLUMNS[2:5]),
        record=("`value`", "`__kafka`.`key`"),
        start_caveat=LATEST if latest else None,
    )
    if fmt == debezium.DEBEZIUM:
        envelope = debezium.envelope_sql(TEXT)
        common["kept"] += (f"{envelope} AS `{debezium.ENVELOPE}`",)
        common["kept_names"] += (f"`{debezium.ENVELOPE}`",)
        image = debezium.image_sql(envelope)
        return Payload(
            "json",
            image,
            TEXT,
            None,
            skip=debezium.skip_sql(TEXT),
            malformed=debezium.MALFORMED,
            **common,
        )
    if fmt != "avro":
        return Payload(fmt, TEXT, TEXT, None, **common)
    schema = json.loads(settings["avro_schema"])
    columns = avro_columns(schema, None)
    nulls = " AND ".join(f"{_quote(DECODED)}.{_quote(n)} IS NULL" for n, _ in columns)
    prefix = null_record(schema)
    failed = f"{_quote(DECODED)} IS NULL OR ({nulls}" + (
        f" AND NOT startswith(`value`, X'{prefix.hex().upper()}'))" if prefix is not None else ")"
    )
    return Payload(
        "avro",
        "`value`",
        "base64(`value`)",
        columns,
        typed=_from_avro(settings, "PERMISSIVE"),
        failed=failed,
        **common,
    )


def _debezium_steps(relation: p.SourceRelation, metadata: bool) -> tuple[Step, ...]:
    """``debezium-json`` values decoded in ``FAILFAST``: tombstones skipped (a ``where``),
    then :func:`sqlstream.connectors.formats.debezium.decode_items`, Kafka's columns and
    the envelope kept when metadata columns read them."""
    first, kept = ((_kafka_struct(relation),), ("`__kafka`",)) if metadata else ((), ())
    items = debezium.decode_items(TEXT, schema_ddl(relation) or "", first, kept, metadata)
    return (
        Step("where", (debezium.skip_sql(TEXT),)),
        *(Step("selectExpr", step) for step in items),
    )


def dead_letter_row(fields, record):
    """A Kafka source's dead letter in a Kafka sink: the record as read (``value``,
    ``key``), the reason, source, topic, partition, offset and time as UTF-8 headers
    ``sqlstream.error.<name>`` (as Kafka Connect's DLQ, ``__connect.errors.*``)."""
    headers = ", ".join(
        f"named_struct('key', 'sqlstream.error.{n}', 'value', "
        f"CAST(CAST({sql} AS STRING) AS BINARY))"
        for n, _, sql in fields
    )
    return (
        (f"{record[0]} AS `value`", f"{record[1]} AS `key`", f"array({headers}) AS `headers`"),
        (("value", "BINARY"), ("key", "BINARY"), ("headers", HEADERS_TYPE)),
    )


def encode_step(query: p.Query) -> Step | None:
    """The ``selectExpr`` that turns the query's rows into Kafka's ``key`` / ``value`` /
    ``headers`` columns, or ``None`` when the query already has a ``value`` column
    (and no ``key_columns``)."""
    settings = dict(query.sink.settings)
    columns = [n for n, _ in query.columns or ()]
    lower = {n.lower() for n in columns}
    keys = split_names(settings.get("key_columns", ""))
    items: list[str] = []
    if "value" in lower:
        if not keys:
            return None
        items.append("`value`")
    else:
        payload = [n for n in columns if n.lower() not in ("key", "headers")]
        row = f"struct({', '.join(_quote(n) for n in payload)})" if query.columns else "struct(*)"
        fmt = settings.get("format", "json").lower()
        if fmt == "avro":
            schema = settings.get("avro_schema")
            items.append(f"to_avro({row}{', ' + sql_string(schema) if schema else ''}) AS `value`")
        elif fmt == "raw":
            raise OptionError("a raw Kafka sink needs a 'value' column", query.span)
        else:
            items.append(f"to_{fmt}({row}) AS `value`")
    if keys:
        items.append(
            f"CAST({_quote(keys[0])} AS STRING) AS `key`"
            if len(keys) == 1
            else f"to_json(struct({', '.join(_quote(k) for k in keys)})) AS `key`"
        )
    elif "key" in lower:
        items.append("`key`")
    items += [_quote(n) for n in columns if n.lower() in ("headers", "partition")]
    if "topic" in lower and not any(k == "topic" for k, _ in query.sink.options):
        items.append("`topic`")
    return Step("selectExpr", tuple(items))


def _from_avro(settings: dict[str, str], mode: str) -> str:
    """``from_avro(`value`, '<schema>', map('mode', '<mode>'))`` (``mode``: ``FAILFAST`` or
    ``PERMISSIVE``)."""
    return f"from_avro(`value`, {sql_string(settings['avro_schema'])}, map('mode', '{mode}'))"


def _reads_headers(relation: p.SourceRelation) -> bool:
    """Spark's reader gives the records' ``headers`` (``includeHeaders = true``)."""
    return relation.spark_options.get("includeheaders", "false").lower() == "true"


def _kafka_struct(relation: p.SourceRelation) -> str:
    """``struct(`key`, `topic`, …) AS `__kafka``` (with ``headers`` when Spark reads them)."""
    fields = [_quote(n) for n, _ in KAFKA_COLUMNS if n != "value"]
    if _reads_headers(relation):
        fields.append("`headers`")
    return f"struct({', '.join(fields)}) AS `__kafka`"


def split_names(text: str) -> list[str]:
    """``"a, b"`` → ``["a", "b"]`` (a list option such as ``key_columns``)."""
    return [part.strip() for part in text.split(",") if part.strip()]
