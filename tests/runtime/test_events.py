"""The event types and renderers without Spark: exec's text lines, JSON lines, listeners."""

from __future__ import annotations

import json

from sqlstream.diagnostics.errors import QueryFailedError
from sqlstream.diagnostics.source_text import Source, Span
from sqlstream.runtime.events import (
    BatchProgress,
    EventTime,
    Listener,
    Notice,
    QueryFailed,
    QueryStarted,
    QueryTerminated,
    SinkProgress,
    Stopping,
    deliver,
)
from sqlstream.runtime.renderers import JsonLinesRenderer, TextRenderer

SPAN = Span(40, 60, 3, 1, "p.ssql")
IDS = {"name": "hourly", "id": "q-1", "run_id": "r-1"}


def _batch(batch_id: int, rows: int, watermark: str | None) -> BatchProgress:
    return BatchProgress(
        **IDS,
        batch_id=batch_id,
        timestamp="2026-11-22T21:00:00.000Z",
        num_input_rows=rows,
        input_rows_per_second=float("nan"),
        processed_rows_per_second=100.0,
        batch_duration_ms=250,
        duration_ms={"triggerExecution": 250},
        event_time=EventTime(watermark=watermark),
        state_operators=(),
        sources=(),
        sink=SinkProgress("FileSink[out/hourly]", -1),
    )


def test_text_renderer_writes_execs_lines():
    lines = []
    render = TextRenderer(lines.append)
    for event in (
        Notice("default: spark.ui.enabled=false"),
        QueryStarted(
            **IDS,
            output_mode="append",
            trigger="availableNow",
            sink="files",
            path="out/hourly",
            checkpoint_location="state/hourly",
            span=SPAN,
        ),
        _batch(0, 10, None),
        _batch(1, 5, "2013-01-01T03:00:00.000Z"),
        _batch(2, 0, None),
        QueryTerminated(**IDS),
        Stopping("interrupted"),
    ):
        render(event)
    assert lines == [
        "default: spark.ui.enabled=false",
        "started query hourly: append mode, trigger availableNow, -> out/hourly (checkpoint state/hourly)",
        "query hourly finished: 3 micro-batches, 15 input rows, final watermark 2013-01-01T03:00:00.000Z",
        "interrupted: stopping queries",
    ]


def test_text_renderer_progress_lines_and_silent_failure():
    lines = []
    render = TextRenderer(lines.append, progress=True)
    render(_batch(4, 7, "2013-01-01T03:00:00.000Z"))
    error = QueryFailedError("query 'hourly' failed: boom", SPAN)
    render(QueryTerminated(**IDS, exception="boom"))
    render(QueryFailed(**IDS, message="boom", error=error))
    assert lines == [
        "query hourly: batch 4, 7 input rows, 250 ms, watermark 2013-01-01T03:00:00.000Z"
    ]


def test_json_lines_one_object_per_event():
    lines = []
    render = JsonLinesRenderer(lines.append)
    source = Source("SELECT 1;\n\nINSERT INTO o SELECT * FROM s;\n", "p.ssql")
    error = QueryFailedError("query 'hourly' failed: boom", SPAN, source)
    render(_batch(0, 3, None))
    render(QueryFailed(**IDS, message="boom", error=error))
    batch, failed = (json.loads(line) for line in lines)
    assert batch["event"] == "batch_progress" and batch["num_input_rows"] == 3
    assert batch["input_rows_per_second"] is None  # Spark's NaN
    assert batch["sink"] == {
        "description": "FileSink[out/hourly]",
        "num_output_rows": -1,
        "metrics": {},
    }
    assert failed["event"] == "query_failed" and failed["run_id"] == "r-1"
    assert (failed["error"]["code"], failed["error"]["line"]) == ("SS501", 3)


def test_a_listener_is_a_callable_or_has_on_event():
    seen = []

    class Collect:
        def on_event(self, event):
            seen.append(("object", event))

    event = Notice("hello")
    deliver(Collect(), event)
    deliver(lambda e: seen.append(("callable", e)), event)
    assert seen == [("object", event), ("callable", event)]
    assert isinstance(Collect(), Listener) and isinstance(TextRenderer(), Listener)
