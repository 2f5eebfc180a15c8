"""The checkpoint lock without a JVM (:mod:`sqlstream.runtime.checkpoint_lock`): real
processes hold, refuse, die and race for the lock of a pipeline's checkpoint.

Two real ``sqlstream exec`` runs of a flights pipeline (one refused, one SIGKILLed and
taken over, the output counted against the input) are in
tests/runtime/test_checkpoint_lock_spark.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import sqlstream
from sqlstream.runtime import checkpoint_lock

PIPELINE = """CREATE STREAM ticks WITH (connector = 'rate_micro_batch', rows_per_batch = 3);
CREATE SINK o WITH (connector = 'files', path = '{out}', format = 'json');
INSERT INTO o SELECT value FROM ticks;
"""

# Takes the locks of the pipeline named by argv[1] (state dir argv[2]), says so, then
# waits for its stdin to close (or a signal).
HOLD = """import sys, sqlstream
from sqlstream.runtime import checkpoint_lock
plan = sqlstream.compile_file(sys.argv[1], state_dir=sys.argv[2]).plan
try:
    lease = checkpoint_lock.acquire(plan, report=lambda line: print(line, flush=True))
except sqlstream.SqlStreamError as error:
    print(error.render(), flush=True)
    sys.exit(1)
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.fixture
def pipeline(tmp_path):
    path = tmp_path / "ticks.ssql"
    path.write_text(PIPELINE.format(out=tmp_path / "out"))
    return path


def _hold(path, state_dir):
    """A process holding the pipeline's locks (after its ``locked`` line)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path), str(state_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    lines = []
    while not lines or lines[-1] != "locked\n":
        line = proc.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
    return proc, lines[:-1]


def _lock_file(state_dir):
    return state_dir / "ticks" / "o" / checkpoint_lock.LOCK_FILE


def test_a_second_process_is_refused_with_the_holder_and_a_position(pipeline, tmp_path):
    state_dir = tmp_path / "state"
    holder, _ = _hold(pipeline, state_dir)
    try:
        written = json.loads(_lock_file(state_dir).read_text())
        assert (written["pid"], written["host"], written["query"]) == (
            holder.pid,
            socket.gethostname(),
            "o",
        )
        plan = sqlstream.compile_file(str(pipeline), state_dir=str(state_dir)).plan
        with pytest.raises(sqlstream.CheckpointInUseError) as refused:
            checkpoint_lock.acquire(plan)
        error = refused.value
        assert error.code == "SS502" and (error.span.line, error.span.column) == (3, 1)
        assert error.message == (
            f"query 'o': checkpoint {state_dir / 'ticks' / 'o'} is in use by another run: "
            f"pid {holder.pid} on host {socket.gethostname()}, since {written['started']} "
            f"(query 'o' of {pipeline})"
        )
        assert error.render().splitlines()[1:3] == [
            "  INSERT INTO o SELECT value FROM ticks;",
            "  " + "^" * 37,
        ]
        assert f"kill {holder.pid} on {socket.gethostname()}" in error.hint
        assert "another checkpoint_location" in error.hint
        # the exec command is refused before any JVM: at once, exit 1, no traceback
        began = time.monotonic()
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "sqlstream.cli",
                "exec",
                str(pipeline),
                "--state-dir",
                str(state_dir),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1, result.stderr
        assert time.monotonic() - began < 15
        assert f"{pipeline}:3:1: SS502 query 'o': checkpoint " in result.stderr
        assert "Traceback" not in result.stderr and "Spark" not in result.stderr
    finally:
        holder.communicate("")  # stdin closed: the holder exits
    assert holder.returncode == 0
    lease = checkpoint_lock.acquire(plan)  # released with its process
    lease.release()
    assert _lock_file(state_dir).read_text() == ""  # a clean release empties the file


def test_a_killed_holder_leaves_a_lock_the_next_run_takes_over(pipeline, tmp_path):
    state_dir = tmp_path / "state"
    holder, _ = _hold(pipeline, state_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert json.loads(_lock_file(state_dir).read_text())["pid"] == holder.pid  # left behind
    notes = []
    plan = sqlstream.compile_file(str(pipeline), state_dir=str(state_dir)).plan
    lease = checkpoint_lock.acquire(plan, notes.append)
    try:
        assert len(notes) == 1 and notes[0].startswith(
            f"query 'o': checkpoint {state_dir / 'ticks' / 'o'}: taking over the lock of "
            f"pid {holder.pid} on host {socket.gethostname()}, since "
        )
        assert notes[0].endswith("which ended without releasing it (killed or crashed)")
        assert json.loads(_lock_file(state_dir).read_text())["pid"] == os.getpid()
    finally:
        lease.release()


def test_starters_racing_for_a_stale_lock_one_wins(pipeline, tmp_path):
    state_dir = tmp_path / "state"
    holder, _ = _hold(pipeline, state_dir)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", HOLD, str(pipeline), str(state_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:  # each racer either locks (and waits for its stdin) or is refused (exit 1)
        deadline = time.monotonic() + 60
        while sum(racer.poll() is not None for racer in racers) < len(racers) - 1:
            assert time.monotonic() < deadline, "more than one racer holds the lock"
            time.sleep(0.05)
        (winner,) = [racer for racer in racers if racer.poll() is None]
        lines = [winner.stdout.readline()]
        while lines[-1] not in ("locked\n", ""):
            lines.append(winner.stdout.readline())
        assert lines[-1] == "locked\n", lines
        assert json.loads(_lock_file(state_dir).read_text())["pid"] == winner.pid
        for racer in racers:
            if racer is not winner:
                assert racer.returncode == 1
                assert " SS502 query 'o': checkpoint " in racer.stdout.read()
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()


def test_two_queries_on_one_checkpoint_and_remote_locations(tmp_path):
    text = PIPELINE.format(out=tmp_path / "out") + (
        f"CREATE SINK p WITH (connector = 'files', path = '{tmp_path / 'out2'}', format = 'json',"
        f" checkpoint_location = '{tmp_path / 'state' / 'two' / 'o'}');\n"
        "INSERT INTO p SELECT value FROM ticks;\n"
    )
    plan = sqlstream.compile(text, path="two.ssql", state_dir=str(tmp_path / "state")).plan
    with pytest.raises(sqlstream.CheckpointInUseError) as refused:
        checkpoint_lock.acquire(plan)
    assert refused.value.message.endswith("is also the checkpoint of query 'o'")
    assert refused.value.span.line == 5
    # the lock the refused run took for query 'o' was released
    assert (tmp_path / "state" / "two" / "o" / checkpoint_lock.LOCK_FILE).read_text() == ""

    remote = text.replace(f"'{tmp_path / 'state' / 'two' / 'o'}'", "'s3a://bucket/cp'")
    notes = []
    lease = checkpoint_lock.acquire(
        sqlstream.compile(remote, path="two.ssql", state_dir=str(tmp_path / "state")).plan,
        notes.append,
    )
    lease.release()
    assert notes == [
        "query 'p': not locked against a second run: checkpoint s3a://bucket/cp is not a local path"
    ]
