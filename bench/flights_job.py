"""The job ratio: the flights example through sqlstream against the same job written by
hand in PySpark (``bench/handwritten_flights.py``), in one SparkSession and as processes.

Each run writes into fresh output and checkpoint folders under ``bench/out/run/``, on the
same copy of the data; rounds alternate who goes first (:func:`round_order`). See
``bench/run.py`` for the measurements and ``bench/README.md`` for the results.
"""

from __future__ import annotations

import calendar
import os
import re
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from timing import (
    REPO,
    become_subreaper,
    fmt,
    load1,
    say,
    session_cpu_seconds,
    sqlstream_command,
    timed_process,
)

EXAMPLE = REPO / "examples" / "flights" / "hourly_delays.ssql"
DAY_FILES = REPO / "examples" / "flights" / "data" / "flights"
OUT = REPO / "bench" / "out" / "run"
HANDWRITTEN = REPO / "bench" / "handwritten_flights.py"

MASTER = "local[2]"
SHUFFLE_PARTITIONS = 2
# The example's maxFilesPerTrigger; the hand-written job is given the same value.
MAX_FILES_PER_TRIGGER = 31

sys.path.insert(0, str(HANDWRITTEN.parent))  # import handwritten_flights


# --------------------------------------------------------------------------- data


def prepare_data(days: int | None) -> Path:
    """Copy the first ``days`` day files to bench/out/run/data/flights, mtime = their date.

    Spark's file source takes files in modification-time order; a copy gets "now" as
    mtime, so each copy's mtime is set to midnight UTC of its date (as prepare_data.py
    --touch does for the originals), otherwise days can be read out of order and dropped
    as late data.
    """
    files = sorted(DAY_FILES.glob("*.csv"))
    if days is not None:
        files = files[:days]
    if not files:
        raise SystemExit(f"no day files in {DAY_FILES}")
    target = OUT / "data" / "flights"
    target.mkdir(parents=True)
    for src in files:
        dst = target / src.name
        shutil.copyfile(src, dst)
        stamp = calendar.timegm(time.strptime(src.stem, "%Y-%m-%d"))
        os.utime(dst, (stamp, stamp))
    return target


def sqlstream_workdir(name: str, data_root: Path) -> Path:
    """A fresh directory holding a copy of the example and a ``data`` symlink.

    The example's relative paths (``data/flights``, ``out/hourly``) are resolved against
    the folder of the file, so the copy reads the shared data copy and writes its own
    ``out/hourly``. The symlink's target files keep their mtimes.
    """
    work = OUT / name
    work.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, work / EXAMPLE.name)
    # data_root is .../data/flights; the example reads data/flights beside the file.
    os.symlink(data_root.parent.resolve(), work / "data", target_is_directory=True)
    return work


# --------------------------------------------------------------------------- results


@dataclass
class Run:
    impl: str  # "sqlstream" | "handwritten"
    round: int
    seconds: float
    load_before: float
    output: Path
    cpu: float | None = None  # CPU seconds (user + system) of the JVM and Python, if known
    batches: int | None = None
    input_rows: int | None = None
    note: str = ""


@dataclass
class Mode:
    name: str
    runs: list[Run] = field(default_factory=list)

    def times(self, impl: str) -> list[float]:
        return [r.seconds for r in self.runs if r.impl == impl]

    def median(self, impl: str) -> float | None:
        times = self.times(impl)
        return statistics.median(times) if times else None

    def cpu_median(self, impl: str) -> float | None:
        cpus = [r.cpu for r in self.runs if r.impl == impl]
        return statistics.median(cpus) if cpus and None not in cpus else None

    def paired_ratios(self) -> list[float]:
        """sqlstream / handwritten per round: the two runs of a round ran back to back."""
        ratios = []
        for rnd in sorted({r.round for r in self.runs}):
            pair = {r.impl: r.seconds for r in self.runs if r.round == rnd}
            if {"sqlstream", "handwritten"} <= set(pair):
                ratios.append(pair["sqlstream"] / pair["handwritten"])
        return ratios


def progress_totals(query) -> tuple[int, int]:
    progress = query.recentProgress or []
    return len(progress), sum(int(p.get("numInputRows", 0)) for p in progress)


# --------------------------------------------------------------------------- in-process


def make_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(MASTER)
        .appName("sqlstream-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def inprocess_sqlstream(spark, name: str, data_root: Path) -> tuple[float, Path, int, int]:
    import sqlstream

    work = sqlstream_workdir(name, data_root)
    cpu0 = session_cpu_seconds(spark)
    started = time.perf_counter()
    pipeline = sqlstream.compile_file(work / EXAMPLE.name, state_dir=str(work / "state"))
    queries = pipeline.start(spark)
    for query in queries:
        query.awaitTermination()
    elapsed = time.perf_counter() - started
    cpu1 = session_cpu_seconds(spark)
    for query in queries:
        if query.exception() is not None:
            raise SystemExit(f"sqlstream query failed: {query.exception()}")
    (query,) = queries
    batches, rows = progress_totals(query)
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return elapsed, cpu, work / "out" / "hourly", batches, rows


def inprocess_handwritten(spark, name: str, data_root: Path) -> tuple[float, Path, int, int]:
    import handwritten_flights

    work = OUT / name
    work.mkdir(parents=True)
    out = work / "out" / "hourly"
    cpu0 = session_cpu_seconds(spark)
    started = time.perf_counter()
    query = handwritten_flights.run(
        spark, data_root, out, work / "checkpoint", MAX_FILES_PER_TRIGGER
    )
    elapsed = time.perf_counter() - started
    cpu1 = session_cpu_seconds(spark)
    if query.exception() is not None:
        raise SystemExit(f"handwritten query failed: {query.exception()}")
    batches, rows = progress_totals(query)
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return elapsed, cpu, out, batches, rows


def round_order(jobs: list[tuple[str, object]], rnd: int) -> list[tuple[str, object]]:
    """A B, B A, A B, ...: alternate who goes first, so that a trend over the run
    (a JVM still warming up, load rising or falling) does not favour one side."""
    return jobs if rnd % 2 == 1 else jobs[::-1]


def bench_inprocess(spark, data_root: Path, rounds: int, warmup_days: int) -> Mode:
    mode = Mode("in-process")
    if warmup_days:
        # The first streaming queries of a JVM pay for class loading and JIT (a 31-day
        # warm-up still left round 1 ~1.5x slower than round 3); run both jobs once,
        # untimed, on the first warmup_days days (default: all of them).
        warm = OUT / "warmup" / "data" / "flights"
        warm.mkdir(parents=True)
        for src in sorted(data_root.glob("*.csv"))[:warmup_days]:
            os.link(src, warm / src.name)  # a hard link keeps the mtime
        started = time.perf_counter()
        inprocess_sqlstream(spark, "warmup/sqlstream", warm)
        inprocess_handwritten(spark, "warmup/handwritten", warm)
        say(
            f"  warm-up ({warmup_days} days, both jobs, untimed): {time.perf_counter() - started:.1f} s"
        )
    for rnd in range(1, rounds + 1):
        jobs = [("sqlstream", inprocess_sqlstream), ("handwritten", inprocess_handwritten)]
        for impl, job in round_order(jobs, rnd):
            before = load1()
            elapsed, cpu, out, batches, rows = job(spark, f"inproc/{impl}_r{rnd}", data_root)
            mode.runs.append(Run(impl, rnd, elapsed, before, out, cpu, batches, rows))
            say(
                f"  round {rnd} {impl:<11} {elapsed:7.2f} s wall, {fmt(cpu)} s CPU  ({batches} "
                f"micro-batches, {rows} input rows, load1 before {before:.2f})"
            )
    return mode


# --------------------------------------------------------------------------- CLI


def cli_sqlstream(
    name: str, data_root: Path, subreaper: bool
) -> tuple[float, float | None, Path, str]:
    work = sqlstream_workdir(name, data_root)
    command = sqlstream_command() + [
        "exec",
        str(work / EXAMPLE.name),
        "--state-dir",
        str(work / "state"),
        "--available-now",
        "--master",
        MASTER,
        "--conf",
        f"spark.sql.shuffle.partitions={SHUFFLE_PARTITIONS}",
    ]
    elapsed, cpu, code = timed_process(command, work / "exec.log", subreaper)
    text = (work / "exec.log").read_text(errors="replace")
    if code != 0:
        raise SystemExit(
            f"sqlstream exec failed ({code}), see {work / 'exec.log'}:\n{text[-2000:]}"
        )
    found = re.search(r"finished: (\d+) micro-batches, (\d+) input rows", text)
    note = f"{found.group(1)} micro-batches, {found.group(2)} input rows" if found else ""
    return elapsed, cpu, work / "out" / "hourly", note


def cli_handwritten(
    name: str, data_root: Path, subreaper: bool
) -> tuple[float, float | None, Path, str]:
    work = OUT / name
    work.mkdir(parents=True)
    out = work / "out" / "hourly"
    command = [
        sys.executable,
        str(HANDWRITTEN),
        "--data",
        str(data_root),
        "--out",
        str(out),
        "--checkpoint",
        str(work / "checkpoint"),
        "--max-files-per-trigger",
        str(MAX_FILES_PER_TRIGGER),
        "--master",
        MASTER,
        "--shuffle-partitions",
        str(SHUFFLE_PARTITIONS),
        "--no-count",
    ]
    elapsed, cpu, code = timed_process(command, work / "run.log", subreaper)
    text = (work / "run.log").read_text(errors="replace")
    if code != 0:
        raise SystemExit(
            f"handwritten job failed ({code}), see {work / 'run.log'}:\n{text[-2000:]}"
        )
    found = re.search(r"done in ([\d.]+)s", text)
    note = f"streaming part {found.group(1)} s" if found else ""
    return elapsed, cpu, out, note


def bench_cli(data_root: Path, rounds: int) -> Mode:
    mode = Mode("CLI (process)")
    subreaper = become_subreaper()
    for rnd in range(1, rounds + 1):
        jobs = [("sqlstream", cli_sqlstream), ("handwritten", cli_handwritten)]
        for impl, job in round_order(jobs, rnd):
            before = load1()
            elapsed, cpu, out, note = job(f"cli/{impl}_r{rnd}", data_root, subreaper)
            mode.runs.append(Run(impl, rnd, elapsed, before, out, cpu, note=note))
            say(
                f"  round {rnd} {impl:<11} {elapsed:7.2f} s wall, {fmt(cpu)} s CPU  "
                f"({note}; load1 before {before:.2f})"
            )
    return mode
