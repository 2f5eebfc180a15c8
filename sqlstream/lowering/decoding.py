"""The decoding chains of a source with ``on_error = 'drop'`` or ``'dead_letter'``: its
records read as text (or a Kafka value) and parsed twice with Spark's own parsers, the
malformed ones counted (``DataFrame.observe``) and set aside, as binding calls. What is
decoded and why is :mod:`sqlstream.planning.malformed`; this module only lowers a planned
:class:`~sqlstream.ir.plan.Decoding` (:func:`decoding_chains`), in place of the connector's
own read (:meth:`~sqlstream.connectors.base.Connector.read_chains`, whose
:meth:`~sqlstream.connectors.base.Connector.read_steps` it reuses for a connector's payload).
"""

from __future__ import annotations

from sqlstream.analysis.spark_types import spark_type
from sqlstream.connectors import connector
from sqlstream.connectors.payload import Payload
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.frontend.literals import string_literal as literal
from sqlstream.ir import plan
from sqlstream.ir.calls import Chain, ChainOrigin, Step
from sqlstream.planning.malformed import (
    BOM,
    CORRUPT,
    ERROR,
    HEADER,
    LINES,
    METRIC_PREFIX,
    RAW,
    STRINGS,
    TYPED,
)


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
        cases.append(
            f"WHEN {payload.failed} THEN "
            f"{literal(f'malformed: not an {payload.format.capitalize()} record of the schema')}"
        )
        return "CASE " + " ".join(cases) + " END"
    if decoding.header and payload is None:
        cases.append(f"WHEN {quote(HEADER)} IS NOT NULL THEN {quote(HEADER)}")
    what = (
        f"a CSV record with other than the {len(decoding.columns)} declared fields, or an unclosed quote"
        if decoding.format == "csv"
        else "not a JSON object"
    )
    if payload is not None and payload.malformed is not None:
        what = payload.malformed
    cases.append(
        f"WHEN {quote(STRINGS)} IS NULL OR {quote(STRINGS)}.{quote(CORRUPT)} IS NOT NULL "
        f"THEN {literal('malformed: ' + what)}"
    )
    for name, kind in decoding.columns:
        spark = spark_type(kind)
        if spark == "STRING":
            continue
        s, t = f"{quote(STRINGS)}.{quote(name)}", f"{quote(TYPED)}.{quote(name)}"
        cases.append(
            f"WHEN {s} IS NOT NULL AND {t} IS NULL THEN concat("
            f"{literal(f'column {name}: ' + chr(39))}, {s}, "
            f"{literal(chr(39) + f' is not a {spark}')})"
        )
    return "CASE " + " ".join(cases) + " END"


def decoding_chains(relation: plan.SourceRelation) -> tuple[Chain, ...]:
    """The chains of a source with a :class:`~sqlstream.ir.plan.Decoding` (``on_error =
    'drop'`` or ``'dead_letter'``), ending with ``createOrReplaceTempView(name)``. A files
    source::

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
    assert d is not None  # a source with on_error = 'drop' / 'dead_letter'
    what: ChainOrigin = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
    spec = connector(relation.connector)
    payload = spec.payload(relation)
    reader = Step("read" if relation.bounded else "readStream", call=False)
    kept: tuple[str, ...]
    if payload is None:
        chains, kept = _line_chains(relation, reader, what), ("_metadata",)
    else:
        chains = [Chain("spark", (reader, *spec.read_steps(relation)), assign="df", **what)]
        if payload.skip is not None:  # records never decoded (Kafka tombstones)
            chains.append(Chain("df", (Step("where", (payload.skip,)),), assign="df", **what))
        items = [f"{payload.raw} AS {quote(RAW)}", *payload.kept]
        if payload.typed is not None:
            items.append(f"{payload.typed} AS {quote(TYPED)}")
        else:
            items += _parses(d, payload.text, (("mode", "PERMISSIVE"),))
        chains.append(Chain("df", (Step("selectExpr", tuple(items)),), assign="df", **what))
        kept = payload.kept_names
    chains.append(
        Chain(
            "df",
            (
                Step(
                    "selectExpr",
                    (
                        quote(RAW),
                        *kept,
                        *(f"{quote(TYPED)}.{quote(n)} AS {quote(n)}" for n, _ in d.columns),
                        f"{reason_sql(d, payload)} AS {quote(ERROR)}",
                    ),
                ),
            ),
            assign="df",
            **what,
        )
    )
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
    return [
        f"{function}({text}, {literal(strings)}, "
        f"{_options_map((*permissive, ('columnNameOfCorruptRecord', CORRUPT)))}) AS {quote(STRINGS)}",
        f"{function}({text}, {literal(typed)}, {_options_map(permissive)}) AS {quote(TYPED)}",
    ]


def _line_chains(relation: plan.SourceRelation, reader: Step, what: ChainOrigin) -> list[Chain]:
    """A files source's lines read as text and parsed twice; with a header, through
    :func:`_header_steps`."""
    d = relation.decoding
    assert d is not None  # a source with on_error = 'drop' / 'dead_letter'
    blank = "trim({0}) != ''"
    comment = dict((k.lower(), v) for k, v in d.parser_options).get("comment")
    if comment:
        blank += f" AND NOT startswith({{0}}, {literal(comment)})"
    options = d.reader_options
    if d.header:
        options = (("wholetext", "true"), *((k, v) for k, v in options if k.lower() != "linesep"))
    chains = [
        Chain(
            "spark",
            (
                reader,
                Step("format", ("text",)),
                *(Step("option", (k, v)) for k, v in options),
                Step("load", (relation.path,)),
            ),
            assign="df",
            **what,
        )
    ]
    steps = _header_steps(d, blank) if d.header else [Step("where", (blank.format("value"),))]
    steps.append(
        Step(
            "selectExpr",
            (
                f"value AS {quote(RAW)}",
                "_metadata",
                *([quote(HEADER)] if d.header else ()),
                *_parses(d, "value", (*d.parser_options, ("mode", "PERMISSIVE"))),
            ),
        )
    )
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
    parsed = (
        f"from_csv(regexp_replace({first}, {literal('^' + BOM)}, ''), "
        f"{literal(fields + ', ' + quote(CORRUPT) + ' STRING')}, {_options_map(options)})"
    )
    same = " AND ".join(
        [f"{header}.{quote(CORRUPT)} IS NULL"]
        + [
            f"lower({header}.{quote(f'_c{i}')}) <=> {literal(n.lower())}"
            for i, n in enumerate(d.header)
            if n is not None
        ]
    )
    planned = (parser.get("sep") or parser.get("delimiter") or ",").join(
        "*" if n is None else n for n in d.header
    )
    differs = (
        f"concat({literal('malformed: header differs: ')}, _metadata.file_name, "
        f"{literal(' has ' + chr(34))}, {line}, "
        f"{literal(chr(34) + ' where the source was planned with ' + chr(34) + planned + chr(34))})"
    )
    return [
        Step(
            "selectExpr",
            (
                "_metadata",
                f"filter(split(value, {literal(breaks)}, -1), l -> {blank.format('l')}) AS {lines}",
            ),
        ),
        Step("selectExpr", ("_metadata", lines, f"{first} AS {line}", f"{parsed} AS {header}")),
        Step(
            "selectExpr",
            (
                "_metadata",
                f"CASE WHEN {same} THEN NULL ELSE {differs} END AS {header}",
                f"explode(filter({lines}, (l, i) -> i > 0)) AS value",
            ),
        ),
    ]
