"""Live progress of ``sqlstream exec``: a row per query per micro-batch, warnings, a summary.

:class:`ProgressRenderer` is a listener (:mod:`sqlstream.runtime.events`) that shows what the run
API reports, in one of three forms:

* ``live`` (a terminal): a `rich <https://rich.readthedocs.io>`_ ``Live`` table with one
  row per query, refreshed at each micro-batch; notes and warnings print above it; a
  summary table when the run ends;
* ``plain`` (not a terminal: a log file, a pipe): one line per event;
* ``json`` (``--log-format json``): one JSON object per event, for log shippers — the
  run's events and the ones derived from them, a
  :class:`~sqlstream.runtime.progress_tracker.ProgressWarning` and a
  :class:`~sqlstream.runtime.progress_tracker.QuerySummary`.

A micro-batch row shows what Spark's ``StreamingQueryProgress`` says of it: batch id,
input rows and their rate (rows/s), processed rows/s, batch duration, watermark, rows and
memory of the state store, rows dropped by the watermark (late rows: the
``numRowsDroppedByWatermark`` of the stateful operators) and the sink's commit.

The warnings and the summary come from
:class:`~sqlstream.runtime.progress_tracker.Tracker` (late rows, a stalled watermark, an
idle source while the state holds rows).

Source: Spark guide, *Monitoring Streaming Queries* (``StreamingQueryProgress``); rich's
``Live`` and ``Table``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sqlstream.runtime.events import (
    BatchProgress,
    Event,
    Notice,
    QueryStarted,
    Stopping,
)
from sqlstream.runtime.progress_tracker import (
    IDLE_REPORTS,
    STALL_BATCHES,
    ProgressWarning,
    QuerySummary,
    Tracker,
    late_rows,
    show_time,
    state_rows,
)

if TYPE_CHECKING:
    from rich.live import Live


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
