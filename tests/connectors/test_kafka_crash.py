"""Kafka survives a crash: ``sqlstream exec`` of a Kafka source killed with SIGKILL, restarted.

The flights of a few days are produced to a topic (JSON values, in ``time_hour`` order, so
no record is behind the watermark), then ``sqlstream exec --available-now`` reads the topic
``max_offsets_per_trigger`` records per micro-batch into two queries of one process — a
stateless filter into a parquet files sink (Kafka → files) and an hourly windowed
aggregation upserted into a real PostgreSQL table (Kafka → PostgreSQL, ``EMIT CHANGES``,
one transaction per micro-batch, a replayed batch id skipped) — and is killed with
SIGKILL (driver and JVM) at seeded random points (``tests/support/crash_harness.py``),
restarted after each kill, then left to finish. Every second kill waits until it lands
between a query's offset log and its commit log (a micro-batch planned and not committed,
which the restart runs again: the case Spark's Kafka connector 4.1.1 could not restart
from, SPARK-55271); the checkpoints are never touched.

Against the batch oracle in plain Python over the produced records: the files sink (read
through its ``_spark_metadata`` log) holds exactly the filtered records, and the
PostgreSQL table exactly one row per window with the batch count and sum — nothing lost,
nothing doubled. Runs on a Spark whose own minor's Kafka connector is served (in CI:
4.2, ``.ci/run``). On a minor that uses an older minor's connector
(:data:`sqlstream.lowering.packages.FALLBACKS`: 4.3 uses 4.2's, since Maven Central serves
no 4.3 connector) it is skipped: what it proves is the connector's recovery, and that
connector is proven on its own minor in the same CI run (the other Kafka tests still run on
4.3 with it); the crash test of files, table and Kafka sinks,
``tests/runtime/test_crash_recovery.py``, runs on every Spark of the full suite.
"""

from __future__ import annotations

import csv
import json
import uuid

import pytest

from sqlstream.ir import spark_versions
from sqlstream.lowering.packages import FALLBACKS
from tests.support.crash_harness import (
    DAYS,
    LATE_READ,
    expected_hourly,
    expected_late,
    postgres_hourly,
    run_until_done,
)
from tests.support.kafka_broker import spark_jars

FLIGHT_DAYS, PER_BATCH, KILLS, SEED = 3, 400, 3, 20

PIPELINE = """
CREATE STREAM flights (
    year INT, month INT, day INT, flight INT, carrier STRING, origin STRING,
    dep_delay DOUBLE, time_hour TIMESTAMP,
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${topic}',
        starting_offsets = 'earliest', max_offsets_per_trigger = '${per_batch}');

CREATE SINK late WITH (connector = 'files', path = 'out/late', format = 'parquet');
CREATE SINK hourly_pg WITH (connector = 'postgres', url = '${pg_url}', user = 'postgres',
    password = '${env:PG_PASSWORD}', table = '${pg_table}', key_columns = 'window_start, origin');

INSERT INTO late
SELECT year, month, day, flight, carrier, origin, dep_delay, time_hour
FROM flights WHERE dep_delay > 30;

INSERT INTO hourly_pg
SELECT window_start, origin, COUNT(*) AS flights, SUM(dep_delay) AS total_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT CHANGES;
"""


def _produce(servers: str, topic: str) -> int:
    """The flights of the first :data:`FLIGHT_DAYS` day files as JSON records, ordered by
    ``time_hour`` (``NA`` as null); returns how many."""
    from confluent_kafka import Producer

    rows = []
    for day in DAYS[:FLIGHT_DAYS]:
        with day.open() as handle:
            rows += list(csv.DictReader(handle))
    rows.sort(key=lambda r: r["time_hour"])
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20})
    for r in rows:
        value = {
            "year": int(r["year"]),
            "month": int(r["month"]),
            "day": int(r["day"]),
            "flight": int(r["flight"]),
            "carrier": r["carrier"],
            "origin": r["origin"],
            "dep_delay": None if r["dep_delay"] == "NA" else float(r["dep_delay"]),
            "time_hour": r["time_hour"],
        }
        producer.produce(topic, json.dumps(value).encode())
    assert producer.flush(60) == 0
    return len(rows)


@pytest.mark.spark
def test_kafka_to_files_and_postgres_survive_sigkill(spark, kafka_broker, postgres, tmp_path):
    minor = spark_versions.major_minor(spark.version)
    if minor in FALLBACKS:
        pytest.skip(
            f"Spark {minor} uses the Kafka connector of Spark {FALLBACKS[minor]} "
            f"(none of its own is served): its crash recovery is proven on that minor "
            f"(.ci/run runs this test on 4.2)"
        )
    topic = kafka_broker.create_topic(f"crash-flights-{uuid.uuid4().hex[:8]}")
    produced = _produce(kafka_broker.bootstrap_servers, topic)
    (tmp_path / "p.ssql").write_text(PIPELINE)
    table = f"crash_kafka_{uuid.uuid4().hex[:8]}"
    report = run_until_done(
        tmp_path,
        kills=KILLS,
        seed=SEED,
        batches=-(-produced // PER_BATCH),
        args=(
            "--available-now",
            "--var",
            f"servers={kafka_broker.bootstrap_servers}",
            "--var",
            f"topic={topic}",
            "--var",
            f"per_batch={PER_BATCH}",
            "--var",
            f"pg_url={postgres.url}",
            "--var",
            f"pg_table={table}",
            "--conf",
            "spark.jars=" + ",".join(spark_jars()),
        ),
        env={"PG_PASSWORD": postgres.password},
        between_logs=True,
    )
    assert len(report.kills) == KILLS, report
    # a kill between the offset log and the commit log: a planned batch the restart ran again
    assert any(report.replayed.values()), report

    files = DAYS[:FLIGHT_DAYS]
    late = spark.read.parquet(str(tmp_path / "out" / "late")).selectExpr(*LATE_READ).collect()
    assert sorted(map(tuple, late)) == expected_late(files)
    hourly = postgres_hourly(postgres, table)
    assert hourly == sorted(expected_hourly(files, final=False), key=repr)
    assert sum(n for _, _, n, _ in hourly) == produced  # every record counted once
    print(
        f"kills {report.kills}; replayed {report.replayed}; runs {report.runs}, {report.seconds} s"
    )
