"""What a run's events add up to: warnings derived from a query's progress, and a summary.

:class:`Tracker` follows the events of a run (:mod:`sqlstream.runtime.events`) and derives
:class:`ProgressWarning` and, when a query terminates, :class:`QuerySummary` events
(:mod:`sqlstream.runtime.progress` shows them). The warnings:

* ``late_rows``: a micro-batch dropped rows older than the watermark (how many, which
  query). Spark counts them where the stateful operator reads its input
  (``numRowsDroppedByWatermark``): after an aggregation's partial aggregation, so one
  row per group and input partition, not per input row — more than 0 whenever input rows
  were late;
* ``watermark_stalled``: the watermark has not moved for ``stall_batches`` micro-batches
  while rows arrive (the rows are not later than those already seen): windows ending
  after it stay open;
* ``source_idle``: Spark reported the query idle ``idle_reports`` times in a row
  (``onQueryIdle``, every ``spark.sql.streaming.noDataProgressEventInterval``, 10 s by
  default) while its state holds rows: without later rows the watermark cannot pass the
  open windows, which are never written.

Source: Spark guide, *Monitoring Streaming Queries* (``StreamingQueryProgress``,
``StateOperatorProgress.numRowsDroppedByWatermark``) and *Handling Late Data and
Watermarking*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from sqlstream.runtime.events import (
    BatchProgress,
    Event,
    QueryIdle,
    QueryStarted,
    QueryTerminated,
    Stopping,
)

STALL_BATCHES = 3
"""Micro-batches with input and an unmoved watermark before ``watermark_stalled``."""

IDLE_REPORTS = 3
"""Consecutive idle reports of Spark (10 s apart by default) before ``source_idle``."""

_EPOCH = "1970-01-01T00:00:00.000Z"  # Spark's watermark before the first rows


@dataclass(frozen=True)
class ProgressWarning(Event):
    """A warning derived from a query's progress (:class:`Tracker`).

    Attributes:
        name: the query name; ``run_id``: Spark's run id.
        what: ``late_rows``, ``watermark_stalled`` or ``source_idle``.
        message: one sentence for the user.
        batch_id: the micro-batch it was noticed in (``None`` for ``source_idle``).
        rows: late rows dropped by that micro-batch (``late_rows``), else ``None``.
        watermark: the watermark then (ISO-8601 UTC string as Spark gives it), or ``None``.
    """

    kind: ClassVar[str] = "warning"
    name: str
    run_id: str
    what: str
    message: str
    batch_id: int | None = None
    rows: int | None = None
    watermark: str | None = None


@dataclass(frozen=True)
class QuerySummary(Event):
    """What one query did in this run; derived from its events when it terminates.

    Attributes:
        name, id, run_id: as :class:`~sqlstream.runtime.events.QueryEvent`.
        status: ``finished`` (all input processed, e.g. ``EMIT … ONCE``), ``stopped``
            (Ctrl-C, SIGTERM, ``--timeout``, or another query failed) or ``failed``.
        batches: micro-batches run.
        input_rows: rows read, all micro-batches (rows).
        late_rows: rows dropped by the watermark, all micro-batches (rows).
        busy_ms: the micro-batches' durations added up (ms).
        rows_per_second: ``input_rows`` per second of ``busy_ms`` (rows/s), ``None``
            before any micro-batch.
        final_watermark: the last watermark (ISO-8601 UTC), ``None`` without one.
        state_rows: rows in the state store after the last micro-batch (rows).
        state_memory_bytes: memory of the state store then (bytes).
        error: Spark's reason for a failure, one paragraph, else ``None``.
        expectations: expectation name → violating rows, all micro-batches (rows;
            docs/dialect.md#expectations); empty when the query has none.
    """

    kind: ClassVar[str] = "query_summary"
    name: str
    id: str
    run_id: str
    status: str
    batches: int
    input_rows: int
    late_rows: int
    busy_ms: int
    rows_per_second: float | None
    final_watermark: str | None
    state_rows: int
    state_memory_bytes: int
    error: str | None = None
    expectations: Mapping[str, int] = field(default_factory=dict)


@dataclass
class _Query:
    """What the tracker keeps of one query run."""

    name: str
    batches: int = 0
    input_rows: int = 0
    late_rows: int = 0
    busy_ms: int = 0
    last: BatchProgress | None = None
    watermark: str | None = None
    unmoved: int = 0  # micro-batches with input and the same watermark, in a row
    stall_warned: bool = False
    idle: int = 0  # idle reports in a row
    idle_warned: bool = False
    expectations: dict[str, int] = field(default_factory=dict)  # violating rows by rule


def late_rows(event: BatchProgress) -> int:
    """Rows the micro-batch dropped as older than the watermark, all stateful operators
    (Spark's ``numRowsDroppedByWatermark``: rows at the operator's input; for an
    aggregation, partial aggregates — one per group and input partition)."""
    return sum(op.num_rows_dropped_by_watermark for op in event.state_operators)


def state_rows(event: BatchProgress) -> tuple[int, int]:
    """``(rows, bytes)`` in the state stores after the micro-batch."""
    return (
        sum(op.num_rows_total for op in event.state_operators),
        sum(op.memory_used_bytes for op in event.state_operators),
    )


class Tracker:
    """Follows the events of a run and derives :class:`ProgressWarning` and
    :class:`QuerySummary` events from them.

    Args:
        stall_batches: micro-batches with input rows and an unmoved watermark before a
            ``watermark_stalled`` warning (once per stall).
        idle_reports: consecutive :class:`~sqlstream.runtime.events.QueryIdle` events, with rows
            in the state, before a ``source_idle`` warning (once per idle spell).
    """

    def __init__(
        self, stall_batches: int = STALL_BATCHES, idle_reports: int = IDLE_REPORTS
    ) -> None:
        self.stall_batches, self.idle_reports = stall_batches, idle_reports
        self.queries: dict[str, _Query] = {}  # run id -> state
        self.stopping = False

    def observe(self, event: Event) -> list[Event]:
        """Take one event; return the events it gives rise to (warnings, a summary)."""
        if isinstance(event, Stopping):
            self.stopping = True
        elif isinstance(event, QueryStarted):
            self.queries[event.run_id] = _Query(event.name)
        elif isinstance(event, BatchProgress):
            return self._batch(self.queries.setdefault(event.run_id, _Query(event.name)), event)
        elif isinstance(event, QueryIdle):
            return self._idle(self.queries.setdefault(event.run_id, _Query(event.name)), event)
        elif isinstance(event, QueryTerminated):
            return [self.summary(event)]
        return []

    def _batch(self, query: _Query, event: BatchProgress) -> list[Event]:
        found: list[Event] = []
        query.batches += 1
        query.input_rows += event.num_input_rows
        query.busy_ms += event.batch_duration_ms
        query.last = event
        for rule, n in event.expectations.items():
            query.expectations[rule] = query.expectations.get(rule, 0) + n
        dropped = late_rows(event)
        query.late_rows += dropped
        mark = event.watermark
        if dropped:
            found.append(
                ProgressWarning(
                    event.name,
                    event.run_id,
                    "late_rows",
                    f"query {event.name}: {dropped:,} late rows dropped by the watermark in batch "
                    f"{event.batch_id} (event time before {show_time(mark)}; counted at the input of "
                    "the stateful operator: for an aggregation, one per group and input partition; "
                    f"{query.late_rows:,} in this run)",
                    event.batch_id,
                    dropped,
                    mark,
                )
            )
        if event.num_input_rows:
            query.idle, query.idle_warned = 0, False
            if mark is not None and mark == query.watermark:
                query.unmoved += 1
            else:
                query.unmoved, query.stall_warned = 0, False
            if mark is not None and query.unmoved >= self.stall_batches and not query.stall_warned:
                query.stall_warned = True
                found.append(
                    ProgressWarning(
                        event.name,
                        event.run_id,
                        "watermark_stalled",
                        f"query {event.name}: the watermark has stayed at {show_time(mark)} for "
                        f"{query.unmoved} micro-batches while rows arrive (event time "
                        f"{show_time(event.event_time.min)} to {show_time(event.event_time.max)}): "
                        "windows ending after it stay open until rows with a later event time "
                        "arrive",
                        event.batch_id,
                        None,
                        mark,
                    )
                )
        query.watermark = mark if mark is not None else query.watermark
        return found

    def _idle(self, query: _Query, event: QueryIdle) -> list[Event]:
        query.idle += 1
        rows = state_rows(query.last)[0] if query.last is not None else 0
        if (
            query.idle < self.idle_reports
            or query.idle_warned
            or not rows
            or query.watermark is None
        ):
            return []
        query.idle_warned = True
        return [
            ProgressWarning(
                event.name,
                event.run_id,
                "source_idle",
                f"query {event.name}: no new rows ({query.idle} idle reports from Spark); the "
                f"watermark stays at {show_time(query.watermark)}, so the {rows:,} rows of state "
                "(open windows) are not written until rows with a later event time arrive",
                None,
                None,
                query.watermark,
            )
        ]

    def summary(self, event: QueryTerminated) -> QuerySummary:
        """The :class:`QuerySummary` of the query that ``event`` terminates."""
        query = self.queries.pop(event.run_id, None) or _Query(event.name)
        status = "failed" if event.exception else "stopped" if self.stopping else "finished"
        rows, memory = state_rows(query.last) if query.last is not None else (0, 0)
        rate = query.input_rows * 1000 / query.busy_ms if query.busy_ms else None
        return QuerySummary(
            event.name,
            event.id,
            event.run_id,
            status,
            query.batches,
            query.input_rows,
            query.late_rows,
            query.busy_ms,
            rate,
            query.watermark,
            rows,
            memory,
            event.exception,
            dict(query.expectations),
        )


# --------------------------------------------------------------------------- formatting


def show_time(value: str | None) -> str:
    """Spark's ISO-8601 UTC timestamp as ``YYYY-MM-DD HH:MM:SS``; ``-`` for none (also for
    the epoch, Spark's watermark before any rows)."""
    if not value or value == _EPOCH:
        return "-"
    return value.replace("T", " ").split(".")[0].rstrip("Z")
