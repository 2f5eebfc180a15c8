"""The quality example (``examples/quality/flights_quality.ssql``) on Spark, on three days
of real flights (2013-01-08 to 10, one file per micro-batch; HA 51 left 1301 minutes late
on the 9th, MQ 3695 1126 minutes on the 10th): its rules' counts per micro-batch equal a
plain-Python count over the same CSV files, the hours it writes equal a plain-Python
aggregation of the departed flights, and its sink's rule counts the written hours with
more than 25 departures.
"""

from __future__ import annotations

import csv
from collections import Counter
from datetime import datetime

import pytest

import sqlstream
from sqlstream.runtime.events import BatchProgress
from sqlstream.runtime.progress_tracker import QuerySummary, Tracker
from tests.conftest import ROOT
from tests.support.flights import DAYS, copy_days

pytestmark = pytest.mark.spark

EXAMPLE = ROOT / "examples" / "quality" / "flights_quality.ssql"


def test_the_example_counts_its_rules_as_python_does(spark, tmp_path):
    days = DAYS[7:10]
    copy_days(tmp_path, days)
    text = (
        EXAMPLE.read_text()
        .replace("'../flights/data/flights'", "'data/flights'")
        .replace("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 1")
    )
    events: list = []
    tracker = Tracker()
    session = sqlstream.Session(
        spark, listeners=[events.append, lambda e: events.extend(tracker.observe(e))]
    )
    session.run(session.compile(text, path=str(tmp_path / "quality.ssql")), available_now=True)
    expected, hours = [], Counter()
    for day in days:
        with open(day, newline="") as handle:
            rows = list(csv.DictReader(handle))
        delays = [float(r["dep_delay"]) for r in rows if r["dep_delay"] != "NA"]
        expected.append(
            {
                "known_origin": sum(r["origin"] not in ("EWR", "JFK", "LGA") for r in rows),
                "sane_delay": sum(d >= 1000 for d in delays),
                "has_departure": sum(r["dep_time"] == "NA" for r in rows),
            }
        )
        hours.update(
            (datetime.strptime(r["time_hour"], "%Y-%m-%dT%H:%M:%SZ"), r["origin"])
            for r in rows
            if r["dep_time"] != "NA"
        )
    batches = [e for e in events if isinstance(e, BatchProgress)]
    by_batch = [{k: v for k, v in b.expectations.items() if k in expected[0]} for b in batches]
    assert by_batch[:3] == expected  # a file per micro-batch; then a no-data micro-batch
    assert all(not any(b.values()) for b in by_batch[3:])
    assert sum(e["sane_delay"] for e in expected) == 2  # HA 51 and MQ 3695, kept
    assert sum(e["has_departure"] for e in expected) > 0
    written = spark.read.parquet(str(tmp_path / "out" / "quality" / "hourly")).collect()
    assert written and all(hours[(r.window_start, r.origin)] == r.departures for r in written)
    (summary,) = [e for e in events if isinstance(e, QuerySummary)]
    assert summary.expectations["at_most_25_an_hour"] == sum(r.departures > 25 for r in written)
    assert summary.expectations["at_most_25_an_hour"] > 0
