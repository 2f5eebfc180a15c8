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

Sources: Spark "Data Source Option" pages for CSV and JSON (``mode``,
``columnNameOfCorruptRecord``), ``from_csv`` / ``from_json``, ``DataFrame.observe``,
*File metadata column*; "Apache Avro Data Source Guide" (``from_avro`` options, ``mode``);
Structured Streaming guide, *Fault Tolerance Semantics*; Kafka Connect, *Dead Letter Queue*.
"""

from __future__ import annotations

from dataclasses import replace

from sqlstream.frontend import ast

from sqlstream.ir import plan
from sqlstream.ir.calls import Chain, Step
from sqlstream.connectors import ResolvedOptions, connector
from sqlstream.connectors.base import DECODED, Payload
from sqlstream.connectors.files import FORMAT_OPTIONS
from sqlstream.diagnostics.errors import OptionError, did_you_mean
from sqlstream.frontend.literals import quote_identifier as quote, string_literal as literal
from sqlstream.analysis.spark_types import spark_type
from sqlstream.analysis.state_signature import sink_identity, source_identity
from sqlstream.diagnostics.source_text import Source

ON_ERROR = ("fail", "drop", "dead_letter")
DEFAULT_ON_ERROR = "fail"
METRIC_PREFIX = "malformed:"

RAW, STRINGS, TYPED, ERROR, CORRUPT = ("__sqlstream_raw", "__sqlstream_s", DECODED,
                                       "__sqlstream_error", "__sqlstream_corrupt")
LINES, HEADER = "__sqlstream_lines", "__sqlstream_header"  # a CSV file's lines; its header's verdict
BOM = "\\x{FEFF}"  # Java regex: a byte-order mark, which Spark's text source keeps
FILE_POSITION = (("file", "STRING", "_metadata.file_path"),)
# Options of the whole file (or of Spark's reader), not of one record's parser.
_NOT_PARSER = {"header", "mode", "columnnameofcorruptrecord", "multiline", "encoding", "charset",
               "compression", "linesep", "enforceschema", "inferschema", "samplingratio",
               "wholetext"}


def on_error_of(resolved: ResolvedOptions) -> str:
    """The ``on_error`` value of a source's options (lower case; the default when absent)."""
    option = resolved.compiler.get("on_error")
    return option.text.lower() if option is not None else DEFAULT_ON_ERROR


def plan_source(relation: plan.SourceRelation, statement, resolved: ResolvedOptions,
                source: Source, record=None) -> plan.SourceRelation:
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
        (:attr:`~sqlstream.connectors.base.Payload.start_caveat`), at ``starting_offsets``
        or ``on_error``.
    """
    compiler = resolved.compiler
    option = compiler.get("on_error")
    value = on_error_of(resolved)
    if option is not None and value not in ON_ERROR:
        raise OptionError(f"on_error = '{option.text}' is not one of "
                          f"{', '.join(repr(v) for v in ON_ERROR)}{did_you_mean(option.text, ON_ERROR)}",
                          option.value_span, source, code="SS250",
                          hint="fail stops the query, drop counts and drops the record, "
                          "dead_letter writes it to a dead-letter sink")
    destinations = [compiler[k] for k in ("dead_letter", "dead_letter_path") if k in compiler]
    if value == "dead_letter" and len(destinations) != 1:
        where = destinations[1].key_span if destinations else option.span
        raise OptionError("on_error = 'dead_letter' needs one destination: dead_letter = "
                          "'<sink name>' or dead_letter_path = '<folder>'"
                          + (", not both" if destinations else ""), where, source, code="SS252",
                          hint="dead_letter_path writes JSON files; dead_letter names a CREATE SINK")
    if value != "dead_letter" and destinations:
        raise OptionError(f"'{destinations[0].key}' is only read with on_error = 'dead_letter'",
                          destinations[0].key_span, source, code="SS252",
                          hint="add on_error = 'dead_letter', or remove it")
    source_connector = connector(relation.connector)
    payload = source_connector.payload(relation)
    fmt = payload.format if payload is not None else (relation.format or "").lower()
    decodes = payload is not None or fmt in source_connector.line_formats
    if option is None and not decodes:
        return relation
    if not decodes:
        what = f"{relation.connector} {dict(relation.settings).get('format', fmt)}".rstrip()
        raise OptionError(f"on_error applies to csv and json files and to json, csv and avro "
                          f"Kafka values; this source reads {what}", option.key_span, source,
                          code="SS251", hint="remove on_error: these records carry their own types")
    if relation.bounded and value == "dead_letter":
        raise OptionError(f"table '{relation.name}' is read once: it cannot have dead letters",
                          option.value_span, source, code="SS255",
                          hint="use on_error = 'fail' or 'drop', or declare a CREATE STREAM")
    view = f"__{relation.name}_decoded" if value == "dead_letter" else None
    if payload is not None:
        if value == "fail":  # the connector's decoding fails the query on a bad record
            return relation
        columns = payload.columns or relation.read_columns or ()
        if view and payload.start_caveat and record is not None:
            given = next((o for k, o in resolved.options.items()
                          if k.replace("_", "") == "startingoffsets"), None)
            record(OptionError(payload.start_caveat, (given or option).value_span, source,
                               code="SS256", hint="read the topic from a known point: "
                               "starting_offsets = 'earliest' or given offsets"))
        return replace(relation, decoding=plan.Decoding(value, fmt, columns, (), (), (), view))
    spark = relation.spark_options
    written = {k.lower(): k for k, _ in relation.options}  # the keys as written, for messages
    conflict = next((written[k] for k in ("mode", "columnnameofcorruptrecord") if k in spark), None)
    if option is None:
        if "mode" in spark:  # the user chose Spark's parse mode: kept as written
            return relation
        return replace(relation, options=relation.options + (("mode", "FAILFAST"),))
    if conflict is not None:
        raise OptionError(f"on_error and Spark's '{conflict}' both say what happens to a "
                          "malformed record", option.key_span, source, code="SS253",
                          hint=f"remove '{conflict}'")
    if value == "fail":
        return replace(relation, options=relation.options + (("mode", "FAILFAST"),))
    if spark.get("multiline", "false").lower() == "true" or (
            spark.get("encoding", spark.get("charset", "utf-8")).lower().replace("-", "")
            not in ("utf8",)):
        raise OptionError(f"on_error = '{value}' reads one UTF-8 line per record: not with "
                          "multiLine or another encoding", option.value_span, source,
                          code="SS251", hint="use on_error = 'fail', or one record per line")
    columns = (relation.read_columns or
               tuple((c.name.value, c.type) for c in statement.columns
                     if isinstance(c, ast.ColumnDef)))
    if not columns:
        raise OptionError(f"on_error = '{value}' decodes into the declared columns: declare them",
                          option.value_span, source, code="SS251",
                          hint="declare the columns instead of infer_schema = true")
    known = {o.lower() for o in FORMAT_OPTIONS[fmt]} - _NOT_PARSER
    parser = tuple((k, v) for k, v in relation.options if k.lower() in known)
    reader = tuple((k, v) for k, v in relation.options
                   if k.lower() not in known and k.lower() not in _NOT_PARSER - {"linesep"})
    header: tuple[str | None, ...] = ()
    if fmt == "csv" and spark.get("header", "false").lower() == "true":
        declared = {c.name.value.lower() for c in statement.columns if isinstance(c, ast.ColumnDef)}
        header = tuple(None if n == f"_c{i}" and n.lower() not in declared else n
                       for i, (n, _) in enumerate(columns))
    return replace(relation, decoding=plan.Decoding(value, fmt, columns, parser, reader, header, view))


def check_sink_options(resolved: ResolvedOptions, source: Source) -> None:
    """Refuse the source options of :mod:`sqlstream.planning.malformed` in a sink's ``WITH``.

    Raises:
        OptionError: ``SS251`` at the first of ``on_error``, ``dead_letter``,
            ``dead_letter_path`` given.
    """
    for key in ("on_error", "dead_letter", "dead_letter_path"):
        option = resolved.compiler.get(key)
        if option is not None:
            raise OptionError(f"'{option.key}' is an option of a source (CREATE STREAM or TABLE), "
                              "not of a sink", option.key_span, source, code="SS251",
                              hint="put it on the stream whose records are decoded")


def _options_map(options: tuple[tuple[str, str], ...]) -> str:
    return "map(" + ", ".join(f"{literal(k)}, {literal(v)}" for k, v in options) + ")"


def reason_sql(decoding: plan.Decoding, payload: Payload | None = None) -> str:
    """The SQL of a record's reason for being malformed, ``NULL`` for a good one: it does
    not parse (a CSV row with another number of fields or an unclosed quote, JSON that is
    not an object, bytes that are not an Avro record of the schema), or the first column
    whose value is there but does not convert. A connector's ``payload`` may be missing (a
    Kafka record whose ``value`` is null)."""
    cases = [] if payload is None else [f"WHEN {quote(RAW)} IS NULL THEN 'malformed: no value'"]
    if payload is not None and payload.failed is not None:
        cases.append(f"WHEN {payload.failed} THEN "
                     f"{literal(f'malformed: not an {payload.format.capitalize()} record of the schema')}")
        return "CASE " + " ".join(cases) + " END"
    if decoding.header and payload is None:
        cases.append(f"WHEN {quote(HEADER)} IS NOT NULL THEN {quote(HEADER)}")
    what = ("a CSV record with other than the {} declared fields, or an unclosed quote"
            .format(len(decoding.columns)) if decoding.format == "csv"
            else "not a JSON object")
    cases.append(f"WHEN {quote(STRINGS)} IS NULL OR {quote(STRINGS)}.{quote(CORRUPT)} IS NOT NULL "
                 f"THEN {literal('malformed: ' + what)}")
    for name, kind in decoding.columns:
        spark = spark_type(kind)
        if spark == "STRING":
            continue
        s, t = f"{quote(STRINGS)}.{quote(name)}", f"{quote(TYPED)}.{quote(name)}"
        cases.append(f"WHEN {s} IS NOT NULL AND {t} IS NULL THEN concat("
                     f"{literal(f'column {name}: ' + chr(39))}, {s}, "
                     f"{literal(chr(39) + f' is not a {spark}')})")
    return "CASE " + " ".join(cases) + " END"


def read_chains(relation: plan.SourceRelation) -> tuple[Chain, ...]:
    """The chains of a source with a :class:`~sqlstream.ir.plan.Decoding`. A files source::

        df = (spark.readStream.format('text').option(…)….load(path))
        df = df.where("trim(value) != ''")                 # blank lines, as Spark's readers
        df = df.selectExpr('value AS `__sqlstream_raw`', '_metadata',
                           "from_csv(value, '<columns as STRING>, …', map(…)) AS `__sqlstream_s`",
                           "from_csv(value, '<declared schema>', map(…)) AS `__sqlstream_t`")
        # csv with header = true, in place of the first two: each file read whole
        # (option('wholetext', 'true')), cut into lines; the first is its header, checked
        # against the planned one (`__sqlstream_header`: NULL, or the reason), the others
        # exploded into `value` and parsed as above (_header_steps)

    A connector's payload (:meth:`~sqlstream.connectors.base.Connector.payload`, Kafka)::

        df = (spark.readStream.format('kafka').option(…)….load())
        df = df.selectExpr('CAST(`value` AS STRING) AS `__sqlstream_raw`',  # avro: base64(value)
                           '`value`', 'struct(`key`, `topic`, …) AS `__kafka`',
                           "from_json(CAST(`value` AS STRING), …) AS `__sqlstream_s`",
                           "from_json(CAST(`value` AS STRING), …) AS `__sqlstream_t`")
                           # avro: from_avro(`value`, schema, map('mode', 'PERMISSIVE'))

    Then, for both::

        df = df.selectExpr('`__sqlstream_raw`', <kept>, <typed columns>, <reason>)
        df.createOrReplaceTempView('__<name>_decoded')     # dead_letter
        df = df.observe('malformed:<name>', F.expr('count_if(`__sqlstream_error` IS NOT NULL) AS records'))
                                                           # streams only (counted per micro-batch)
        df = df.where('`__sqlstream_error` IS NULL')
        df = df.selectExpr(<declared, metadata, computed columns>)
        df = df.withWatermark(column, delay)
        df.createOrReplaceTempView(name)
    """
    d = relation.decoding
    what = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
    spec = connector(relation.connector)
    payload = spec.payload(relation)
    reader = Step("read" if relation.bounded else "readStream", call=False)
    if payload is None:
        chains, kept = _line_chains(relation, reader, what), ("_metadata",)
    else:
        chains = [Chain("spark", (reader, *spec.read_steps(relation)), assign="df", **what)]
        items = [f"{payload.raw} AS {quote(RAW)}", *payload.kept]
        if payload.typed is not None:
            items.append(f"{payload.typed} AS {quote(TYPED)}")
        else:
            items += _parses(d, payload.text, (("mode", "PERMISSIVE"),))
        chains.append(Chain("df", (Step("selectExpr", tuple(items)),), assign="df", **what))
        kept = payload.kept_names
    chains.append(Chain("df", (Step("selectExpr", (
        quote(RAW), *kept, *(f"{quote(TYPED)}.{quote(n)} AS {quote(n)}" for n, _ in d.columns),
        f"{reason_sql(d, payload)} AS {quote(ERROR)}")),), assign="df", **what))
    if d.decoded_view:
        chains.append(Chain("df", (Step("createOrReplaceTempView", (d.decoded_view,)),), **what))
    count = Chain("F", (Step("expr", (f"count_if({quote(ERROR)} IS NOT NULL) AS records",)),))
    projection = relation.projection or tuple(quote(n) for n, _ in d.columns)
    tail = [] if relation.bounded else [Step("observe", (METRIC_PREFIX + relation.name, count))]
    tail += [Step("where", (f"{quote(ERROR)} IS NULL",)), Step("selectExpr", projection)]
    if relation.watermark is not None:
        tail.append(Step("withWatermark", (relation.watermark.column, relation.watermark.delay)))
    chains += [Chain("df", (step,), assign="df", **what) for step in tail]
    chains.append(Chain("df", (Step("createOrReplaceTempView", (relation.name,)),), **what))
    return tuple(chains)


def _parses(d: plan.Decoding, text: str, permissive: tuple[tuple[str, str], ...]) -> list[str]:
    """The two parses of ``text`` (SQL of a string): into the columns as strings, with
    Spark's corrupt-record column, and into their declared types."""
    function = "from_csv" if d.format == "csv" else "from_json"
    strings = ", ".join(f"{quote(n)} STRING" for n, _ in d.columns) + f", {quote(CORRUPT)} STRING"
    typed = ", ".join(f"{quote(n)} {t}" for n, t in d.columns)
    return [f"{function}({text}, {literal(strings)}, "
            f"{_options_map((*permissive, ('columnNameOfCorruptRecord', CORRUPT)))}) AS {quote(STRINGS)}",
            f"{function}({text}, {literal(typed)}, {_options_map(permissive)}) AS {quote(TYPED)}"]


def _line_chains(relation: plan.SourceRelation, reader: Step, what: dict) -> list[Chain]:
    """A files source's lines read as text and parsed twice; with a header, through
    :func:`_header_steps`."""
    d = relation.decoding
    blank = "trim({0}) != ''"
    comment = dict((k.lower(), v) for k, v in d.parser_options).get("comment")
    if comment:
        blank += f" AND NOT startswith({{0}}, {literal(comment)})"
    options = d.reader_options
    if d.header:
        options = (("wholetext", "true"), *((k, v) for k, v in options if k.lower() != "linesep"))
    chains = [Chain("spark", (reader, Step("format", ("text",)),
                              *(Step("option", (k, v)) for k, v in options),
                              Step("load", (relation.path,))), assign="df", **what)]
    steps = _header_steps(d, blank) if d.header else [Step("where", (blank.format("value"),))]
    steps.append(Step("selectExpr", (
        f"value AS {quote(RAW)}", "_metadata", *([quote(HEADER)] if d.header else ()),
        *_parses(d, "value", (*d.parser_options, ("mode", "PERMISSIVE"))))))
    return chains + [Chain("df", (step,), assign="df", **what) for step in steps]


def _header_steps(d: plan.Decoding, blank: str) -> list[Step]:
    """CSV with ``header = true``: each file is one row (``wholetext``, so a file is never
    split between partitions), cut into lines as Spark's text source cuts them (``\\n``,
    ``\\r\\n`` or ``\\r``; or ``lineSep``); blank and comment lines are dropped, the first
    line left is the file's header (as Spark's CSV reader takes it) and every other line a
    record. ``__sqlstream_header`` is ``NULL`` when the header names the columns the source
    was planned with, in the same order (ignoring case, a leading byte-order mark and the
    ``None`` positions of :attr:`~sqlstream.ir.plan.Decoding.header`); otherwise it is the
    reason every record of the file is malformed: they are never read by position."""
    reader = dict((k.lower(), v) for k, v in d.reader_options)
    parser = dict((k.lower(), v) for k, v in d.parser_options)
    sep = reader.get("linesep")
    breaks = "".join(c if c.isalnum() else "\\" + c for c in sep) if sep else "\\r\\n|\\r|\\n"
    lines, header, line = quote(LINES), quote(HEADER), quote(HEADER + "_line")
    first = f"try_element_at({lines}, 1)"
    fields = ", ".join(f"{quote(f'_c{i}')} STRING" for i in range(len(d.header)))
    options = (*d.parser_options, ("mode", "PERMISSIVE"), ("columnNameOfCorruptRecord", CORRUPT))
    parsed = (f"from_csv(regexp_replace({first}, {literal('^' + BOM)}, ''), "
              f"{literal(fields + ', ' + quote(CORRUPT) + ' STRING')}, {_options_map(options)})")
    same = " AND ".join([f"{header}.{quote(CORRUPT)} IS NULL"] + [
        f"lower({header}.{quote(f'_c{i}')}) <=> {literal(n.lower())}"
        for i, n in enumerate(d.header) if n is not None])
    planned = (parser.get("sep") or parser.get("delimiter") or ",").join(
        "*" if n is None else n for n in d.header)
    differs = (f"concat({literal('malformed: header differs: ')}, _metadata.file_name, "
               f"{literal(' has ' + chr(34))}, {line}, "
               f"{literal(chr(34) + ' where the source was planned with ' + chr(34) + planned + chr(34))})")
    return [
        Step("selectExpr", ("_metadata", f"filter(split(value, {literal(breaks)}, -1), "
                                         f"l -> {blank.format('l')}) AS {lines}")),
        Step("selectExpr", ("_metadata", lines, f"{first} AS {line}", f"{parsed} AS {header}")),
        Step("selectExpr", ("_metadata", f"CASE WHEN {same} THEN NULL ELSE {differs} END AS {header}",
                            f"explode(filter({lines}, (l, i) -> i > 0)) AS value")),
    ]


def dead_letter_query(relation: plan.SourceRelation, name: str, sink: plan.Sink,
                      trigger: plan.Trigger | None, checkpoint: str | None) -> plan.Query:
    """The query that writes the dead letters of ``relation`` (``on_error = 'dead_letter'``)
    into ``sink``: append mode, stateless, ``trigger`` of the first query reading the
    source (so that ``EMIT … ONCE`` pipelines still end), columns
    ``raw, reason, source, file, time`` for a files source; for a connector's payload (Kafka)
    its position columns (``topic``, ``partition``, ``offset``) in place of ``file``, or
    the sink's own record shape (:meth:`~sqlstream.connectors.base.Connector.dead_letter_row`:
    a Kafka sink gets the record's value and key, the rest as headers)."""
    payload = connector(relation.connector).payload(relation)
    position = FILE_POSITION if payload is None else payload.position
    fields = (("reason", "STRING", quote(ERROR)), ("source", "STRING", literal(relation.name)),
              *position, ("time", "TIMESTAMP", "current_timestamp()"))
    row = None if payload is None or payload.record is None else \
        connector(sink.connector).dead_letter_row(fields, payload.record)
    items, columns = row or ((f"{quote(RAW)} AS `raw`", *(f"{e} AS {quote(n)}" for n, _, e in fields)),
                             (("raw", "STRING"), *((n, t) for n, t, _ in fields)))
    sql = (f"SELECT {', '.join(items)} FROM {quote(relation.decoding.decoded_view)} "
           f"WHERE {quote(ERROR)} IS NOT NULL")
    state = plan.StateSignature(sources=(source_identity(relation),), operators=(), watermarks=(),
                                output_mode="append", sink=sink_identity(sink))
    return plan.Query(name, sql, sink, "append", f"dead letters of {relation.name}", trigger,
                      checkpoint, relation.span, columns, state)
