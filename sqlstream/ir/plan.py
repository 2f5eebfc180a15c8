"""The plan: what to read, which temporary views to define, which queries to start.

A :class:`Plan` is pure data (frozen dataclasses, no Spark, no sqlglot trees): the
binder (:mod:`sqlstream.runtime.binder`) executes it with PySpark and
:mod:`sqlstream.lowering.printer` prints it. ``Plan.relations`` is an ordered tuple of steps,
each defining one temporary view from earlier ones: a source read
(:class:`SourceRelation`), a Spark SQL view (:class:`SqlView`) or a DataFrame operation
Spark SQL cannot express (:class:`Deduplicate`); queries (:class:`Query`) run after them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from sqlstream.diagnostics.source_text import Source, Span


@dataclass(frozen=True)
class Watermark:
    """``withWatermark(column, delay)``: event-time column and delay (a Spark duration string,
    e.g. ``"1 hour"``). Spark guide: *Handling Late Data and Watermarking*."""

    column: str
    delay: str
    span: Span


@dataclass(frozen=True)
class Decoding:
    """How a CSV or JSON source (files, or Kafka values, also Avro) with ``on_error =
    'drop'`` or ``'dead_letter'`` decodes its records (docs/operations.md#malformed-records;
    :mod:`sqlstream.planning.malformed` plans it, :mod:`sqlstream.lowering.decoding` lowers it): each line is read as text and parsed twice, into
    the declared columns as strings and as their types (Avro: decoded once); a record is
    malformed when it does not parse or a value that is there does not convert.

    Attributes:
        on_error: ``drop`` or ``dead_letter``.
        format: ``csv``, ``json`` or (Kafka) ``avro``.
        columns: the declared (physical) columns, ``(name, Spark type)``, in order.
        parser_options: ``(name, value)`` options of ``from_csv`` / ``from_json``.
        reader_options: ``(name, value)`` options of the ``text`` read (file source ones).
        header: CSV files with ``header = true``: the header each file must start with,
            the names the source was planned with in file order (compared ignoring case;
            ``None``: any name at that position — an empty or repeated header name, not
            declared). Each file is read whole and its own first line checked: the rows of
            a file with another header are malformed, never read by position. Empty: no
            header line.
        decoded_view: the temporary view of every decoded line (``dead_letter`` only:
            the dead-letter query reads it), or ``None``.
    """

    on_error: str
    format: str
    columns: tuple[tuple[str, str], ...]
    parser_options: tuple[tuple[str, str], ...]
    reader_options: tuple[tuple[str, str], ...]
    header: tuple[str | None, ...]
    decoded_view: str | None = None


@dataclass(frozen=True)
class Expectation:
    """A data-quality rule on every row of a stream or of the rows a sink is written
    (``CONSTRAINT name EXPECT (condition) [ON VIOLATION …]``, docs/dialect.md#expectations;
    :mod:`sqlstream.planning.expectations` plans it, :mod:`sqlstream.lowering.expectation_calls`
    lowers it).

    Attributes:
        name: the constraint's name, unique in the file: its count's key in the progress.
        condition: its Spark SQL boolean expression; a row violates it when it is ``FALSE``
            (``NULL`` passes).
        action: ``keep`` (counted), ``drop`` (``ON VIOLATION DROP ROW``: counted and
            dropped) or ``fail`` (``ON VIOLATION FAIL UPDATE``: the query stops).
        span: the constraint in the file.
    """

    name: str
    condition: str
    action: str
    span: Span


@dataclass(frozen=True)
class SourceRelation:
    """Read a source and register it as a temporary view.

    Attributes:
        name: the temporary view's name.
        bounded: ``True`` for ``CREATE TABLE`` (``spark.read``), ``False`` for streams
            (``spark.readStream``).
        connector: the connector name (``files``, ``rate``, …).
        format: the Spark format (``csv``, ``rate``, ``rate-micro-batch``, …), or ``None``
            for the ``table`` connector.
        path: the ``load(path)`` argument, or the table name for ``table``; ``None`` if none.
        options: ``(name, value)`` pairs passed to ``.option()``.
        read_columns: ``(name, type)`` pairs of the ``schema(…)`` the source is read with, in
            the order the source holds them (a CSV file's header order), or ``None`` when the
            connector fixes the schema or ``infer_schema`` is set; :attr:`schema` is their
            DDL text, made only where a call is lowered.
        infer_schema: read the schema from the files present when the pipeline starts.
        projection: SQL expressions applied with ``selectExpr`` after loading (declared,
            metadata and computed columns in declared order); empty: all columns as read.
        watermark: the event-time watermark, applied after the projection (or before it,
            with ``watermark_first``).
        columns: ``(name, type)`` pairs of the relation as queries see it (Spark SQL type
            names; ``UNKNOWN`` where a type cannot be known statically), or ``None`` when the
            columns are only known at run time (``infer_schema``, ``SELECT *`` of such).
        watermark_first: apply ``withWatermark`` on the columns as read, then the
            projection. Set when the watermark is on a declared column and there are no
            metadata columns: Spark's ``EventTimeWatermark`` is not part of whole-stage
            code generation, so a projection below it is a stage of its own, while one
            above it is fused with what follows (bench/README.md).
        settings: ``(name, value)`` pairs the connector's lowering reads (``kafka``: the
            value format and Avro schema), not passed to Spark as options.
        decoding: with ``on_error = 'drop'`` or ``'dead_letter'``, how records are decoded
            and malformed ones set aside (:class:`Decoding`); ``None`` otherwise.
        expectations: the stream's :class:`Expectation` rules, in file order, checked on
            its rows after the watermark.
    """

    name: str
    bounded: bool
    connector: str
    format: str | None
    path: str | None
    options: tuple[tuple[str, str], ...]
    read_columns: tuple[tuple[str, str], ...] | None
    infer_schema: bool
    projection: tuple[str, ...]
    watermark: Watermark | None
    span: Span
    columns: tuple[tuple[str, str], ...] | None = None
    watermark_first: bool = False
    settings: tuple[tuple[str, str], ...] = ()
    decoding: Decoding | None = None
    expectations: tuple[Expectation, ...] = ()

    @cached_property
    def spark_options(self) -> dict[str, str]:
        """:attr:`options` by lower-case key (Spark reads option keys case-insensitively:
        ``CaseInsensitiveMap``), normalised once for every reader of the plan; the options
        are printed and passed as written."""
        return {k.lower(): v for k, v in self.options}


@dataclass(frozen=True)
class RelationRef:
    """A relation a view or query reads, where its text names it.

    Attributes:
        name: the name as written (dotted for a multi-part name: ``db.t``); compare it
            lower case, as Spark resolves names.
        span: the name's place in the file (the whole body's span where the compiler made
            the reference itself, as in a dead-letter query or a deduplication's input).
    """

    name: str
    span: Span

    @property
    def key(self) -> str:
        """:attr:`name` lower case."""
        return self.name.lower()


@dataclass(frozen=True)
class SqlView:
    """``spark.sql(sql)`` registered as a temporary view named ``name``.

    Attributes:
        name: the temporary view's name.
        sql: its Spark SQL.
        span: the statement that defines it.
        columns: ``(name, type)`` pairs of the relation as queries see it (Spark SQL type
            names; ``UNKNOWN`` where a type cannot be known statically), or ``None`` when the
            columns are only known at run time (``infer_schema``, ``SELECT *`` of such).
        reads: the relations its body reads as written (CTE names left out), in text
            order, as the compiler found them once
            (:func:`~sqlstream.sql.rewrite.relation_names`); the internal views a
            deduplication is split into are not among them.
    """

    name: str
    sql: str
    span: Span
    columns: tuple[tuple[str, str], ...] | None = None
    reads: tuple[RelationRef, ...] = ()


@dataclass(frozen=True)
class Deduplicate:
    """``dropDuplicates(keys)`` or ``dropDuplicatesWithinWatermark(keys)`` of relation
    ``input``, registered as ``name`` (docs/dialect.md#deduplication). ``keys`` empty: all columns;
    ``columns``: those of ``input`` (as for :class:`SqlView`). ``order``: the event-time
    column of a keep-first ``ROW_NUMBER … ORDER BY`` not among the keys (the SQL keeps the
    earliest row per key, Spark the first to arrive: SS361), else ``None``."""

    name: str
    input: str
    keys: tuple[str, ...]
    within_watermark: bool
    span: Span
    columns: tuple[tuple[str, str], ...] | None = None
    order: str | None = None


Relation = SourceRelation | SqlView | Deduplicate


@dataclass(frozen=True)
class Sink:
    """Where a query writes.

    Attributes:
        name: the sink's name (``CREATE SINK name``), or the query's for implicit sinks.
        connector: the connector name.
        format: ``writeStream.format(…)`` value (``parquet``, ``console``, ``memory``, …), or
            ``None`` for the ``table`` connector (``toTable``).
        path: ``start(path)`` for files, the table name for ``table``, else ``None``.
        options: ``(name, value)`` pairs passed to ``.option()``.
        partition_by: columns for ``partitionBy`` (files).
        durable: the sink keeps data across restarts (its query gets a checkpoint location).
        settings: ``(name, value)`` pairs the connector's lowering reads (``kafka``: the
            value format, key columns, Avro schema), not passed to Spark as options.
    """

    name: str
    connector: str
    format: str | None
    path: str | None
    options: tuple[tuple[str, str], ...]
    partition_by: tuple[str, ...]
    durable: bool
    span: Span
    settings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Trigger:
    """A ``DataStreamWriter.trigger`` call: ``kind`` is ``processing_time``,
    ``available_now``, ``continuous`` or ``real_time``; ``interval`` a duration string or
    ``None``."""

    kind: str
    interval: str | None


_TRIGGERS = {  # kind -> (a short label, why the query runs so); {interval} filled in
    None: (
        "default (next micro-batch at once)",
        "no EMIT … EVERY/ONCE: Spark's default micro-batch trigger, each micro-batch "
        "starts as soon as the previous batch ends",
    ),
    "available_now": (
        "available now (what is there, then stop)",
        "from EMIT … ONCE: process what is available when the query starts, "
        "in micro-batches with the rate limits kept, then stop",
    ),
    "processing_time": (
        "every {interval}",
        "from EMIT … EVERY: a micro-batch every {interval} (the next at once "
        "when one takes longer)",
    ),
    "continuous": (
        "continuous (checkpoint every {interval})",
        "from EMIT … CONTINUOUS: continuous processing, a checkpoint every "
        "{interval} (map-like queries only)",
    ),
    "real_time": (
        "real time (checkpoint every {interval})",
        "from EMIT … REAL TIME: Spark's real-time mode, long-running tasks write each "
        "row as it arrives; a checkpoint every {interval} (not a latency)",
    ),
}


def describe_trigger(trigger: Trigger | None) -> dict[str, str | None]:
    """The trigger a query runs with, in words, from the plan alone (``explain`` adds the
    lowered ``trigger(…)`` call; ``graph`` shows the label).

    Args:
        trigger: a query's :attr:`Query.trigger` (``None``: Spark's default).

    Returns:
        ``{"kind", "interval", "label", "reason"}``: ``kind`` is ``default`` (no
        ``trigger`` call), ``available_now``, ``processing_time``, ``continuous`` or
        ``real_time``; ``interval`` a duration string or ``None``; ``label`` a few words
        (``every 1 minute``); ``reason`` one sentence: where it comes from and what it does.
    """
    kind = trigger.kind if trigger else None
    interval = trigger.interval if trigger else None
    label, reason = _TRIGGERS[kind]
    return {
        "kind": kind or "default",
        "interval": interval,
        "label": label.format(interval=interval),
        "reason": reason.format(interval=interval),
    }


@dataclass(frozen=True)
class StatefulOperator:
    """One operator that keeps state across micro-batches.

    Attributes:
        kind: ``aggregation`` (``GROUP BY`` or aggregate functions on a stream),
            ``distinct`` (``SELECT DISTINCT`` Spark plans as an aggregation over every
            column: over an aggregation, or ``UNION``),
            ``deduplicate`` (a ``Deduplicate`` plan step: ``dropDuplicates``),
            ``deduplicate_within_watermark`` (``dropDuplicatesWithinWatermark``) or
            ``stream_stream_join``.
        keys: the grouping keys, the distinct columns, the deduplication keys or the join's
            equality conditions, as Spark SQL text.
        aggregates: the aggregate function calls (aggregations only), as Spark SQL text.
        join_type: ``inner``, ``left``, ``right``, ``full``, ``semi``, ``anti`` (joins only).
        relation: ``None`` for the query itself, else the lower-case name of the view the
            operator is in.
        resolved_keys, resolved_aggregates: ``keys`` and ``aggregates`` by meaning: each
            column replaced by its definition down to the columns the sources read
            (through views, CTEs, subqueries, computed columns) and equal spellings folded
            (:mod:`sqlstream.analysis.lineage`); the restart guard compares these.
        zoned: a key or aggregate depends on ``spark.sql.session.timeZone`` (a timestamp
            read from a source, a cast to a timestamp, a datetime function).
    """

    kind: str
    keys: tuple[str, ...]
    aggregates: tuple[str, ...] = ()
    join_type: str | None = None
    relation: str | None = None
    resolved_keys: tuple[str, ...] = ()
    resolved_aggregates: tuple[str, ...] = ()
    zoned: bool = False


@dataclass(frozen=True)
class SourceIdentity:
    """A source a query reads: its relation, connector and what it reads (path, table)."""

    relation: str
    connector: str
    target: str | None


@dataclass(frozen=True)
class WatermarkDef:
    """An event-time watermark: on ``column`` of ``relation`` with ``delay`` (Spark's
    duration text, e.g. ``1 hour``, or the SQL of a ``WATERMARK`` clause's interval)."""

    relation: str
    column: str
    delay: str


@dataclass(frozen=True)
class StateSignature:
    """What a restart on the same checkpoint location must keep (Spark guide, *Recovery
    Semantics after Changes in a Streaming Query*).

    Attributes:
        sources: every source read, through views, in declaration order.
        operators: the stateful operators of the query and of the views it reads.
        watermarks: the watermarks of those sources and of ``WATERMARK`` clauses.
        output_mode: ``append``, ``update`` or ``complete``.
        sink: ``(connector, format, path or table)`` of the sink.
    """

    sources: tuple[SourceIdentity, ...]
    operators: tuple[StatefulOperator, ...]
    watermarks: tuple[WatermarkDef, ...]
    output_mode: str
    sink: tuple[str, str | None, str | None]

    @property
    def stateful(self) -> bool:
        """The query keeps state (Spark's state store) across micro-batches."""
        return bool(self.operators)


@dataclass(frozen=True)
class Query:
    """One streaming query (``writeStream … start()``).

    Attributes:
        name: the query name (``queryName``); unique in the plan.
        sql: the Spark SQL of the query over the plan's temporary views.
        sink: where it writes.
        output_mode: ``append``, ``update`` or ``complete``.
        output_mode_reason: why this mode (from ``EMIT`` or inferred), for ``translate``.
        trigger: the trigger, or ``None`` for Spark's default.
        checkpoint_location: the checkpoint directory, or ``None`` (Spark picks a temporary
            one; only for non-durable sinks).
        span: the statement that starts the query.
        columns: ``(name, type)`` pairs the query writes, or ``None`` (as for
            :class:`SourceRelation`).
        state: its :class:`StateSignature` (stateful operators, sources,
            watermarks, output mode, sink), or ``None`` when it was not checked.
        reads: the relations its body (every body of an ``INSERT INTO`` one sink) reads as
            written, as for :class:`SqlView`; a dead-letter query reads its source's
            decoded view.
        expectations: the :class:`Expectation` rules of its sink, checked on the rows
            the query writes (its result), in file order.
    """

    name: str
    sql: str
    sink: Sink
    output_mode: str
    output_mode_reason: str
    trigger: Trigger | None
    checkpoint_location: str | None
    span: Span
    columns: tuple[tuple[str, str], ...] | None = None
    state: StateSignature | None = None
    reads: tuple[RelationRef, ...] = ()
    expectations: tuple[Expectation, ...] = ()


@dataclass(frozen=True)
class Plan:
    """A compiled pipeline.

    Attributes:
        name: the pipeline's name (the file's stem, ``pipeline`` for text).
        source: the original text (for redaction and messages).
        settings: ``SET`` pairs for the Spark session, in order (keys as written).
        setting_spans: the span of each ``SET`` by key, for messages.
        relations: steps that define temporary views, in dependency order.
        queries: the streaming queries, in file order.
        state_dir: the root of default checkpoint locations.
        spark_version: the Spark major.minor the plan was judged for
            (:mod:`sqlstream.ir.spark_versions`).
        warnings: :class:`~sqlstream.diagnostics.errors.SqlStreamError` findings of severity
            ``warning`` (the pipeline runs, but perhaps not as meant).
        functions: the user-defined functions (:class:`~sqlstream.ir.user_functions.UserFunction`),
            in file order, registered in the session before any relation is defined.
    """

    name: str
    source: Source
    settings: tuple[tuple[str, str], ...]
    relations: tuple[Relation, ...]
    queries: tuple[Query, ...]
    state_dir: str
    spark_version: str = ""
    setting_spans: tuple[tuple[str, Span], ...] = ()
    warnings: tuple = ()
    functions: tuple = ()

    def available_now(self) -> Plan:
        """This plan with every query's trigger replaced by ``availableNow`` (``exec
        --available-now``, ``available_now=True`` of the run API): applied once, where a run
        starts, so that lowering, the printed script and the run events all read the same
        triggers from the plan."""
        return replace(
            self,
            queries=tuple(replace(q, trigger=Trigger("available_now", None)) for q in self.queries),
        )

    def setting(self, key: str) -> str | None:
        """The value of ``SET key`` (case-insensitive), or ``None``."""
        for name, value in reversed(self.settings):
            if name.lower() == key.lower():
                return value
        return None

    def span_of_setting(self, key: str) -> Span | None:
        """Where ``SET key`` was written, or ``None``."""
        return dict((k.lower(), s) for k, s in self.setting_spans).get(key.lower())
