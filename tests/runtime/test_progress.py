"""Live progress (sqlstream/runtime/progress.py) on the events of real Spark runs.

One run in the shared session reads five files of flights, one per micro-batch: two days,
then three files of rows of the first day again — late rows, older than the watermark,
which Spark drops while the watermark stays where the second day put it. The expected
numbers come from the CSV files themselves (plain Python). Spark counts dropped rows at
the state store's input (``numRowsDroppedByWatermark``), after the aggregation's partial
aggregation: one row per (window, origin) group and input partition — each small file is
one partition — so the oracle of a late file is its number of distinct (hour, origin).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import sqlstream
from sqlstream.runtime.events import BatchProgress, QueryIdle, QueryStarted, QueryTerminated
from sqlstream.runtime.progress import COLUMNS, ProgressRenderer
from sqlstream.runtime.progress_tracker import Tracker, show_time

FLIGHTS = Path(__file__).resolve().parents[2] / "examples" / "flights" / "data" / "flights"
HEADER = (
    "year,month,day,dep_time,sched_dep_time,dep_delay,arr_delay,carrier,flight,tailnum,"
    "origin,dest,distance,time_hour"
)
COLUMNS_SQL = """year INT, month INT, day INT, dep_time INT, sched_dep_time INT,
    dep_delay DOUBLE, arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING,
    origin STRING, dest STRING, distance DOUBLE, time_hour TIMESTAMP"""


def _rows(day: str) -> list[str]:
    return (FLIGHTS / f"{day}.csv").read_text().splitlines()[1:]


def _pipeline(tmp: Path, emit: str, extra: str = "") -> str:
    return f"""{extra}
CREATE STREAM flights ({COLUMNS_SQL},
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = '{tmp / "in"}', format = 'csv', header = true,
        nullValue = 'NA', maxFilesPerTrigger = 1);
CREATE SINK hourly WITH (connector = 'files', path = '{tmp / "out"}', format = 'parquet',
                         checkpoint_location = '{tmp / "checkpoint"}');
INSERT INTO hourly
SELECT window_start, origin, COUNT(*) AS flights
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
{emit};
"""


def _write_files(folder: Path, files: list[list[str]]) -> None:
    folder.mkdir(parents=True)
    base = time.time() - 3600
    for i, rows in enumerate(files):
        path = folder / f"part-{i}.csv"
        path.write_text("\n".join([HEADER, *rows]) + "\n")
        os.utime(path, (base + i * 60, base + i * 60))  # Spark reads files by mtime


def _hour(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def late_run(spark, tmp_path_factory):
    """The events of the run, and what the input files say they must show."""
    tmp = tmp_path_factory.mktemp("late")
    day1, day2 = _rows("2013-01-01"), _rows("2013-01-02")
    late = [day1[:150], day1[150:250], day1[250:300]]
    _write_files(tmp / "in", [day1, day2, *late])
    pipeline = sqlstream.compile(_pipeline(tmp, "EMIT FINAL ONCE"), path=str(tmp / "late.ssql"))
    events = []
    sqlstream.Session(spark, listeners=[events.append]).run(pipeline)
    hours = [_hour(next(csv.reader([r]))[13]) for r in day1 + day2]
    watermark = max(hours) - timedelta(hours=1)
    late_hours = [_hour(next(csv.reader([r]))[13]) for part in late for r in part]
    assert all(h < watermark for h in late_hours)  # every row of the late files is late
    groups = [len({(r[13], r[10]) for r in csv.reader(part)}) for part in late]
    expected = {
        "input_rows": len(day1) + len(day2) + len(late_hours),
        "late_rows": sum(groups),
        "late_per_file": groups,
        "watermark": watermark.strftime("%Y-%m-%d %H:%M:%S"),
    }
    shutil.rmtree(tmp, ignore_errors=True)
    return events, expected


@pytest.mark.spark
def test_plain_lines_warn_of_late_rows_and_a_stalled_watermark(late_run):
    events, expected = late_run
    lines: list[str] = []
    renderer = ProgressRenderer(lines.append, "plain", stall_batches=2)
    for event in events:
        renderer(event)
    batches = [e for e in events if isinstance(e, BatchProgress)]
    batch_lines = [line for line in lines if line.startswith("query hourly batch ")]
    assert len(batch_lines) == len(batches) >= 5
    assert lines[0].startswith("started query hourly: append mode, trigger availableNow")
    # one late-rows warning per late file, with its count, in file order
    late = [line for line in lines if "late rows dropped by the watermark" in line]
    assert [int(line.split(": ")[2].split()[0].replace(",", "")) for line in late] == expected[
        "late_per_file"
    ]
    assert all(f"event time before {expected['watermark']}" in line for line in late)
    # the watermark stays at the second day's for the three late files: warned once
    stalled = [line for line in lines if "the watermark has stayed at" in line]
    assert len(stalled) == 1 and expected["watermark"] in stalled[0], lines
    assert lines[-1] == (
        f"query hourly finished: {len(batches)} micro-batches, {expected['input_rows']:,} input "
        f"rows ({lines[-1].split('(')[1].split(')')[0]}), final watermark "
        f"{expected['watermark']}, state {lines[-1].split('state ')[1].split(',')[0]}, "
        f"{expected['late_rows']:,} late rows dropped"
    )
    first = batch_lines[0]
    assert (
        f"query hourly batch {batches[0].batch_id}: {batches[0].num_input_rows:,} input rows"
        in first
    )
    assert "watermark -" in first and "late rows dropped; sink committed in" in first


@pytest.mark.spark
def test_json_lines_one_object_per_event_with_warnings_and_summary(late_run):
    events, expected = late_run
    lines: list[str] = []
    renderer = ProgressRenderer(lines.append, "json", stall_batches=2)
    for event in events:
        renderer(event)
    objects = [json.loads(line) for line in lines]
    kinds = [o["event"] for o in objects]
    assert kinds[0] == "query_started" and kinds[-2:] == ["query_terminated", "query_summary"]
    assert kinds.count("batch_progress") == sum(isinstance(e, BatchProgress) for e in events)
    warnings = [o for o in objects if o["event"] == "warning"]
    assert [w["rows"] for w in warnings if w["what"] == "late_rows"] == expected["late_per_file"]
    assert [w["what"] for w in warnings].count("watermark_stalled") == 1
    summary = objects[-1]
    assert (summary["status"], summary["input_rows"], summary["late_rows"]) == (
        "finished",
        expected["input_rows"],
        expected["late_rows"],
    )
    assert show_time(summary["final_watermark"]) == expected["watermark"]
    progress = [o for o in objects if o["event"] == "batch_progress"]
    assert (
        sum(
            sum(op["num_rows_dropped_by_watermark"] for op in p["state_operators"])
            for p in progress
        )
        == expected["late_rows"]
    )


@pytest.mark.spark
def test_live_table_and_summary_on_a_terminal(late_run):
    from rich.console import Console

    events, expected = late_run
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200, color_system=None)
    with ProgressRenderer(fmt="live", console=console, stall_batches=2) as renderer:
        for event in events:
            renderer(event)
    text = screen.getvalue()
    last = [e for e in events if isinstance(e, BatchProgress)][-1]
    header = next(line for line in text.splitlines() if "input rows/s" in line)
    assert [c for c in COLUMNS if c in header] == list(COLUMNS)
    assert f"warning: query hourly: {expected['late_per_file'][0]} late rows dropped" in text
    summary = text[text.rindex("summary") :]
    assert "finished" in summary and f"{expected['input_rows']:,}" in summary
    assert expected["watermark"] in summary and f"{expected['late_rows']:,}" in summary
    late = f"{expected['late_per_file'][-1]} ({expected['late_rows']} in run)"
    assert re.search(
        rf"^hourly +{last.batch_id} +{last.num_input_rows} .* {re.escape(late)} ", text, re.M
    ), text  # the last row: its late rows and the run's


@pytest.mark.spark
def test_source_idle_with_open_windows_warns(spark, tmp_path):
    """A query without new files: Spark reports it idle (here every 200 ms) while its
    state holds the open windows of the last day."""
    _write_files(tmp_path / "in", [_rows("2013-01-01")[:200]])
    setting = "SET 'spark.sql.streaming.noDataProgressEventInterval' = '200ms';"
    pipeline = sqlstream.compile(
        _pipeline(tmp_path, "EMIT FINAL", setting), path=str(tmp_path / "idle.ssql")
    )
    events: list = []
    queries = sqlstream.Session(spark, listeners=[events.append]).start(pipeline)
    try:
        deadline = time.time() + 60
        while sum(isinstance(e, QueryIdle) for e in events) < 3:
            assert time.time() < deadline, events
            time.sleep(0.2)
    finally:
        for query in queries:
            query.stop()
    while not any(isinstance(e, QueryTerminated) for e in events):
        time.sleep(0.1)
    spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
    tracker = Tracker(idle_reports=3)
    derived = [d for e in events for d in tracker.observe(e)]
    idle = [d for d in derived if getattr(d, "what", None) == "source_idle"]
    assert len(idle) == 1, derived
    state = (
        [e for e in events if isinstance(e, BatchProgress)][-1].state_operators[0].num_rows_total
    )
    assert state > 0 and f"the {state:,} rows of state (open windows)" in idle[0].message
    assert isinstance(events[0], QueryStarted)
