"""Live progress of ``sqlstream exec``: a row per query per micro-batch, warnings, a summary.

:class:`ProgressRenderer` is a listener (:mod:`sqlstream.runtime.events`) that shows what the run
API reports, in one of three forms:

* ``live`` (a terminal): a `rich <https://rich.readthedocs.io>`_ ``Live`` table with one
  row per query, refreshed at each micro-batch; notes and warnings print above it; a
  summary table when the run ends;
* ``plain`` (not a terminal: a log file, a pipe): one line per event;
* ``json`` (``--log-format json``): one JSON object per event, for log shippers — the
  run's events and the ones derived here, :class:`ProgressWarning` and :class:`QuerySummary`.

A micro-batch row shows what Spark's ``StreamingQueryProgress`` says of it: batch id,
input rows and their rate (rows/s), processed rows/s, batch duration, watermark, rows and
memory of the state store, rows dropped by the watermark (late rows: the
``numRowsDroppedByWatermark`` of the stateful operators) and the sink's commit.

:class:`Tracker` derives the warnings from the event sequence of each query:

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
Watermarking*; rich's ``Live`` and ``Table``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from sqlstream.runtime.events import (
    BatchProgress,
    Event,
    Notice,
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

if TYPE_CHECKING:
    from rich.live import Live


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


def _rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}/s" if 0 < value < 10 else f"{value:,.0f}/s"


def _duration(ms: int) -> str:
    return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def sink_text(event: BatchProgress) -> str:
    """The sink column: rows written (when the sink reports them) and the time Spark took
    to commit the micro-batch's offsets (``durationMs.commitOffsets``)."""
    written = event.sink.num_output_rows if event.sink is not None else -1
    commit = event.duration_ms.get("commitOffsets")
    parts = [f"{written:,} rows"] if written >= 0 else []
    parts.append(f"committed in {commit} ms" if commit is not None else "committed")
    return ", ".join(parts)


COLUMNS = (
    "query",
    "batch",
    "input rows",
    "input rows/s",
    "processed rows/s",
    "duration",
    "watermark",
    "state rows",
    "state memory",
    "late rows",
    "sink",
)
"""The columns of the live table, in order (:func:`batch_cells`)."""


def batch_cells(event: BatchProgress, run_late: int | None = None) -> tuple[str, ...]:
    """The cells of a micro-batch's row, one per :data:`COLUMNS` entry; ``run_late``: the
    late rows of the run so far, shown after the batch's own when more."""
    rows, memory = state_rows(event)
    stateful = bool(event.state_operators)
    late = late_rows(event)
    late_text = f"{late:,}" + (f" ({run_late:,} in run)" if run_late and run_late > late else "")
    return (
        event.name,
        str(event.batch_id),
        f"{event.num_input_rows:,}",
        _rate(event.input_rows_per_second),
        _rate(event.processed_rows_per_second),
        _duration(event.batch_duration_ms),
        show_time(event.watermark),
        f"{rows:,}" if stateful else "-",
        _bytes(memory) if stateful else "-",
        late_text if stateful and event.watermark is not None else "-",
        sink_text(event),
    )


def batch_line(event: BatchProgress) -> str:
    """One plain line for a micro-batch."""
    cells = dict(zip(COLUMNS, batch_cells(event), strict=True))
    state = (
        f", state {cells['state rows']} rows / {cells['state memory']}"
        if event.state_operators
        else ""
    )
    if event.state_operators and event.watermark is not None:
        state += f", {cells['late rows']} late rows dropped"
    mark = f", watermark {cells['watermark']}" if event.watermark is not None else ""
    bad = "".join(
        f", {n:,} malformed records ({source})"  # on_error (sqlstream.planning.malformed)
        for source, n in sorted(event.malformed_records.items())
        if n
    )
    return (
        f"query {event.name} batch {event.batch_id}: {cells['input rows']} input rows "
        f"({cells['input rows/s']} in, {cells['processed rows/s']} processed), "
        f"{cells['duration']}{mark}{state}{bad}; sink {cells['sink']}"
        + (
            f"; expectations violated: {rule_counts(event.expectations)}"
            if event.expectations
            else ""
        )
    )


def rule_counts(counts: Mapping[str, int]) -> str:
    """``known_origin 3, has_time 0``: violating rows by expectation, in the order given."""
    return ", ".join(f"{rule} {n:,}" for rule, n in counts.items())


def summary_line(summary: QuerySummary) -> str:
    """One plain line for a query's summary."""
    batches = "1 micro-batch" if summary.batches == 1 else f"{summary.batches} micro-batches"
    text = (
        f"query {summary.name} {summary.status}: {batches}, "
        f"{summary.input_rows:,} input rows ({_rate(summary.rows_per_second)})"
    )
    if summary.final_watermark is not None:
        text += f", final watermark {show_time(summary.final_watermark)}"
    if summary.state_rows:
        text += f", state {summary.state_rows:,} rows / {_bytes(summary.state_memory_bytes)}"
    if summary.late_rows:
        text += f", {summary.late_rows:,} late rows dropped"
    if summary.expectations:
        text += f", expectations violated: {rule_counts(summary.expectations)}"
    return text


def started_line(event: QueryStarted) -> str:
    """The line of a started query (as :class:`~sqlstream.runtime.renderers.TextRenderer` writes it)."""
    checkpoint = f" (checkpoint {event.checkpoint_location})" if event.checkpoint_location else ""
    return (
        f"started query {event.name}: {event.output_mode} mode, trigger {event.trigger}, "
        f"-> {event.path or event.sink}{checkpoint}"
    )


# --------------------------------------------------------------------------- rendering


class ProgressRenderer:
    """The listener ``sqlstream exec`` shows progress with.

    Args:
        write: receives each line (no newline) in ``plain`` and ``json`` form.
        fmt: ``live`` (a rich ``Live`` table on ``console``), ``plain`` or ``json``.
        console: the ``rich.console.Console`` of ``live`` (e.g. ``Console(stderr=True)``).
        stall_batches, idle_reports: as for :class:`Tracker`.

    Call :meth:`close` when the run ends (it stops the live table and prints the summary);
    the object is also a context manager.

    Raises:
        ValueError: an unknown ``fmt``, or ``live`` without ``console``.
    """

    def __init__(
        self,
        write: Callable[[str], None] = print,
        fmt: str = "plain",
        console: Any = None,
        stall_batches: int = STALL_BATCHES,
        idle_reports: int = IDLE_REPORTS,
    ) -> None:
        if fmt not in ("live", "plain", "json") or (fmt == "live" and console is None):
            raise ValueError(f"fmt {fmt!r}: expected live (with a console), plain or json")
        self.write, self.fmt, self.console = write, fmt, console
        self.tracker = Tracker(stall_batches, idle_reports)
        self.rows: dict[str, tuple[str, ...]] = {}  # query name -> latest cells
        self.summaries: list[QuerySummary] = []
        self._live: Live | None = None

    def on_event(self, event: Event) -> None:
        """Show ``event`` and the warnings and summary it gives rise to."""
        derived = self.tracker.observe(event)
        if self.fmt == "json":
            for item in (event, *derived):
                self.write(json.dumps(item.to_dict(), default=str))
            return
        self._show(event)
        for item in derived:
            self._show(item)

    __call__ = on_event

    def _say(self, text: str, style: str | None = None) -> None:
        if self.fmt == "live":
            self.console.print(text, style=style, markup=False, highlight=False, soft_wrap=True)
        else:
            self.write(text)

    def _show(self, event: Event) -> None:
        if isinstance(event, Notice):
            self._say(event.message)
        elif isinstance(event, QueryStarted):
            self._say(started_line(event))
            self.rows[event.name] = (event.name, "-", *("" for _ in COLUMNS[2:]))
            self._refresh()
        elif isinstance(event, BatchProgress):
            query = self.tracker.queries.get(event.run_id)
            self.rows[event.name] = batch_cells(event, query.late_rows if query else None)
            if self.fmt == "live":
                if any(event.expectations.values()):  # a line above the table
                    self._say(
                        f"query {event.name} batch {event.batch_id}: expectations "
                        f"violated: {rule_counts(event.expectations)}",
                        "yellow",
                    )
                self._refresh()
            else:
                self.write(batch_line(event))
        elif isinstance(event, ProgressWarning):
            self._say(f"warning: {event.message}", "yellow")
        elif isinstance(event, Stopping):
            self._say(f"{event.reason}: stopping queries")
        elif isinstance(event, QuerySummary):
            self.summaries.append(event)
            if self.fmt != "live":
                self.write(summary_line(event))
        # QueryIdle: nothing (source_idle warns); QueryTerminated: its summary;
        # QueryFailed: the CLI prints the error with its position after close()

    def _table(self):
        from rich.table import Table

        table = Table(title=None, box=None, header_style="bold", pad_edge=False)
        for column in COLUMNS:
            table.add_column(
                column,
                justify="left" if column in ("query", "watermark", "sink") else "right",
                no_wrap=column in ("query", "watermark"),
            )
        for cells in self.rows.values():
            table.add_row(*cells)
        return table

    def _refresh(self) -> None:
        if self.fmt != "live":
            return
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                self._table(),
                console=self.console,
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=True,
            )
            self._live.start()
        self._live.update(self._table(), refresh=True)

    def close(self) -> None:
        """End the display: stop the live table (its last state stays on screen) and, in
        ``live`` form, print the summary table of every query that terminated."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self.fmt == "live" and self.summaries:
            from rich.table import Table

            table = Table(title="summary", box=None, header_style="bold", pad_edge=False)
            for column in (
                "query",
                "status",
                "batches",
                "input rows",
                "rows/s",
                "late rows",
                "final watermark",
                "state rows",
            ):
                table.add_column(
                    column,
                    justify="left" if column in ("query", "status", "final watermark") else "right",
                )
            for s in self.summaries:
                table.add_row(
                    s.name,
                    s.status,
                    str(s.batches),
                    f"{s.input_rows:,}",
                    _rate(s.rows_per_second),
                    f"{s.late_rows:,}",
                    show_time(s.final_watermark),
                    f"{s.state_rows:,}",
                )
            self.console.print(table)
            for s in self.summaries:
                if s.expectations:
                    self.console.print(
                        f"{s.name}: expectations violated: {rule_counts(s.expectations)}"
                    )
            self.summaries.clear()

    def __enter__(self) -> ProgressRenderer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
