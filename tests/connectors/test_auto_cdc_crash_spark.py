"""``CREATE FLOW … AS AUTO CDC`` survives SIGKILL: one ``sqlstream exec`` applies the seeded
out-of-order Debezium change log (``tests/support/cdc_log.py``) as SCD 1 and SCD 2 into a
real PostgreSQL (``tests/support/postgres_server.py``), Delta tables (deltalake) and Iceberg
tables (pyiceberg) at once; it is killed with SIGKILL at seeded random points and run again
on the same checkpoint until it finishes. All six tables then equal the plain-Python oracle
computed over the whole log: a micro-batch committed to a target and replayed by Spark
changes nothing, and a crash between a lakehouse changes table's commit and its target's is
repaired by the replay.

One pipeline for the three targets keeps the cost to one set of JVM start-ups (each
``exec`` is its own JVM).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests.support.cdc_log import (
    CHANGES,
    change_log,
    delta_tables,
    flows,
    iceberg_tables,
    oracle,
    postgres_tables,
    write_files,
)

pytestmark = pytest.mark.spark

PIPELINE = (
    CHANGES
    + """
CREATE SINK p_latest WITH (connector = 'postgres', url = '{url}', user = 'postgres',
    password = '${{env:PG_PASSWORD}}', table = 'killed_latest');
CREATE SINK p_history WITH (connector = 'postgres', url = '{url}', user = 'postgres',
    password = '${{env:PG_PASSWORD}}', table = 'killed_history');
CREATE SINK d_latest WITH (connector = 'delta', path = 'lake/latest');
CREATE SINK d_history WITH (connector = 'delta', path = 'lake/history');
CREATE SINK i_latest WITH (connector = 'iceberg', table = 'cdc.latest', warehouse = 'wh');
CREATE SINK i_history WITH (connector = 'iceberg', table = 'cdc.history', warehouse = 'wh');
"""
    + flows("p", "d", "i")
)


def _committed(postgres) -> int:
    """The last batch id committed to PostgreSQL's SCD 2 table (-1 before any)."""
    if not postgres.rows("SELECT to_regclass('sqlstream_batches') IS NOT NULL")[0][0]:
        return -1
    rows = postgres.rows(
        "SELECT batch_id FROM sqlstream_batches WHERE table_name = %s", ("killed_history",)
    )
    return rows[0][0] if rows else -1


def test_exec_killed_at_random_points_ends_with_the_oracle_in_every_target(postgres, tmp_path):
    rng = random.Random(3302)
    events = change_log(seed=3303, count=60)
    write_files(tmp_path / "changes", events, seed=12, files=5)
    path = tmp_path / "cdc.ssql"
    path.write_text(PIPELINE.format(url=postgres.url))
    env = dict(os.environ, PG_PASSWORD=postgres.password, PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "sqlstream.cli", "exec", str(path), "--master", "local[1]"]
    command.append("--available-now")
    kills = 0
    for target in sorted(rng.sample(range(1, 4), 2)):
        run = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        deadline = time.time() + 300
        try:
            while run.poll() is None and time.time() < deadline:
                if _committed(postgres) >= target:
                    time.sleep(rng.uniform(0, 1.5))  # somewhere in a later micro-batch
                    break
                time.sleep(0.2)
        finally:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
                kills += 1
            run.wait(timeout=60)
    final = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert final.returncode == 0, final.stderr[-3000:]
    assert kills >= 1
    expected = oracle(events)
    assert len(expected[0]) > 20 and len(expected[1]) > len(expected[0])
    assert postgres_tables(postgres, "killed") == expected
    assert delta_tables(tmp_path) == expected
    assert iceberg_tables(tmp_path) == expected
