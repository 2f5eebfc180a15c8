"""Stateful examples on Spark (``examples/stateful``), each against a plain-Python oracle
over the same CSV files: session windows (static and per-row gap, both TVF spellings) on
the RocksDB state store, chained stateful operators (deduplication → hourly window →
daily window on ``window_time``) in append mode, and one query over two streams with
other watermark delays under both multiple-watermark policies.

The first days of ``examples/flights/data/flights`` are copied into a temporary folder,
each with the modification time of its day (Spark's file source reads files in that
order), and every example reads them one file per micro-batch, so state is carried
across micro-batches. With ``availableNow`` a run ends with a batch that moves the
watermark to the newest event time minus the delay; in append mode a window or session
is written once that watermark reaches its end. So each query must write exactly the
oracle's rows whose end is at or before the final watermark of its last progress event.
The oracle is written here from the spec (docs/dialect.md#window-tvfs; Spark's session semantics:
a row at ``t`` opens ``[t, t + gap)``, and rows whose ranges overlap or touch are one
session), not from the streaming code under test.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone

import pytest

import sqlstream
from sqlstream.planning import settings
from tests.conftest import ROOT, settings_kept

pytestmark = pytest.mark.spark

EXAMPLES = ROOT / "examples" / "stateful"
DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))[:3]
HOUR = timedelta(hours=1)


def _time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def _number(text: str) -> float | None:
    return None if text == "NA" else float(text)


@pytest.fixture(scope="module")
def flights() -> list[dict]:
    """The rows of the copied days, as the CSV has them (``NA`` → ``None``)."""
    rows = []
    for day in DAYS:
        with open(day, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                rows.append(
                    {
                        "tailnum": None if row["tailnum"] == "NA" else row["tailnum"],
                        "departed": row["dep_time"] != "NA",
                        "carrier": row["carrier"],
                        "flight": row["flight"],
                        "origin": row["origin"],
                        "dest": row["dest"],
                        "dep_delay": _number(row["dep_delay"]),
                        "distance": float(row["distance"]),
                        "time_hour": _time(row["time_hour"]),
                    }
                )
    return rows


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with ``data/flights`` (the days, mtimes set) for the examples to run in."""
    root = tmp_path_factory.mktemp("stateful")
    target = root / "data" / "flights"
    target.mkdir(parents=True)
    for day in DAYS:
        shutil.copy(day, target / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(target / day.name, (stamp, stamp))
    return root


def _example(work, name: str, *replacements: tuple[str, str], as_name: str | None = None):
    """Compile ``examples/stateful/<name>.ssql`` in ``work`` (as ``<as_name>.ssql``: the
    pipeline's name, and so its checkpoints): reading ``data/flights`` one file per
    micro-batch, with further text ``replacements``."""
    text = (EXAMPLES / f"{name}.ssql").read_text(encoding="utf-8")
    for old, new in (
        ("'../flights/data/flights'", "'data/flights'"),
        ("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 1"),
        *replacements,
    ):
        assert old in text
        text = text.replace(old, new)
    path = work / f"{as_name or name}.ssql"
    path.write_text(text, encoding="utf-8")
    return sqlstream.compile_file(path)


@pytest.fixture(scope="module")
def runs(spark, work) -> dict:
    """Every example run to its end (``availableNow``), all at once (they overlap on the
    two cores): ``{pipeline: {query name: query}}`` for ``sessions``, ``chained``,
    ``two_feeds_min`` and ``two_feeds_max`` (the policies replaced in the text). Each
    pipeline's settings are put back once its queries started: Spark reads them when a
    query starts (its session is cloned then)."""
    pipelines = {"sessions": _example(work, "sessions"), "chained": _example(work, "chained")}
    for policy in ("min", "max"):
        pipelines[f"two_feeds_{policy}"] = _example(
            work,
            "two_feeds",
            ("multipleWatermarkPolicy' = 'max'", f"multipleWatermarkPolicy' = '{policy}'"),
            (
                "path = 'out/two_feeds'",
                f"path = 'out/two_feeds_{policy}', query_name = 'hourly_{policy}'",
            ),
            as_name=f"two_feeds_{policy}",
        )
    started = {}
    for name, pipeline in pipelines.items():
        with settings_kept(spark, pipeline):
            started[name] = {q.name: q for q in pipeline.start(spark, available_now=True)}
    for queries in started.values():
        for query in queries.values():
            query.awaitTermination()
            assert query.exception() is None
    return {name: (pipelines[name], queries) for name, queries in started.items()}


def _watermark(query) -> datetime:
    """The global watermark of the query's last micro-batch."""
    text = query.recentProgress[-1]["eventTime"]["watermark"]
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def _written(spark, path) -> list[tuple]:
    return sorted(tuple(row) for row in spark.read.parquet(str(path)).collect())


# ---- sessions on RocksDB -----------------------------------------------------------------------


def _sessions(rows, gap, aggregate) -> list[tuple]:
    """Session windows per route of the departed flights: a row at ``t`` covers ``[t, t +
    gap(row))``; a row that starts at or before the open session's end joins it (Spark
    merges overlapping and touching ranges). Returns ``(origin, dest, start, end,
    *aggregate(rows))``."""
    by_route = defaultdict(list)
    for row in rows:
        if row["departed"]:
            by_route[(row["origin"], row["dest"])].append(row)
    sessions = []
    for route, events in by_route.items():
        events.sort(key=lambda r: r["time_hour"])
        current: list[dict] = []
        end = None
        for row in events:
            if current and row["time_hour"] > end:
                sessions.append((*route, current[0]["time_hour"], end, *aggregate(current)))
                current = []
            end = max(end, row["time_hour"] + gap(row)) if current else row["time_hour"] + gap(row)
            current.append(row)
        sessions.append((*route, current[0]["time_hour"], end, *aggregate(current)))
    return sessions


def _delays(rows) -> list[float]:
    return [r["dep_delay"] for r in rows if r["dep_delay"] is not None]


def _worst(rows):
    delays = _delays(rows)
    return (len(rows), max(delays) if delays else None)


def _average(rows):
    delays = _delays(rows)
    return (len(rows), sum(delays) / len(delays) if delays else None)


@pytest.fixture(scope="module")
def sessions_run(runs):
    return runs["sessions"]


def test_static_gap_sessions_equal_the_gap_logic(spark, work, flights, sessions_run):
    _, queries = sessions_run
    closed = _watermark(queries["sessions"])
    expected = [s for s in _sessions(flights, lambda r: 2 * HOUR, _worst) if s[3] <= closed]
    assert len(expected) > 1000 and max(s[4] for s in expected) > 10  # sessions of many flights
    assert _written(spark, work / "out" / "sessions") == sorted(expected)


def test_dynamic_gap_sessions_equal_the_gap_logic(spark, work, flights, sessions_run):
    _, queries = sessions_run
    closed = _watermark(queries["service"])

    def gap(row):
        return 4 * HOUR if row["distance"] >= 1500 else 2 * HOUR

    expected = [s for s in _sessions(flights, gap, _average) if s[3] <= closed]
    static = {s[:4] for s in _sessions(flights, lambda r: 2 * HOUR, _average) if s[3] <= closed}
    assert len({s[:4] for s in expected} - static) > 50  # the gap changes sessions
    written = _written(spark, work / "out" / "service")
    assert [s[:5] for s in written] == [s[:5] for s in sorted(expected)]
    for row, want in zip(written, sorted(expected), strict=True):  # averages, to rounding
        assert (row[5] is None and want[5] is None) or abs(row[5] - want[5]) < 1e-9


def test_sessions_ran_on_rocksdb_with_changelog_checkpointing(work, sessions_run):
    pipeline, queries = sessions_run
    rocksdb = dict(settings.STATE_STORES["rocksdb"])
    for name, query in queries.items():
        checkpoint = next(q.checkpoint_location for q in pipeline.plan.queries if q.name == name)
        with open(
            os.path.join(checkpoint, "sqlstream", "state_signature.json"), encoding="utf-8"
        ) as f:
            record = json.load(f)
        assert record["spark"]["state_store_provider"] == rocksdb[settings.PROVIDER_CLASS]
        with open(os.path.join(checkpoint, "offsets", "0"), encoding="utf-8") as f:
            assert rocksdb[settings.PROVIDER_CLASS] in f.read()  # Spark pinned it
        metrics = query.recentProgress[-1]["stateOperators"][0]["customMetrics"]
        assert any(key.startswith("rocksdb") for key in metrics)
        changelogs = [
            f
            for _, _, files in os.walk(os.path.join(checkpoint, "state"))
            for f in files
            if f.endswith(".changelog")
        ]
        assert changelogs, "each micro-batch committed a changelog"


# ---- chained stateful operators --------------------------------------------------------------


def _daily(rows, keep=lambda row: True) -> list[tuple]:
    """Departures per origin and hour (each flight once), then per origin and UTC day:
    ``(day, origin, sum, max of the hours)``, with each day's end."""
    unique = {(r["carrier"], r["flight"], r["time_hour"]): r for r in rows}.values()
    hourly = Counter((r["origin"], r["time_hour"]) for r in unique if keep(r))
    days = defaultdict(list)
    for (origin, hour), count in hourly.items():
        days[(hour.replace(hour=0), origin)].append(count)
    return [(day, origin, sum(counts), max(counts)) for (day, origin), counts in days.items()]


@pytest.fixture(scope="module")
def chained_run(runs):
    return runs["chained"][1]


def test_three_stateful_operators_in_append_equal_the_batch(spark, work, flights, chained_run):
    closed = _watermark(chained_run["daily"])
    expected = [d for d in _daily(flights) if d[0] + 24 * HOUR <= closed]
    assert len(expected) == 3 * (len(DAYS) - 1) or len(expected) == 3 * len(DAYS)
    assert _written(spark, work / "out" / "daily") == sorted(expected)


def test_window_of_window_time_equals_the_batch(spark, work, flights, chained_run):
    closed = _watermark(chained_run["daily_delayed"])
    delayed = [
        d
        for d in _daily(flights, lambda r: (r["dep_delay"] or 0) > 15)
        if d[0] + 24 * HOUR <= closed
    ]
    assert delayed
    assert _written(spark, work / "out" / "daily_delayed") == sorted(delayed)


# ---- multiple watermarks ---------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["min", "max"])
def test_watermark_policy_decides_the_global_watermark(spark, work, flights, runs, policy):
    pipeline, queries = runs[f"two_feeds_{policy}"]
    assert (
        f"global watermark: {policy} of ewr_feed.time_hour - 1 hour, "
        "jfk_lga_feed.time_hour - 6 hours" in pipeline.translate()
    )
    # Spark pushes each view's filter below the watermark: a feed's watermark follows
    # the newest row it keeps (EWR's flights; JFK's and LGA's), minus its delay.
    ewr = max(r["time_hour"] for r in flights if r["origin"] == "EWR") - HOUR
    jfk_lga = max(r["time_hour"] for r in flights if r["origin"] != "EWR") - 6 * HOUR
    closed = _watermark(queries[f"hourly_{policy}"])
    assert closed == (min if policy == "min" else max)(ewr, jfk_lga) and ewr != jfk_lga
    hourly = Counter((r["time_hour"], r["origin"]) for r in flights)
    expected = [
        (hour, hour + HOUR, origin, n)
        for (hour, origin), n in hourly.items()
        if hour + HOUR <= closed
    ]
    assert _written(spark, work / "out" / f"two_feeds_{policy}") == sorted(expected)
