"""The ``iceberg`` sink's JVM write path (Iceberg's Spark writer, ``IcebergSparkWriter``) run
by ``sqlstream exec`` — its own JVM, with the packages ``exec`` adds — on the PySpark minors
whose Iceberg runtime runs (4.1; skipped elsewhere, where pyiceberg writes: on 4.0 the served
runtime fails the second commit of a streaming query over the SQLite catalog).

The flights stream (one day file per micro-batch) into two Iceberg tables of the SQL
catalog in ``.sqlstream/warehouse``: a stateless filter appended (``writeTo … append``) and
an hourly windowed aggregation upserted by key (``EMIT CHANGES``, ``MERGE INTO``).
``exec`` is killed with SIGKILL at two seeded random points (``tests/support/crash_harness.py``,
one of them between a micro-batch's offset and commit logs) and restarted until it ends;
both tables, read back by pyiceberg (the JVM-written tables read by the Python path), equal
the batch oracle computed in plain Python over the CSV files, and their snapshots were
committed by Spark with the query's id and batch id. Then Spark is made to replay the
aggregation's last micro-batch (its commit file removed, the state a kill between the
table's commit and Spark's leaves): the run commits the batch again in the checkpoint and
adds no snapshot to the table.

An ``iceberg`` source: a table pyiceberg wrote in two commits is read by Iceberg's streaming
reader (``readStream.format('iceberg')`` through the same catalog) and copied into another
table by the JVM path: the copy holds every row, once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from sqlstream.connectors import lakehouse
from sqlstream.connectors.iceberg import IcebergWriter
from sqlstream.connectors.iceberg_jvm import PACKAGES
from tests.support.crash_harness import (
    expected_hourly,
    expected_late,
    prepare,
    rewind_to_batch,
    run_until_done,
)

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
MINOR = ".".join(pyspark.__version__.split(".")[:2])
QUERIES = """
CREATE SINK late_iceberg WITH (connector = 'iceberg', table = 'crash.late');
CREATE SINK hourly_iceberg WITH (connector = 'iceberg', table = 'crash.hourly',
                                 mode = 'upsert', key_columns = 'window_start, origin');
INSERT INTO late_iceberg
SELECT year, month, day, flight, carrier, origin, dep_delay, time_hour
FROM flights WHERE dep_delay > 30 EMIT ONCE;
INSERT INTO hourly_iceberg
SELECT window_start, origin, COUNT(*) AS flights, SUM(dep_delay) AS total_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT CHANGES ONCE;
"""


def _utc_text(value) -> str:
    import datetime as dt

    return str(value.astimezone(dt.timezone.utc).replace(tzinfo=None))


def _tables(work: Path) -> tuple[list, list]:
    warehouse = str(work / ".sqlstream" / "warehouse")
    late = IcebergWriter("crash.late", warehouse).load().scan().to_arrow().to_pylist()
    hourly = IcebergWriter("crash.hourly", warehouse).load().scan().to_arrow().to_pylist()
    columns = ("year", "month", "day", "flight", "carrier", "origin", "dep_delay")
    return (
        sorted(tuple(r[c] for c in columns) + (_utc_text(r["time_hour"]),) for r in late),
        sorted(
            (
                _utc_text(r["window_start"]),
                r["origin"],
                r["flights"],
                None if r["total_delay"] is None else round(r["total_delay"], 6),
            )
            for r in hourly
        ),
    )


def _exec(work: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sqlstream.cli",
            "exec",
            str(work / "p.ssql"),
            "--master",
            "local[2]",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.skipif(MINOR not in PACKAGES, reason=f"no Iceberg Spark runtime for PySpark {MINOR}")
def test_sigkill_and_a_replay_on_the_jvm_path_commit_each_micro_batch_once(tmp_path):
    files = prepare(tmp_path, 5)
    text = (tmp_path / "p.ssql").read_text()
    (tmp_path / "p.ssql").write_text(text[: text.index("CREATE SINK late")] + QUERIES)
    report = run_until_done(tmp_path, kills=2, seed=33, between_logs=True)
    assert len(report.kills) == 2, report
    assert "IcebergSparkSessionExtensions" in (tmp_path / "run-1.log").read_text()

    late, hourly = _tables(tmp_path)
    assert late == expected_late(files)  # no row lost, none twice
    assert hourly == expected_hourly(files, final=False)  # every window's last value

    warehouse = str(tmp_path / ".sqlstream" / "warehouse")
    table = IcebergWriter("crash.hourly", warehouse)
    checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "p" / "hourly_iceberg"
    app = json.loads((checkpoint / "metadata").read_text())["id"]
    snapshots = table.load().snapshots()
    summaries = [s.summary for s in snapshots if s.summary is not None]
    assert all(s.get("engine-name") == "spark" for s in summaries)  # Spark's writer committed
    assert any(str(s.operation) == "Operation.OVERWRITE" for s in summaries)  # a MERGE
    assert all(s.get(lakehouse.APP_KEY) == app for s in summaries)
    batch = table.committed(app)
    assert batch is not None and batch >= 1

    # Spark replays the last micro-batch: its commit removed, its offsets kept
    rewind_to_batch(checkpoint, batch)
    _exec(tmp_path)
    assert (checkpoint / "commits" / str(batch)).exists()  # run again and committed
    assert len(table.load().snapshots()) == len(snapshots)  # the table's commit was not made twice
    assert _tables(tmp_path) == (late, hourly)
    print(f"kills {report.kills}; replayed {report.replayed}")


@pytest.mark.skipif(MINOR not in PACKAGES, reason=f"no Iceberg Spark runtime for PySpark {MINOR}")
def test_an_iceberg_source_reads_the_appends_of_a_table(tmp_path):
    import pyarrow as pa

    warehouse = str(tmp_path / ".sqlstream" / "warehouse")
    batches = [
        pa.table({"id": pa.array([1, 2, 3], pa.int64()), "kind": ["a", "b", "a"]}),
        pa.table({"id": pa.array([4, 5], pa.int64()), "kind": ["c", "b"]}),
    ]
    writer = IcebergWriter("lake.events", warehouse)
    for number, rows in enumerate(batches):  # two commits, by pyiceberg
        writer.commit(rows, None, "feeder", number, overwrite=False)
    (tmp_path / "p.ssql").write_text(
        "CREATE STREAM events (id BIGINT, kind STRING)\n"
        "WITH (connector = 'iceberg', table = 'lake.events');\n"
        "CREATE SINK copied WITH (connector = 'iceberg', table = 'lake.copied');\n"
        "INSERT INTO copied SELECT id, upper(kind) AS kind FROM events EMIT ONCE;\n"
    )
    _exec(tmp_path)
    copied = IcebergWriter("lake.copied", warehouse).load().scan().to_arrow()
    expected = sorted(
        (i, k.upper()) for rows in batches for i, k in zip(*rows.to_pydict().values(), strict=True)
    )
    assert sorted(zip(*copied.select(["id", "kind"]).to_pydict().values(), strict=True)) == (
        expected
    )
