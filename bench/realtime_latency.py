"""End-to-end latency, Kafka to Kafka: Spark's real-time mode against the default micro-batch
trigger, side by side in one run (a benchmark, not a test).

One broker (``tests/support/kafka_broker.py``), one local SparkSession; for each trigger the
same stateless pipeline (``PIPELINE``: the flights of ``examples/flights/data/flights``,
a filter on the carrier and a projection) reads an input topic and writes an output topic:

* ``real-time``: ``EMIT CHANGES REAL TIME CHECKPOINT EVERY INTERVAL '5' SECONDS``
  (``trigger(realTime='5 seconds')``, PySpark 4.2+);
* ``micro-batch``: ``EMIT CHANGES`` (Spark's default trigger: the next micro-batch as soon
  as the previous one ends).

After a warm-up (rows are produced until one comes out), ``--rows`` flight rows are produced
at ``--rate`` rows per second, each carrying its produce time (``sent_us``, microseconds since
the epoch); a consumer reads the output topic and the latency of a row is its consume time
minus its produce time (one machine, one clock). Printed: p50, p90, p99 and max per trigger.

Usage (from the repository root, with the project's virtualenv; ``mvn`` resolves the
broker's and Spark's Kafka jars into ``.cache/`` once)::

    .venv/bin/python bench/realtime_latency.py                     # 2,000 rows at 200/s
    .venv/bin/python bench/realtime_latency.py --rows 5000 --rate 500
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlstream  # noqa: E402
from tests.support.kafka_broker import KafkaBroker, spark_jars  # noqa: E402

DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))

PIPELINE = """
CREATE STREAM flights (carrier STRING, flight INT, origin STRING, dest STRING,
                       dep_delay DOUBLE, sent_us BIGINT)
WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${source}',
      starting_offsets = 'latest');
CREATE SINK out WITH (connector = 'kafka', bootstrap_servers = '${servers}', topic = '${sink}');
INSERT INTO out
SELECT carrier, flight, upper(origin) AS origin, dest, dep_delay, sent_us
FROM flights WHERE carrier <> 'none'
${emit};
"""

TRIGGERS = {
    "real-time": "EMIT CHANGES REAL TIME CHECKPOINT EVERY INTERVAL '5' SECONDS",
    "micro-batch": "EMIT CHANGES",
}


def flight_rows(count: int) -> list[dict]:
    """The first ``count`` flights of 2013 (day files in order), as JSON-ready dicts."""
    rows: list[dict] = []
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
                    }
                )
                if len(rows) == count:
                    return rows
    return rows


def _now_us() -> int:
    return time.time_ns() // 1000


def measure(
    spark, broker: KafkaBroker, trigger: str, rows: list[dict], rate: float, work: Path
) -> list[float]:
    """Latencies in milliseconds of ``rows`` through the pipeline under ``trigger``."""
    from confluent_kafka import Consumer, Producer

    tag = uuid.uuid4().hex[:8]
    source = broker.create_topic(f"lat-in-{tag}")
    sink = broker.create_topic(f"lat-out-{tag}")
    pipeline = sqlstream.compile(
        PIPELINE,
        {
            "servers": broker.bootstrap_servers,
            "source": source,
            "sink": sink,
            "emit": TRIGGERS[trigger],
        },
        path=str(work / f"{trigger}.ssql"),
    )
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": tag,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([sink])
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    (query,) = pipeline.start(spark)
    try:
        # warm-up: produce a marker row every 0.5 s until one comes out
        deadline = time.monotonic() + 120
        while True:
            producer.produce(source, value=json.dumps({**rows[0], "sent_us": -1}).encode())
            producer.flush(5)
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
            if query.exception() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{trigger}: no output after warm-up: {query.exception()}")
        latencies: list[float] = []
        done = threading.Event()

        def consume() -> None:
            while not done.is_set() and len(latencies) < len(rows):
                message = consumer.poll(0.2)
                if message is None or message.error() is not None:
                    continue
                sent = json.loads(message.value())["sent_us"]
                if sent >= 0:
                    latencies.append((_now_us() - sent) / 1000)

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        start = time.monotonic()
        for i, row in enumerate(rows):
            pause = start + i / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            producer.produce(source, value=json.dumps({**row, "sent_us": _now_us()}).encode())
            producer.poll(0)
        producer.flush(30)
        reader.join(timeout=60)
        done.set()
        if len(latencies) < len(rows):
            raise RuntimeError(f"{trigger}: {len(latencies)} of {len(rows)} rows came out")
        return latencies
    finally:
        query.stop()
        consumer.close()


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0–100) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2000, help="rows per trigger (default 2000)")
    parser.add_argument("--rate", type=float, default=200.0, help="rows per second (default 200)")
    parser.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    rows = flight_rows(args.rows)
    with KafkaBroker() as broker, tempfile.TemporaryDirectory() as work:
        spark = (
            SparkSession.builder.master(f"local[{args.cores}]")
            .appName("realtime-latency")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.jars", ",".join(spark_jars()))
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        print(
            f"pyspark {pyspark.__version__}, local[{args.cores}], {len(rows)} rows at "
            f"{args.rate:g}/s, load average before: {os.getloadavg()[0]:.2f}"
        )
        print(
            f"{'trigger':<12} {'rows':>6} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} "
            f"{'max ms':>8} {'mean ms':>8}"
        )
        for trigger in TRIGGERS:
            latencies = measure(spark, broker, trigger, rows, args.rate, Path(work))
            print(
                f"{trigger:<12} {len(latencies):>6} {percentile(latencies, 50):>8.1f} "
                f"{percentile(latencies, 90):>8.1f} {percentile(latencies, 99):>8.1f} "
                f"{max(latencies):>8.1f} {statistics.mean(latencies):>8.1f}",
                flush=True,
            )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        spark.stop()


if __name__ == "__main__":
    main()
