"""Crash recovery harness: ``sqlstream exec`` killed with SIGKILL at random points, restarted.

:func:`run_until_done` runs ``sqlstream exec`` on a pipeline in its own process group
(the Python driver and the JVM it launches), kills the whole group with ``SIGKILL`` at a
seeded random point (after 0–2 more committed micro-batches, then up to ``max_delay``
seconds), restarts it, and repeats until it has killed it ``kills`` times; then it lets
one run finish. :data:`PIPELINE` is the flights
stream (one day file per micro-batch by default) into two parquet sinks: a stateless
filter and an hourly windowed aggregation (append mode, each window once).
:func:`expected_late` and :func:`expected_hourly` are the batch oracles, in plain Python
over the input files; :func:`uncommitted_files` lists the part files a plain ``*.parquet``
glob would read but the sink's ``_spark_metadata`` log does not hold.

Used by ``tests/test_crash_recovery.py`` (short, in CI) and ``bench/crash_recovery.py``
(longer, configurable).
"""

from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


@dataclass
class Report:
    """What a harness run did: ``kills`` (where each run was killed: micro-batches
    committed in that run, then seconds), ``runs`` (processes started), ``seconds``
    (wall time)."""

    kills: list[str] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0


def prepare(work: Path, days: int, files_per_batch: int = 1) -> list[Path]:
    """Copy the first ``days`` day files into ``work/in`` (each with the modification time
    of its day: Spark's file source reads in that order) and write ``work/p.ssql``."""
    inputs = work / "in"
    inputs.mkdir(parents=True)
    for day in DAYS[:days]:
        shutil.copy(day, inputs / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(inputs / day.name, (stamp, stamp))
    (work / "p.ssql").write_text(PIPELINE.replace("{files_per_batch}", str(files_per_batch)))
    return sorted(inputs.glob("*.csv"))


def _command(work: Path, master: str) -> list[str]:
    return [sys.executable, "-m", "sqlstream.cli", "exec", str(work / "p.ssql"), "--master", master]


def _started(log: Path) -> bool:
    try:
        return log.read_text(errors="replace").count("started query") >= 2
    except FileNotFoundError:
        return False


def committed_batches(work: Path, query: str = "late") -> int:
    """Micro-batches ``query`` has committed so far (files in its checkpoint's ``commits``)."""
    commits = work / ".sqlstream" / "checkpoints" / "p" / query / "commits"
    return sum(1 for p in commits.glob("*") if p.name.isdigit()) if commits.is_dir() else 0


def run_until_done(work: Path, kills: int, seed: int, max_delay: float = 2.0,
                   master: str = "local[2]", timeout: float = 600.0) -> Report:
    """Run ``sqlstream exec work/p.ssql`` and SIGKILL it ``kills`` times, then let it finish.

    Each run is started in a new session (process group). Its kill point is drawn from
    ``random.Random(seed)``: once both queries have started, wait until the stateless
    query has committed 0, 1 or 2 more micro-batches than when the run started (so every
    run makes progress and the kills fall at different points of the stream, however slow
    the machine), then ``uniform(0, max_delay)`` seconds more — into the batch in flight,
    most often — and kill the group (driver and JVM) with ``SIGKILL``. A run that ends by
    itself before its kill point is not counted as a kill and is started again.

    Raises:
        AssertionError: the last run did not exit 0, or a run took longer than ``timeout``.
    """
    rng = random.Random(seed)
    report = Report()
    begin = time.monotonic()
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    while True:
        report.runs += 1
        log = work / f"run-{report.runs}.log"
        committed = committed_batches(work)
        with log.open("w") as out:
            process = subprocess.Popen(_command(work, master), cwd=work, stdout=out,
                                       stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        if len(report.kills) < kills:
            more, delay = rng.randint(0, 2), rng.uniform(0, max_delay)
            while process.poll() is None and not (
                    _started(log) and committed_batches(work) >= committed + more):
                assert time.monotonic() < deadline, f"run {report.runs} made no progress: {log}"
                time.sleep(0.05)
            time.sleep(delay)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)  # the driver and its JVM, at once
                process.wait()
                report.kills.append(f"+{more} batches +{delay:.2f} s")
                continue
        try:
            code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError(f"run {report.runs} did not finish: {log}") from None
        assert code == 0, f"run {report.runs} exited {code}:\n{log.read_text()[-3000:]}"
        if len(report.kills) >= kills:
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
        (int(r["year"]), int(r["month"]), int(r["day"]), int(r["flight"]), r["carrier"],
         r["origin"], float(r["dep_delay"]), str(_hour(r["time_hour"])))
        for r in _rows(files) if r["dep_delay"] != "NA" and float(r["dep_delay"]) > 30)


def expected_hourly(files: list[Path]) -> list[tuple]:
    """The windowed aggregation over ``files``: ``(window_start, origin, flights,
    round(total_delay, 6))`` of every hourly window that ends by the final watermark (the
    latest ``time_hour`` minus the 1-hour delay: append mode writes a window once the
    watermark has passed its end)."""
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
    return sorted((str(start), origin, n, None if total is None else round(total, 6))
                  for (start, origin), (n, total) in counts.items()
                  if start + timedelta(hours=1) <= watermark)


def committed_files(sink: Path) -> list[Path]:
    """The part files of a files sink that its ``_spark_metadata`` log lists as committed
    (``add`` actions, minus ``delete`` ones; compacted ``N.compact`` entries included):
    what ``spark.read`` of the folder reads, and what another reader must read (the
    README's "Reading a files sink")."""
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
