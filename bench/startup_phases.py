"""Where the time of ``sqlstream exec`` goes, phase by phase, beside the same job written by
hand in PySpark (``bench/handwritten_flights.py``), in one run (a benchmark, not a test).

Each round starts two fresh processes, alternating which goes first, on the same copy of
the flights example's day files, each into new output and checkpoint folders. Each process
times its own phases with ``time.perf_counter`` and prints them as JSON:

=========  ==================================================  ==================================
phase      sqlstream (what ``sqlstream exec`` does)            hand-written
=========  ==================================================  ==================================
import     ``import sqlstream.cli``, the compiler, run modules  ``import pyspark.sql``
compile    ``sqlstream.compile_file``                          (nothing to compile)
session    ``Session.spark_for``: JVM, SparkContext, defaults  ``SparkSession.builder…getOrCreate``
start      restart check, views, ``writeStream.start``         ``readStream … writeStream.start``
           (until ``QueryStarted``)
run        micro-batches until ``QueryTerminated``             ``awaitTermination``
stop       the rest of ``Session.run`` and ``Session.close``   ``spark.stop``
=========  ==================================================  ==================================

``total`` is the parent's wall time of the whole process (interpreter start and exit
included). The table gives the median of each phase over the rounds and the ratio of the
medians of ``total``; the goal is a ratio ≤ 1.02. Both jobs run on ``local[2]`` with two
shuffle partitions, UTC, UI off, ``availableNow``.

    .venv/bin/python bench/startup_phases.py --rounds 5            # all 365 days
    .venv/bin/python bench/startup_phases.py --rounds 3 --days 31  # quick
    .venv/bin/python bench/startup_phases.py --archive off         # no class-data archive

By default sqlstream runs as ``exec`` does from its second run on: its JVM maps the
class-data archive of Spark's classes (sqlstream/runtime/class_archive.py), made
before the rounds. The hand-written job is launched as PySpark launches it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "flights" / "hourly_delays.ssql"
DAY_FILES = REPO / "examples" / "flights" / "data" / "flights"
OUT = REPO / "bench" / "out" / "startup"
PHASES = ("import", "compile", "session", "start", "run", "stop")


def _sqlstream(work: Path) -> dict[str, float]:
    """The phases of ``sqlstream exec FILE --state-dir WORK --available-now --master
    local[2]``, through the same calls the command makes."""
    marks = {"begin": time.perf_counter()}
    import sqlstream
    import sqlstream.cli  # what the command imports

    conf = {"spark.sql.shuffle.partitions": "2"}
    import sqlstream.api  # the compiler (sqlglot), imported by the compile
    from sqlstream.runtime import runner  # noqa: F401 - imported by Session.run

    marks["import"] = time.perf_counter()
    pipeline = sqlstream.compile_file(str(work / "hourly_delays.ssql"), {}, str(work / "state"))
    marks["compile"] = time.perf_counter()

    def listener(event) -> None:
        name = type(event).__name__
        if name == "QueryStarted":
            marks["start"] = time.perf_counter()
        elif name == "QueryTerminated":
            marks["run"] = time.perf_counter()

    with sqlstream.Session(master="local[2]", conf=conf, listeners=[listener]) as session:
        session.spark_for(pipeline.plan)
        marks["session"] = time.perf_counter()
        session.run(pipeline, available_now=True)
    marks["stop"] = time.perf_counter()
    return marks


def _handwritten(work: Path) -> dict[str, float]:
    """The phases of ``bench/handwritten_flights.py``'s job."""
    marks = {"begin": time.perf_counter()}
    from pyspark.sql import SparkSession

    sys.path.insert(0, str(REPO / "bench"))
    import handwritten_flights as job

    marks["import"] = marks["compile"] = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("handwritten_flights")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    marks["session"] = time.perf_counter()
    flights = (
        spark.readStream.format("csv")
        .option("header", True)
        .option("nullValue", "NA")
        .option("maxFilesPerTrigger", 31)
        .schema(job.FLIGHTS_SCHEMA)
        .load(str(work / "data"))
    )
    query = (
        job.hourly_by_origin(flights.withWatermark("time_hour", "1 hour"))
        .writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(work / "out"))
        .option("checkpointLocation", str(work / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    marks["start"] = time.perf_counter()
    query.awaitTermination()
    marks["run"] = time.perf_counter()
    spark.stop()
    marks["stop"] = time.perf_counter()
    return marks


def _child(kind: str, work: Path) -> None:
    marks = (_sqlstream if kind == "sqlstream" else _handwritten)(work)
    order = ["begin", *PHASES]
    print(json.dumps({phase: marks[phase] - marks[order[i]] for i, phase in enumerate(order[1:])}))


def _prepare(work: Path, days: int) -> None:
    """A fresh folder with the first ``days`` day files (modification times in day order)
    and the example pipeline reading them."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "data").mkdir(parents=True)
    for i, day in enumerate(sorted(DAY_FILES.glob("*.csv"))[:days]):
        target = work / "data" / day.name
        shutil.copyfile(day, target)
        os.utime(target, (1_000_000 + i, 1_000_000 + i))
    text = EXAMPLE.read_text(encoding="utf-8").replace("'data/flights'", f"'{work / 'data'}'")
    text = text.replace("'out/", f"'{work / 'out'}/")
    (work / "hourly_delays.ssql").write_text(text, encoding="utf-8")


def _settle_archive(env: dict[str, str]) -> None:
    """Have the class-data archive ready before the rounds, as it is from exec's second run
    on: one exec of a day's file writes it (the run puts it in place as it exits)."""
    sys.path.insert(0, str(REPO))
    from sqlstream.runtime import class_archive

    folder = class_archive.archive_folder()
    final = folder / f"{class_archive.archive_key({})}.jsa" if folder else None
    if final is None or final.exists():
        return
    work = OUT / "archive"
    _prepare(work, 1)
    subprocess.run(
        [sys.executable, __file__, "--child", "sqlstream", "--work", str(work)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        check=True,
    )
    if not final.exists():
        sys.exit(f"no class-data archive was made in {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--child", choices=("sqlstream", "handwritten"))
    parser.add_argument("--work", type=Path)
    parser.add_argument(
        "--archive",
        choices=("on", "off"),
        default="on",
        help="sqlstream's JVM class-data archive (sqlstream/runtime/class_archive.py): "
        "on (exec's default; made before the rounds) or off",
    )
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.work)
        return
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    if args.archive == "off":
        env["SQLSTREAM_JVM_ARCHIVE"] = "off"
    else:
        _settle_archive(env)
    results: dict[str, list[dict[str, float]]] = {"sqlstream": [], "handwritten": []}
    for round_ in range(args.rounds):
        kinds = ["sqlstream", "handwritten"] if round_ % 2 == 0 else ["handwritten", "sqlstream"]
        for kind in kinds:
            work = OUT / kind
            _prepare(work, args.days)
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, __file__, "--child", kind, "--work", str(work)],
                capture_output=True,
                text=True,
                env=env,
                cwd=REPO,
            )
            total = time.perf_counter() - started
            if done.returncode:
                sys.exit(f"{kind} failed:\n{done.stderr[-3000:]}")
            phases = json.loads(done.stdout.strip().splitlines()[-1])
            results[kind].append({**phases, "total": total})
            print(
                f"round {round_ + 1} {kind}: "
                + ", ".join(f"{k} {v:.2f}" for k, v in results[kind][-1].items()),
                flush=True,
            )
    load = os.getloadavg()[0]
    print(f"\nmedian seconds over {args.rounds} rounds, {args.days} days, load {load:.1f}:")
    print("| phase | sqlstream | hand-written | difference |\n| --- | ---: | ---: | ---: |")
    for phase in (*PHASES, "total"):
        ours = statistics.median(r[phase] for r in results["sqlstream"])
        theirs = statistics.median(r[phase] for r in results["handwritten"])
        print(f"| {phase} | {ours:.2f} | {theirs:.2f} | {ours - theirs:+.2f} |")
    ratio = statistics.median(r["total"] for r in results["sqlstream"]) / statistics.median(
        r["total"] for r in results["handwritten"]
    )
    print(f"\nratio of total (sqlstream / hand-written): {ratio:.3f} (goal <= 1.02)")


if __name__ == "__main__":
    main()
