"""The bundled flights data (``examples/flights``) as the Spark tests use it.

Day files copied as if each arrived on its day (Spark's file source takes new files in order
of modification time, so each copy's mtime is midnight UTC of its date), the flights'
columns and a ``CREATE STREAM`` over the copies, one run of a pipeline file to its end, and
the example's hourly aggregation computed in plain Python (the oracle of its state).
"""

from __future__ import annotations

import csv
import os
import shutil
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import sqlstream
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "flights"
"""The folder of the README's example (``hourly_delays.ssql`` and ``data/``)."""

DAYS = sorted((EXAMPLE / "data" / "flights").glob("*.csv"))
"""The 365 day files of 2013 (``data/flights/2013-MM-DD.csv``), in date order."""

FLIGHT_COLUMNS = """
    year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,
    arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
    distance DOUBLE, time_hour TIMESTAMP"""
"""The columns of a day file, as a ``CREATE STREAM`` declares them."""

FLIGHTS_STREAM = """\
CREATE STREAM flights (
    year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,
    arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
    distance DOUBLE, time_hour TIMESTAMP
) WITH (connector = 'files', path = 'data/flights', format = 'csv', header = true,
        nullValue = 'NA', maxFilesPerTrigger = 1);
"""
"""The flights stream over the day files :func:`copy_days` writes, one file per micro-batch."""


def _arrived(day: Path, target: Path) -> None:
    """Copy ``day`` into the folder ``target`` with the mtime of midnight UTC of its date."""
    shutil.copy(day, target / day.name)
    stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
    os.utime(target / day.name, (stamp, stamp))


def copy_days(work: Path, days: list[Path]) -> None:
    """Copy the day files ``days`` into ``work/data/flights`` (made if missing) as if each
    arrived on its day, for a pipeline in ``work`` that reads ``data/flights``."""
    target = work / "data" / "flights"
    target.mkdir(parents=True, exist_ok=True)
    for day in days:
        _arrived(day, target)


def first_days(folder: Path, n: int = 3) -> Path:
    """Copy the first ``n`` day files into the new folder ``folder/flights`` as if each
    arrived on its day; returns that folder (``FileExistsError`` if it exists)."""
    target = folder / "flights"
    target.mkdir()
    for day in DAYS[:n]:
        _arrived(day, target)
    return target


def run_to_end(spark, pipeline_file) -> tuple[str | None, int]:
    """Compile ``pipeline_file`` (one query) and run it in ``spark`` until it ends (its
    trigger must end it, e.g. ``EMIT … ONCE``); the query must not fail. Returns the last
    watermark Spark reported (``2013-01-04T03:00:00.000Z``; ``None`` with no progress) and
    the number of input rows of all its micro-batches."""
    pipeline = sqlstream.compile_file(pipeline_file)
    (query,) = pipeline.start(spark)
    query.awaitTermination()
    assert query.exception() is None
    progress = query.recentProgress
    watermark = progress[-1]["eventTime"].get("watermark") if progress else None
    return watermark, sum(p["numInputRows"] for p in progress)


def hourly_windows(files) -> dict:
    """Plain Python over the CSV files, the example's aggregation: ``{(window start,
    origin): (flights, sum of dep_delay, non-null dep_delay, delayed)}`` (the window start
    a naive UTC datetime)."""
    windows: dict = defaultdict(lambda: [0, 0.0, 0, 0])
    for path in files:
        with open(path, newline="") as handle:
            for row in csv.DictReader(handle):
                acc = windows[
                    (datetime.strptime(row["time_hour"], "%Y-%m-%dT%H:%M:%SZ"), row["origin"])
                ]
                acc[0] += 1
                if row["dep_delay"] != "NA":
                    delay = float(row["dep_delay"])
                    acc[1] += delay
                    acc[2] += 1
                    acc[3] += delay > 15
    return {k: tuple(v) for k, v in windows.items()}


def parse_watermark(text: str) -> datetime:
    """``2013-01-04T03:00:00.000Z`` → a naive UTC datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
