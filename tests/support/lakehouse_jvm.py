"""Spark's own Iceberg and Delta packages, for the tests that check that tables written by
sqlstream's Python writers (pyiceberg, delta-rs) and by Spark's writers are read by each
other (``tests/connectors/test_lakehouse_jvm_spark.py``).

:data:`PACKAGES` are the artifacts served (Maven Central, checked here) that run on each
PySpark minor — tried in a real session on PySpark 4.0.5, 4.1.4, 4.2.1 and 4.3.0: Iceberg
publishes no runtime for Spark 4.2 or 4.3; ``io.delta:delta-spark_2.13:4.3.0`` (built
against Spark 4.1.0) fails on PySpark 4.3.0 at the first read (``NoSuchMethodError:
LogicalRDD.<init>``). :func:`jars` resolves them with ``mvn dependency:get`` into the local
Maven repository. :func:`run_session` runs :data:`SCRIPT` in a new Python process (its own
JVM, those jars and the catalog settings): it reads the given tables with Spark's batch
reader and writes new ones with Spark's writers, and prints the rows it read as JSON.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
ICEBERG_4_0 = ("org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.0", SQLITE_JDBC)
ICEBERG_4_1 = ("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0", SQLITE_JDBC)
PACKAGES: dict[str, dict[str, tuple[str, ...]]] = {
    "4.0": {
        "iceberg": ICEBERG_4_0,
        "delta": ("io.delta:delta-spark_2.13:4.0.1", "io.delta:delta-storage:4.0.1"),
    },
    "4.1": {
        "iceberg": ICEBERG_4_1,
        "delta": ("io.delta:delta-spark_4.1_2.13:4.1.0", "io.delta:delta-storage:4.1.0"),
    },
    "4.2": {"delta": ("io.delta:delta-spark_2.13:4.2.0", "io.delta:delta-storage:4.2.0")},
}
PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"


def jars(minor: str, formats: tuple[str, ...] | None = None) -> list[str]:
    """The local jar files of every format's (or ``formats``') :data:`PACKAGES` ``[minor]``,
    fetched with Maven if missing.

    Raises:
        RuntimeError: ``mvn`` is missing or cannot resolve one.
    """
    repository = Path(os.environ.get("MAVEN_REPOSITORY", Path.home() / ".m2" / "repository"))
    found = []
    chosen = [g for f, g in PACKAGES[minor].items() if formats is None or f in formats]
    for coordinate in (c for group in chosen for c in group):
        group, artifact, version = coordinate.split(":")
        jar = repository.joinpath(*group.split("."), artifact, version, f"{artifact}-{version}.jar")
        if not jar.is_file():
            if shutil.which("mvn") is None:
                raise RuntimeError(f"mvn is not installed: it resolves {coordinate}")
            done = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    f"{PLUGIN}:get",
                    f"-Dartifact={coordinate}",
                    "-Dtransitive=false",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not jar.is_file():
                raise RuntimeError(f"mvn could not resolve {coordinate}:\n{done.stdout[-2000:]}")
        found.append(str(jar))
    return found


SCRIPT = r"""
import json, sys
from pyspark.sql import SparkSession
args = json.loads(sys.argv[1])
wh = args["warehouse"]
formats = args["formats"]
builder = (
    SparkSession.builder.master("local[1]")
    .config("spark.jars", ",".join(args["jars"]))
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
)
extensions = []
if "delta" in formats:
    extensions.append("io.delta.sql.DeltaSparkSessionExtension")
    builder = builder.config(
        "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
if "iceberg" in formats:
    extensions.append("org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    builder = (
        builder.config("spark.sql.catalog.sqlstream", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.sqlstream.type", "jdbc")
        .config("spark.sql.catalog.sqlstream.uri", "jdbc:sqlite:" + wh + "/catalog.db")
        .config("spark.sql.catalog.sqlstream.warehouse", "file://" + wh)
    )
spark = builder.config("spark.sql.extensions", ",".join(extensions)).getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
def rows(df):
    return sorted([str(r["window_start"]), r["origin"], r["flights"]] for r in df.collect())
new = spark.createDataFrame(args["new_rows"], "ws STRING, origin STRING, flights BIGINT")
new = new.selectExpr("CAST(ws AS TIMESTAMP) AS window_start", "origin", "flights")
read = {}
if "iceberg" in formats:
    read["iceberg"] = rows(spark.read.table("sqlstream." + args["iceberg_table"]))
    (new.writeTo("sqlstream." + args["new_iceberg"])
        .option("snapshot-property.sqlstream.app_id", args["app"])
        .option("snapshot-property.sqlstream.batch_id", str(args["batch"]))
        .create())
if "delta" in formats:
    read["delta"] = rows(spark.read.format("delta").load(args["delta_path"]))
    (new.write.format("delta").option("txnAppId", args["app"]).option("txnVersion", args["batch"])
        .mode("append").save(args["new_delta"]))
print("RESULT " + json.dumps(read))
"""


def run_session(python: str, minor: str, **args) -> dict:
    """Run :data:`SCRIPT` with ``python`` (the PySpark of ``minor``) and ``args`` (its
    JSON argument: ``warehouse``, ``iceberg_table``, ``delta_path``, ``new_rows``,
    ``new_delta``, ``new_iceberg``, ``app``, ``batch``), for the formats whose package
    runs on ``minor``. Returns ``{format: rows}`` as Spark read them (``[window_start
    text, origin, flights]``)."""
    payload = json.dumps({**args, "jars": jars(minor), "formats": sorted(PACKAGES[minor])})
    env = dict(os.environ, PYSPARK_PYTHON=python)
    done = subprocess.run(
        [python, "-c", SCRIPT, payload], capture_output=True, text=True, timeout=600, env=env
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-5000:]
    return json.loads(lines[-1][len("RESULT ") :])
