"""Malformed records: ``on_error = 'fail' | 'drop' | 'dead_letter'`` of a source (docs/operations.md#malformed-records).

A record of a CSV or JSON files source, or a JSON, CSV or Avro Kafka value, that cannot be
decoded into the declared columns — a line that does not parse, a short or long CSV row, a
value of the wrong type (``'abc'`` in a ``DOUBLE`` column), an unparseable timestamp, bytes
that are not an Avro record of the schema, a null Kafka value — is never silently NULLs:

* ``fail`` (the default, as Flink's ``json.ignore-parse-errors = false``): Spark's
  ``mode = 'FAILFAST'``; the query stops with Spark's ``FAILED_READ_FILE`` error, which
  names the file, and its cause (the value); Kafka values are decoded in ``FAILFAST``
  by :mod:`sqlstream.connectors.kafka` itself, where a null value (a tombstone) stops the
  query too.
* ``drop`` and ``dead_letter``: every line is read as text (``readStream.format('text')``)
  and parsed twice with Spark's own parser — ``from_csv`` / ``from_json`` into the declared
  columns as strings (plus Spark's corrupt-record column) and as their types. A line that
  does not parse, or whose non-null value does not convert, is malformed; the reason names
  the first such column. CSV with ``header = true``: each file is read whole (Spark's
  ``wholetext``) and cut into lines, its first line being its header; every line of a file
  whose header is not the one the source was planned with is malformed (``malformed:
  header differs: …``), never read by position. Why not Spark's ``PERMISSIVE`` reader with
  ``columnNameOfCorruptRecord``: the CSV and JSON readers convert only the columns a query
  reads (column pruning), so the same record is malformed for one query and fine for
  another; here every column is referenced by the classification. Malformed records are
  counted per micro-batch with ``DataFrame.observe`` (metric ``malformed:<source>`` in
  Spark's ``StreamingQueryProgress.observedMetrics``, :class:`sqlstream.runtime.events.BatchProgress`
  ``malformed_records``) and filtered out before the declared projection and watermark.
* Kafka values (the connector's :meth:`~sqlstream.connectors.base.Connector.payload`):
  the same two parses of ``CAST(value AS STRING)`` for JSON and CSV; Avro is decoded once
  with ``from_avro(value, schema, map('mode', 'PERMISSIVE'))``, which gives a struct of
  nulls for bytes it cannot decode (told apart from a record of nulls by its bytes).
  Kafka's columns are kept (``__kafka``) for ``METADATA FROM`` and the dead letters.
* ``dead_letter``: the decoded lines are also a temporary view ``__<source>_decoded`` read
  by one more streaming query, ``<source>_dead_letters`` (or the named sink's query), that
  writes each malformed record once — ``raw`` (the line as read; a Kafka value as a
  string, Avro bytes as base64), ``reason``, ``source``, ``file`` (``_metadata.file_path``;
  for Kafka ``topic``, ``partition``, ``offset`` instead), ``time`` (the micro-batch's
  ``current_timestamp()``) — into a JSON files sink at ``dead_letter_path`` or into the
  sink named by ``dead_letter`` (a Kafka sink takes a Kafka record as read, its value and
  key, with the rest as ``sqlstream.error.*`` headers). One query per source, not per
  query that reads it: with two queries over a source each record is still written once. Its checkpoint and the file sink's
  ``_spark_metadata`` log make it exactly-once like any files sink; it reads the same files
  with the same classification, so every record is either a good row of the source's
  queries or a dead letter, never both (a Kafka stream read from ``latest`` only from its
  first offsets on: warning ``SS256``). It is not the same micro-batch as the queries that
  read the source: a streaming query's micro-batch exposes only its own sink's rows (Spark
  has no side outputs), and a ``foreachBatch`` writing both would take the place of the
  user's sink.

This module holds the rules and the planning (:func:`plan_source`); the decoding chains
are lowered by :mod:`sqlstream.lowering.decoding`, the dead-letter query is planned by
:mod:`sqlstream.planning.dead_letters`.

Sources: Spark "Data Source Option" pages for CSV and JSON (``mode``,
``columnNameOfCorruptRecord``), ``from_csv`` / ``from_json``, ``DataFrame.observe``,
*File metadata column*; "Apache Avro Data Source Guide" (``from_avro`` options, ``mode``);
Structured Streaming guide, *Fault Tolerance Semantics*; Kafka Connect, *Dead Letter Queue*.
"""

from __future__ import annotations

from dataclasses import replace

from sqlstream.connectors import ResolvedOptions, connector
from sqlstream.connectors.files import FORMAT_OPTIONS
from sqlstream.connectors.payload import DECODED
from sqlstream.diagnostics.errors import OptionError, did_you_mean
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan

ON_ERROR = ("fail", "drop", "dead_letter")
DEFAULT_ON_ERROR = "fail"
METRIC_PREFIX = "malformed:"

RAW, STRINGS, TYPED, ERROR, CORRUPT = (
    "__sqlstream_raw",
    "__sqlstream_s",
    DECODED,
    "__sqlstream_error",
    "__sqlstream_corrupt",
)
LINES, HEADER = (
    "__sqlstream_lines",
    "__sqlstream_header",
)  # a CSV file's lines; its header's verdict
BOM = "\\x{FEFF}"  # Java regex: a byte-order mark, which Spark's text source keeps
FILE_POSITION = (("file", "STRING", "_metadata.file_path"),)
# Options of the whole file (or of Spark's reader), not of one record's parser.
_NOT_PARSER = {
    "header",
    "mode",
    "columnnameofcorruptrecord",
    "multiline",
    "encoding",
    "charset",
    "compression",
    "linesep",
    "enforceschema",
    "inferschema",
    "samplingratio",
    "wholetext",
}


def on_error_of(resolved: ResolvedOptions) -> str:
    """The ``on_error`` value of a source's options (lower case; the default when absent)."""
    option = resolved.compiler.get("on_error")
    return option.text.lower() if option is not None else DEFAULT_ON_ERROR


def plan_source(
    relation: plan.SourceRelation, statement, resolved: ResolvedOptions, source: Source, record=None
) -> plan.SourceRelation:
    """Apply ``on_error`` to the read of ``statement`` (a ``CREATE STREAM`` or ``TABLE``);
    ``record`` (``finding -> None``) takes the warnings (``SS256``).

    Returns:
        ``relation`` with ``mode = 'FAILFAST'`` added to its Spark options (``fail`` on csv
        or json files, unless the user gave ``mode``), or with a
        :class:`~sqlstream.ir.plan.Decoding` (``drop``, ``dead_letter``); unchanged for other
        formats and connectors, and for ``fail`` on a connector with a
        :meth:`~sqlstream.connectors.base.Connector.payload` (``kafka`` decodes in
        ``FAILFAST`` already).

    Raises:
        OptionError: ``SS250`` a bad value; ``SS251`` not a csv/json files source nor a
            connector payload (a json/csv/avro Kafka value), or ``drop``/``dead_letter``
            with ``multiLine``, an encoding, no declared columns; ``SS252`` a dead-letter
            destination missing, doubled or without ``dead_letter``; ``SS253`` with
            ``mode`` / ``columnNameOfCorruptRecord``; ``SS255`` ``dead_letter`` on a table.

    Warns:
        ``SS256``: dead letters of a Kafka stream read from the end of the topic
        (:attr:`~sqlstream.connectors.payload.Payload.start_caveat`), at ``starting_offsets``
        or ``on_error``.
    """
    compiler = resolved.compiler
    option = compiler.get("on_error")
    value = on_error_of(resolved)
    if option is not None and value not in ON_ERROR:
        raise OptionError(
            f"on_error = '{option.text}' is not one of "
            f"{', '.join(repr(v) for v in ON_ERROR)}{did_you_mean(option.text, ON_ERROR)}",
            option.value_span,
            source,
            code="SS250",
            hint="fail stops the query, drop counts and drops the record, "
            "dead_letter writes it to a dead-letter sink",
        )
    destinations = [compiler[k] for k in ("dead_letter", "dead_letter_path") if k in compiler]
    if value == "dead_letter" and len(destinations) != 1:
        assert option is not None  # (on_error = 'dead_letter' given)
        where = destinations[1].key_span if destinations else option.span
        raise OptionError(
            "on_error = 'dead_letter' needs one destination: dead_letter = "
            "'<sink name>' or dead_letter_path = '<folder>'"
            + (", not both" if destinations else ""),
            where,
            source,
            code="SS252",
            hint="dead_letter_path writes JSON files; dead_letter names a CREATE SINK",
        )
    if value != "dead_letter" and destinations:
        raise OptionError(
            f"'{destinations[0].key}' is only read with on_error = 'dead_letter'",
            destinations[0].key_span,
            source,
            code="SS252",
            hint="add on_error = 'dead_letter', or remove it",
        )
    source_connector = connector(relation.connector)
    payload = source_connector.payload(relation)
    fmt = payload.format if payload is not None else (relation.format or "").lower()
    decodes = payload is not None or fmt in source_connector.line_formats
    if option is None and not decodes:
        return relation
    if not decodes:
        assert option is not None  # (returned above without it)
        what = f"{relation.connector} {dict(relation.settings).get('format', fmt)}".rstrip()
        raise OptionError(
            f"on_error applies to csv and json files and to json, csv and avro "
            f"Kafka values; this source reads {what}",
            option.key_span,
            source,
            code="SS251",
            hint="remove on_error: these records carry their own types",
        )
    if relation.bounded and value == "dead_letter":
        assert option is not None  # (on_error = 'dead_letter' given)
        raise OptionError(
            f"table '{relation.name}' is read once: it cannot have dead letters",
            option.value_span,
            source,
            code="SS255",
            hint="use on_error = 'fail' or 'drop', or declare a CREATE STREAM",
        )
    view = f"__{relation.name}_decoded" if value == "dead_letter" else None
    if payload is not None:
        if value == "fail":  # the connector's decoding fails the query on a bad record
            return relation
        columns = payload.columns or relation.read_columns or ()
        if view and payload.start_caveat and record is not None:
            given = next(
                (o for k, o in resolved.options.items() if k.replace("_", "") == "startingoffsets"),
                None,
            )
            caveat_at = given or option
            assert caveat_at is not None  # (on_error = 'dead_letter' given)
            record(
                OptionError(
                    payload.start_caveat,
                    caveat_at.value_span,
                    source,
                    code="SS256",
                    hint="read the topic from a known point: "
                    "starting_offsets = 'earliest' or given offsets",
                )
            )
        return replace(relation, decoding=plan.Decoding(value, fmt, columns, (), (), (), view))
    spark = relation.spark_options
    written = {k.lower(): k for k, _ in relation.options}  # the keys as written, for messages
    conflict = next((written[k] for k in ("mode", "columnnameofcorruptrecord") if k in spark), None)
    if option is None:
        if "mode" in spark:  # the user chose Spark's parse mode: kept as written
            return relation
        return replace(relation, options=relation.options + (("mode", "FAILFAST"),))
    if conflict is not None:
        raise OptionError(
            f"on_error and Spark's '{conflict}' both say what happens to a malformed record",
            option.key_span,
            source,
            code="SS253",
            hint=f"remove '{conflict}'",
        )
    if value == "fail":
        return replace(relation, options=relation.options + (("mode", "FAILFAST"),))
    if spark.get("multiline", "false").lower() == "true" or (
        spark.get("encoding", spark.get("charset", "utf-8")).lower().replace("-", "")
        not in ("utf8",)
    ):
        raise OptionError(
            f"on_error = '{value}' reads one UTF-8 line per record: not with "
            "multiLine or another encoding",
            option.value_span,
            source,
            code="SS251",
            hint="use on_error = 'fail', or one record per line",
        )
    columns = relation.read_columns or tuple(
        (c.name.value, c.type) for c in statement.columns if isinstance(c, ast.ColumnDef)
    )
    if not columns:
        raise OptionError(
            f"on_error = '{value}' decodes into the declared columns: declare them",
            option.value_span,
            source,
            code="SS251",
            hint="declare the columns instead of infer_schema = true",
        )
    known = {o.lower() for o in FORMAT_OPTIONS[fmt]} - _NOT_PARSER
    parser = tuple((k, v) for k, v in relation.options if k.lower() in known)
    reader = tuple(
        (k, v)
        for k, v in relation.options
        if k.lower() not in known and k.lower() not in _NOT_PARSER - {"linesep"}
    )
    header: tuple[str | None, ...] = ()
    if fmt == "csv" and spark.get("header", "false").lower() == "true":
        declared = {c.name.value.lower() for c in statement.columns if isinstance(c, ast.ColumnDef)}
        header = tuple(
            None if n == f"_c{i}" and n.lower() not in declared else n
            for i, (n, _) in enumerate(columns)
        )
    return replace(
        relation, decoding=plan.Decoding(value, fmt, columns, parser, reader, header, view)
    )


def check_sink_options(resolved: ResolvedOptions, source: Source) -> None:
    """Refuse the source options of :mod:`sqlstream.planning.malformed` in a sink's ``WITH``.

    Raises:
        OptionError: ``SS251`` at the first of ``on_error``, ``dead_letter``,
            ``dead_letter_path`` given.
    """
    for key in ("on_error", "dead_letter", "dead_letter_path"):
        option = resolved.compiler.get(key)
        if option is not None:
            raise OptionError(
                f"'{option.key}' is an option of a source (CREATE STREAM or TABLE), not of a sink",
                option.key_span,
                source,
                code="SS251",
                hint="put it on the stream whose records are decoded",
            )
