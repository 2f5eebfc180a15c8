"""Crash recovery harness: ``sqlstream exec`` killed with SIGKILL at random points, restarted.

:func:`run_until_done` runs ``sqlstream exec`` on a pipeline in its own process group
(the Python driver and the JVM it launches), kills the whole group with ``SIGKILL`` at
seeded random points of the stream (each once every query has committed a drawn number
of micro-batches, then up to ``max_delay`` seconds more), restarts it after each
kill, and lets the last run finish. :data:`PIPELINE` is the flights stream (one day file
per micro-batch by default) into two parquet sinks: a stateless filter and an hourly
windowed aggregation (append mode, each window once); :func:`prepare` adds the same
filter into the sinks of :data:`EXTRA_SINKS` — a ``table`` sink (``toTable``), a
``kafka`` topic, a ``postgres`` table upserted by key — as more queries of the same
``exec`` process (one JVM per run).
:func:`expected_late` and :func:`expected_hourly` are the batch oracles, in plain Python
over the input files; :func:`uncommitted_files` lists the part files a plain ``*.parquet``
glob would read but the sink's ``_spark_metadata`` log does not hold;
:func:`topic_records` reads a Kafka topic back with confluent-kafka, and
:func:`batch_files` says which input files a query's micro-batch read (to tell where the
Kafka sink's duplicates come from).

Used by ``tests/runtime/test_crash_recovery.py`` (short, in CI) and ``bench/crash_recovery.py``
(longer, configurable).
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))

PIPELINE = """
CREATE STREAM flights (
    year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,
    arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
    distance DOUBLE, time_hour TIMESTAMP,
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = 'in', format = 'csv', header = true, nullValue = 'NA',
        maxFilesPerTrigger = {files_per_batch});

CREATE SINK late WITH (connector = 'files', path = 'out/late', format = 'parquet');
CREATE SINK hourly WITH (connector = 'files', path = 'out/hourly', format = 'parquet');

INSERT INTO late
SELECT year, month, day, flight, carrier, origin, dep_delay, time_hour
FROM flights WHERE dep_delay > 30
EMIT ONCE;

INSERT INTO hourly
SELECT window_start, origin, COUNT(*) AS flights, SUM(dep_delay) AS total_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT FINAL ONCE;
"""


# The stateless filter again, into the sinks added since (``prepare(extra=…)``); their
# ``${…}`` variables are given to ``exec`` with ``--var`` (:func:`run_until_done` ``args``).
LATE_COLUMNS = "year, month, day, flight, carrier, origin, dep_delay, time_hour"
EXTRA_SINKS = {
    # toTable at .sqlstream/warehouse/late_flights (a parquet table: a files sink's log)
    "table": f"""
CREATE SINK late_table WITH (connector = 'table', table = 'late_flights');
INSERT INTO late_table SELECT {LATE_COLUMNS} FROM flights WHERE dep_delay > 30 EMIT ONCE;
""",
    # JSON values; the key identifies a flight: what a reader deduplicates by
    "kafka": f"""
CREATE SINK late_kafka WITH (connector = 'kafka', bootstrap_servers = '${{servers}}',
    topic = '${{topic}}', key_columns = 'carrier, flight, origin, time_hour');
INSERT INTO late_kafka SELECT {LATE_COLUMNS} FROM flights WHERE dep_delay > 30 EMIT ONCE;
""",
    # upserted by key in one transaction per micro-batch, a replayed batch id skipped
    "postgres": """
CREATE SINK hourly_pg WITH (connector = 'postgres', url = '${pg_url}', user = 'postgres',
    password = '${env:PG_PASSWORD}', table = '${pg_table}', key_columns = 'window_start, origin');
INSERT INTO hourly_pg
SELECT window_start, origin, COUNT(*) AS flights, SUM(dep_delay) AS total_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT CHANGES ONCE;
""",
}


@dataclass
class Report:
    """What a harness run did: ``kills`` (where each run was killed: the micro-batches
    every query had committed when it waited no more, then seconds), ``runs`` (processes started),
    ``seconds`` (wall time), ``replayed`` (per query, the id of each micro-batch that was
    planned but not committed when a kill landed — the next run runs it again — once per
    kill)."""

    kills: list[str] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0
    replayed: dict[str, list[int]] = field(default_factory=dict)


def prepare(
    work: Path, days: int, files_per_batch: int = 1, extra: tuple[str, ...] = ()
) -> list[Path]:
    """Copy the first ``days`` day files into ``work/in`` (each with the modification time
    of its day: Spark's file source reads in that order) and write ``work/p.ssql``:
    :data:`PIPELINE` plus the :data:`EXTRA_SINKS` named in ``extra``."""
    inputs = work / "in"
    inputs.mkdir(parents=True)
    for day in DAYS[:days]:
        shutil.copy(day, inputs / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(inputs / day.name, (stamp, stamp))
    text = PIPELINE.replace("{files_per_batch}", str(files_per_batch))
    (work / "p.ssql").write_text(text + "".join(EXTRA_SINKS[name] for name in extra))
    return sorted(inputs.glob("*.csv"))


def _checkpoints(work: Path) -> Path:
    return work / ".sqlstream" / "checkpoints" / "p"


def _ids(folder: Path) -> set[int]:
    return {int(p.name) for p in folder.glob("*") if p.name.isdigit()} if folder.is_dir() else set()


def rewind_to_batch(checkpoint: Path, batch: int) -> None:
    """Put a query's checkpoint back to the state a kill right after its sink's commit of
    ``batch`` leaves: the offset-log entries after ``batch`` and the commit-log entries from
    ``batch`` on removed (their ``.crc`` files too), so the next run replays ``batch``. (A
    commit log trailing the offset log by two is a state no kill leaves: Spark writes the
    offsets of N + 1 only after the commit of N.)"""
    for log, first in (("offsets", batch + 1), ("commits", batch)):
        for path in (checkpoint / log).iterdir():
            number = path.name.lstrip(".").split(".")[0]
            if number.isdigit() and int(number) >= first:
                path.unlink()


def committed_batches(work: Path, query: str = "late") -> int:
    """Micro-batches ``query`` has committed so far (files in its checkpoint's ``commits``)."""
    return len(_ids(_checkpoints(work) / query / "commits"))


def uncommitted_batches(work: Path, query: str) -> list[int]:
    """Micro-batch ids in ``query``'s offset log without a commit: planned (or running)
    and not committed; a restart runs them again with the same input."""
    checkpoint = _checkpoints(work) / query
    return sorted(_ids(checkpoint / "offsets") - _ids(checkpoint / "commits"))


def batch_files(work: Path, query: str, batch: int) -> list[str]:
    """The names of the input files micro-batch ``batch`` of ``query`` read: its file
    source offset (``offsets/<batch>``, ``{"logOffset": n}``) looked up in the source's
    log (``sources/0``: one JSON line per file with its ``batchId`` = log offset;
    ``N.compact`` files hold the entries before them)."""
    checkpoint = _checkpoints(work) / query
    offset = json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[2])[
        "logOffset"
    ]
    names = set()
    for entry in (checkpoint / "sources" / "0").iterdir():
        if entry.name.startswith(".") or entry.name.endswith(".tmp"):
            continue
        for line in entry.read_text().splitlines()[1:]:
            record = json.loads(line)
            if record["batchId"] == offset:
                names.add(Path(record["path"]).name)
    return sorted(names)


def _command(work: Path, master: str, args: tuple[str, ...]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sqlstream.cli",
        "exec",
        str(work / "p.ssql"),
        "--master",
        master,
        *args,
    ]


def _started(log: Path, queries: int) -> bool:
    try:
        return log.read_text(errors="replace").count("started query") >= queries
    except FileNotFoundError:
        return False


def kill_points(seed: int, kills: int, batches: int) -> list[int]:
    """The seeded kill points: ``kills`` distinct counts of committed micro-batches, in
    ``0 … batches - 2`` (so every kill falls while input remains), ascending.

    Raises:
        ValueError: more kills than ``batches - 1``.
    """
    if kills > batches - 1:
        raise ValueError(f"{kills} kills need at least {kills + 1} micro-batches, not {batches}")
    return sorted(random.Random(seed).sample(range(batches - 1), kills))


def run_until_done(
    work: Path,
    kills: int,
    seed: int,
    max_delay: float = 2.0,
    master: str = "local[2]",
    timeout: float = 600.0,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    batches: int | None = None,
    between_logs: bool = False,
) -> Report:
    """Run ``sqlstream exec work/p.ssql`` and SIGKILL it ``kills`` times, then let it finish.

    Each run is started in a new session (process group), with ``args`` after the file
    (``--var``, ``--conf``) and ``env`` added to the environment. Kill points come from
    ``random.Random(seed)``: :func:`kill_points` draws ``kills`` distinct numbers of
    committed micro-batches out of ``batches`` (default: the number of input files;
    ``maxFilesPerTrigger = 1``); run *i* waits until every query has started and has
    committed that many (the slowest, a stateful one most often, sets the pace: each
    query's stream is cut at points spread over it), then ``uniform(0, max_delay)``
    seconds more — into the batches in flight, most often — and kills the
    group (driver and JVM) with ``SIGKILL``. With ``between_logs``, every second kill (the
    1st, 3rd, …) then also waits until some query has a micro-batch in its offset log and
    not in its commit log (polled every 10 ms), so it lands between the two. A run that
    ends by itself (the stream was done before its kill point) ends the harness, with
    fewer kills in the report than asked. Before each restart, the
    micro-batches each query had planned but not committed are recorded
    (``Report.replayed``).

    Raises:
        AssertionError: the last run did not exit 0, or a run took longer than ``timeout``.
    """
    rng = random.Random(seed)
    points = kill_points(seed, kills, batches or len(list((work / "in").glob("*.csv"))))
    queries = re.findall(r"INSERT INTO (\w+)", (work / "p.ssql").read_text())
    report = Report()
    begin = time.monotonic()
    env = dict(
        os.environ,
        **(env or {}),
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    while True:
        report.runs += 1
        log = work / f"run-{report.runs}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                _command(work, master, args),
                cwd=work,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        if len(report.kills) < kills:
            point, delay = points[len(report.kills)], rng.uniform(0, max_delay)
            while process.poll() is None and not (
                _started(log, len(queries))
                and min(committed_batches(work, q) for q in queries) >= point
            ):
                assert time.monotonic() < deadline, f"run {report.runs} made no progress: {log}"
                time.sleep(0.05)
            time.sleep(delay)
            if between_logs and len(report.kills) % 2 == 0:
                while process.poll() is None and not any(
                    uncommitted_batches(work, q) for q in queries
                ):
                    assert time.monotonic() < deadline, f"run {report.runs}: no batch in flight"
                    time.sleep(0.01)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # the driver and its JVM, at once
                process.wait()
                report.kills.append(f"{point} batches +{delay:.2f} s")
                for query in (p.name for p in _checkpoints(work).glob("*")):
                    report.replayed.setdefault(query, []).extend(uncommitted_batches(work, query))
                continue
        try:
            code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError(f"run {report.runs} did not finish: {log}") from None
        assert code == 0, f"run {report.runs} exited {code}:\n{log.read_text()[-3000:]}"
        break
    report.seconds = round(time.monotonic() - begin, 1)
    return report


def _rows(files: list[Path]):
    for path in files:
        with path.open() as handle:
            yield from csv.DictReader(handle)


def _hour(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")


def expected_late(files: list[Path]) -> list[tuple]:
    """The stateless query over ``files``: ``(year, month, day, flight, carrier, origin,
    dep_delay, time_hour as 'YYYY-MM-DD HH:MM:SS')`` of flights with ``dep_delay > 30``."""
    return sorted(
        (
            int(r["year"]),
            int(r["month"]),
            int(r["day"]),
            int(r["flight"]),
            r["carrier"],
            r["origin"],
            float(r["dep_delay"]),
            str(_hour(r["time_hour"])),
        )
        for r in _rows(files)
        if r["dep_delay"] != "NA" and float(r["dep_delay"]) > 30
    )


def expected_hourly(files: list[Path], final: bool = True) -> list[tuple]:
    """The windowed aggregation over ``files``: ``(window_start, origin, flights,
    round(total_delay, 6))`` of every hourly window that ends by the final watermark (the
    latest ``time_hour`` minus the 1-hour delay: append mode writes a window once the
    watermark has passed its end); with ``final=False`` every window (what update mode
    has written last for each, as no row is later than the watermark: files arrive in
    time order)."""
    counts: dict = defaultdict(lambda: [0, None])
    latest = None
    for r in _rows(files):
        hour = _hour(r["time_hour"])
        latest = hour if latest is None or hour > latest else latest
        entry = counts[(hour, r["origin"])]
        entry[0] += 1
        if r["dep_delay"] != "NA":
            entry[1] = (entry[1] or 0.0) + float(r["dep_delay"])
    watermark = latest - timedelta(hours=1)
    return sorted(
        (str(start), origin, n, None if total is None else round(total, 6))
        for (start, origin), (n, total) in counts.items()
        if start + timedelta(hours=1) <= watermark or not final
    )


def committed_files(sink: Path) -> list[Path]:
    """The part files of a files sink that its ``_spark_metadata`` log lists as committed
    (``add`` actions, minus ``delete`` ones; compacted ``N.compact`` entries included):
    what ``spark.read`` of the folder reads, and what another reader must read
    (docs/guarantees.md#reading-a-files-sink)."""
    import json
    from urllib.parse import unquote, urlparse

    added, deleted = set(), set()
    for entry in (sink / "_spark_metadata").iterdir():
        if entry.name.startswith(".") or entry.name.endswith(".tmp"):
            continue
        for line in entry.read_text().splitlines()[1:]:  # the first line is the version, v1
            if line.strip():
                record = json.loads(line)
                path = Path(unquote(urlparse(record["path"]).path))
                (added if record["action"] == "add" else deleted).add(path)
    return sorted(added - deleted)


def uncommitted_files(sink: Path) -> list[Path]:
    """Part files in ``sink`` that its ``_spark_metadata`` log does not list (written by a
    batch that was killed before it committed): a plain ``*.parquet`` glob reads them,
    Spark's batch read of the folder does not."""
    committed = {p.name for p in committed_files(sink)}
    return sorted(p for p in sink.glob("*.parquet") if p.name not in committed)


def topic_records(servers: str, topic: str, timeout: float = 60.0) -> list[tuple[bytes, bytes]]:
    """Every record of ``topic`` (one partition) as ``(key, value)``, in offset order, read
    with confluent-kafka from the beginning to the end of the partition.

    Raises:
        AssertionError: a consumer error, or the end not reached within ``timeout`` s.
    """
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": servers,
            "group.id": f"crash-{os.getpid()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])  # OFFSET 0: the partition's first record
    records, deadline = [], time.monotonic() + timeout
    try:
        while True:
            assert time.monotonic() < deadline, f"{topic}: no end of partition in {timeout} s"
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error() is not None:
                from confluent_kafka import KafkaError

                if message.error().code() == KafkaError._PARTITION_EOF:
                    return records
                raise AssertionError(message.error())
            records.append((message.key(), message.value()))
    finally:
        consumer.close()


def late_row(value: bytes) -> tuple:
    """A JSON record of the Kafka sink as a row of :func:`expected_late` (``time_hour``,
    written as ``2013-01-01T10:00:00.000Z``, as ``'2013-01-01 10:00:00'``)."""
    r = json.loads(value)
    hour = datetime.fromisoformat(r["time_hour"].replace("Z", "+00:00")).astimezone(timezone.utc)
    return (
        r["year"],
        r["month"],
        r["day"],
        r["flight"],
        r["carrier"],
        r["origin"],
        r["dep_delay"],
        hour.strftime("%Y-%m-%d %H:%M:%S"),
    )


LATE_READ = (
    "year",
    "month",
    "day",
    "flight",
    "carrier",
    "origin",
    "dep_delay",
    "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss')",
)
HOURLY_READ = (
    "date_format(window_start, 'yyyy-MM-dd HH:mm:ss')",
    "origin",
    "flights",
    "round(total_delay, 6)",
)


def table_rows(
    spark, location: Path, name: str = "crash_late_flights"
) -> tuple[list[tuple], list[Path]]:
    """The table sink at ``location`` as a Spark user of another session reads it:
    ``CREATE TABLE name USING parquet LOCATION …`` (an external table over its files;
    dropped again afterwards, the files stay), then ``spark.read.table(name)``. Returns its
    rows as rows of :func:`expected_late`, sorted, and the files Spark reads for it
    (``DataFrame.inputFiles``), sorted: with the log in the location, the ones
    :func:`committed_files` lists."""
    from urllib.parse import unquote, urlparse

    spark.sql(f"CREATE TABLE {name} USING parquet LOCATION '{location}'")
    try:
        table = spark.read.table(name)
        files = sorted(Path(unquote(urlparse(f).path)) for f in table.inputFiles())
        return sorted(map(tuple, table.selectExpr(*LATE_READ).collect())), files
    finally:
        spark.sql(f"DROP TABLE {name}")


def kafka_report(
    work: Path,
    records: list[tuple[bytes, bytes]],
    expected: list[tuple],
    replayed: list[int],
    query: str = "late_kafka",
) -> dict:
    """What the Kafka sink of the stateless filter holds against ``expected``
    (:func:`expected_late`, rows unique): ``records``; ``missing`` and ``wrong`` (oracle
    rows not in the topic, records that are no oracle row); ``duplicates`` (records beyond
    one per row); ``outside_replays`` (rows with more extra copies than the kills that
    interrupted the micro-batch of their input file: ``replayed`` is
    ``Report.replayed[query]``, a row's ``year-month-day`` its day file); ``dedup_by_key``
    (one record per Kafka key, the last, equals ``expected``)."""
    copies = Counter(late_row(value) for _, value in records)
    replays = Counter(name for batch in replayed for name in batch_files(work, query, batch))
    outside = [
        row for row, n in copies.items() if n - 1 > replays[f"{row[0]}-{row[1]:02}-{row[2]:02}.csv"]
    ]
    by_key = {key: late_row(value) for key, value in records}
    return {
        "records": len(records),
        "missing": len(set(expected) - set(copies)),
        "wrong": len(set(copies) - set(expected)),
        "duplicates": len(records) - len(copies),
        "outside_replays": len(outside),
        "replayed_batches": sorted(set(replayed)),
        "dedup_by_key": sorted(by_key.values()) == sorted(expected),
    }


def postgres_hourly(server, table: str) -> list[tuple]:
    """The upserted hourly table as rows of :func:`expected_hourly` (``final=False``),
    sorted by ``repr``."""
    rows = server.rows(
        "SELECT to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
        f" origin, flights, total_delay FROM {table}"
    )
    return sorted(((s, o, n, None if t is None else round(t, 6)) for s, o, n, t in rows), key=repr)
