"""Two ``sqlstream exec`` processes on one checkpoint: the second is refused at once, the
first loses nothing; a SIGKILLed run's lock is taken over by the next run, which completes.
In one process, a start while the first queries run is refused; one after they stopped is not.

The output is counted against a plain-Python reading of the input files. Without a JVM,
the lock itself (holders, refusals, races) is in tests/runtime/test_checkpoint_lock.py.
"""

from __future__ import annotations

import csv
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest

import sqlstream
from tests.conftest import ROOT
from tests.support.exec_process import NOISE, start_exec, wait_for, watch

pytestmark = pytest.mark.spark

DAYS = ROOT / "examples" / "flights" / "data" / "flights"

PIPELINE = """CREATE STREAM flights (carrier STRING, flight INT, origin STRING)
WITH (connector = 'files', path = '{data}', format = 'csv', header = true,
      maxFilesPerTrigger = 1);
CREATE SINK out WITH (connector = 'files', path = '{out}', format = 'parquet');
INSERT INTO out SELECT carrier, flight, origin FROM flights
EMIT EVERY INTERVAL '1' SECOND;
"""


def _add_days(data, names):
    """Copy days of flights into the source folder, each newer than the last (the file
    source reads them in modification-time order)."""
    for name in names:
        shutil.copy(DAYS / name, data / name)
        stamp = time.time() + len(os.listdir(data))
        os.utime(data / name, (stamp, stamp))


def _expected(data) -> Counter:
    """The rows the query writes, from the input files with Python's csv module."""
    rows = Counter()
    for path in sorted(data.iterdir()):
        with open(path, newline="", encoding="utf-8") as handle:
            rows.update(
                (r["carrier"], int(r["flight"]), r["origin"]) for r in csv.DictReader(handle)
            )
    return rows


def _written(spark, out) -> Counter:
    """The rows of the files sink, read by Spark through its ``_spark_metadata`` log."""
    return Counter((r.carrier, r.flight, r.origin) for r in spark.read.parquet(str(out)).collect())


def test_a_second_run_is_refused_and_a_killed_runs_lock_taken_over(request, tmp_path):
    data, out, state = tmp_path / "in", tmp_path / "out", tmp_path / "state"
    data.mkdir()
    _add_days(data, ["2013-01-01.csv", "2013-01-02.csv", "2013-01-03.csv"])
    pipeline = tmp_path / "copy.ssql"
    pipeline.write_text(PIPELINE.format(data=data, out=out))
    checkpoint = state / "copy" / "out"
    host = socket.gethostname()

    first = start_exec(pipeline, "--state-dir", str(state))
    err: list[str] = []
    readers = [watch(first.stderr, err), watch(first.stdout, [])]
    try:
        wait_for(first, err, "query out batch 0: ")
        began = time.monotonic()
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "sqlstream.cli",
                "exec",
                str(pipeline),
                "--state-dir",
                str(state),
                "--master",
                "local[1]",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        refused_in = time.monotonic() - began
        assert second.returncode == 1, second.stderr
        error = second.stderr[second.stderr.index(f"{pipeline}:5:1: SS502") :].splitlines()
        assert error[0].startswith(
            f"{pipeline}:5:1: SS502 query 'out': checkpoint {checkpoint} is in use by another "
            f"run: pid {first.pid} on host {host}, since "
        )
        assert error[0].endswith(f"(query 'out' of {pipeline})")
        assert error[1:3] == [
            "  INSERT INTO out SELECT carrier, flight, origin FROM flights",
            "  " + "^" * 59,
        ]
        assert error[3].startswith("  hint: wait for that run to finish, stop it ")
        # nothing else was printed: no JVM was started (its start-up alone takes longer)
        assert second.stderr.splitlines() == ["sqlstream: copy: 1 relations, 1 queries", *error], (
            second.stderr
        )
        assert refused_in < 30, refused_in
        assert first.poll() is None  # the first run goes on, undisturbed
        wait_for(first, err, "query out batch 2: ")  # every file read
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGTERM)
        first.wait(timeout=120)
    for reader in readers:
        reader.join(timeout=10)
    assert first.returncode == 0, "".join(err)
    assert not [n for n in NOISE if n in "".join(err)], "".join(err)
    spark = request.getfixturevalue("spark")  # the test's own JVM, once the first has ended
    assert _written(spark, out) == _expected(data)  # nothing lost, nothing written twice

    # a run SIGKILLed (driver and JVM) in the middle of new input leaves its lock file ...
    _add_days(data, ["2013-01-04.csv", "2013-01-05.csv"])
    killed = start_exec(pipeline, "--state-dir", str(state))
    err = []
    reader = watch(killed.stderr, err)
    try:
        wait_for(killed, err, "query out batch 3: ")
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=60)
        reader.join(timeout=10)
    assert f'"pid": {killed.pid},' in (checkpoint / "sqlstream" / "run.lock").read_text()

    # ... which the next run takes over: it starts, reads the rest and completes
    last = start_exec(pipeline, "--state-dir", str(state), "--available-now")
    stdout, stderr = last.communicate(timeout=300)
    assert last.returncode == 0, stderr
    assert (
        f"query 'out': checkpoint {checkpoint}: taking over the lock of pid {killed.pid} "
        f"on host {host}, since "
    ) in stderr
    assert "which ended without releasing it (killed or crashed)" in stderr
    assert not [n for n in NOISE if n in stderr], stderr
    assert (checkpoint / "sqlstream" / "run.lock").read_text() == ""  # released on exit
    assert _written(spark, out) == _expected(data)


def test_in_one_process_active_queries_refuse_stopped_ones_hand_over(spark, tmp_path):
    """``Pipeline.start`` twice in one SparkSession: refused while the first queries run;
    once they are stopped, the lock is handed over at once (a stop and a start again), and
    released by its watcher thread when nobody starts again."""
    text = (
        "CREATE STREAM ticks WITH (connector = 'rate_micro_batch', rows_per_batch = 3);\n"
        f"CREATE SINK o WITH (connector = 'files', path = '{tmp_path / 'out'}', "
        "format = 'json');\n"
        "INSERT INTO o SELECT value FROM ticks EMIT EVERY INTERVAL '1' SECOND;\n"
    )
    pipeline = sqlstream.compile(text, path="ticks.ssql", state_dir=str(tmp_path / "state"))
    lock = tmp_path / "state" / "ticks" / "o" / "sqlstream" / "run.lock"
    (query,) = pipeline.start(spark)
    try:
        with pytest.raises(sqlstream.CheckpointInUseError) as refused:
            pipeline.start(spark)
        assert refused.value.message.startswith(
            f"query 'o': checkpoint {lock.parent.parent} is in use by a run of this process "
            f"whose queries are active: pid {os.getpid()} on host "
        )
        assert refused.value.span.line == 3
        assert query.isActive  # the refused start touched nothing
    finally:
        query.stop()
    (again,) = pipeline.start(spark)
    again.stop()
    deadline = time.monotonic() + 30
    while lock.read_text():
        assert time.monotonic() < deadline, lock.read_text()
        time.sleep(0.2)
