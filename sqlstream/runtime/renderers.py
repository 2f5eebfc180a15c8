"""Two listeners that write events as they come: :class:`TextRenderer` (a line per query
start and end, and per micro-batch with ``progress``) and :class:`JsonLinesRenderer` (one JSON
object per event). ``sqlstream exec``'s live progress is :mod:`sqlstream.runtime.progress`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlstream.runtime.events import (
    BatchProgress,
    Event,
    Notice,
    QueryStarted,
    QueryTerminated,
    Stopping,
)


class TextRenderer:
    """Writes a line per query start and end (and, with ``progress``, per micro-batch), one
    call of ``write`` per line.

    * :class:`Notice`: its message.
    * :class:`QueryStarted`: ``started query NAME: MODE mode, trigger T, -> PATH
      (checkpoint DIR)``.
    * :class:`BatchProgress`: nothing, unless ``progress=True``: ``query NAME: batch N,
      R input rows, D ms[, watermark W]``.
    * :class:`QueryTerminated` without exception: ``query NAME finished: N micro-batches,
      R input rows[, final watermark W]`` (counted from the :class:`BatchProgress` events
      of the same run).
    * :class:`Stopping`: ``REASON: stopping queries``.
    * :class:`QueryIdle`, :class:`QueryFailed`: nothing (the failure is raised as a
      :class:`~sqlstream.diagnostics.errors.QueryFailedError`, which the CLI prints).

    Args:
        write: receives each line (no newline), e.g. ``print``.
        progress: also write a line per micro-batch.
    """

    def __init__(self, write: Callable[[str], None] = print, progress: bool = False) -> None:
        self.write = write
        self.progress = progress
        self._batches: dict[str, list] = {}  # run id -> [micro-batches, input rows, watermark]

    def on_event(self, event: Event) -> None:
        """Write the line(s) of ``event``, if it has any."""
        if isinstance(event, Notice):
            self.write(event.message)
        elif isinstance(event, QueryStarted):
            self._batches[event.run_id] = [0, 0, None]
            checkpoint = (
                f" (checkpoint {event.checkpoint_location})" if event.checkpoint_location else ""
            )
            self.write(
                f"started query {event.name}: {event.output_mode} mode, trigger "
                f"{event.trigger}, -> {event.path or event.sink}{checkpoint}"
            )
        elif isinstance(event, BatchProgress):
            totals = self._batches.setdefault(event.run_id, [0, 0, None])
            totals[0] += 1
            totals[1] += event.num_input_rows
            totals[2] = event.watermark or totals[2]
            if self.progress:
                mark = f", watermark {event.watermark}" if event.watermark else ""
                self.write(
                    f"query {event.name}: batch {event.batch_id}, {event.num_input_rows} "
                    f"input rows, {event.batch_duration_ms} ms{mark}"
                )
        elif isinstance(event, QueryTerminated) and event.exception is None:
            batches, rows, watermark = self._batches.pop(event.run_id, [0, 0, None])
            self.write(
                f"query {event.name} finished: {batches} micro-batches, {rows} input rows"
                + (f", final watermark {watermark}" if watermark else "")
            )
        elif isinstance(event, Stopping):
            self.write(f"{event.reason}: stopping queries")

    __call__ = on_event


class JsonLinesRenderer:
    """Writes one JSON object per event (``event.to_dict()``), one call of ``write`` per line.

    Args:
        write: receives each line (no newline), e.g. ``print``.
    """

    def __init__(self, write: Callable[[str], None] = print) -> None:
        self.write = write

    def on_event(self, event: Event) -> None:
        """Write ``event`` as one line of JSON."""
        self.write(json.dumps(event.to_dict(), default=str))

    __call__ = on_event
