"""The Kafka connector against a real broker (``tests/support/kafka_broker.py``) and real Spark.

Three days of flights (``examples/flights/data/flights/2013-01-0[1-3].csv``, 2,699 rows)
are produced with confluent-kafka as JSON and as Avro (fastavro, the schema
``tests/fixtures/kafka/flight.avsc``); pipelines read them with ``EMIT … ONCE``
(``trigger(availableNow=True)``) and their sink holds exactly what plain Python computes
over the CSV rows. Sinks: a query writes to Kafka (JSON with a key, and a complete-mode
aggregation as Avro) and the records read back with confluent-kafka are compared the same way.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import uuid
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest

import sqlstream
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.spark

DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))[:3]
AVSC = FIXTURES / "kafka" / "flight.avsc"


def _rows() -> list[dict]:
    rows = []
    for day in DAYS:
        with open(day, newline="") as handle:
            for r in csv.DictReader(handle):
                rows.append(
                    {
                        "carrier": r["carrier"],
                        "flight": int(r["flight"]),
                        "origin": r["origin"],
                        "dest": r["dest"],
                        "dep_delay": None if r["dep_delay"] == "NA" else float(r["dep_delay"]),
                        "time_hour": datetime.strptime(
                            r["time_hour"], "%Y-%m-%dT%H:%M:%SZ"
                        ).replace(tzinfo=timezone.utc),
                    }
                )
    return rows


ROWS = _rows()


def _produce(broker, topic: str, encode) -> None:
    from confluent_kafka import Producer

    broker.create_topic(topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    for row in ROWS:
        producer.produce(topic, key=row["carrier"].encode(), value=encode(row))
    assert producer.flush(30) == 0


def _json(row: dict) -> bytes:
    return json.dumps(
        {**row, "time_hour": row["time_hour"].strftime("%Y-%m-%dT%H:%M:%SZ")}
    ).encode()


def _consume(broker, topic: str, count: int) -> list:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    records = []
    idle = 0
    while len(records) < count or idle < 2:
        message = consumer.poll(1.0)
        if message is None:
            idle += 1
            if idle > 20:
                break
            continue
        assert message.error() is None, message.error()
        records.append(message)
    consumer.close()
    return records


def _run(spark, text: str, variables: dict, path: str | None = None) -> None:
    pipeline = sqlstream.compile(text, variables=variables, path=path)
    for query in pipeline.start(spark, available_now=True):
        query.awaitTermination(900)
        assert query.exception() is None, query.exception()


def _csv_line(row: dict) -> bytes:
    delay = "" if row["dep_delay"] is None else repr(row["dep_delay"])
    return (
        f"{row['carrier']},{row['flight']},{row['origin']},{row['dest']},{delay},"
        f"{row['time_hour'].strftime('%Y-%m-%dT%H:%M:%SZ')}"
    ).encode()


def test_json_csv_and_raw_sources_with_metadata_equal_the_rows(spark, kafka_broker, tmp_path):
    from confluent_kafka import Producer

    topic = f"flights-json-{uuid.uuid4().hex[:8]}"
    _produce(kafka_broker, topic, _json)
    csv_topic = kafka_broker.create_topic(f"flights-csv-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap_servers, "linger.ms": 20})
    for row in ROWS:
        producer.produce(
            csv_topic,
            value=_csv_line(row),
            headers=[("day", row["time_hour"].strftime("%Y-%m-%d").encode())],
        )
    assert producer.flush(30) == 0
    _run(
        spark,
        """
        CREATE STREAM flights (
            carrier STRING, flight INT, origin STRING, dest STRING, dep_delay DOUBLE,
            time_hour TIMESTAMP,
            msg_key STRING METADATA FROM 'key',
            part INT METADATA FROM 'partition',
            off BIGINT METADATA FROM 'offset',
            src STRING METADATA FROM 'topic',
            late AS dep_delay > 60,
            WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
        ) WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${topic}',
                starting_offsets = 'earliest');
        CREATE SINK kafka_json_rows WITH (connector = 'memory');
        INSERT INTO kafka_json_rows
        SELECT carrier, flight, origin, dest, dep_delay, CAST(time_hour AS STRING) AS th,
               msg_key, part, off, src, late
        FROM flights EMIT ONCE;

        CREATE STREAM flights_csv (
            carrier STRING, flight INT, origin STRING, dest STRING, dep_delay DOUBLE,
            time_hour TIMESTAMP,
            hs ARRAY<STRUCT<key: STRING, value: BINARY>> METADATA FROM 'headers'
        ) WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${csv}',
                starting_offsets = 'earliest', format = 'csv');
        CREATE SINK kafka_csv_rows WITH (connector = 'memory');
        INSERT INTO kafka_csv_rows
        SELECT carrier, flight, origin, dest, dep_delay, CAST(time_hour AS STRING) AS th,
               hs[0].key AS header, CAST(hs[0].value AS STRING) AS day
        FROM flights_csv EMIT ONCE;

        CREATE STREAM lines (value STRING)
        WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${csv}',
              starting_offsets = 'earliest', format = 'raw');
        CREATE SINK kafka_raw_lines WITH (connector = 'memory');
        INSERT INTO kafka_raw_lines SELECT value FROM lines EMIT ONCE;
    """,
        {"servers": kafka_broker.bootstrap_servers, "topic": topic, "csv": csv_topic},
        str(tmp_path / "p.ssql"),
    )
    got = sorted((tuple(r) for r in spark.table("kafka_json_rows").collect()), key=repr)
    expected = sorted(
        (
            (
                r["carrier"],
                r["flight"],
                r["origin"],
                r["dest"],
                r["dep_delay"],
                r["time_hour"].strftime("%Y-%m-%d %H:%M:%S"),
                r["carrier"],
                0,
                offset,
                topic,
                None if r["dep_delay"] is None else r["dep_delay"] > 60,
            )
            for offset, r in enumerate(ROWS)
        ),
        key=repr,
    )
    assert len(got) == len(ROWS) == 2699
    assert got == expected

    got = sorted((tuple(r) for r in spark.table("kafka_csv_rows").collect()), key=repr)
    expected = sorted(
        (
            (
                r["carrier"],
                r["flight"],
                r["origin"],
                r["dest"],
                r["dep_delay"],
                r["time_hour"].strftime("%Y-%m-%d %H:%M:%S"),
                "day",
                r["time_hour"].strftime("%Y-%m-%d"),
            )
            for r in ROWS
        ),
        key=repr,
    )
    assert got == expected
    assert sorted(r.value for r in spark.table("kafka_raw_lines").collect()) == sorted(
        _csv_line(r).decode() for r in ROWS
    )


def test_avro_source_windowed_aggregation_equals_batch(spark, kafka_broker, tmp_path):
    from fastavro import parse_schema, schemaless_writer

    schema = parse_schema(json.loads(AVSC.read_text()))

    def encode(row):
        out = io.BytesIO()
        schemaless_writer(out, schema, row)
        return out.getvalue()

    topic = f"flights-avro-{uuid.uuid4().hex[:8]}"
    _produce(kafka_broker, topic, encode)
    shutil.copy(AVSC, tmp_path / "flight.avsc")
    _run(
        spark,
        """
        CREATE STREAM flights_avro (
            origin STRING, dep_delay DOUBLE, time_hour TIMESTAMP,
            WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
        ) WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${topic}',
                starting_offsets = 'earliest', format = 'avro', avro_schema = 'flight.avsc');
        CREATE SINK kafka_avro_hourly WITH (connector = 'memory');
        INSERT INTO kafka_avro_hourly
        SELECT window_start, origin, COUNT(*) AS n, SUM(dep_delay) AS total
        FROM TUMBLE(flights_avro, time_hour, INTERVAL '1' HOUR)
        GROUP BY window_start, window_end, origin
        EMIT FINAL ONCE;
    """,
        {"servers": kafka_broker.bootstrap_servers, "topic": topic},
        str(tmp_path / "p.ssql"),
    )
    got = sorted(
        (
            (r.ws, r.origin, r.n, None if r.total is None else round(r.total, 6))
            for r in spark.sql(
                "SELECT CAST(window_start AS STRING) AS ws, origin, n, total FROM kafka_avro_hourly"
            ).collect()
        ),
        key=repr,
    )
    # Append mode writes each window once the watermark (max event time - 1 hour) passes its end.
    watermark = max(r["time_hour"] for r in ROWS) - timedelta(hours=1)
    groups = defaultdict(lambda: [0, None])
    for r in ROWS:
        start = r["time_hour"].replace(minute=0, second=0)
        if start + timedelta(hours=1) <= watermark:
            group = groups[(start.strftime("%Y-%m-%d %H:%M:%S"), r["origin"])]
            group[0] += 1
            if r["dep_delay"] is not None:
                group[1] = (group[1] or 0.0) + r["dep_delay"]
    expected = sorted(
        ((ws, o, n, None if t is None else round(t, 6)) for (ws, o), (n, t) in groups.items()),
        key=repr,
    )
    assert len(expected) > 100
    assert got == expected


def _day_files(tmp_path):
    target = tmp_path / "data"
    target.mkdir()
    for day in DAYS:
        shutil.copy(day, target / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(target / day.name, (stamp, stamp))
    return target


FILES_STREAM = """
    CREATE STREAM flights_csv (
        year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,
        arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
        distance DOUBLE, time_hour TIMESTAMP
    ) WITH (connector = 'files', path = 'data', format = 'csv', header = true, nullValue = 'NA');
"""


def test_sink_json_with_key_columns_and_avro_complete_mode(spark, kafka_broker, tmp_path):
    from fastavro import parse_schema, schemaless_reader

    _day_files(tmp_path)
    rows_topic = kafka_broker.create_topic(f"out-rows-{uuid.uuid4().hex[:8]}")
    counts_topic = kafka_broker.create_topic(f"out-counts-{uuid.uuid4().hex[:8]}")
    counts_schema = {
        "type": "record",
        "name": "counts",
        "fields": [{"name": "origin", "type": ["null", "string"]}, {"name": "n", "type": "long"}],
    }
    (tmp_path / "counts.avsc").write_text(json.dumps(counts_schema))
    _run(
        spark,
        FILES_STREAM
        + """
        CREATE SINK rows_out WITH (connector = 'kafka', bootstrap_servers = '${servers}',
            topic = '${rows}', key_columns = 'carrier');
        INSERT INTO rows_out
        SELECT carrier, flight, origin, dep_delay, time_hour FROM flights_csv EMIT ONCE;

        CREATE SINK counts_out WITH (connector = 'kafka', bootstrap_servers = '${servers}',
            topic = '${counts}', format = 'avro', avro_schema = 'counts.avsc');
        INSERT INTO counts_out
        SELECT origin, COUNT(*) AS n FROM flights_csv GROUP BY origin EMIT COMPLETE ONCE;
    """,
        {"servers": kafka_broker.bootstrap_servers, "rows": rows_topic, "counts": counts_topic},
        str(tmp_path / "p.ssql"),
    )

    records = _consume(kafka_broker, rows_topic, len(ROWS))
    got = [(m.key().decode(), json.loads(m.value())) for m in records]
    got = sorted(
        (
            (k, v["carrier"], v["flight"], v["origin"], v.get("dep_delay"), v["time_hour"])
            for k, v in got
        ),
        key=repr,
    )
    expected = sorted(
        (
            (
                r["carrier"],
                r["carrier"],
                r["flight"],
                r["origin"],
                r["dep_delay"],
                r["time_hour"].strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            )
            for r in ROWS
        ),
        key=repr,
    )
    assert got == expected

    schema = parse_schema(counts_schema)
    counts = [
        schemaless_reader(io.BytesIO(m.value()), schema, schema)
        for m in _consume(kafka_broker, counts_topic, 3)
    ]
    batch = defaultdict(int)
    for r in ROWS:
        batch[r["origin"]] += 1
    assert sorted((c["origin"], c["n"]) for c in counts) == sorted(batch.items())


def test_exec_names_a_package_that_does_not_resolve(tmp_path):
    """``exec`` of a Kafka pipeline whose package version is not served: SS510 naming the
    package and Ivy's reason, exit status 1, no JVM stack trace (a real Ivy resolution)."""
    import subprocess
    import sys

    (tmp_path / "p.ssql").write_text(
        "CREATE STREAM s (a INT) WITH (connector = 'kafka', bootstrap_servers = '127.0.0.1:1', "
        "topic = 't');\nSELECT a FROM s EMIT ONCE;\n"
    )
    env = {**os.environ, "SQLSTREAM_SPARK_PACKAGE_VERSION": "4.1.99", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "sqlstream.cli", "exec", str(tmp_path / "p.ssql")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 1
    assert (
        "SS510 Spark could not resolve spark.jars.packages "
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.99 when the session started: "
        "org.apache.spark#spark-sql-kafka-0-10_2.13;4.1.99: not found"
    ) in done.stderr
    assert "Traceback" not in done.stderr and "\tat org.apache" not in done.stderr
