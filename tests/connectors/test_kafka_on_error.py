"""Malformed Kafka values (``on_error`` on a Kafka source, docs/operations.md#malformed-records;
``sqlstream/planning/malformed.py`` with ``Kafka.payload`` in ``sqlstream/connectors/kafka.py``).

Without Spark: the compiled calls and the option rules. On Spark and a real broker
(``tests/support/kafka_broker.py``): two days of real flights produced as JSON values into a topic of
two partitions with crafted bad values mixed in (not JSON, cut JSON, a wrong type, a bad
timestamp, a null value), read by two queries with ``on_error = 'dead_letter'``; one day as
CSV values with bad lines and ``drop``, joined with a Kafka table of the airlines with a
short and a long row and ``drop``; one day as Avro with bytes that are not Avro records
and dead letters into a named sink; and Avro records of a schema whose fields may all be
null. The good rows equal a plain-Python decoding of only the good records (their partition
and offset as the producer was told), the dead letters are exactly the bad records (raw
value, reason, topic, partition, offset), each once, and the progress events count the
malformed records of each micro-batch.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import uuid
from datetime import datetime, timezone

import pytest

import sqlstream
from sqlstream.runtime.events import BatchProgress
from sqlstream.runtime.progress import batch_line
from tests.conftest import FIXTURES, ROOT
from tests.support.run_failures import failure_of

DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))[:3]
AVSC = FIXTURES / "kafka" / "flight.avsc"
STAMP = "%Y-%m-%dT%H:%M:%SZ"
COLUMNS = (
    "carrier STRING, flight INT, origin STRING, dest STRING, dep_delay DOUBLE, time_hour TIMESTAMP"
)

# Bad JSON values and the reason each must get (None: a null value, a tombstone).
BAD_JSON = [
    (b"not json at all", "malformed: not a JSON object"),
    (b'{"carrier": "AA", "flight": 1, "origin": "JFK"', "malformed: not a JSON object"),
    (
        b'{"carrier": "AA", "flight": 1, "origin": "JFK", "dest": "LAX", "dep_delay": "abc", '
        b'"time_hour": "2013-01-01T10:00:00Z"}',
        "column dep_delay: 'abc' is not a DOUBLE",
    ),
    (
        b'{"carrier": "B6", "flight": 2, "origin": "JFK", "dest": "BOS", "dep_delay": 4, '
        b'"time_hour": "yesterday"}',
        "column time_hour: 'yesterday' is not a TIMESTAMP",
    ),
    (None, "malformed: no value"),
]
BAD_CSV = [b"UA,1545,EWR", b"UA,15x5,EWR,IAH,2.0,2013-01-03T10:00:00Z"]
NULLABLE = {
    "type": "record",
    "name": "delay",
    "fields": [
        {"name": "origin", "type": ["null", "string"]},
        {"name": "dep_delay", "type": ["null", "double"]},
    ],
}


def _rows(day) -> list[dict]:
    with open(day, newline="") as handle:
        return [
            {
                "carrier": r["carrier"],
                "flight": int(r["flight"]),
                "origin": r["origin"],
                "dest": r["dest"],
                "dep_delay": None if r["dep_delay"] == "NA" else float(r["dep_delay"]),
                "time_hour": datetime.strptime(r["time_hour"], STAMP).replace(tzinfo=timezone.utc),
            }
            for r in csv.DictReader(handle)
        ]


def _json(row: dict) -> bytes:
    return json.dumps({**row, "time_hour": row["time_hour"].strftime(STAMP)}).encode()


def _csv(row: dict) -> bytes:
    delay = "" if row["dep_delay"] is None else repr(row["dep_delay"])
    return (
        f"{row['carrier']},{row['flight']},{row['origin']},{row['dest']},{delay},"
        f"{row['time_hour'].strftime(STAMP)}"
    ).encode()


def _plain(row: dict) -> tuple:
    return (
        row["carrier"],
        row["flight"],
        row["origin"],
        row["dest"],
        row["dep_delay"],
        row["time_hour"].strftime("%Y-%m-%d %H:%M:%S"),
    )


def _produce(broker, topic: str, values: list, partitions: int = 1) -> list[tuple[int, int]]:
    """Produce ``values`` (bytes or None) in order; returns each one's (partition, offset)."""
    from confluent_kafka import Producer

    broker.create_topic(topic, partitions)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20})
    where: dict[int, tuple[int, int]] = {}
    for i, value in enumerate(values):

        def done(error, message, i=i):
            assert error is None, error
            where[i] = (message.partition(), message.offset())

        producer.produce(topic, key=str(i % 7).encode(), value=value, on_delivery=done)
    assert producer.flush(30) == 0
    return [where[i] for i in range(len(values))]


def _consume(broker, topic: str, count: int) -> list:
    """The records of ``topic`` (at least ``count``; then until 1 s without one)."""
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
    records, idle = [], 0
    while (len(records) < count or idle < 1) and idle < 30:
        message = consumer.poll(1.0)
        if message is None:
            idle += 1
            continue
        assert message.error() is None, message.error()
        records.append(message)
    consumer.close()
    return records


def _mix(good: list, bad: list, every: int = 211) -> tuple[list, list[int]]:
    """``good`` with the ``bad`` values spread through it; returns the values and the
    indexes of the bad ones."""
    values, at, pending = [], [], list(bad)
    for i, value in enumerate(good):
        values.append(value)
        if pending and i % every == 7:
            at.append(len(values))
            values.append(pending.pop(0))
    for value in pending:
        at.append(len(values))
        values.append(value)
    return values, at


# ---------------------------------------------------------------- compiled calls (no JVM)

STREAM = (
    "CREATE STREAM s ({columns}) WITH (connector = 'kafka', bootstrap_servers = 'b:9092', "
    "topic = 't', {options});\nCREATE SINK o WITH (connector = 'console');\n"
    "INSERT INTO o SELECT * FROM s;\n"
)


def test_json_dead_letters_compile_to_a_decoding_and_a_dead_letter_query():
    text = STREAM.format(
        columns="a INT, b TIMESTAMP, off BIGINT METADATA FROM 'offset'",
        options="on_error = 'dead_letter', dead_letter_path = 'dead'",
    )
    pipeline = sqlstream.compile(text)
    relation = pipeline.plan.relations[0]
    assert relation.decoding.columns == (("a", "INT"), ("b", "TIMESTAMP"))
    dead = pipeline.plan.queries[-1]
    assert (dead.name, dead.output_mode) == ("s_dead_letters", "append")
    assert dead.columns == (
        ("raw", "STRING"),
        ("reason", "STRING"),
        ("source", "STRING"),
        ("topic", "STRING"),
        ("partition", "INT"),
        ("offset", "BIGINT"),
        ("time", "TIMESTAMP"),
    )
    printed = pipeline.translate()
    assert (
        "from_json(CAST(`value` AS STRING), '`a` INT, `b` TIMESTAMP', map('mode', 'PERMISSIVE'))"
        in printed
    )
    assert "CAST(`value` AS STRING) AS `__sqlstream_raw`" in printed
    assert "df.observe('malformed:s'" in printed
    assert "`__kafka`.`offset` AS `offset`" in printed
    assert "FAILFAST" not in printed


def test_fail_is_failfast_and_avro_drop_decodes_permissively():
    fail = sqlstream.compile(STREAM.format(columns="a INT", options="on_error = 'fail'"))
    assert fail.plan.relations[0].decoding is None
    assert "map('mode', 'FAILFAST')" in fail.translate()
    avro = sqlstream.compile(
        STREAM.format(
            columns="origin STRING",
            options=f"format = 'avro', avro_schema = '{AVSC}', on_error = 'drop'",
        )
    )
    printed = avro.translate()
    assert "map(\\'mode\\', \\'PERMISSIVE\\')) AS `__sqlstream_t`" in printed  # in a quoted string
    assert "base64(`value`) AS `__sqlstream_raw`" in printed
    assert "'malformed: not an Avro record of the schema'" in printed


def test_null_record_is_the_avro_encoding_of_a_record_of_nulls():
    from fastavro import parse_schema, schemaless_writer

    from sqlstream.connectors.formats.avro import null_record

    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "a", "type": ["null", "string"]},
            {"name": "b", "type": ["int", "null"]},
            {"name": "c", "type": "null"},
        ],
    }
    out = io.BytesIO()
    schemaless_writer(out, parse_schema(schema), {"a": None, "b": None, "c": None})
    assert null_record(schema) == out.getvalue() == b"\x00\x02"
    assert null_record(json.loads(AVSC.read_text())) is None  # carrier cannot be null


@pytest.mark.parametrize(
    "options, code, at",
    [
        ("format = 'raw', on_error = 'drop'", "SS251", "on_error"),
        ("on_error = 'dead_letter'", "SS252", "on_error"),
        ("on_error = 'ignore'", "SS250", "'ignore'"),
    ],
)
def test_bad_kafka_on_error_options_are_positioned_findings(options, code, at):
    columns = "value STRING" if "raw" in options else "a INT"
    text = STREAM.format(columns=columns, options=options)
    findings = [f for f in sqlstream.check(text) if f.severity == "error"]
    assert [f.code for f in findings] == [code], findings
    assert text[findings[0].span.start :].startswith(at)
    assert "kafka raw" in findings[0].message if code == "SS251" else True


@pytest.mark.parametrize(
    "options, at",
    [
        ("on_error = 'dead_letter', dead_letter_path = 'd'", "'dead_letter'"),
        (
            "starting_offsets = 'latest', on_error = 'dead_letter', dead_letter_path = 'd'",
            "'latest'",
        ),
        ("starting_offsets = 'earliest', on_error = 'dead_letter', dead_letter_path = 'd'", None),
        ("on_error = 'drop'", None),
    ],
)
def test_dead_letters_read_from_the_end_of_the_topic_are_a_warning(options, at):
    text = STREAM.format(columns="a INT", options=options)
    findings = sqlstream.check(text)
    assert [(f.code, f.severity) for f in findings] == ([("SS256", "warning")] if at else [])
    if at:
        assert text[findings[0].span.start :].startswith(at)


def test_dead_letters_of_a_kafka_table_are_refused():
    text = (
        "CREATE TABLE t (a INT) WITH (connector = 'kafka', bootstrap_servers = 'b:9092', "
        "topic = 't', on_error = 'dead_letter', dead_letter_path = 'x');\n"
    )
    assert [f.code for f in sqlstream.check(text)] == ["SS255"]


# ---------------------------------------------------------------- on Spark and a broker

PIPELINE = f"""
CREATE STREAM flights (
    {COLUMNS},
    part INT METADATA FROM 'partition',
    off BIGINT METADATA FROM 'offset',
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{json}}',
        starting_offsets = 'earliest', on_error = 'dead_letter', dead_letter_path = 'out/dead');
CREATE SINK kafka_err_rows WITH (connector = 'memory');
INSERT INTO kafka_err_rows
SELECT carrier, flight, origin, dest, dep_delay, CAST(time_hour AS STRING) AS th, part, off
FROM flights EMIT ONCE;
CREATE SINK kafka_err_late WITH (connector = 'memory');
INSERT INTO kafka_err_late SELECT carrier, dep_delay FROM flights WHERE dep_delay > 60 EMIT ONCE;

CREATE STREAM lines ({COLUMNS})
WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{csv}}', format = 'csv',
      starting_offsets = 'earliest', on_error = 'drop');
CREATE SINK kafka_err_csv WITH (connector = 'memory');
INSERT INTO kafka_err_csv
SELECT carrier, flight, origin, dest, dep_delay, CAST(time_hour AS STRING) AS th FROM lines EMIT ONCE;

CREATE TABLE airlines (carrier STRING, name STRING)
WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{airlines}}', format = 'csv',
      on_error = 'drop');
CREATE SINK kafka_err_joined WITH (connector = 'memory');
INSERT INTO kafka_err_joined
SELECT l.flight, a.name FROM lines AS l JOIN airlines AS a ON l.carrier = a.carrier EMIT ONCE;

CREATE STREAM flights_avro (origin STRING, dep_delay DOUBLE, time_hour TIMESTAMP)
WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{avro}}',
      format = 'avro', avro_schema = 'flight.avsc', starting_offsets = 'earliest',
      on_error = 'dead_letter', dead_letter = 'avro_dead');
CREATE SINK avro_dead WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{dlq}}');
CREATE SINK kafka_err_avro WITH (connector = 'memory');
INSERT INTO kafka_err_avro
SELECT origin, dep_delay, CAST(time_hour AS STRING) AS th FROM flights_avro EMIT ONCE;

CREATE STREAM delays (origin STRING, dep_delay DOUBLE)
WITH (connector = 'kafka', bootstrap_servers = '${{servers}}', topic = '${{nullable}}',
      format = 'avro', avro_schema = 'delay.avsc', starting_offsets = 'earliest', on_error = 'drop');
CREATE SINK kafka_err_nullable WITH (connector = 'memory');
INSERT INTO kafka_err_nullable SELECT origin, dep_delay FROM delays EMIT ONCE;
"""


@pytest.mark.spark
def test_drop_and_dead_letters_of_real_kafka_values(spark, kafka_broker, tmp_path):
    from fastavro import parse_schema, schemaless_reader, schemaless_writer

    def avro(schema, row) -> bytes:
        out = io.BytesIO()
        schemaless_writer(out, schema, row)
        return out.getvalue()

    tag = uuid.uuid4().hex[:8]
    topics = {k: f"err-{k}-{tag}" for k in ("json", "csv", "avro", "nullable", "dlq", "airlines")}
    rows = _rows(DAYS[0]) + _rows(DAYS[1])
    json_values, json_bad = _mix([_json(r) for r in rows], [v for v, _ in BAD_JSON])
    json_where = _produce(kafka_broker, topics["json"], json_values, partitions=2)
    csv_rows = _rows(DAYS[2])
    csv_values, csv_bad = _mix([_csv(r) for r in csv_rows], BAD_CSV)
    _produce(kafka_broker, topics["csv"], csv_values)
    flight = parse_schema(json.loads(AVSC.read_text()))
    avro_rows = _rows(DAYS[2])[:400]
    good_avro = [avro(flight, r) for r in avro_rows]
    bad_avro = [b"not avro at all", good_avro[0][:5], b""]
    avro_values, avro_bad = _mix(good_avro, bad_avro, every=97)
    avro_where = _produce(kafka_broker, topics["avro"], avro_values)
    delay = parse_schema(NULLABLE)
    nullable_values = [
        avro(delay, {"origin": o, "dep_delay": d})
        for o, d in [("EWR", 1.5), (None, None), ("JFK", None), (None, 2.0)]
    ]
    nullable_values += [b"\x02", b"\x02\x08EWR", b"zz"]  # a cut string, a cut record, not Avro
    _produce(kafka_broker, topics["nullable"], nullable_values)
    kafka_broker.create_topic(topics["dlq"])
    airlines = (
        (ROOT / "examples" / "flights" / "data" / "airlines.csv").read_text().splitlines()[1:]
    )
    # A short and a long row of real carriers: were they kept, the join would repeat UA and AA.
    _produce(
        kafka_broker,
        topics["airlines"],
        [a.encode() for a in airlines] + [b"UA", b"AA,American Airlines Inc.,extra"],
    )
    shutil.copy(AVSC, tmp_path / "flight.avsc")
    (tmp_path / "delay.avsc").write_text(json.dumps(NULLABLE))
    (tmp_path / "p.ssql").write_text(PIPELINE)

    events: list = []
    pipeline = sqlstream.compile_file(
        tmp_path / "p.ssql", variables={"servers": kafka_broker.bootstrap_servers, **topics}
    )
    sqlstream.Session(spark, listeners=[events.append]).run(pipeline, available_now=True)

    # JSON: the good records, decoded in plain Python, with the partition and offset the
    # producer was told; the dead letters are the bad records with their positions, once.
    bad_index = set(json_bad)
    good_json = [i for i in range(len(json_values)) if i not in bad_index]
    got = sorted((tuple(r) for r in spark.table("kafka_err_rows").collect()), key=repr)
    assert got == sorted(
        (
            _plain(
                json.loads(json_values[i])
                | {"time_hour": datetime.strptime(json.loads(json_values[i])["time_hour"], STAMP)}
            )
            + json_where[i]
            for i in good_json
        ),
        key=repr,
    )
    assert len(got) == len(rows)
    assert {r[6] for r in got} == {0, 1}  # both partitions
    assert spark.table("kafka_err_late").count() == sum(
        1 for r in rows if r["dep_delay"] is not None and r["dep_delay"] > 60
    )
    dead = spark.read.json(str(tmp_path / "out" / "dead")).collect()
    assert sorted(
        (
            (d["raw"], d["reason"], d["source"], d["topic"], d["partition"], d["offset"])
            for d in dead
        ),
        key=repr,
    ) == sorted(
        (
            (None if v is None else v.decode(), reason, "flights", topics["json"], *json_where[i])
            for i, (v, reason) in zip(json_bad, BAD_JSON, strict=True)
        ),
        key=repr,
    )
    assert all(d["time"] for d in dead)

    # CSV values with drop: the good lines only.
    got = sorted((tuple(r) for r in spark.table("kafka_err_csv").collect()), key=repr)
    assert got == sorted((_plain(r) for r in csv_rows), key=repr)

    # A Kafka table with drop: the short and long rows are not in it (read once, uncounted).
    names = dict(next(csv.reader([a])) for a in airlines)
    got = sorted((tuple(r) for r in spark.table("kafka_err_joined").collect()), key=repr)
    assert got == sorted(((r["flight"], names[r["carrier"]]) for r in csv_rows), key=repr)

    # Avro: the good records; the bytes that are not records go to a Kafka dead-letter
    # topic as they were read (value and key), with the reason and position as headers.
    got = sorted((tuple(r) for r in spark.table("kafka_err_avro").collect()), key=repr)
    assert got == sorted(
        ((_plain(r)[2], r["dep_delay"], _plain(r)[5]) for r in avro_rows), key=repr
    )
    letters = _consume(kafka_broker, topics["dlq"], len(bad_avro))
    got = sorted((m.value(), m.key(), {k: v.decode() for k, v in m.headers()}) for m in letters)
    assert [
        (v, k, {n: h[n] for n in h if n != "sqlstream.error.time"}) for v, k, h in got
    ] == sorted(
        (
            avro_values[i],
            str(i % 7).encode(),
            {
                "sqlstream.error.reason": "malformed: not an Avro record of the schema",
                "sqlstream.error.source": "flights_avro",
                "sqlstream.error.topic": topics["avro"],
                "sqlstream.error.partition": str(avro_where[i][0]),
                "sqlstream.error.offset": str(avro_where[i][1]),
            },
        )
        for i in avro_bad
    )
    assert all(h["sqlstream.error.time"].startswith("20") for _, _, h in got)

    # A schema whose fields may all be null: a record of nulls is a good row; the oracle
    # is fastavro reading each value.
    def readable(value: bytes) -> dict | None:
        try:
            return schemaless_reader(io.BytesIO(value), delay, delay)
        except (EOFError, ValueError, IndexError, UnicodeDecodeError):
            return None

    decoded = [d for d in map(readable, nullable_values) if d is not None]
    assert len(decoded) == 4
    got = sorted((tuple(r) for r in spark.table("kafka_err_nullable").collect()), key=repr)
    assert got == sorted(((d["origin"], d["dep_delay"]) for d in decoded), key=repr)

    # Progress: each query counts the malformed records of the source it reads.
    progress = [e for e in events if isinstance(e, BatchProgress)]
    counted = {(e.name, s): 0 for e in progress for s in e.malformed_records}
    for e in progress:
        for source, n in e.malformed_records.items():
            counted[(e.name, source)] += n
    for e in progress:  # and the plain progress line says so
        for source, n in e.malformed_records.items():
            assert (f"{n:,} malformed records ({source})" in batch_line(e)) == (n > 0)
    assert counted == {
        ("kafka_err_rows", "flights"): len(BAD_JSON),
        ("kafka_err_late", "flights"): len(BAD_JSON),
        ("kafka_err_csv", "lines"): len(BAD_CSV),
        ("kafka_err_joined", "lines"): len(BAD_CSV),
        ("kafka_err_avro", "flights_avro"): len(bad_avro),
        ("kafka_err_nullable", "delays"): len(nullable_values) - 4,
    }


@pytest.mark.spark
@pytest.mark.parametrize(
    "bad, expected, hinted",
    [
        (
            None,
            "a Kafka record with no value (a tombstone) in topic {topic}, partition 0, offset 3",
            False,
        ),
        (b"not json at all", "MALFORMED_RECORD_IN_PARSING", True),
    ],
    ids=["tombstone", "not_json"],
)
def test_fail_stops_the_query_at_a_bad_value(spark, kafka_broker, tmp_path, bad, expected, hinted):
    """``on_error = 'fail'`` (the default) on real Kafka values: a value that is not JSON
    stops the query with Spark's FAILFAST error, and so does a tombstone, with its position
    (before, Spark's decoding made it a row of NULLs; the message says what to do). The
    error's hint names on_error instead of Spark's reader option. Nothing reaches the sink."""
    topic = f"err-fail-{uuid.uuid4().hex[:8]}"
    good = [_json(r) for r in _rows(DAYS[0])[:3]]
    _produce(kafka_broker, topic, good + [bad] + good)
    error = failure_of(
        spark,
        tmp_path,
        (
            f"CREATE STREAM flights ({COLUMNS}) WITH (connector = 'kafka', bootstrap_servers = "
            f"'{kafka_broker.bootstrap_servers}', topic = '{topic}', format = 'json', "
            "starting_offsets = 'earliest');\n"
            "CREATE SINK o WITH (connector = 'files', path = 'out', format = 'parquet');\n"
            "INSERT INTO o SELECT * FROM flights EMIT ONCE;\n"
        ),
    )
    assert expected.format(topic=topic) in error.message, error.message
    assert ("on_error = 'drop' or 'dead_letter' on the source" in (error.hint or "")) == hinted
    assert not list((tmp_path / "out").glob("*.parquet"))
