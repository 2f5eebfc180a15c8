"""``connector = 'iceberg'`` and ``'delta'`` on Spark (the Python write path: pyiceberg and
delta-rs from ``foreachBatch``).

* The example ``examples/lakehouse/hourly_lakehouse.ssql`` over six days of flights (two
  day files per micro-batch): the Iceberg table (``EMIT FINAL``, appended) holds every
  hourly window the final watermark closed, the Delta table (``EMIT CHANGES``, upserted by
  key) every window, each equal to the aggregation computed in plain Python over the CSV
  files; a second run on the same checkpoints adds no commit to either table, and
  Spark made to replay the last micro-batch of each (its commit file removed, the state
  a kill between the table's commit and Spark's leaves) changes neither table.
* ``sqlstream exec`` killed with SIGKILL at 2 seeded random points (the harness of
  ``tests/support/crash_harness.py``): a stateless filter appended to an Iceberg table and
  an hourly windowed aggregation (``EMIT FINAL``) appended to a Delta table each end
  equal to the batch oracle — an appended micro-batch replayed after a kill adds no row
  twice, since each commit holds the query's id and batch id.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

import sqlstream
from sqlstream.connectors.delta import DeltaWriter
from sqlstream.connectors.iceberg import IcebergWriter
from tests.support.crash_harness import (
    expected_hourly,
    expected_late,
    prepare,
    rewind_to_batch,
    run_until_done,
)
from tests.support.flights import copy_days, hourly_windows

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lakehouse" / "hourly_lakehouse.ssql"
DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))


def _example(work: Path, days: int) -> Path:
    """The example in ``work``, reading ``work/data/flights`` (``days`` day files), two
    day files per micro-batch."""
    copy_days(work, DAYS[:days])
    text = EXAMPLE.read_text().replace("'../flights/data/flights'", "'data/flights'")
    text = text.replace("maxFilesPerTrigger = 31 ", "maxFilesPerTrigger = 2  ")
    path = work / "hourly_lakehouse.ssql"
    path.write_text(text)
    return path


def _run(spark, path: Path) -> None:
    for query in sqlstream.compile_file(path).start(spark):
        query.awaitTermination()
        assert query.exception() is None


def _windows(table) -> dict:
    """``{(naive UTC window start, origin): (flights, avg_dep_delay)}`` of an Arrow table."""
    return {
        (r["window_start"].astimezone(dt.timezone.utc).replace(tzinfo=None), r["origin"]): (
            r["flights"],
            r["avg_dep_delay"],
        )
        for r in table.to_pylist()
    }


def _same(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for key, (flights, avg) in expected.items():
        got_flights, got_avg = actual[key]
        assert got_flights == flights, key
        assert (got_avg is None) == (avg is None) and (
            avg is None or math.isclose(got_avg, avg, rel_tol=1e-9)
        ), key


def test_example_equals_the_batch_oracle_and_a_second_run_adds_nothing(spark, tmp_path):
    path = _example(tmp_path, 6)
    _run(spark, path)

    windows = hourly_windows(sorted((tmp_path / "data" / "flights").glob("*.csv")))
    every = {
        key: (n, total / non_null if non_null else None)
        for key, (n, total, non_null, _) in windows.items()
    }
    watermark = max(start for start, _ in every) - dt.timedelta(hours=1)  # the final one
    closed = {k: v for k, v in every.items() if k[0] + dt.timedelta(hours=1) <= watermark}
    assert 0 < len(closed) < len(every)

    iceberg = IcebergWriter("lake.hourly", str(tmp_path / ".sqlstream" / "warehouse"))
    delta = DeltaWriter(str(tmp_path / "out" / "hourly_delta"))
    _same(_windows(iceberg.load().scan().to_arrow()), closed)
    _same(_windows(delta.table().to_pyarrow_table()), every)

    snapshots, version = len(iceberg.load().snapshots()), delta.table().version()
    _run(spark, path)  # the same checkpoints: nothing new to read
    assert len(iceberg.load().snapshots()) == snapshots
    assert delta.table().version() == version
    _same(_windows(iceberg.load().scan().to_arrow()), closed)

    # A kill right after a table's commit and before Spark's commit log: the checkpoint
    # put back to that state for the last micro-batch each table committed (the offsets
    # after it and the commits from it removed, as tests/connectors/test_postgres.py does),
    # Spark runs that batch again, and the writer skips it: its id is in the table's commit
    # metadata.
    replayed = []
    for query, writer in (("hourly_iceberg", iceberg), ("hourly_delta", delta)):
        checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "hourly_lakehouse" / query
        app = json.loads((checkpoint / "metadata").read_text())["id"]
        batch = writer.committed(app)
        assert batch is not None and batch >= 1
        rewind_to_batch(checkpoint, batch)
        replayed.append(checkpoint / "commits" / str(batch))
    _run(spark, path)
    assert all(p.exists() for p in replayed)  # run again and committed by Spark
    assert len(iceberg.load().snapshots()) == snapshots
    assert delta.table().version() == version
    _same(_windows(iceberg.load().scan().to_arrow()), closed)
    _same(_windows(delta.table().to_pyarrow_table()), every)


# ---- SIGKILL at random points ------------------------------------------------------------

LATE_ICEBERG = """
CREATE SINK late_iceberg WITH (connector = 'iceberg', table = 'crash.late');
INSERT INTO late_iceberg
SELECT year, month, day, flight, carrier, origin, dep_delay, time_hour
FROM flights WHERE dep_delay > 30 EMIT ONCE;
"""
HOURLY_DELTA = """
CREATE SINK hourly_delta WITH (connector = 'delta', path = 'out/hourly_delta');
INSERT INTO hourly_delta
SELECT window_start, origin, COUNT(*) AS flights, SUM(dep_delay) AS total_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT FINAL ONCE;
"""


def _utc_text(value: dt.datetime) -> str:
    return str(value.astimezone(dt.timezone.utc).replace(tzinfo=None))


def test_sigkill_at_random_points_commits_each_micro_batch_once(tmp_path):
    files = prepare(tmp_path, 8)
    with (tmp_path / "p.ssql").open("a") as pipeline:
        pipeline.write(LATE_ICEBERG + HOURLY_DELTA)
    report = run_until_done(tmp_path, kills=2, seed=33)
    assert len(report.kills) == 2, report

    late = IcebergWriter("crash.late", str(tmp_path / ".sqlstream" / "warehouse"))
    rows = [
        (*(r[c] for c in ("year", "month", "day", "flight", "carrier", "origin", "dep_delay")),)
        + (_utc_text(r["time_hour"]),)
        for r in late.load().scan().to_arrow().to_pylist()
    ]
    assert sorted(rows) == expected_late(files)  # no row lost, none twice

    hourly = DeltaWriter(str(tmp_path / "out" / "hourly_delta")).table().to_pyarrow_table()
    got = sorted(
        (
            _utc_text(r["window_start"]),
            r["origin"],
            r["flights"],
            None if r["total_delay"] is None else round(r["total_delay"], 6),
        )
        for r in hourly.to_pylist()
    )
    assert got == expected_hourly(files)
    print(f"kills {report.kills}; replayed {report.replayed}")
