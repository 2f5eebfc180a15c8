"""The Spark session of ``sqlstream exec`` and :class:`sqlstream.Session`, and its defaults.

Local runs get defaults a newcomer would not know to set, each reported by ``exec`` and
overridden by a ``SET`` of the same key (or ``--conf``):

* ``spark.sql.shuffle.partitions`` = the number of cores (Spark's default of 200 makes
  every stateful micro-batch run 200 tiny tasks: the bundled example takes minutes
  instead of seconds);
* ``spark.sql.session.timeZone`` = ``UTC`` (results do not depend on the machine's zone);
* ``spark.ui.enabled`` = ``false`` and ``spark.sql.streaming.forceDeleteTempCheckpointLocation``
  = ``true`` (console and memory sinks leave no temporary checkpoints behind);
* ``PYSPARK_PYTHON`` = this interpreter, so Python workers import the same packages;
* ``spark.jars.packages`` = Spark's Kafka (and Avro) package when the plan needs it
  (:mod:`sqlstream.packages`), unless the user configured jars.

Starting and waiting for queries is :mod:`sqlstream.session`'s job.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from sqlstream import plan as p

Report = Callable[[str], None]


def session_defaults(plan: p.Plan, master: str | None, conf: dict[str, str]) -> dict[str, str]:
    """Return the defaults to apply: those whose key is in neither ``SET`` nor ``conf``."""
    cores = os.cpu_count() or 2
    defaults = {
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
    }
    given = {k.lower() for k, _ in plan.settings} | {k.lower() for k in conf}
    return {k: v for k, v in defaults.items() if k.lower() not in given}


def create_session(plan: p.Plan, master: str | None, conf: dict[str, str], report: Report):
    """Get or create the SparkSession for ``plan``.

    A new session gets ``master`` (default ``local[*]``), the defaults of
    :func:`session_defaults`, ``conf`` and the plan's ``spark.*`` settings as builder
    configuration (so static settings work). An active session in this process is reused
    (``master`` is then ignored) and gets the runtime settings only.

    Returns:
        ``(spark, created)``: the session and whether this call created it.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    defaults = session_defaults(plan, master, conf)
    for key, value in defaults.items():
        report(f"default: {key}={value} (override with SET '{key}' = …)")
    if active is not None:
        for key, value in {**defaults, **conf}.items():
            if not key.startswith("spark.ui."):  # static: Spark refuses them on a live session
                active.conf.set(key, value)
        return active, False
    from sqlstream.packages import StartupOutput, packages_for, resolution_error

    packages = packages_for(plan, {**conf, **dict(plan.settings)})
    if packages:
        report(f"default: spark.jars.packages={packages} (the plan reads or writes Kafka; "
               "override with --packages or SET 'spark.jars.packages' = …)")
    builder = SparkSession.builder.appName(f"sqlstream:{plan.name}").master(master or "local[*]")
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
    for key, value in {**defaults, **conf}.items():
        builder = builder.config(key, value)
    for key, value in plan.settings:
        if not key.lower().startswith("sqlstream."):
            builder = builder.config(key, value)
    if packages:
        builder = builder.config("spark.jars.packages", packages)
    wanted = packages or conf.get("spark.jars.packages") or plan.setting("spark.jars.packages")
    if not wanted:
        spark = builder.getOrCreate()
    else:
        output = StartupOutput()
        try:
            with output:
                spark = builder.getOrCreate()
        except Exception as error:  # PySparkRuntimeError JAVA_GATEWAY_EXITED: Ivy failed
            raise resolution_error(wanted, error, output.unresolved) from None
    spark.sparkContext.setLogLevel("FATAL")
    return spark, True
