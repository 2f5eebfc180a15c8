"""Where a micro-batch's time goes on the ``delta`` sink's JVM path (not a test).

The hourly aggregation of ``bench/lakehouse_cost.py`` (31 day files per micro-batch,
``EMIT FINAL``) is run in one local session with Delta's package into a ``foreachBatch``
writer that times each step of ``DeltaSparkWriter.__call__`` on its own (wall clock,
``time.perf_counter``) and counts the Spark jobs and tasks each step ran (the status
tracker of the job group set around the step):

* ``noop``: the micro-batch computed into Spark's ``noop`` sink (what computing it costs);
* ``app+committed``: the query id and the table's last transaction version (delta-rs);
* ``write``: ``DeltaSparkWriter`` itself (the shipped code: it persists the micro-batch
  when it reads it more than once), or with ``--steps`` the steps apart — the micro-batch
  cached first (``persist``, ``count``), then Delta's write of the cached rows.

Each micro-batch is first written to ``noop`` and then by the writer, so the stateful
plan runs twice per micro-batch here (as on any replay); each step's time is its own, no
step's time is subtracted from another's. ``--conf key=value`` adds a session setting;
with ``spark.eventLog.enabled=true`` and ``spark.eventLog.dir`` the run's jobs are printed
from the event log at the end (step, seconds, tasks, name).

    PYTHONPATH=$PWD .venv-4.1/bin/python bench/delta_jvm_steps.py [--days 124] [--upsert]
        [--steps] [--conf spark.databricks.delta.snapshotPartitions=2]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlstream.connectors import lakehouse, lakehouse_jvm  # noqa: E402


class Steps:
    """A ``foreachBatch`` function: each step timed, its jobs and tasks counted."""

    def __init__(self, path: str, upsert: bool, apart: bool):
        keys = ("window_start", "origin") if upsert else ()
        self.writer = lakehouse_jvm.DeltaSparkWriter(path, "upsert" if upsert else "append", keys)
        self.apart = apart
        self.times: dict[str, list[float]] = defaultdict(list)
        self.jobs: dict[str, list[tuple[int, int]]] = defaultdict(list)

    def _step(self, df, name: str, run):
        context = df.sparkSession.sparkContext
        group = f"bench-{name}-{time.monotonic_ns()}"
        context.setJobGroup(group, name)
        begin = time.perf_counter()
        try:
            return run()
        finally:
            self.times[name].append(time.perf_counter() - begin)
            tracker = context.statusTracker()
            ids = tracker.getJobIdsForGroup(group)
            tasks = 0
            for job in ids:
                info = tracker.getJobInfo(job)
                for stage in info.stageIds if info else ():
                    stage_info = tracker.getStageInfo(stage)
                    tasks += stage_info.numTasks if stage_info else 0
            self.jobs[name].append((len(ids), tasks))
            context.setLocalProperty("spark.jobGroup.id", None)

    def __call__(self, df, batch_id: int) -> None:
        self._step(df, "noop", lambda: lakehouse.run_nowhere(df))
        writer = self.writer
        app = lakehouse.app_id(df, "bench")
        self._step(df, "app+committed", lambda: writer.committed(app))
        if not self.apart:
            self._step(df, "write", lambda: writer(df, batch_id))
            return
        cached = df.persist()
        self._step(df, "persist+count", cached.count)
        self._step(df, "write (cached)", lambda: writer(cached, batch_id))
        cached.unpersist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=124)
    parser.add_argument("--files-per-batch", type=int, default=31)
    parser.add_argument("--upsert", action="store_true")
    parser.add_argument("--steps", action="store_true", help="cache, then write, timed apart")
    parser.add_argument("--conf", action="append", default=[], help="key=value, a session setting")
    args = parser.parse_args()

    from pyspark import __version__
    from pyspark.sql import SparkSession

    minor = ".".join(__version__.split(".")[:2])
    spark = (
        SparkSession.builder.master("local[2]")
        .config(
            map={
                "spark.jars.packages": ",".join(lakehouse_jvm.DELTA_PACKAGES[minor]),
                **lakehouse_jvm.DELTA_SETTINGS,
                **dict(c.split("=", 1) for c in args.conf),
            }
        )
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    days = sorted((ROOT / "examples/flights/data/flights").glob("*.csv"))[: args.days]
    work = Path(tempfile.mkdtemp(prefix="sqlstream-delta-steps-"))
    try:
        (work / "in").mkdir()
        for day in days:
            shutil.copy(day, work / "in" / day.name)
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        stream = (
            spark.readStream.format("csv")
            .schema("dep_delay DOUBLE, origin STRING, time_hour TIMESTAMP")
            .option("header", "true")
            .option("nullValue", "NA")
            .option("maxFilesPerTrigger", args.files_per_batch)
            .load(str(work / "in"))
            .withWatermark("time_hour", "1 hour")
        )
        stream.createOrReplaceTempView("flights")
        hourly = spark.sql(
            "SELECT window.start AS window_start, origin, COUNT(*) AS flights, "
            "AVG(dep_delay) AS avg_dep_delay FROM flights "
            "GROUP BY window(time_hour, '1 hour'), origin"
        )
        steps = Steps(str(work / "out"), args.upsert, args.steps)
        query = (
            hourly.writeStream.foreachBatch(steps)
            .outputMode("append")
            .option("checkpointLocation", str(work / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        assert query.exception() is None
        print(
            f"PySpark {__version__}, {args.days} days, {args.files_per_batch} files per batch"
            + "".join(f", {c}" for c in args.conf)
        )
        for name, times in steps.times.items():
            shown = ", ".join(f"{t:.1f}" for t in times)
            jobs = ", ".join(f"{j}/{t}" for j, t in steps.jobs[name])
            print(f"{name:15} s per batch: {shown}   jobs/tasks: {jobs}")
    finally:
        log_dir = spark.conf.get("spark.eventLog.dir", None)
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    if log_dir:
        print_jobs(Path(log_dir.removeprefix("file:")))


def _text(part: Path) -> str:
    """An event log file's text (Spark 4 compresses it with zstd by default)."""
    if part.suffix != ".zstd":
        return part.read_text()
    import zstandard

    with zstandard.ZstdDecompressor().stream_reader(part.open("rb")) as reader:
        return reader.read().decode()


def print_jobs(folder: Path) -> None:
    """From the newest Spark event log in ``folder`` (``--conf spark.eventLog.enabled=true
    --conf spark.eventLog.dir=…``): per step (job group) and micro-batch, each job's
    seconds and first stage's name (its call site)."""
    import json

    log = max(folder.iterdir(), key=lambda f: f.stat().st_mtime)
    parts = sorted(log.glob("events_*")) if log.is_dir() else [log]  # Spark 4's rolling log
    jobs: dict[int, dict] = {}
    stages: dict[int, str] = {}
    for line in (line for part in parts for line in _text(part).splitlines()):
        event = json.loads(line)
        kind = event["Event"]
        if kind == "SparkListenerJobStart":
            group = (event.get("Properties") or {}).get("spark.job.description", "")
            for info in event["Stage Infos"]:
                stages[info["Stage ID"]] = info["Stage Name"]
            jobs[event["Job ID"]] = {
                "start": event["Submission Time"],
                "group": group,
                "stage": stages.get(min(event["Stage IDs"], default=-1), ""),
                "tasks": sum(i["Number of Tasks"] for i in event["Stage Infos"]),
            }
        elif kind == "SparkListenerJobEnd" and event["Job ID"] in jobs:
            jobs[event["Job ID"]]["end"] = event["Completion Time"]
    for number, job in sorted(jobs.items()):
        seconds = (job.get("end", job["start"]) - job["start"]) / 1000
        print(
            f"job {number:3} {job['group']:15} {seconds:6.2f} s {job['tasks']:3} tasks  "
            f"{job['stage'][:70]}"
        )


if __name__ == "__main__":
    main()
