"""``EMIT CHANGES REAL TIME`` (Spark's real-time mode) from Kafka to Kafka on a real broker
(``tests/support/kafka_broker.py``) and real Spark — PySpark 4.2 or newer, whose
``DataStreamWriter.trigger`` has ``realTime`` (CI runs it on 4.2, the newest minor whose
Kafka connector is served; ``.ci/run``).

One day of flights (``examples/flights/data/flights/2013-01-01.csv``) is produced as JSON
with confluent-kafka; a stateless pipeline (filter and projection) runs in real-time mode
with a 5-second checkpoint interval, and the records read back from its output topic are
the produced rows filtered and projected in plain Python.
"""

from __future__ import annotations

import csv
import json
import time
import uuid

import pytest

import sqlstream
from sqlstream.ir import spark_versions
from tests.conftest import ROOT, settings_kept

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        not spark_versions.at_least(spark_versions.default(), "4.2"),
        reason="PySpark 4.0 and 4.1 have no trigger(realTime=…)",
    ),
]

DAY = ROOT / "examples" / "flights" / "data" / "flights" / "2013-01-01.csv"


def _rows() -> list[dict]:
    with open(DAY, newline="") as handle:
        return [
            {
                "carrier": r["carrier"],
                "flight": int(r["flight"]),
                "origin": r["origin"],
                "dep_delay": None if r["dep_delay"] == "NA" else float(r["dep_delay"]),
            }
            for r in csv.DictReader(handle)
        ]


PIPELINE = """
CREATE STREAM flights (carrier STRING, flight INT, origin STRING, dep_delay DOUBLE)
WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${source}',
      starting_offsets = 'earliest');
CREATE SINK late WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${sink}');
INSERT INTO late
SELECT carrier, flight, upper(origin) AS origin, dep_delay FROM flights WHERE dep_delay > 15
EMIT CHANGES REAL TIME CHECKPOINT EVERY INTERVAL '5' SECONDS;
"""


def test_kafka_to_kafka_in_real_time_mode_equals_python(spark, kafka_broker, tmp_path):
    from confluent_kafka import Consumer, Producer

    rows = _rows()
    expected = sorted(
        (r["carrier"], r["flight"], r["origin"].upper(), r["dep_delay"])
        for r in rows
        if r["dep_delay"] is not None and r["dep_delay"] > 15
    )
    source = kafka_broker.create_topic(f"rt-in-{uuid.uuid4().hex[:8]}")
    sink = kafka_broker.create_topic(f"rt-out-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "linger.ms": 5})
    half = len(rows) // 2
    for row in rows[:half]:  # half before the query starts, half while it runs
        producer.produce(source, value=json.dumps(row).encode())
    assert producer.flush(30) == 0

    pipeline = sqlstream.compile(
        PIPELINE,
        {"servers": kafka_broker.bootstrap_servers, "source": source, "sink": sink},
        path=str(tmp_path / "rt.ssql"),
    )
    (query,) = pipeline.plan.queries
    assert (query.output_mode, query.trigger.kind, query.trigger.interval) == (
        "update",
        "real_time",
        "5 seconds",
    )
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([sink])
    (started,) = pipeline.start(spark)
    got = []
    try:
        for row in rows[half:]:
            producer.produce(source, value=json.dumps(row).encode())
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 60
        while len(got) < len(expected) and time.monotonic() < deadline:
            assert started.exception() is None, started.exception()
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got.append(json.loads(message.value()))
    finally:
        consumer.close()
        started.stop()
    assert started.exception() is None, started.exception()
    assert (
        sorted((r["carrier"], r["flight"], r["origin"], r.get("dep_delay")) for r in got)
        == expected
    )


AGGREGATE = """
SET 'spark.sql.shuffle.partitions' = '1';
CREATE STREAM flights (carrier STRING, flight INT, origin STRING, dep_delay DOUBLE)
WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${source}',
      starting_offsets = 'earliest');
CREATE SINK per_origin WITH (connector = 'kafka', bootstrap_servers = '${servers}',
                             topic = '${sink}');
INSERT INTO per_origin
SELECT origin, count(*) AS flights, sum(flight) AS flight_sum FROM flights GROUP BY origin
EMIT CHANGES REAL TIME CHECKPOINT EVERY INTERVAL '5' SECONDS;
"""


def test_real_time_aggregation_runs_from_4_3_as_check_says(spark, kafka_broker, tmp_path):
    """An aggregation in real-time mode: ``check`` refuses it for 4.2 (``SS343``) and Spark
    4.2 fails it (``OPERATOR_OR_SINK_NOT_IN_ALLOWLIST``); 4.3 runs it, and the last update
    per origin is the count and sum plain Python computes. One shuffle partition: the
    source task and the aggregation's tasks run at once, and the session has two cores
    (more is ``CONCURRENT_SCHEDULER_INSUFFICIENT_SLOT``)."""
    from confluent_kafka import Producer

    rows = _rows()[:300]
    source = kafka_broker.create_topic(f"rta-in-{uuid.uuid4().hex[:8]}")
    sink = kafka_broker.create_topic(f"rta-out-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers})
    for row in rows:
        producer.produce(source, value=json.dumps(row).encode())
    assert producer.flush(30) == 0
    variables = {"servers": kafka_broker.bootstrap_servers, "source": source, "sink": sink}
    version = spark_versions.major_minor(spark.version)
    codes = {f.code for f in sqlstream.check(AGGREGATE, variables, spark_version=version)}
    pipeline = sqlstream.compile(
        AGGREGATE, variables, path=str(tmp_path / "agg.ssql"), checks=False
    )
    with settings_kept(spark, pipeline):
        _aggregate_in_real_time(spark, kafka_broker, pipeline, codes, rows, sink, version)


def _aggregate_in_real_time(spark, kafka_broker, pipeline, codes, rows, sink, version):
    from confluent_kafka import Consumer
    from pyspark.errors import StreamingQueryException

    (started,) = pipeline.start(spark)
    if not spark_versions.at_least(version, "4.3"):
        assert "SS343" in codes
        with pytest.raises(StreamingQueryException) as caught:
            started.awaitTermination(60)
        assert "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST" in str(caught.value)
        return
    assert "SS343" not in codes
    expected: dict = {}
    for r in rows:
        count, total = expected.get(r["origin"], (0, 0))
        expected[r["origin"]] = (count + 1, total + r["flight"])
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([sink])
    latest: dict = {}
    try:
        deadline = time.monotonic() + 60
        while latest != expected and time.monotonic() < deadline:
            assert started.exception() is None, started.exception()
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                update = json.loads(message.value())
                latest[update["origin"]] = (update["flights"], update["flight_sum"])
    finally:
        consumer.close()
        started.stop()
    assert latest == expected
