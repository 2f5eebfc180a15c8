"""Benchmark of the stateful examples (not a test): sqlstream against the same jobs written by
hand in PySpark (``bench/handwritten_stateful.py``), in one SparkSession, side by side.

* **join**: ``examples/joins/weather.ssql`` — five stream-stream joins (inner, left, right,
  full outer, left semi) of one month of flights and hourly weather (31 + 31 day files,
  ``maxFilesPerTrigger`` 8 on both streams: 4 micro-batches with data, then one that
  evicts state with the final watermark).
* **dedup**: ``examples/flights/dedup.ssql`` — three deduplications (``SELECT DISTINCT``,
  ``DISTINCT ON``, a ``ROW_NUMBER`` subquery feeding a windowed count) over one month of
  flights replayed twice (each day file and a copy of it twelve hours later, 62 files;
  the example's ``maxFilesPerTrigger`` 31).

Per round, both implementations of a job run on the same copy of the data into fresh
output and checkpoint folders, alternating who goes first (as ``bench/run.py``); both jobs
run once untimed first (JVM warm-up). Reports the median wall and CPU seconds (session JVM +
this process), the ratio sqlstream / hand-written (goal <= 1.05), and checks that each
sink's rows are the same (``exceptAll`` both ways). Usage::

    .venv/bin/python bench/stateful.py [--rounds 3] [--days 31] [--jobs join,dedup] [--warmup-days N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import handwritten_stateful
from run import (
    RATIO_GOAL,
    REPO,
    Mode,
    Run,
    fmt,
    load,
    load1,
    make_session,
    ratio_table,
    round_order,
    say,
    session_cpu_seconds,
)

DATA = REPO / "examples" / "flights" / "data"
OUT = REPO / "bench" / "out" / "stateful"
JOIN_EXAMPLE = REPO / "examples" / "joins" / "weather.ssql"
DEDUP_EXAMPLE = REPO / "examples" / "flights" / "dedup.ssql"
JOIN_MAX_FILES = 8
DEDUP_MAX_FILES = 31  # the example's value


def _stamp(day: str, hours: float = 0) -> float:
    return (
        datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp() + hours * 3600
    )


def prepare(days: int, root: Path) -> Path:
    """``root``: ``flights/`` and ``weather/`` (the first ``days`` day files) and
    ``twice/flights/`` (each flight file and its copy twelve hours later), mtimes set."""
    for stream in ("flights", "weather"):
        (root / stream).mkdir(parents=True)
        for src in sorted((DATA / stream).glob("*.csv"))[:days]:
            shutil.copyfile(src, root / stream / src.name)
            os.utime(root / stream / src.name, (_stamp(src.stem),) * 2)
    twice = root / "twice" / "flights"
    twice.mkdir(parents=True)
    for src in sorted((root / "flights").glob("*.csv")):
        for name, hours in ((src.name, 0), (f"{src.stem}-again.csv", 12)):
            shutil.copyfile(src, twice / name)
            os.utime(twice / name, (_stamp(src.stem, hours),) * 2)
    return root


def _sqlstream(spark, example: Path, work: Path, replace: tuple[str, str] | None):
    import sqlstream

    text = example.read_text(encoding="utf-8")
    if replace:
        text = text.replace(*replace)
    (work / example.name).write_text(text, encoding="utf-8")
    pipeline = sqlstream.compile_file(work / example.name, state_dir=str(work / "state"))
    queries = pipeline.start(spark, available_now=True)  # as handwritten: trigger(availableNow)
    for query in queries:
        query.awaitTermination()
        if query.exception() is not None:
            raise SystemExit(f"sqlstream query {query.name} failed: {query.exception()}")
    return queries


def join_sqlstream(spark, data: Path, work: Path) -> Path:
    (work / "joins").mkdir(parents=True)
    (work / "flights").mkdir()
    os.symlink(data, work / "flights" / "data", target_is_directory=True)
    _sqlstream(
        spark,
        JOIN_EXAMPLE,
        work / "joins",
        ("maxFilesPerTrigger = 31", f"maxFilesPerTrigger = {JOIN_MAX_FILES}"),
    )
    return work / "joins" / "out" / "joins"


def join_handwritten(spark, data: Path, work: Path) -> Path:
    handwritten_stateful.weather_joins(
        spark,
        data / "flights",
        data / "weather",
        work / "out",
        work / "checkpoints",
        JOIN_MAX_FILES,
    )
    return work / "out"


def dedup_sqlstream(spark, data: Path, work: Path) -> Path:
    work.mkdir(parents=True)
    os.symlink(data / "twice", work / "data", target_is_directory=True)
    _sqlstream(spark, DEDUP_EXAMPLE, work, None)
    return work / "out" / "dedup"


def dedup_handwritten(spark, data: Path, work: Path) -> Path:
    handwritten_stateful.dedup(
        spark, data / "twice" / "flights", work / "out", work / "checkpoints", DEDUP_MAX_FILES
    )
    return work / "out"


JOBS = {"join": (join_sqlstream, join_handwritten), "dedup": (dedup_sqlstream, dedup_handwritten)}


def _timed(spark, job, data: Path, work: Path) -> tuple[float, float | None, Path]:
    cpu0 = session_cpu_seconds(spark)
    started = time.perf_counter()
    out = job(spark, data, work)
    elapsed = time.perf_counter() - started
    cpu1 = session_cpu_seconds(spark)
    return elapsed, (None if cpu0 is None or cpu1 is None else cpu1 - cpu0), out


def compare(spark, mode: Mode) -> list[str]:
    """Every sink of each round: the same rows from both implementations."""
    problems = []
    for rnd in sorted({r.round for r in mode.runs}):
        pair = {r.impl: r.output for r in mode.runs if r.round == rnd}
        for sink in sorted(p.name for p in pair["handwritten"].iterdir() if p.is_dir()):
            ours = spark.read.parquet(str(pair["sqlstream"] / sink))
            theirs = spark.read.parquet(str(pair["handwritten"] / sink))
            rows = (ours.count(), theirs.count())
            differ = ours.exceptAll(theirs).count() + theirs.exceptAll(ours).count()
            line = f"{mode.name} round {rnd} {sink}: {rows[0]} / {rows[1]} rows, {differ} differ"
            if differ or rows[0] != rows[1] or not rows[0]:
                problems.append(f"WARNING: {line}")
            else:
                say(f"  ok: {line}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--days", type=int, default=31, help="day files per stream (default 31)")
    parser.add_argument("--jobs", default="join,dedup")
    parser.add_argument(
        "--warmup-days",
        type=int,
        default=None,
        help="days of the untimed warm-up run of both jobs (default: --days)",
    )
    args = parser.parse_args(argv)
    say(
        f"stateful benchmarks, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} cores, load {load()}"
    )
    if OUT.exists():
        shutil.rmtree(OUT)
    data = prepare(args.days, OUT / "data")
    warm = data if args.warmup_days is None else prepare(args.warmup_days, OUT / "warmup-data")
    spark = make_session()
    modes, problems = [], []
    try:
        for name in args.jobs.split(","):
            sqlstream_job, handwritten_job = JOBS[name]
            mode = Mode(name)
            started = time.perf_counter()
            for impl, job in (("sqlstream", sqlstream_job), ("handwritten", handwritten_job)):
                job(spark, warm, OUT / name / "warmup" / impl)
            say(f"\n== {name}: warm-up (both, untimed) {time.perf_counter() - started:.1f} s ==")
            for rnd in range(1, args.rounds + 1):
                for impl, job in round_order(
                    [("sqlstream", sqlstream_job), ("handwritten", handwritten_job)], rnd
                ):
                    before = load1()
                    elapsed, cpu, out = _timed(spark, job, data, OUT / name / f"{impl}_r{rnd}")
                    mode.runs.append(Run(impl, rnd, elapsed, before, out, cpu))
                    say(
                        f"  round {rnd} {impl:<11} {elapsed:7.2f} s wall, {fmt(cpu)} s CPU "
                        f"(load1 before {before:.2f})"
                    )
            problems += compare(spark, mode)
            modes.append(mode)
    finally:
        spark.stop()
    say(f"\n== summary ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load {load()}) ==\n")
    for line in ratio_table(modes):
        say(line)
    say(
        f"\nratio goal: <= {RATIO_GOAL}; per-round ratios: "
        + "; ".join(f"{m.name} " + ", ".join(f"{r:.3f}" for r in m.paired_ratios()) for m in modes)
    )
    for problem in problems:
        say(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
