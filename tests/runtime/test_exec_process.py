"""``sqlstream exec`` as a real process: console output, Ctrl-C, failures without tracebacks.

These start their own JVM (about 10-20 s each), as a user's command does.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.support.exec_process import NOISE, start_exec, wait_for, watch

pytestmark = pytest.mark.spark


TICKS = (
    "CREATE STREAM ticks WITH (connector = 'rate_micro_batch', rows_per_batch = 3);\n"
    "SELECT value, value * 2 AS doubled FROM ticks EMIT EVERY INTERVAL '1' SECOND;\n"
)


def test_ctrl_c_twice_stops_cleanly(tmp_path):
    """Ctrl-C, then a second SIGINT to the process group while the queries stop (what
    ``timeout -s INT`` and impatient users send): exit 0, nothing but sqlstream's lines."""
    pipeline = tmp_path / "ticks.ssql"
    pipeline.write_text(TICKS)
    proc = start_exec(pipeline)
    out: list[str] = []
    err: list[str] = []
    readers = [watch(proc.stdout, out), watch(proc.stderr, err)]
    wait_for(proc, err, "query select_1 batch 1: 3 input rows")  # plain progress lines
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C goes to the whole foreground group
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 0, "".join(err)
    for reader in readers:
        reader.join(timeout=10)
    stderr = "".join(err)
    assert "started query select_1" in stderr
    assert "interrupted (SIGINT): stopping queries" in stderr
    assert "query select_1 stopped: " in stderr
    assert not [n for n in NOISE if n in stderr], stderr
    assert any("|    2|      4|" in line for line in out), "".join(out[-20:])


def test_sigterm_stops_cleanly_with_json_lines(tmp_path):
    """SIGTERM to the process group (a supervisor, ``kill``): exit 0; with ``--log-format
    json`` every line on stderr is one JSON object, the JVM's included."""
    pipeline = tmp_path / "ticks.ssql"
    pipeline.write_text(
        TICKS.replace(
            "SELECT value, value * 2 AS doubled FROM ticks",
            "CREATE SINK o WITH (connector = 'noop');\nINSERT INTO o SELECT value FROM ticks",
        )
    )
    proc = start_exec(pipeline, "--log-format", "json")
    err: list[str] = []
    reader = watch(proc.stderr, err)
    wait_for(proc, err, '"batch_id": 1,')
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=120) == 0, "".join(err)
    reader.join(timeout=10)
    events = [json.loads(line) for line in err]  # fails on any line that is not JSON
    kinds = [e["event"] for e in events]
    assert {
        "notice",
        "query_started",
        "batch_progress",
        "stopping",
        "query_terminated",
        "query_summary",
    } <= set(kinds), kinds
    assert next(e for e in events if e["event"] == "stopping")["reason"] == "terminated (SIGTERM)"
    summary = events[-1]
    assert summary["event"] == "query_summary" and summary["status"] == "stopped"
    batches = [e for e in events if e["event"] == "batch_progress"]
    assert summary["batches"] == len(batches) and summary["input_rows"] == 3 * len(batches)


def test_timeout_stops_cleanly(tmp_path):
    pipeline = tmp_path / "ticks.ssql"
    pipeline.write_text(
        TICKS.replace(
            "SELECT value, value * 2 AS doubled FROM ticks",
            "CREATE SINK o WITH (connector = 'noop');\nINSERT INTO o SELECT value FROM ticks",
        )
    )
    proc = start_exec(pipeline, "--timeout", "4s")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "timeout (4 s): stopping queries" in err
    assert "query o stopped: " in err
    assert not [n for n in NOISE if n in err], err


def test_failing_query_stops_the_others_exits_1_with_position(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("1\nnot-a-number\n")
    pipeline = tmp_path / "bad.ssql"
    pipeline.write_text(
        "CREATE STREAM ticks WITH (connector = 'rate_micro_batch', rows_per_batch = 3);\n"
        "CREATE SINK forever WITH (connector = 'noop');\n"
        "INSERT INTO forever SELECT value FROM ticks EMIT EVERY INTERVAL '1' SECOND;\n"
        f"CREATE STREAM s (n INT) WITH (connector = 'files', path = '{tmp_path / 'in'}',\n"
        "                              format = 'csv', mode = 'FAILFAST');\n"
        "CREATE SINK o WITH (connector = 'noop');\n"
        "INSERT INTO o SELECT n FROM s EMIT ONCE;\n"
    )
    proc = start_exec(pipeline)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "query 'o' failed: stopping queries" in err
    assert "query forever stopped: " in err
    error = err[err.index(f"{pipeline}:7:1: SS501") :]
    assert error.startswith(f"{pipeline}:7:1: SS501 query 'o' failed: ")
    assert "not-a-number" in error.splitlines()[0]  # Spark's reason, one paragraph
    assert error.splitlines()[1:3] == [
        "  INSERT INTO o SELECT n FROM s EMIT ONCE;",
        "  " + "^" * 39,
    ]
    assert error.splitlines()[3].startswith(
        "  hint: a record does not decode"
    )  # sqlstream's advice
    assert len(error.splitlines()) == 4
    assert not [n for n in NOISE if n in err], err
