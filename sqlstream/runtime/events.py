"""Typed events of a pipeline run and the listeners that receive them.

A run (:class:`sqlstream.session.Session`) reports what happens as events instead of
printing: each is a frozen dataclass with ``to_dict()`` for JSON. Progress and
termination come from Spark's ``StreamingQueryListener`` (``onQueryProgress``,
``onQueryIdle``, ``onQueryTerminated``); the other events come from sqlstream itself.
The events of one query arrive in this order::

    QueryStarted → (BatchProgress | QueryIdle)* → QueryTerminated [→ QueryFailed]

and :class:`Notice` / :class:`Stopping` lines may come between them.

A listener is a callable ``listener(event)`` or an object with ``on_event(event)``
(:class:`Listener`). The renderers of :mod:`sqlstream.runtime.renderers` write a line per
query start and end, or one JSON object per event; ``sqlstream exec`` shows
progress with :class:`sqlstream.runtime.progress.ProgressRenderer` (a live table, lines or JSON,
with warnings and a summary per query).

Source: PySpark 4.1 ``pyspark.sql.streaming.StreamingQueryListener`` and
``StreamingQueryProgress`` (Spark guide: *Monitoring Streaming Queries*).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.diagnostics.source_text import Span

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _plain(value: Any) -> Any:
    """A JSON-ready copy of ``value``: dataclasses, spans and errors as dicts, NaN as None."""
    if isinstance(value, (Span, SqlStreamError)):
        return value.to_dict()
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class Event:
    """Base of every event: ``kind`` names it in JSON (``"query_started"``, …)."""

    kind: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"event": kind, <field>: <value>, …}``, JSON-ready (spans and errors as
        their ``to_dict()``, nested progress as dicts, NaN rates as ``None``)."""
        return {"event": self.kind, **_plain(self)}


@dataclass(frozen=True)
class Notice(Event):
    """A note from sqlstream: a session default it applied, a schema it inferred (``exec``
    also sends its header line and the file's rendered warnings this way).

    Attributes:
        message: the note: one line, or a rendered warning (its line and caret).
    """

    kind: ClassVar[str] = "notice"
    message: str


@dataclass(frozen=True)
class QueryEvent(Event):
    """Base of the events about one query.

    Attributes:
        name: the query name (``queryName``).
        id: Spark's query id (UUID string), the same across restarts from one checkpoint.
        run_id: Spark's id of this run of the query (UUID string); new at every start.
    """

    name: str
    id: str
    run_id: str


@dataclass(frozen=True)
class QueryStarted(QueryEvent):
    """A query of the pipeline started (``DataStreamWriter.start()`` returned).

    Attributes (besides :class:`QueryEvent`'s ``name``, ``id``, ``run_id``):
        output_mode: ``append``, ``update`` or ``complete``.
        trigger: ``default`` (a micro-batch as soon as the previous one ends),
            ``availableNow``, ``every <interval>`` (processing-time trigger) or
            ``continuous <interval>`` or ``realTime <interval>`` (checkpoint interval).
        sink: the sink's connector (``files``, ``console``, ``memory``, ``noop``, ``table``).
        path: the sink's path (``files``) or table name (``table``), else ``None``.
        checkpoint_location: the checkpoint directory, or ``None`` (a temporary one).
        span: the statement that defines the query in the `.ssql` file.
    """

    kind: ClassVar[str] = "query_started"
    output_mode: str
    trigger: str
    sink: str
    path: str | None
    checkpoint_location: str | None
    span: Span


@dataclass(frozen=True)
class EventTime:
    """Event-time statistics of a micro-batch (``StreamingQueryProgress.eventTime``).

    Every value is an ISO-8601 UTC timestamp string as Spark reports it
    (``"2013-01-31T23:00:00.000Z"``), or ``None`` when Spark reports none (no watermark, or
    a batch without rows).

    Attributes:
        watermark: the watermark used by this micro-batch.
        min: the smallest event time of the batch's rows.
        max: the largest event time of the batch's rows.
        avg: the average event time of the batch's rows.
    """

    watermark: str | None = None
    min: str | None = None
    max: str | None = None
    avg: str | None = None


@dataclass(frozen=True)
class StateOperatorProgress:
    """One stateful operator of a micro-batch (Spark's ``StateOperatorProgress``).

    Attributes:
        operator_name: e.g. ``stateStoreSave``, ``symmetricHashJoin``, ``dedupe``.
        num_rows_total: rows in the state after the batch (rows).
        num_rows_updated: rows written to the state by the batch (rows).
        num_rows_removed: rows evicted from the state by the batch (rows).
        num_rows_dropped_by_watermark: input rows older than the watermark, dropped (rows).
        memory_used_bytes: memory of the state store (bytes).
        all_updates_time_ms: time spent updating the state (ms).
        all_removals_time_ms: time spent removing from the state (ms).
        commit_time_ms: time spent committing the state (ms).
        num_shuffle_partitions: partitions of the state (``spark.sql.shuffle.partitions``
            when the checkpoint was created).
        num_state_store_instances: state store instances.
        custom_metrics: the state store's own metrics, by name.
    """

    operator_name: str
    num_rows_total: int
    num_rows_updated: int
    num_rows_removed: int
    num_rows_dropped_by_watermark: int
    memory_used_bytes: int
    all_updates_time_ms: int
    all_removals_time_ms: int
    commit_time_ms: int
    num_shuffle_partitions: int
    num_state_store_instances: int
    custom_metrics: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True)
class SourceProgress:
    """One source of a micro-batch (Spark's ``SourceProgress``).

    Attributes:
        description: Spark's description (e.g. ``FileStreamSource[file:/…/flights]``).
        start_offset: the offset the batch started from (JSON text), ``None`` for the first.
        end_offset: the offset the batch read up to (JSON text).
        latest_offset: the latest offset available when the batch was planned (JSON text).
        num_input_rows: rows read from this source by the batch (rows).
        input_rows_per_second: rows arriving per second (rows/s), ``None`` when unknown.
        processed_rows_per_second: rows processed per second (rows/s), ``None`` when unknown.
        metrics: the source's own metrics (strings), by name.
    """

    description: str
    start_offset: str | None
    end_offset: str | None
    latest_offset: str | None
    num_input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    metrics: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True)
class SinkProgress:
    """The sink of a micro-batch (Spark's ``SinkProgress``).

    Attributes:
        description: Spark's description (e.g. ``FileSink[…/out/hourly]``).
        num_output_rows: rows written by the batch (rows); ``-1`` when the sink does not
            report it (Spark's value for sinks of the DataSource V1 API).
        metrics: the sink's own metrics (strings), by name.
    """

    description: str
    num_output_rows: int
    metrics: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True)
class BatchProgress(QueryEvent):
    """A micro-batch of a query ended (Spark's ``onQueryProgress`` with a
    ``StreamingQueryProgress``).

    Attributes (besides :class:`QueryEvent`'s ``name``, ``id``, ``run_id``):
        batch_id: the micro-batch number, from 0, continuing across restarts.
        timestamp: when the trigger started (ISO-8601 UTC string).
        num_input_rows: rows read by the batch from all sources (rows).
        input_rows_per_second: rows arriving per second (rows/s), ``None`` when Spark
            reports NaN (e.g. the first batch).
        processed_rows_per_second: rows processed per second (rows/s), ``None`` when Spark
            reports NaN.
        batch_duration_ms: wall time of the batch (ms).
        duration_ms: the batch's wall time by phase (ms): ``addBatch``, ``getBatch``,
            ``latestOffset``, ``queryPlanning``, ``triggerExecution``, ``walCommit``,
            ``commitOffsets``.
        event_time: watermark and event-time statistics (:class:`EventTime`).
        state_operators: one :class:`StateOperatorProgress` per stateful operator.
        sources: one :class:`SourceProgress` per source.
        sink: the :class:`SinkProgress`.
        malformed_records: source name → records of the batch that could not be decoded
            (``on_error = 'drop'`` or ``'dead_letter'``; :mod:`sqlstream.planning.malformed`), from
            Spark's ``observedMetrics`` (``DataFrame.observe``); empty for other sources.
        expectations: expectation name → rows of the batch that violated it (its condition
            ``FALSE``), for the rules of the streams the query reads and of its sink
            (docs/dialect.md#expectations), from Spark's ``observedMetrics``
            (``expect:<stream or query>``); empty when the query has none.
    """

    kind: ClassVar[str] = "batch_progress"
    batch_id: int
    timestamp: str
    num_input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    batch_duration_ms: int
    duration_ms: Mapping[str, int]
    event_time: EventTime
    state_operators: tuple[StateOperatorProgress, ...]
    sources: tuple[SourceProgress, ...]
    sink: SinkProgress | None
    malformed_records: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    expectations: Mapping[str, int] = field(default_factory=lambda: _EMPTY)

    @property
    def watermark(self) -> str | None:
        """The watermark of this batch (``event_time.watermark``), or ``None``."""
        return self.event_time.watermark


@dataclass(frozen=True)
class QueryIdle(QueryEvent):
    """A query has had no new data for a while (Spark's ``onQueryIdle``, every
    ``spark.sql.streaming.noDataProgressEventInterval``, 10 s by default).

    Attributes (besides :class:`QueryEvent`'s ``name``, ``id``, ``run_id``):
        timestamp: when Spark noticed (ISO-8601 UTC string).
    """

    kind: ClassVar[str] = "query_idle"
    timestamp: str


@dataclass(frozen=True)
class QueryTerminated(QueryEvent):
    """A query stopped: it finished (e.g. ``EMIT … ONCE``), was stopped, or failed
    (Spark's ``onQueryTerminated``).

    Attributes (besides :class:`QueryEvent`'s ``name``, ``id``, ``run_id``):
        exception: why it failed, one paragraph (Spark's message without stack frames),
            or ``None`` when it did not fail.
        error_class: Spark's error class of the failure (e.g. ``MALFORMED_RECORD_IN_PARSING``)
            when it has one, else ``None``.
    """

    kind: ClassVar[str] = "query_terminated"
    exception: str | None = None
    error_class: str | None = None


@dataclass(frozen=True)
class QueryFailed(QueryEvent):
    """A query failed while running; follows its :class:`QueryTerminated`.

    Attributes (besides :class:`QueryEvent`'s ``name``, ``id``, ``run_id``):
        message: Spark's message in one paragraph (``binder.spark_message``).
        error: the :class:`~sqlstream.diagnostics.errors.QueryFailedError` (code ``SS501``) positioned
            at the query's statement; ``error.render()`` shows it with the line and a caret.
    """

    kind: ClassVar[str] = "query_failed"
    message: str
    error: SqlStreamError


@dataclass(frozen=True)
class Stopping(Event):
    """The run is stopping every query itself.

    Attributes:
        reason: ``interrupted`` (Ctrl-C), ``timeout (<n> s)`` or ``query '<name>' failed``.
    """

    kind: ClassVar[str] = "stopping"
    reason: str


@runtime_checkable
class Listener(Protocol):
    """Receives events: an object with ``on_event(event)``.

    A plain callable ``f(event)`` is accepted wherever a listener is (see :func:`deliver`).
    ``Session.run`` calls listeners on the thread that called it; ``Session.start`` on a
    sqlstream thread of its own; never on Spark's callback thread.
    """

    def on_event(self, event: Event) -> None:
        """Handle one event; should return quickly (the run waits for it)."""


ListenerLike = Listener | Callable[[Event], None]


def deliver(listener: ListenerLike, event: Event) -> None:
    """Give ``event`` to ``listener`` (its ``on_event`` if it has one, else call it)."""
    handler = getattr(listener, "on_event", None)
    if handler is None:  # no on_event: the listener is a callable
        handler = cast(Callable[[Event], None], listener)
    handler(event)


def emitter(listeners: tuple[ListenerLike, ...]) -> Callable[[Event], None]:
    """One function that gives each event to every listener in ``listeners``, in order
    (:func:`deliver`): how the runner and :class:`sqlstream.Session` emit events."""

    def emit(event: Event) -> None:
        for listener in listeners:
            deliver(listener, event)

    return emit


def redacted(value: Any, redact: Callable[[str], str]) -> Any:
    """A copy of ``value`` (an event, or anything in one) with ``redact`` applied to every
    string in it: fields of nested dataclasses (progress of sources, sinks, state
    operators), mapping keys and values, sequences. Spans and errors are kept (an error
    redacts itself when rendered). ``redact`` is ``Source.redact`` of the pipeline: no
    secret reaches a listener (docs/dialect.md#secrets)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, (Span, SqlStreamError)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(
            value,
            **{
                f.name: redacted(getattr(value, f.name), redact)
                for f in dataclasses.fields(value)
                if f.init
            },
        )
    if isinstance(value, Mapping):
        return MappingProxyType(
            {redacted(k, redact): redacted(v, redact) for k, v in value.items()}
        )
    if isinstance(value, (tuple, list)):
        return type(value)(redacted(v, redact) for v in value)
    return value


# --------------------------------------------------------------------------- from Spark


def _rate(value: Any) -> float | None:
    return (
        None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    )


def _offset(value: Any) -> str | None:
    """An offset as JSON text; PySpark gives ``"None"`` for Spark's null."""
    return None if value is None or str(value) in ("None", "null") else str(value)


def _frozen(mapping: Any) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


def batch_progress(progress: Any) -> BatchProgress:
    """Translate a PySpark ``StreamingQueryProgress`` (from ``QueryProgressEvent.progress``
    or ``StreamingQuery.lastProgress``) into a :class:`BatchProgress`."""
    event_time = dict(progress.eventTime or {})
    sink = progress.sink
    return BatchProgress(
        name=progress.name or "",
        id=str(progress.id),
        run_id=str(progress.runId),
        batch_id=int(progress.batchId),
        timestamp=progress.timestamp,
        num_input_rows=int(progress.numInputRows or 0),
        input_rows_per_second=_rate(progress.inputRowsPerSecond),
        processed_rows_per_second=_rate(progress.processedRowsPerSecond),
        batch_duration_ms=int(progress.batchDuration or 0),
        duration_ms=_frozen({k: int(v) for k, v in dict(progress.durationMs or {}).items()}),
        event_time=EventTime(
            event_time.get("watermark"),
            event_time.get("min"),
            event_time.get("max"),
            event_time.get("avg"),
        ),
        state_operators=tuple(
            StateOperatorProgress(
                operator_name=s.operatorName,
                num_rows_total=s.numRowsTotal,
                num_rows_updated=s.numRowsUpdated,
                num_rows_removed=s.numRowsRemoved,
                num_rows_dropped_by_watermark=s.numRowsDroppedByWatermark,
                memory_used_bytes=s.memoryUsedBytes,
                all_updates_time_ms=s.allUpdatesTimeMs,
                all_removals_time_ms=s.allRemovalsTimeMs,
                commit_time_ms=s.commitTimeMs,
                num_shuffle_partitions=s.numShufflePartitions,
                num_state_store_instances=s.numStateStoreInstances,
                custom_metrics=_frozen(s.customMetrics),
            )
            for s in progress.stateOperators or ()
        ),
        sources=tuple(
            SourceProgress(
                description=s.description,
                start_offset=_offset(s.startOffset),
                end_offset=_offset(s.endOffset),
                latest_offset=_offset(s.latestOffset),
                num_input_rows=int(s.numInputRows or 0),
                input_rows_per_second=_rate(s.inputRowsPerSecond),
                processed_rows_per_second=_rate(s.processedRowsPerSecond),
                metrics=_frozen(s.metrics),
            )
            for s in progress.sources or ()
        ),
        sink=None
        if sink is None
        else SinkProgress(sink.description, int(sink.numOutputRows), _frozen(sink.metrics)),
        malformed_records=_malformed(progress),
        expectations=_expectations(progress),
    )


def _malformed(progress: Any) -> Mapping[str, int]:
    """``{source: records}`` of the ``malformed:<source>`` observed metrics of a progress."""
    found = {}
    for name, row in dict(getattr(progress, "observedMetrics", None) or {}).items():
        if name.startswith("malformed:"):
            found[name[len("malformed:") :]] = int(row["records"] or 0)
    return _frozen(found)


def _expectations(progress: Any) -> Mapping[str, int]:
    """``{rule: violating rows}`` of the ``expect:<owner>`` observed metrics of a progress
    (:mod:`sqlstream.lowering.expectation_calls`), every rule of every observation by name."""
    found = {}
    for name, row in dict(getattr(progress, "observedMetrics", None) or {}).items():
        if name.startswith("expect:"):
            found.update({k: int(v or 0) for k, v in row.asDict().items()})
    return _frozen(found)
