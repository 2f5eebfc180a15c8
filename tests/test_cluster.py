"""The same file beyond one machine: the flights example (two days) run by ``sqlstream exec``
on a Spark standalone cluster (``--master spark://…``, a master and a 1-core worker on
127.0.0.1) and through a Spark Connect server (``--remote sc://…``), both started from
pyspark's own distribution; each output equals the batch computation of the same files
(as the local run's does, tests/test_flights_example.py). Then ``sqlstream state`` reads
the Connect run's checkpoint through Spark Connect. Errors without a JVM: an unreachable
master or server (SS530), ``--master`` with ``--remote``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.spark_cluster import Cluster, free_port
from tests.test_flights_example import DAYS, EXAMPLE, _assert_same, _batch_oracle, _copy_days

DAYS_RUN = DAYS[:2]


def _workdir(root):
    _copy_days(root, DAYS_RUN)
    shutil.copy(EXAMPLE / "hourly_delays.ssql", root)
    return root


def _cli(cwd, *args):
    env = dict(os.environ, PYTHONUNBUFFERED="1", SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable)
    return subprocess.Popen([sys.executable, "-m", "sqlstream.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _final_watermark(stderr: str) -> str:
    (line,) = [ln for ln in stderr.splitlines() if "final watermark" in ln]
    return line.rsplit(" ", 1)[-1]


@pytest.mark.spark
def test_flights_on_a_standalone_cluster_and_through_spark_connect(spark, tmp_path):
    standalone = _workdir(tmp_path / "standalone")
    connect = _workdir(tmp_path / "connect")
    (tmp_path / "logs").mkdir()
    cluster = Cluster(tmp_path / "logs", connect_cwd=connect)
    try:
        started = time.monotonic()
        runs = {
            "standalone": _cli(standalone, "exec", "hourly_delays.ssql",
                               "--master", cluster.master_url,
                               "--conf", "spark.executor.memory=512m",
                               "--conf", "spark.cores.max=1",
                               "--conf", "spark.driver.host=127.0.0.1"),
            "connect": _cli(connect, "exec", "hourly_delays.ssql",
                            "--remote", cluster.remote_url),
        }
        results = {name: proc.communicate(timeout=300) for name, proc in runs.items()}
        for name, proc in runs.items():
            assert proc.returncode == 0, f"{name}: {results[name][1][-3000:]}"
            assert "Traceback" not in results[name][1]
        assert "Spark Connect server: sc://" in results["connect"][1]
        print(f"both runs: {time.monotonic() - started:.1f} s")

        for name, root in (("standalone", standalone), ("connect", connect)):
            watermark = _final_watermark(results[name][1])
            output = spark.read.parquet(str(root / "out" / "hourly"))
            assert output.count() > 2 * 3 * 10, name
            _assert_same(output, _batch_oracle(spark, DAYS_RUN, watermark))

        # sqlstream state through Spark Connect, on the checkpoint the server wrote
        state = _cli(connect, "state", "hourly_delays.ssql", "--remote", cluster.remote_url,
                     "--format", "json")
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
    for option, url, what in (("--master", f"spark://127.0.0.1:{port}", "Spark standalone master"),
                              ("--remote", f"sc://127.0.0.1:{port}", "Spark Connect server")):
        result = runner.invoke(main, ["exec", str(root / "hourly_delays.ssql"), option, url])
        assert result.exit_code == 1, result.output
        assert f"SS530 cannot reach the {what} at {url}" in result.output
        assert "Traceback" not in result.output
    result = runner.invoke(main, ["exec", str(root / "hourly_delays.ssql"), "--master",
                                  "local[1]", "--remote", "sc://127.0.0.1:15002"])
    assert result.exit_code == 2
    assert "--master and --remote exclude each other" in result.output
