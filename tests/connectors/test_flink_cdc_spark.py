"""Flink's changelog spelling (a sink's ``PRIMARY KEY (…) NOT ENFORCED`` and an ``INSERT``
from a ``debezium-json`` stream, docs/cdc.md#flink-spelling) into a real PostgreSQL
(``tests/support/postgres_server.py``) on real Spark, against the batch oracle of the
``AUTO CDC`` tests (``tests/support/cdc_log.py``: each key's changes sorted by log position
in plain Python).

Two streams of the same seeded log: one declares ``source.lsn`` and reads the events
shuffled across files (out of order within and across micro-batches): the sequence is the
log position, so the table equals the oracle; one declares no position and reads the
events in log order, a file per micro-batch: the sequence is the arrival order (numbered by
the applier across micro-batches), which is then the log's order, so it equals the oracle
too.
The same shuffled log through a ``WHERE`` and computed, renamed and widened columns into a
third table equals a Python oracle of Flink's meaning (a change whose row fails the
``WHERE`` deletes its key).
"""

from __future__ import annotations

import json
import os

import pytest

from sqlstream import Session
from tests.support.cdc_log import change_log, oracle, write_files

pytestmark = pytest.mark.spark

PIPELINE = """
CREATE STREAM shuffled (
    id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
    op STRING METADATA FROM 'op',
    seq BIGINT METADATA FROM 'source.lsn'
) WITH (connector = 'files', path = 'shuffled', format = 'debezium-json',
        maxFilesPerTrigger = 1);
CREATE STREAM ordered (
    id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
    op STRING METADATA FROM 'op'
) WITH (connector = 'files', path = 'ordered', format = 'debezium-json',
        maxFilesPerTrigger = 1);

CREATE SINK by_lsn (id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
                    PRIMARY KEY (id) NOT ENFORCED)
  WITH (connector = 'postgres', url = '{url}', user = 'postgres',
        password = '${{env:PG_PASSWORD}}', table = 'flink_by_lsn');
CREATE SINK by_arrival (id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
                        PRIMARY KEY (id) NOT ENFORCED)
  WITH (connector = 'postgres', url = '{url}', user = 'postgres',
        password = '${{env:PG_PASSWORD}}', table = 'flink_by_arrival');

CREATE SINK on_time (flight_id BIGINT, carrier STRING, flight BIGINT, delay_hours DOUBLE,
                     PRIMARY KEY (flight_id) NOT ENFORCED)
  WITH (connector = 'postgres', url = '{url}', user = 'postgres',
        password = '${{env:PG_PASSWORD}}', table = 'flink_on_time');

INSERT INTO by_lsn SELECT id, carrier, flight, dep_delay FROM shuffled;
INSERT INTO by_arrival SELECT id, carrier, flight, dep_delay FROM ordered;
INSERT INTO on_time
SELECT id AS flight_id, lower(carrier) AS carrier, flight, dep_delay / 60 AS delay_hours
FROM shuffled
WHERE dep_delay < 30;
"""


def _on_time_oracle(events: list[dict]) -> set:
    """The rows of ``on_time`` in plain Python, with Flink's meaning of the WHERE: per key,
    the change with the highest ``source.lsn``; the key is in the table when that change
    is not a delete and its row passes ``dep_delay < 30`` (a NULL delay does not); the
    columns computed from that row."""
    last: dict[int, dict] = {}
    for event in sorted(events, key=lambda e: e["source"]["lsn"]):
        image = event["before"] if event["op"] == "d" else event["after"]
        last[image["id"]] = event
    rows = set()
    for event in last.values():
        image = event["after"]
        if event["op"] != "d" and image["dep_delay"] is not None and image["dep_delay"] < 30:
            rows.add(
                (image["id"], image["carrier"].lower(), image["flight"], image["dep_delay"] / 60)
            )
    return rows


def _in_order(folder, events: list[dict], files: int = 2) -> None:
    """The events in log order, cut into ``files`` files named and dated in reading order."""
    folder.mkdir(parents=True)
    size = -(-len(events) // files)
    for part in range(files):
        path = folder / f"part-{part:02d}.json"
        path.write_text("".join(json.dumps(e) + "\n" for e in events[part * size :][:size]))
        os.utime(path, (1_700_000_000 + part, 1_700_000_000 + part))


def test_a_debezium_log_inserted_into_a_keyed_sink_equals_the_oracle(
    spark, postgres, tmp_path, monkeypatch
):
    monkeypatch.setenv("PG_PASSWORD", postgres.password)
    events = change_log(seed=3310, count=40)
    write_files(tmp_path / "shuffled", events, seed=21, files=2)
    _in_order(tmp_path / "ordered", events)
    path = tmp_path / "flink.ssql"
    path.write_text(PIPELINE.format(url=postgres.url))
    session = Session(spark)
    pipeline = session.compile_file(str(path))
    applier = pipeline.translate()
    assert "arrival=True" in applier.split("QUERY by_arrival")[1]
    assert "arrival=True" not in applier.split("QUERY by_lsn")[1].split("QUERY")[0]
    session.run(pipeline, available_now=True)
    expected, _ = oracle(events)
    assert len(expected) > 10 and sum(e["op"] == "d" for e in events) > 3
    columns = "id, carrier, flight, dep_delay"
    assert set(postgres.rows(f"SELECT {columns} FROM flink_by_lsn")) == expected
    assert set(postgres.rows(f"SELECT {columns} FROM flink_by_arrival")) == expected
    # through a WHERE and a projection: a change whose row fails the WHERE deletes its key
    on_time = _on_time_oracle(events)
    filtered_out = {r[0] for r in expected} - {r[0] for r in on_time}
    assert len(on_time) > 5 and len(filtered_out) > 5
    columns = "flight_id, carrier, flight, delay_hours"
    assert set(postgres.rows(f"SELECT {columns} FROM flink_on_time")) == on_time
    # the shuffled log is out of order: applied by arrival it would not be the oracle
    shuffled = sorted((tmp_path / "shuffled").glob("*.json"))
    arrived = [json.loads(line) for f in shuffled for line in f.read_text().splitlines()]
    assert [e["source"]["lsn"] for e in arrived] != sorted(e["source"]["lsn"] for e in events)
