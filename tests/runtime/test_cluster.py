"""The same file beyond one machine: the flights example (two days) run by ``sqlstream exec``
on a Spark standalone cluster (``--master spark://…``, a master and a 1-core worker on
127.0.0.1) and through a Spark Connect server (``--remote sc://…``), both started from
pyspark's own distribution; each output equals the batch computation of the same files
(as the local run's does, tests/examples/test_flights_example.py). Then ``sqlstream state`` reads
the Connect run's checkpoint through Spark Connect. Errors without a JVM: an unreachable
master or server (SS530), ``--master`` with ``--remote``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from datetime import timedelta

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from tests.support.flights import DAYS, EXAMPLE, copy_days, hourly_windows, parse_watermark
from tests.support.spark_cluster import Cluster, free_port

DAYS_RUN = DAYS[:2]


def _workdir(root):
    copy_days(root, DAYS_RUN)
    shutil.copy(EXAMPLE / "hourly_delays.ssql", root)
    return root


def _cli(cwd, *args):
    env = dict(
        os.environ, PYTHONUNBUFFERED="1", SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable
    )
    return subprocess.Popen(
        [sys.executable, "-m", "sqlstream.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _closed_windows(files, watermark: str) -> dict:
    """The batch oracle, in plain Python: the example's rows for every window that ends by
    ``watermark`` — ``{(window start, origin): (flights, avg_dep_delay, delayed)}``."""
    limit = parse_watermark(watermark)
    return {
        k: (n, round(total / counted, 6) if counted else None, delayed)
        for k, (n, total, counted, delayed) in hourly_windows(files).items()
        if k[0] + timedelta(hours=1) <= limit
    }


def _output(directory) -> dict:
    """The Parquet files the files sink wrote (pyarrow; ``_spark_metadata`` is skipped)."""
    table = pq.read_table(directory)
    return {
        (row["window_start"].replace(tzinfo=None), row["origin"]): (
            row["flights"],
            None if row["avg_dep_delay"] is None else round(row["avg_dep_delay"], 6),
            row["delayed"],
        )
        for row in table.to_pylist()
    }


def _final_watermark(stderr: str) -> str:
    """The final watermark of exec's summary line (``… final watermark 2013-01-04 03:00:00,
    …``), as Spark spells it (``2013-01-04T03:00:00.000Z``)."""
    (line,) = [ln for ln in stderr.splitlines() if "final watermark" in ln]
    day, time_of_day = re.search(
        r"final watermark (\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)", line
    ).groups()
    return f"{day}T{time_of_day}.000Z"


@pytest.mark.spark
def test_flights_on_a_standalone_cluster_and_through_spark_connect(tmp_path):
    standalone = _workdir(tmp_path / "standalone")
    connect = _workdir(tmp_path / "connect")
    (tmp_path / "logs").mkdir()
    cluster = Cluster(tmp_path / "logs", connect_cwd=connect)
    try:
        started = time.monotonic()
        runs = {
            "standalone": _cli(
                standalone,
                "exec",
                "hourly_delays.ssql",
                "--master",
                cluster.master_url,
                "--conf",
                "spark.executor.memory=512m",
                "--conf",
                "spark.cores.max=1",
                "--conf",
                "spark.driver.host=127.0.0.1",
            ),
            "connect": _cli(connect, "exec", "hourly_delays.ssql", "--remote", cluster.remote_url),
        }
        results = {name: proc.communicate(timeout=300) for name, proc in runs.items()}
        for name, proc in runs.items():
            assert proc.returncode == 0, f"{name}: {results[name][1][-3000:]}"
            assert "Traceback" not in results[name][1]
        assert "Spark Connect server: sc://" in results["connect"][1]
        print(f"both runs: {time.monotonic() - started:.1f} s")

        for name, root in (("standalone", standalone), ("connect", connect)):
            expected = _closed_windows(DAYS_RUN, _final_watermark(results[name][1]))
            assert len(expected) > 2 * 3 * 10
            assert _output(root / "out" / "hourly") == expected, name

        # sqlstream state through Spark Connect, on the checkpoint the server wrote
        state = _cli(
            connect,
            "state",
            "hourly_delays.ssql",
            "--remote",
            cluster.remote_url,
            "--format",
            "json",
        )
        out, err = state.communicate(timeout=180)
        assert state.returncode == 0, err[-3000:]
        assert '"operator": "stateStoreSave"' in out
        assert f'"watermark": "{_final_watermark(results["connect"][1])}"' in out
    finally:
        cluster.stop()


def test_unreachable_cluster_and_conflicting_options_are_reported(tmp_path):
    root = _workdir(tmp_path)
    runner = CliRunner()
    port = free_port()  # nothing listens there
    for option, url, what in (
        ("--master", f"spark://127.0.0.1:{port}", "Spark standalone master"),
        ("--remote", f"sc://127.0.0.1:{port}", "Spark Connect server"),
    ):
        result = runner.invoke(main, ["exec", str(root / "hourly_delays.ssql"), option, url])
        assert result.exit_code == 1, result.output
        assert f"SS530 cannot reach the {what} at {url}" in result.output
        assert "Traceback" not in result.output
    result = runner.invoke(
        main,
        [
            "exec",
            str(root / "hourly_delays.ssql"),
            "--master",
            "local[1]",
            "--remote",
            "sc://127.0.0.1:15002",
        ],
    )
    assert result.exit_code == 2
    assert "--master and --remote exclude each other" in result.output


BATCHES = '''
from sqlstream.ir.calls import Step
from sqlstream.connectors.base import Connector


class Batches(Connector):
    """A sink that hands each micro-batch to a function of this process (foreachBatch)."""

    name = "batches"
    sink_format = "foreachBatch"

    def format_steps(self, sink):
        return (Step("foreachBatch", ("write_batch",)),)
'''


def test_spark_connect_refuses_foreach_batch_and_notes_console(tmp_path, monkeypatch):
    import sqlstream.connectors as connectors
    from sqlstream.diagnostics.errors import SqlStreamError
    from sqlstream.runtime.spark_session import refuse_on_connect

    (tmp_path / "batches.py").write_text(BATCHES, encoding="utf-8")
    monkeypatch.setattr(connectors, "__path__", [*connectors.__path__, str(tmp_path)])
    monkeypatch.setattr(connectors, "CONNECTORS", connectors._discover())
    pipeline = sqlstream.compile(
        "CREATE STREAM ticks WITH (connector = 'rate');\n"
        "CREATE SINK out WITH (connector = 'batches');\n"
        "SELECT value FROM ticks;\n"
        "INSERT INTO out SELECT value FROM ticks;\n",
        path="p.ssql",
    )
    notes: list[str] = []
    with pytest.raises(SqlStreamError) as caught:
        refuse_on_connect(pipeline, notes.append)
    rendered = caught.value.render()
    assert rendered.startswith(
        "p.ssql:4:1: SS405 query 'out' uses foreachBatch, which Spark Connect cannot run here"
    ), rendered
    assert "INSERT INTO out" in rendered and "--master" in rendered
    refuse_on_connect(
        sqlstream.compile(
            "CREATE STREAM ticks WITH (connector = 'rate');\nSELECT value FROM ticks;\n"
        ),
        notes.append,
    )
    assert notes == [
        "query 'select_1': Spark Connect prints console output on the server, not here"
    ]
