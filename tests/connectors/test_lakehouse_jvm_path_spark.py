"""The ``delta`` sink's JVM write path (Delta's Spark writer, ``DeltaSparkWriter``) run by
``sqlstream exec`` — its own JVM, with the package ``exec`` adds — on the PySpark minors
whose Delta package runs (4.0-4.2; skipped on 4.3, where the Python path writes).

The example's Delta query (``EMIT CHANGES``, upserted by key with ``MERGE``) over four
days of flights, two day files per micro-batch, equals the aggregation computed in plain
Python over the CSV files, read back with delta-rs; Spark made to replay the last
micro-batch (its commit file removed) changes nothing: the table's version stays.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from sqlstream.connectors.delta import DeltaWriter
from sqlstream.connectors.lakehouse_jvm import DELTA_PACKAGES
from tests.support.crash_harness import rewind_to_batch
from tests.support.flights import copy_days, hourly_windows

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lakehouse" / "hourly_lakehouse.ssql"
DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))
MINOR = ".".join(pyspark.__version__.split(".")[:2])


def _exec(path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", "from sqlstream.cli import main; main()", "exec", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "DeltaSparkSessionExtension" in done.stdout + done.stderr


@pytest.mark.skipif(
    MINOR not in DELTA_PACKAGES, reason=f"no Delta Spark package runs on PySpark {MINOR}"
)
def test_the_jvm_path_equals_the_batch_oracle_and_a_replay_changes_nothing(tmp_path):
    copy_days(tmp_path, DAYS[:4])
    text = EXAMPLE.read_text().replace("'../flights/data/flights'", "'data/flights'")
    text = text.replace("maxFilesPerTrigger = 31 ", "maxFilesPerTrigger = 2  ")
    head, _, _ = text.partition("INSERT INTO hourly_iceberg")
    delta_query = text[text.index("INSERT INTO hourly_delta") :]
    path = tmp_path / "hourly_lakehouse.ssql"
    path.write_text(head + delta_query)
    _exec(path)

    windows = hourly_windows(sorted((tmp_path / "data" / "flights").glob("*.csv")))
    expected = {
        key: (n, total / non_null if non_null else None)
        for key, (n, total, non_null, _) in windows.items()
    }
    delta = DeltaWriter(str(tmp_path / "out" / "hourly_delta"))
    _same(delta.table().to_pyarrow_table(), expected)
    operations = [h["operation"] for h in delta.table().history()]
    assert "MERGE" in operations  # written by Delta's Spark writer (delta-rs: no MERGE here)

    checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "hourly_lakehouse" / "hourly_delta"
    app = json.loads((checkpoint / "metadata").read_text())["id"]
    batch, version = delta.committed(app), delta.table().version()
    assert batch is not None and batch >= 1
    rewind_to_batch(checkpoint, batch)
    _exec(path)
    assert (checkpoint / "commits" / str(batch)).exists()  # run again and committed
    assert delta.table().version() == version
    _same(delta.table().to_pyarrow_table(), expected)


def _same(table, expected: dict) -> None:
    actual = {
        (r["window_start"].astimezone(dt.timezone.utc).replace(tzinfo=None), r["origin"]): (
            r["flights"],
            r["avg_dep_delay"],
        )
        for r in table.to_pylist()
    }
    assert actual.keys() == expected.keys()
    for key, (flights, avg) in expected.items():
        got_flights, got_avg = actual[key]
        assert got_flights == flights, key
        assert (got_avg is None) == (avg is None) and (
            avg is None or math.isclose(got_avg, avg, rel_tol=1e-9)
        ), key


@pytest.mark.skipif(
    MINOR not in DELTA_PACKAGES, reason=f"no Delta Spark package runs on PySpark {MINOR}"
)
def test_a_delta_source_reads_the_appends_of_a_table(tmp_path):
    import pyarrow as pa

    table = tmp_path / "lake" / "events"
    batches = [
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "kind": ["a", "b", "a"]}),
        pa.table({"id": pa.array([4, 5], pa.int64()), "kind": ["c", "b"]}),
    ]
    writer = DeltaWriter(str(table))
    for number, rows in enumerate(batches):  # two commits, by delta-rs
        writer.commit(rows, None, "feeder", number, overwrite=False)
    path = tmp_path / "copy.ssql"
    path.write_text(
        "CREATE STREAM events (id BIGINT, kind STRING)\n"
        "WITH (connector = 'delta', path = 'lake/events');\n"
        "CREATE SINK copied WITH (connector = 'delta', path = 'lake/copied');\n"
        "INSERT INTO copied SELECT id, upper(kind) AS kind FROM events EMIT ONCE;\n"
    )
    _exec(path)
    copied = DeltaWriter(str(tmp_path / "lake" / "copied")).table().to_pyarrow_table()
    expected = sorted(
        (i, k.upper()) for rows in batches for i, k in zip(*rows.to_pydict().values(), strict=True)
    )
    assert sorted(zip(*copied.select(["id", "kind"]).to_pydict().values(), strict=True)) == (
        expected
    )
