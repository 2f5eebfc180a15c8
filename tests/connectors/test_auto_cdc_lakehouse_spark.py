"""``CREATE FLOW … AS AUTO CDC`` into Iceberg and Delta tables (written through pyiceberg
and deltalake) on real Spark: the seeded out-of-order Debezium change log of the
``postgres`` test (``tests/support/cdc_log.py``), applied as SCD 1 and SCD 2 into both
formats, read back with pyiceberg and deltalake, equals the plain-Python oracle — also
after ``sqlstream exec`` is killed with SIGKILL at seeded random points (a crash between
the changes table's commit and the target's is repaired by Spark's replay of the batch).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sqlstream import Session
from tests.support.cdc_log import change_log, oracle, write_files

pytestmark = pytest.mark.spark

PIPELINE = """
CREATE STREAM changes (
    id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
    op STRING METADATA FROM 'op',
    seq BIGINT METADATA FROM 'source.lsn'
) WITH (connector = 'files', path = 'changes', format = 'debezium-json',
        maxFilesPerTrigger = 1);

CREATE SINK d_latest WITH (connector = 'delta', path = 'lake/latest');
CREATE SINK d_history WITH (connector = 'delta', path = 'lake/history');
CREATE SINK i_latest WITH (connector = 'iceberg', table = 'cdc.latest', warehouse = 'wh');
CREATE SINK i_history WITH (connector = 'iceberg', table = 'cdc.history', warehouse = 'wh');
""" + "".join(
    f"""
CREATE FLOW {sink}_cdc AS AUTO CDC INTO {sink}
  FROM STREAM(changes) KEYS (id) APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq
  COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE {scd}{track};
"""
    for sink, scd, track in (
        ("d_latest", 1, ""),
        ("d_history", 2, " TRACK HISTORY ON * EXCEPT (dep_delay)"),
        ("i_latest", 1, ""),
        ("i_history", 2, " TRACK HISTORY ON * EXCEPT (dep_delay)"),
    )
)

COLUMNS = ["id", "carrier", "flight", "dep_delay"]
HISTORY = [*COLUMNS, "__START_AT", "__END_AT"]


def _rows(table, names) -> set:
    columns = [table.column(n).to_pylist() for n in names]
    return set(zip(*columns, strict=True))


def delta_tables(folder: Path) -> tuple[set, set]:
    """``(SCD 1 rows, SCD 2 rows)`` of the Delta tables, read with deltalake."""
    from deltalake import DeltaTable

    latest = DeltaTable(str(folder / "lake" / "latest")).to_pyarrow_table()
    history = DeltaTable(str(folder / "lake" / "history")).to_pyarrow_table()
    return _rows(latest, COLUMNS), _rows(history, HISTORY)


def iceberg_tables(folder: Path) -> tuple[set, set]:
    """``(SCD 1 rows, SCD 2 rows)`` of the Iceberg tables, read with pyiceberg."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = folder / "wh"
    catalog = SqlCatalog(
        "sqlstream", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}"
    )
    latest = catalog.load_table(("cdc", "latest")).scan().to_arrow()
    history = catalog.load_table(("cdc", "history")).scan().to_arrow()
    return _rows(latest, COLUMNS), _rows(history, HISTORY)


def test_out_of_order_changes_into_iceberg_and_delta_equal_the_oracle(spark, tmp_path):
    events = change_log(seed=3311, count=40)
    write_files(tmp_path / "changes", events, seed=13, files=4)
    path = tmp_path / "cdc.ssql"
    path.write_text(PIPELINE)
    session = Session(spark)
    session.run(session.compile_file(str(path)), available_now=True)
    expected = oracle(events)
    assert len(expected[0]) > 10 and len(expected[1]) > len(expected[0])
    assert sum(e["op"] == "d" for e in events) > 3
    assert delta_tables(tmp_path) == expected
    assert iceberg_tables(tmp_path) == expected
    # changes older than every applied one, in a later file: tombstones and history
    # (the changes tables) keep them in their place
    stale = [
        dict(e, op="u", after=e["before"], before=None, source={"lsn": e["source"]["lsn"] - 1})
        for e in events
        if e["op"] == "d"
    ]
    (tmp_path / "changes" / "part-99.json").write_text(
        "\n".join(json.dumps(e) for e in stale) + "\n"
    )
    session.run(session.compile_file(str(path)), available_now=True)
    again = oracle(events + stale)
    assert again[0] == expected[0]  # an older update never brings a deleted row back
    assert delta_tables(tmp_path) == again
    assert iceberg_tables(tmp_path) == again


def _committed(folder: Path) -> int:
    """The number of commits of the Delta SCD 2 target, less one: about the last batch id
    applied (-1 before any)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(str(folder / "lake" / "history")).version()
    except (TableNotFoundError, OSError):
        return -1


def test_exec_killed_at_random_points_ends_with_the_oracle(tmp_path):
    """``sqlstream exec`` (its own JVM) killed with SIGKILL at seeded random points while
    it applies the log, then run again on the same checkpoint until it finishes: the four
    tables equal the oracle."""
    rng = random.Random(3312)
    events = change_log(seed=3313, count=40)
    write_files(tmp_path / "changes", events, seed=14, files=8)
    path = tmp_path / "cdc.ssql"
    path.write_text(PIPELINE)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    command = [sys.executable, "-m", "sqlstream.cli", "exec", str(path), "--master", "local[1]"]
    command.append("--available-now")
    kills = 0
    for target in sorted(rng.sample(range(1, 7), 2)):
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
                if _committed(tmp_path) >= target:
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
    assert delta_tables(tmp_path) == expected
    assert iceberg_tables(tmp_path) == expected
