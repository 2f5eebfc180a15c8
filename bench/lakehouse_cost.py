"""The cost per micro-batch of the lakehouse sinks' write paths (not a test).

The example's hourly aggregation (``examples/lakehouse/hourly_lakehouse.ssql``: windows
per airport over the flights of 2013, 31 day files per micro-batch, ``EMIT FINAL``) is run
in one local Spark session into four sinks, one query each, on fresh checkpoints:
``noop`` (the baseline: the same micro-batches computed, nothing written), ``iceberg``
(append), ``delta`` (append) and ``delta`` with ``mode = 'upsert'`` (a MERGE per batch).
For each, Spark's own measure of the time a micro-batch spent in the sink
(``durationMs.addBatch`` of the query's progress: the ``foreachBatch`` writer, from the
micro-batch's ``toArrow`` to the commit) is printed per micro-batch (median, max) and
against ``noop``.

On a PySpark minor where Delta's package runs (4.0-4.2) the session has it (and Delta's
extension and catalog), and two more pairs run side by side on the same data: ``delta``
and ``delta upsert`` through the Python path (delta-rs: the file targets Spark 4.3,
``SET 'sqlstream.spark_version' = '4.3'``, where that path is chosen) and through the JVM
path (Delta's Spark writer: the file targets the running minor). Where Iceberg's runtime is
served (4.0, 4.1) the session has it too, and ``iceberg (jvm)`` (Iceberg's Spark writer,
``sqlstream.connectors.iceberg_jvm``) runs beside ``iceberg`` (pyiceberg).

    .venv-4.1/bin/python bench/lakehouse_cost.py [--days 365] [--files-per-batch 31]
        [--snapshot-partitions 2]   # the JVM path's spark.databricks.delta.snapshotPartitions
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sqlstream  # noqa: E402 - after the path: the checkout's package

STREAM = """
SET 'spark.sql.session.timeZone' = 'UTC';
{target}
CREATE STREAM flights (
    dep_delay DOUBLE, origin STRING, time_hour TIMESTAMP,
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = 'in', format = 'csv', header = true, nullValue = 'NA',
        maxFilesPerTrigger = {per_batch});
CREATE SINK out WITH ({sink});
INSERT INTO out
SELECT window_start, origin, COUNT(*) AS flights, AVG(dep_delay) AS avg_dep_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT FINAL ONCE;
"""

SINKS = {
    "noop": "connector = 'noop'",
    "iceberg": "connector = 'iceberg', table = 'bench.hourly'",
    "delta": "connector = 'delta', path = 'out/delta'",
    "delta upsert": "connector = 'delta', path = 'out/delta_upsert', "
    "key_columns = 'window_start, origin'",
}


def run(spark, work: Path, sink: str, per_batch: int, target: str = "") -> list[int]:
    """``durationMs.addBatch`` of each micro-batch with output of the query into ``sink``
    (the file judged for Spark ``target`` when given)."""
    path = work / "p.ssql"
    text = STREAM.replace("{per_batch}", str(per_batch)).replace("{sink}", sink)
    setting = f"SET 'sqlstream.spark_version' = '{target}';" if target else ""
    path.write_text(text.replace("{target}", setting))
    (query,) = sqlstream.compile_file(path).start(spark)
    query.awaitTermination()
    assert query.exception() is None
    return [
        p["durationMs"]["addBatch"]
        for p in query.recentProgress
        if p["numInputRows"] and "addBatch" in p["durationMs"]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--files-per-batch", type=int, default=31)
    parser.add_argument(
        "--snapshot-partitions",
        default="2",
        help="the JVM path's spark.databricks.delta.snapshotPartitions (exec: the cores; Delta: 50)",
    )
    args = parser.parse_args()

    from pyspark import __version__
    from pyspark.sql import SparkSession

    from sqlstream.connectors.lakehouse_jvm import (
        DELTA_PACKAGES,
        DELTA_SETTINGS,
        SNAPSHOT_PARTITIONS,
    )

    minor = ".".join(__version__.split(".")[:2])
    sinks = [(label, sink, "4.3") for label, sink in SINKS.items()]
    conf: dict[str, str] = {}
    if minor in DELTA_PACKAGES:  # the two paths side by side
        conf = {"spark.jars.packages": ",".join(DELTA_PACKAGES[minor]), **DELTA_SETTINGS}
        conf[SNAPSHOT_PARTITIONS] = args.snapshot_partitions  # exec: the cores (2 here)
        sinks = [(label, sink, "4.3") for label, sink in SINKS.items() if label != "delta upsert"]
        sinks.insert(3, ("delta (jvm)", SINKS["delta"], minor))
        sinks += [
            ("delta upsert", SINKS["delta upsert"], "4.3"),
            ("d. ups. (jvm)", SINKS["delta upsert"], minor),
        ]
    from sqlstream.connectors.iceberg_jvm import EXTENSIONS, PACKAGES

    if minor in PACKAGES:  # Iceberg's two paths side by side
        jars = [conf.get("spark.jars.packages"), *PACKAGES[minor]]
        extensions = [conf.get("spark.sql.extensions"), EXTENSIONS]
        conf["spark.jars.packages"] = ",".join(j for j in jars if j)
        conf["spark.sql.extensions"] = ",".join(e for e in extensions if e)
        sinks.insert(2, ("iceberg (jvm)", SINKS["iceberg"], minor))
    spark = (
        SparkSession.builder.master("local[2]")
        .config(map=conf)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    days = sorted((ROOT / "examples/flights/data/flights").glob("*.csv"))[: args.days]
    base = Path(tempfile.mkdtemp(prefix="sqlstream-lakehouse-"))
    try:
        # a warm-up run (the JVM's first queries are slower), not reported
        for label, sink, target in [("warm-up", SINKS["noop"], ""), *sinks]:
            work = base / label.replace(" ", "_")
            (work / "in").mkdir(parents=True)
            for day in days:
                shutil.copy(day, work / "in" / day.name)
            times = run(spark, work, sink, args.files_per_batch, target)
            if label == "warm-up":
                baseline = None
                continue
            median = statistics.median(times)
            if label == "noop":
                baseline = median
            extra = "" if baseline is None else f", +{median - baseline:.0f} ms over noop"
            print(
                f"{label:13} {len(times)} micro-batches: addBatch median {median:.0f} ms, "
                f"max {max(times)} ms{extra}"
            )
    finally:
        spark.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
