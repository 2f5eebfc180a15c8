"""``sqlstream exec`` as a real process: console output, Ctrl-C, failures without tracebacks.

These start their own JVM (about 10-20 s each), as a user's command does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.spark


def _exec(path, *args):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "sqlstream.cli", "exec", str(path), "--master", "local[1]", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,  # its own process group, like a terminal job
    )


def test_console_sink_then_ctrl_c_stops_cleanly(tmp_path):
    pipeline = tmp_path / "ticks.ssql"
    pipeline.write_text(
        "CREATE STREAM ticks WITH (connector = 'rate_micro_batch', rows_per_batch = 3);\n"
        "SELECT value, value * 2 AS doubled FROM ticks EMIT EVERY INTERVAL '1' SECOND;\n"
    )
    proc = _exec(pipeline)
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    deadline = time.time() + 180
    while not any("Batch: 1" in line for line in seen):
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() < deadline, "no console output"
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C goes to the whole foreground group
    assert proc.wait(timeout=120) == 0
    reader.join(timeout=10)
    stderr = proc.stderr.read()
    assert "started query select_1" in stderr
    assert "interrupted: stopping queries" in stderr
    assert "Traceback" not in stderr
    assert any("|    2|      4|" in line for line in seen), "".join(seen[-20:])


def test_failing_query_exits_1_with_position_and_no_traceback(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.csv").write_text("1\nnot-a-number\n")
    pipeline = tmp_path / "bad.ssql"
    pipeline.write_text(
        f"CREATE STREAM s (n INT) WITH (connector = 'files', path = '{tmp_path / 'in'}',\n"
        "                              format = 'csv', mode = 'FAILFAST');\n"
        "CREATE SINK o WITH (connector = 'noop');\n"
        "INSERT INTO o SELECT n FROM s EMIT ONCE;\n"
    )
    proc = _exec(pipeline)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert f"{pipeline}:4:1: SS501 query 'o' failed" in err
    assert 'not-a-number' in err and "  INSERT INTO o SELECT n FROM s EMIT ONCE;" in err
    assert "Traceback" not in err and "\tat org.apache" not in err
