"""The configuration of the SparkSession a pipeline runs in, decided once for every way
it can run: a local session or cluster (:func:`sqlstream.runtime.spark_session.create_session`),
Spark Connect, and the ``SparkSession.builder`` of ``translate --to pyspark``
(:func:`sqlstream.lowering.printer.to_pyspark`).

Local runs get defaults a newcomer would not know to set, each reported by ``exec`` and
overridden by a ``SET`` of the same key (or ``--conf``); see :func:`session_defaults`.
"""

from __future__ import annotations

import os

from sqlstream.connectors import lakehouse_jvm
from sqlstream.ir import plan as p


def session_defaults(plan: p.Plan, master: str | None, conf: dict[str, str]) -> dict[str, str]:
    """The defaults sqlstream gives a session, less those whose key a ``SET`` of ``plan`` or
    ``conf`` names (keys compared case-insensitively, as Spark does):

    * ``spark.sql.shuffle.partitions`` = the number of cores of this machine (Spark's
      default of 200 makes every stateful micro-batch run 200 tiny tasks);
    * ``spark.sql.session.timeZone`` = ``UTC`` (results do not depend on the machine's zone);
    * ``spark.ui.enabled`` and ``spark.ui.showConsoleProgress`` = ``false``;
    * ``spark.sql.streaming.forceDeleteTempCheckpointLocation`` = ``true`` (console and
      memory sinks leave no temporary checkpoints behind);
    * on the JVM path of a ``delta`` sink, Delta's ``spark.sql.extensions`` and
      ``spark.sql.catalog.spark_catalog``, and ``spark.databricks.delta.snapshotPartitions``
      = the number of cores (Delta's default of 50 makes each commit's snapshot a job of
      50 tiny tasks) (:func:`sqlstream.connectors.lakehouse_jvm.session_settings`).

    Args:
        plan: the compiled pipeline (its ``settings`` are the ``SET`` statements).
        master: the Spark master (not read today: the defaults are the same everywhere).
        conf: Spark configuration given on the command line (``--conf``).

    Returns:
        ``{key: value}`` in the order above.
    """
    cores = os.cpu_count() or 2
    defaults = {
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        **lakehouse_jvm.session_settings(plan, cores),
    }
    given = {k.lower() for k, _ in plan.settings} | {k.lower() for k in conf}
    return {k: v for k, v in defaults.items() if k.lower() not in given}


def session_settings(
    plan: p.Plan, defaults: dict[str, str], conf: dict[str, str], packages: str | None = None
) -> dict[str, str]:
    """Every Spark setting of the session, in the order later ones win: ``defaults``
    (:func:`session_defaults`), then ``conf``, then ``spark.jars.packages`` = ``packages``
    (when not ``None``), then the plan's ``SET`` statements, less the compiler's own
    ``sqlstream.*`` keys.

    Returns:
        ``{key: value}``; the caller decides which of them a session can still take
        (static settings cannot be set on a running session nor over Spark Connect).
    """
    settings = {**defaults, **conf}
    if packages:
        settings["spark.jars.packages"] = packages
    settings.update((k, v) for k, v in plan.settings if not k.lower().startswith("sqlstream."))
    return settings
