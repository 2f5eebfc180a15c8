"""``format = 'debezium-json'`` on real Spark: files and a real Kafka broker
(``tests/support/kafka_broker.py``).

A seeded random change log of flights (``examples/flights/data/flights/2013-01-01.csv``: a
row per flight is created, updated, deleted, re-created) is written as Debezium change
records, some in Kafka Connect's ``schema``/``payload`` wrapping, with blank lines (files)
or tombstones (Kafka) among them. The pipelines read them with ``EMIT … ONCE`` into memory
sinks, and the rows equal a decode of the same records done here in plain Python: the
``after`` image (``before`` for ``d``) and the envelope's ``op``, ``ts_ms`` and
``source.*`` fields. Malformed records are dropped with ``on_error = 'drop'`` and stop the
query with the default ``fail``.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
import uuid

import pytest

import sqlstream
from tests.conftest import ROOT

pytestmark = pytest.mark.spark

DAY = ROOT / "examples" / "flights" / "data" / "flights" / "2013-01-01.csv"


def _change_log(seed: int, count: int = 120) -> list[dict]:
    """Debezium envelopes over the first ``count`` flights of the day: each is created
    (``c`` or a snapshot ``r``), updated a few times (``u``: another ``dep_delay``), maybe
    deleted (``d``: only ``before``) and re-created; ``source.lsn`` grows with each change."""
    rng = random.Random(seed)
    with open(DAY, newline="") as handle:
        flights = list(itertools.islice(csv.DictReader(handle), count))
    events, lsn = [], 1000
    for key, row in enumerate(flights):
        image = {
            "id": key,
            "carrier": row["carrier"],
            "flight": int(row["flight"]),
            "dep_delay": None if row["dep_delay"] == "NA" else float(row["dep_delay"]),
        }
        ops = [rng.choice("cr")] + ["u"] * rng.randint(0, 3)
        if rng.random() < 0.4:
            ops += ["d"] + (["c"] if rng.random() < 0.5 else [])
        before = None
        for op in ops:
            lsn += rng.randint(1, 50)
            after = None
            if op != "d":
                after = dict(image, dep_delay=round(rng.uniform(-10, 300), 1))
            elif before is None:
                before = dict(image)
            events.append(
                {
                    "before": before if op in ("u", "d") else None,
                    "after": after,
                    "op": op,
                    "ts_ms": 1357016400000 + lsn * 1000,
                    "source": {"lsn": lsn, "table": "flights", "db": "ops"},
                }
            )
            before = after
    rng.shuffle(events)  # decoding keeps no order: the log arrives out of order
    return events


def _wrapped(envelope: dict, wrap: bool) -> str:
    return json.dumps({"schema": {"type": "struct"}, "payload": envelope} if wrap else envelope)


def _decoded(events: list[dict]) -> list[tuple]:
    """The rows a Debezium decode gives, computed here: the image ``op`` carries and
    the envelope's fields, as the query selects them."""
    rows = []
    for e in events:
        image = e["before"] if e["op"] == "d" else e["after"]
        rows.append(
            (
                image["id"],
                image["carrier"],
                image["flight"],
                image["dep_delay"],
                e["op"],
                e["source"]["lsn"],
                e["ts_ms"],
                e["source"]["table"],
            )
        )
    return sorted(rows, key=repr)


COLUMNS = """
    id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
    op STRING METADATA FROM 'op',
    seq BIGINT METADATA FROM 'source.lsn',
    ts TIMESTAMP METADATA FROM 'ts_ms',
    tbl STRING METADATA FROM 'source.table'
"""
SELECT = "SELECT id, carrier, flight, dep_delay, op, seq, unix_millis(ts) AS ts_ms, tbl FROM {}"


def _run(spark, text: str, path, variables: dict | None = None) -> None:
    pipeline = sqlstream.compile(text, variables=variables or {}, path=str(path))
    for query in pipeline.start(spark, available_now=True):
        query.awaitTermination(600)
        assert query.exception() is None, query.exception()


def _rows(spark, table: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.table(table).collect()), key=repr)


BAD_LINES = [
    "not json at all",
    json.dumps({"op": "t", "ts_ms": 1, "source": {"lsn": 1}}),  # a truncate: no row image
    json.dumps({"op": "d", "before": None, "after": None, "ts_ms": 1, "source": {"lsn": 2}}),
    json.dumps(
        {"op": "c", "after": {"id": "x", "carrier": "AA"}, "ts_ms": 1, "source": {"lsn": 3}}
    ),
]


def test_files_change_records_equal_a_python_decode(spark, tmp_path):
    events = _change_log(seed=33)
    folder = tmp_path / "changes"
    folder.mkdir()
    rng = random.Random(7)
    for part in range(3):
        lines = [_wrapped(e, rng.random() < 0.5) for e in events[part::3]]
        lines.insert(len(lines) // 2, "")  # a blank line is no record
        (folder / f"part-{part}.json").write_text("\n".join(lines) + "\n")
    _run(
        spark,
        f"""
        CREATE STREAM changes ({COLUMNS}) WITH (connector = 'files', path = 'changes',
                                               format = 'debezium-json');
        CREATE SINK dbz_files WITH (connector = 'memory');
        INSERT INTO dbz_files {SELECT.format("changes")} EMIT ONCE;
        """,
        tmp_path / "p.ssql",
    )
    got = _rows(spark, "dbz_files")
    assert len(got) == len(events) > 200
    assert got == _decoded(events)

    # malformed records: dropped (counted) with on_error = 'drop', the good ones unchanged
    (folder / "part-9.json").write_text("\n".join(BAD_LINES) + "\n")
    _run(
        spark,
        f"""
        CREATE STREAM changes ({COLUMNS}) WITH (connector = 'files', path = 'changes',
                                               format = 'debezium-json', on_error = 'drop');
        CREATE SINK dbz_files_drop WITH (connector = 'memory');
        INSERT INTO dbz_files_drop {SELECT.format("changes")} EMIT ONCE;
        """,
        tmp_path / "drop.ssql",
    )
    assert _rows(spark, "dbz_files_drop") == _decoded(events)

    # dead letters: each malformed line once, as read, with its reason and file
    _run(
        spark,
        f"""
        CREATE STREAM changes ({COLUMNS}) WITH (connector = 'files', path = 'changes',
            format = 'debezium-json', on_error = 'dead_letter', dead_letter_path = 'dead');
        CREATE SINK dbz_files_dead WITH (connector = 'memory');
        INSERT INTO dbz_files_dead {SELECT.format("changes")} EMIT ONCE;
        """,
        tmp_path / "dead.ssql",
    )
    assert _rows(spark, "dbz_files_dead") == _decoded(events)
    letters = spark.read.json(str(tmp_path / "dead")).collect()
    assert sorted(r["raw"] for r in letters) == sorted(BAD_LINES)
    assert {r["file"].rsplit("/", 1)[-1] for r in letters} == {"part-9.json"}
    reasons = {r["raw"]: r["reason"] for r in letters}
    assert reasons[BAD_LINES[0]].startswith("malformed: not a Debezium change record")
    assert reasons[BAD_LINES[3]] == "column id: 'x' is not a BIGINT"


@pytest.mark.parametrize("bad", BAD_LINES[:3])
def test_a_malformed_change_record_stops_the_query_by_default(spark, tmp_path, bad):
    folder = tmp_path / "changes"
    folder.mkdir()
    good = _wrapped(_change_log(seed=1, count=2)[0], False)
    (folder / "a.json").write_text(good + "\n" + bad + "\n")
    pipeline = sqlstream.compile(
        f"""
        CREATE STREAM changes ({COLUMNS}) WITH (connector = 'files', path = 'changes',
                                               format = 'debezium-json');
        CREATE SINK dbz_fail WITH (connector = 'memory');
        INSERT INTO dbz_fail {SELECT.format("changes")} EMIT ONCE;
        """,
        path=str(tmp_path / "p.ssql"),
    )
    (query,) = pipeline.start(spark, available_now=True)
    with pytest.raises(Exception) as failure:
        query.awaitTermination(600)
    assert "malformed" in str(failure.value) or "Malformed" in str(failure.value)


def test_kafka_change_records_skip_tombstones_and_equal_a_python_decode(
    spark, kafka_broker, tmp_path
):
    from confluent_kafka import Producer

    events = _change_log(seed=34)
    topic = kafka_broker.create_topic(f"dbz-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "linger.ms": 20})
    rng = random.Random(8)
    for e in events:
        image = e["before"] if e["op"] == "d" else e["after"]
        key = json.dumps({"id": image["id"]}).encode()
        producer.produce(topic, key=key, value=_wrapped(e, rng.random() < 0.5).encode())
        if e["op"] == "d":  # Debezium's tombstone after a delete, for log compaction
            producer.produce(topic, key=key, value=None)
    bad_topic = kafka_broker.create_topic(f"dbz-bad-{uuid.uuid4().hex[:8]}")
    for bad in BAD_LINES:
        producer.produce(bad_topic, value=bad.encode())
    assert producer.flush(30) == 0
    _run(
        spark,
        f"""
        CREATE STREAM changes ({COLUMNS}, part INT METADATA FROM 'partition')
        WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{topic}}',
              starting_offsets = 'earliest', format = 'debezium-json');
        CREATE SINK dbz_kafka WITH (connector = 'memory');
        INSERT INTO dbz_kafka {SELECT.format("changes")} WHERE part = 0 EMIT ONCE;

        CREATE STREAM all_changes ({COLUMNS})
        WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{both}}',
              starting_offsets = 'earliest', format = 'debezium-json', on_error = 'drop');
        CREATE SINK dbz_kafka_drop WITH (connector = 'memory');
        INSERT INTO dbz_kafka_drop {SELECT.format("all_changes")} EMIT ONCE;
        """,
        tmp_path / "k.ssql",
        {
            "servers": kafka_broker.bootstrap_servers,
            "topic": topic,
            "both": f"{topic},{bad_topic}",
        },
    )
    assert _rows(spark, "dbz_kafka") == _decoded(events)
    assert _rows(spark, "dbz_kafka_drop") == _decoded(events)
