"""Kafka example: start a local broker, feed it flights at a chosen rate, run a pipeline.

    python examples/kafka/run_example.py [--days 3] [--rate 500] [--servers HOST:PORT]
        [--postgres postgresql://USER@HOST:PORT/DB]   (password: PGPASSWORD)

1. Starts a single-node Apache Kafka broker on 127.0.0.1 (KRaft mode, from Kafka's Maven
   Central jars: ``tests/support/kafka_broker.py``, the same code as the tests' fixture; needs
   ``java`` and ``mvn``), unless ``--servers`` names one that runs already.
2. Feeds the first ``--days`` days of ``examples/flights/data/flights`` into topic
   ``flights`` as JSON, ``--rate`` records a second (confluent-kafka), in a thread.
3. Runs ``hourly_delays_kafka.ssql`` with the run API while the records arrive (``exec``
   adds Spark's Kafka package to the session: see the README, "Kafka"), until the feed is
   done and the last records are processed, then stops it.
4. Prints the hourly windows written to ``out/hourly`` and the late flights read back from
   the topic ``late_flights``.

With ``--postgres URL`` it runs ``hourly_delays_postgres.ssql`` instead: the hourly windows
are upserted (``EMIT CHANGES``) into the table ``hourly_delays`` of that database, one
transaction per micro-batch, and the table is printed at the end.

Needs the dev extra (``pip install -e '.[dev]'``: confluent-kafka).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from kafka_broker import KafkaBroker  # noqa: E402  (the tests' broker, not a copy)

import sqlstream  # noqa: E402

FLIGHTS = ROOT / "examples" / "flights" / "data" / "flights"


def records(days: int):
    """The flights of the first ``days`` days as JSON-ready dicts, in file order."""
    for day in sorted(FLIGHTS.glob("*.csv"))[:days]:
        with open(day, newline="") as handle:
            for r in csv.DictReader(handle):
                yield {
                    "carrier": r["carrier"],
                    "flight": int(r["flight"]),
                    "origin": r["origin"],
                    "dest": r["dest"],
                    "dep_delay": None if r["dep_delay"] == "NA" else float(r["dep_delay"]),
                    "time_hour": r["time_hour"],
                }


def feed(servers: str, days: int, rate: float, done: threading.Event) -> None:
    """Produce the records to topic ``flights``, ``rate`` a second, keyed by carrier."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20})
    start, sent = time.monotonic(), 0
    for record in records(days):
        producer.produce(
            "flights", key=record["carrier"].encode(), value=json.dumps(record).encode()
        )
        sent += 1
        ahead = sent / rate - (time.monotonic() - start)
        if ahead > 0:
            producer.poll(0)
            time.sleep(ahead)
    producer.flush(30)
    print(f"feed: {sent} flights produced in {time.monotonic() - start:.1f} s", flush=True)
    done.set()


def late_flights(servers: str) -> list[dict]:
    """The records of topic ``late_flights`` (read from the start)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": uuid.uuid4().hex,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["late_flights"])
    found, idle = [], 0
    while idle < 5:
        message = consumer.poll(1.0)
        if message is None or message.error():
            idle += 1
            continue
        found.append({"key": message.key().decode(), **json.loads(message.value())})
    consumer.close()
    return found


def run_postgres(servers: str, days: int, rate: float, url: str) -> None:
    """Feed the topic and upsert the hourly windows into PostgreSQL at ``url``."""
    import psycopg

    done = threading.Event()
    pipeline = sqlstream.compile_file(
        str(HERE / "hourly_delays_postgres.ssql"), {"servers": servers, "pg": url}
    )
    with sqlstream.Session(master="local[2]", listeners=[sqlstream.TextRenderer()]) as session:
        queries = session.start(pipeline)
        threading.Thread(target=feed, args=(servers, days, rate, done), daemon=True).start()
        done.wait()
        time.sleep(10)
        for query in queries:
            query.processAllAvailable()
            query.stop()
    with psycopg.connect(url, password=os.environ.get("PGPASSWORD")) as connection:
        rows = connection.execute(
            "SELECT window_start, origin, flights, avg_dep_delay "
            "FROM hourly_delays ORDER BY avg_dep_delay DESC NULLS LAST "
            "LIMIT 10"
        ).fetchall()
        (count,) = connection.execute("SELECT count(*) FROM hourly_delays").fetchone()
    print(f"\n{count} hourly windows in table hourly_delays; the worst ten:")
    for row in rows:
        print("  ", row)


def run(servers: str, days: int, rate: float) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": servers})
    for future in admin.create_topics(
        [NewTopic(t, 1, 1) for t in ("flights", "late_flights")]
    ).values():
        try:
            future.result(30)
        except Exception as error:  # noqa: BLE001 - TOPIC_ALREADY_EXISTS on a broker that runs
            print(f"topic: {error}")
    done = threading.Event()
    pipeline = sqlstream.compile_file(str(HERE / "hourly_delays_kafka.ssql"), {"servers": servers})
    with sqlstream.Session(master="local[2]", listeners=[sqlstream.TextRenderer()]) as session:
        queries = session.start(pipeline)  # the records arrive while the queries run
        threading.Thread(target=feed, args=(servers, days, rate, done), daemon=True).start()
        done.wait()
        time.sleep(10)  # the micro-batches of the last records
        for query in queries:
            query.processAllAvailable()
            query.stop()
        hourly = session.spark.read.parquet(str(HERE / "out" / "hourly"))
        print(f"\n{hourly.count()} hourly windows in examples/kafka/out/hourly; the worst ten:")
        hourly.orderBy("avg_dep_delay", ascending=False).show(10, truncate=False)
    late = late_flights(servers)
    print(f"{len(late)} flights delayed over two hours on topic late_flights, e.g.:")
    for record in late[:3]:
        print("  ", record)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=3, help="days of flights to feed (default 3)")
    parser.add_argument("--rate", type=float, default=500.0, help="records a second (default 500)")
    parser.add_argument(
        "--servers", help="a running broker's bootstrap servers (default: start one)"
    )
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="upsert the hourly windows into this PostgreSQL database "
        "(postgresql://user@host:port/db; password from PGPASSWORD)",
    )
    args = parser.parse_args()

    def go(servers: str) -> None:
        if args.postgres:
            run_postgres(servers, args.days, args.rate, args.postgres)
        else:
            run(servers, args.days, args.rate)

    if args.servers:
        go(args.servers)
        return
    # A new broker has new offsets: start over (the checkpoints hold the old broker's offsets).
    for old in (HERE / "out", HERE / ".sqlstream"):
        shutil.rmtree(old, ignore_errors=True)
    with KafkaBroker() as broker:
        print(
            f"broker: Apache Kafka on {broker.bootstrap_servers} (log: {broker.log_file})",
            flush=True,
        )
        go(broker.bootstrap_servers)


if __name__ == "__main__":
    main()
