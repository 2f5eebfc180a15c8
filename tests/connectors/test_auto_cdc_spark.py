"""``CREATE FLOW … AS AUTO CDC`` into a real PostgreSQL (``tests/support/postgres_server.py``)
on real Spark, against a batch oracle computed in plain Python over the whole log
(``tests/support/cdc_log.py``).

The change log: the first flights of ``examples/flights/data/flights/2013-01-01.csv``, each
a key created, updated (its ``dep_delay`` — not tracked by SCD 2 — or its ``carrier`` —
tracked), deleted and re-created at seeded random; Debezium change events shuffled and cut
into files read one per micro-batch, so changes arrive out of order within and across
micro-batches, deletes before the updates they overrule. SCD 1 and SCD 2 flows read the
same stream. The oracle sorts each key's changes by sequence: SCD 1 keeps the last, unless
a delete; SCD 2 opens a version at each change of a tracked column (or after a delete),
closes it at the next opening change or delete. The SIGKILL test of the three targets
(PostgreSQL, Delta, Iceberg) is ``test_auto_cdc_crash_spark.py``.
"""

from __future__ import annotations

import json

import pytest

from sqlstream import Session
from tests.support.cdc_log import CHANGES, change_log, oracle, postgres_tables, write_files

pytestmark = pytest.mark.spark

PIPELINE = (
    CHANGES
    + """
CREATE SINK latest WITH (connector = 'postgres', url = '{url}', user = 'postgres',
    password = '${{env:PG_PASSWORD}}', table = '{prefix}_latest');
CREATE SINK history WITH (connector = 'postgres', url = '{url}', user = 'postgres',
    password = '${{env:PG_PASSWORD}}', table = '{prefix}_history');

CREATE FLOW latest_cdc AS AUTO CDC INTO latest
  FROM STREAM(changes)
  KEYS (id)
  APPLY AS DELETE WHEN op = 'd'
  SEQUENCE BY seq
  COLUMNS * EXCEPT (op, seq)
  STORED AS SCD TYPE 1;

CREATE FLOW history_cdc AS AUTO CDC INTO history
  FROM STREAM(changes)
  KEYS (id)
  APPLY AS DELETE WHEN op = 'd'
  SEQUENCE BY seq
  COLUMNS * EXCEPT (op, seq)
  STORED AS SCD TYPE 2
  TRACK HISTORY ON * EXCEPT (dep_delay);
"""
)


def test_out_of_order_changes_applied_as_scd1_and_scd2_equal_the_oracle(
    spark, postgres, tmp_path, monkeypatch
):
    monkeypatch.setenv("PG_PASSWORD", postgres.password)
    events = change_log(seed=3301)
    write_files(tmp_path / "changes", events, seed=11)
    path = tmp_path / "cdc.ssql"
    path.write_text(PIPELINE.format(url=postgres.url, prefix="inproc"))
    session = Session(spark)
    session.run(session.compile_file(str(path)), available_now=True)
    expected_latest, expected_history = oracle(events)
    latest, history = postgres_tables(postgres, "inproc")
    assert len(expected_latest) > 20 and len(expected_history) > len(expected_latest)
    assert sum(e["op"] == "d" for e in events) > 5
    assert latest == expected_latest
    assert history == expected_history
    # a later file with changes older than every applied one changes nothing: tombstones
    # and history keep them in their place
    stale = [
        dict(e, source={"lsn": e["source"]["lsn"] - 1, "table": "flights"})
        for e in events
        if e["op"] == "d"
    ]
    late = tmp_path / "changes" / "part-99.json"
    stale = [dict(e, op="u", after=e["before"], before=None) for e in stale]
    late.write_text("\n".join(json.dumps(e) for e in stale) + "\n")
    session.run(session.compile_file(str(path)), available_now=True)
    again = oracle(events + stale)
    assert postgres_tables(postgres, "inproc") == again
    assert again[0] == expected_latest  # an older update never brings a deleted row back
