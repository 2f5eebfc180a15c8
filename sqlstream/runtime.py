"""Runtime of ``sqlstream exec``: the Spark session, its defaults, and waiting for queries.

Local runs get defaults a newcomer would not know to set, each reported by ``exec`` and
overridden by a ``SET`` of the same key (or ``--conf``):

* ``spark.sql.shuffle.partitions`` = the number of cores (Spark's default of 200 makes
  every stateful micro-batch run 200 tiny tasks: the bundled example takes minutes
  instead of seconds);
* ``spark.sql.session.timeZone`` = ``UTC`` (results do not depend on the machine's zone);
* ``spark.ui.enabled`` = ``false`` and ``spark.sql.streaming.forceDeleteTempCheckpointLocation``
  = ``true`` (console and memory sinks leave no temporary checkpoints behind);
* ``PYSPARK_PYTHON`` = this interpreter, so Python workers import the same packages.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from sqlstream import plan as p
from sqlstream.errors import QueryFailedError

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
            if key != "spark.ui.enabled":
                active.conf.set(key, value)
        return active, False
    builder = SparkSession.builder.appName(f"sqlstream:{plan.name}").master(master or "local[*]")
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j.configurationFile=file:{log4j}")
    for key, value in {**defaults, **conf}.items():
        builder = builder.config(key, value)
    for key, value in plan.settings:
        if not key.lower().startswith("sqlstream."):
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    return spark, True


def _describe(query: p.Query, available_now: bool) -> str:
    trigger = "availableNow" if available_now else (
        "default" if query.trigger is None else
        {"available_now": "availableNow", "continuous": f"continuous {query.trigger.interval}",
         "processing_time": f"every {query.trigger.interval}"}[query.trigger.kind]
    )
    target = query.sink.path or query.sink.connector
    return (f"started query {query.name}: {query.output_mode} mode, trigger {trigger}, "
            f"-> {target}" + (f" (checkpoint {query.checkpoint_location})"
                              if query.checkpoint_location else ""))


def _summary(handle) -> str:
    progress = handle.recentProgress or []
    rows = sum(int(pr.get("numInputRows", 0)) for pr in progress)
    watermark = (progress[-1].get("eventTime") or {}).get("watermark") if progress else None
    text = f"query {handle.name} finished: {len(progress)} micro-batches, {rows} input rows"
    return text + (f", final watermark {watermark}" if watermark else "")


def run(spark, plan: p.Plan, available_now: bool = False, report: Report = print,
        poll_seconds: float = 0.5) -> None:
    """Start every query of ``plan`` and wait until all have stopped.

    Returns when every query finished (e.g. ``EMIT … ONCE``), or after stopping all
    queries cleanly on Ctrl-C (``KeyboardInterrupt`` is not propagated).

    Raises:
        QueryFailedError: a query failed to start or failed while running; the others are
            stopped first.
    """
    from sqlstream.binder import spark_message, start

    handles = start(spark, plan, available_now, report)
    by_name = {q.name: q for q in plan.queries}
    for handle in handles:
        report(_describe(by_name[handle.name], available_now))
    reported: set[str] = set()
    try:
        while True:
            for handle in handles:
                if handle.isActive or handle.name in reported:
                    continue
                reported.add(handle.name)
                failure = handle.exception()
                if failure is not None:
                    for other in handles:
                        other.stop()
                    query = by_name[handle.name]
                    raise QueryFailedError(
                        f"query '{handle.name}' failed: {spark_message(failure)}",
                        query.span, plan.source,
                    )
                report(_summary(handle))
            if len(reported) == len(handles):
                return
            time.sleep(poll_seconds)
    except KeyboardInterrupt:
        report("interrupted: stopping queries")
        for handle in handles:
            handle.stop()
        for handle in handles:
            report(_summary(handle))
