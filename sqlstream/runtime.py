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

Beyond one machine: ``master`` may be a standalone cluster (``spark://host:port``; YARN and
Kubernetes take ``spark-submit``), and ``remote`` a Spark Connect server (``sc://host:port``,
Spark guide *Spark Connect Overview*). Both are probed with a TCP connection first
(:func:`check_reachable`, ``SS530``: Spark itself would retry for minutes). Through Spark
Connect the settings Spark reads only at start (``spark.ui.*``, ``spark.driver.*``) are the
server's, and :func:`refuse_on_connect` refuses what cannot run there (``SS405``).

Starting and waiting for queries is :mod:`sqlstream.session`'s job.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Callable

from sqlstream import plan as p
from sqlstream.errors import SqlStreamError
from sqlstream.program import lower

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


CONNECT_PORT = 15002
"""Spark Connect's default port (``spark.connect.grpc.binding.port``)."""

STANDALONE_PORT = 7077
"""A standalone master's default port."""

SUBMIT_GATEWAY = "PYSPARK_GATEWAY_PORT"
"""Set by ``spark-submit`` for the Python driver it starts: then ``exec`` without
``--master`` takes spark-submit's ``--master`` (YARN, Kubernetes, …)."""

PROBE_SECONDS = 5.0
"""How long :func:`check_reachable` waits for a TCP connection (s)."""

CONNECT_UNSUPPORTED = {
    "foreachBatch": "its function runs in a Python process of the Spark Connect server, "
                    "not in this process",
    "foreach": "its writer runs in a Python process of the Spark Connect server, "
               "not in this process",
}
"""Binding calls Spark Connect cannot run as sqlstream means them, and why (``SS405``)."""

_STATIC = ("spark.ui.", "spark.driver.", "spark.executor.", "spark.master", "spark.app.",
           "spark.jars")


def _endpoints(url: str) -> list[tuple[str, int]]:
    """``[(host, port)]`` of a ``spark://h1:p1,h2:p2`` or ``sc://host:port/;params`` URL;
    ``[]`` for any other master (``local[*]``, ``yarn``, ``k8s://…``: not probed)."""
    if url.startswith("sc://"):
        match = re.match(r"sc://(\[[^\]]+\]|[^:/;]+)(?::(\d+))?", url)
        return [(match.group(1).strip("[]"), int(match.group(2) or CONNECT_PORT))] if match else []
    if url.startswith("spark://"):
        found = []
        for part in url[len("spark://"):].split(","):
            host, _, port = part.strip().rstrip("/").rpartition(":")
            if host and port.isdigit():
                found.append((host, int(port)))
            elif part.strip():
                found.append((part.strip().rstrip("/"), STANDALONE_PORT))
        return found
    return []


def check_reachable(url: str | None, timeout: float = PROBE_SECONDS) -> None:
    """Open (and close) a TCP connection to the standalone master(s) or Spark Connect server
    of ``url``; other URLs (``local[…]``, ``yarn``, ``k8s://…``) and ``None`` pass.

    Raises:
        SqlStreamError: (``SS530``) no endpoint of ``url`` accepts a connection within
            ``timeout`` seconds.
    """
    endpoints = _endpoints(url or "")
    errors = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as error:
            errors.append(f"{host}:{port}: {error.strerror or error}")
    if endpoints:
        what = "Spark Connect server" if url.startswith("sc://") else "Spark standalone master"
        raise SqlStreamError(
            f"cannot reach the {what} at {url} ({'; '.join(errors)})", code="SS530",
            hint="start it, or correct the URL (Spark Connect's default port is 15002, a "
                 "standalone master's 7077)")


def refuse_on_connect(plan: p.Plan, report: Report) -> None:
    """Check that every binding call of ``plan`` means the same through Spark Connect;
    report (through ``report``) that a console sink prints on the server.

    Source: Spark guide *Spark Connect Overview* (what is supported) and PySpark
    ``DataStreamWriter.foreachBatch`` (on Connect, the function is serialized and run on
    the server).

    Raises:
        SqlStreamError: (``SS405``) a call of :data:`CONNECT_UNSUPPORTED`, at its statement.
    """
    for block in lower(plan).blocks:
        for chain in block.chains:
            for step in chain.steps:
                if step.name in CONNECT_UNSUPPORTED:
                    raise SqlStreamError(
                        f"query '{block.name}' uses {step.name}, which Spark Connect cannot "
                        f"run here: {CONNECT_UNSUPPORTED[step.name]}", chain.span, plan.source,
                        code="SS405",
                        hint="run with --master (this process is then the driver), or submit "
                             "the pipeline with spark-submit (see README, Beyond one machine)")
    for query in plan.queries:
        if query.sink.connector == "console":
            report(f"query '{query.name}': Spark Connect prints console output on the "
                   "server, not here")


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def create_session(plan: p.Plan, master: str | None, conf: dict[str, str], report: Report,
                   remote: str | None = None):
    """Get or create the SparkSession for ``plan``.

    A new session gets ``master`` (default ``local[*]``, or under ``spark-submit`` its
    ``--master``), the defaults of
    :func:`session_defaults`, ``conf`` and the plan's ``spark.*`` settings as builder
    configuration (so static settings work). An active session in this process is reused
    (``master`` is then ignored) and gets the runtime settings only.

    With ``remote`` (``sc://host:port``; not with ``master``), a Spark Connect session
    (``SparkSession.builder.remote``): the same settings except those Spark reads only at
    start (``spark.ui.*``, ``spark.driver.*``, …), which are the server's.

    Returns:
        ``(spark, created)``: the session and whether this call created it.

    Raises:
        SqlStreamError: (``SS530``) the standalone master or Spark Connect server does not
            accept a connection; (``SS531``) ``remote`` without the Spark Connect client
            libraries.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if remote:
        return _connect_session(plan, remote, conf, report), True
    check_reachable(master)
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
    builder = SparkSession.builder.appName(f"sqlstream:{plan.name}")
    if master or SUBMIT_GATEWAY not in os.environ:
        builder = builder.master(master or "local[*]")  # under spark-submit: its --master
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


def _connect_session(plan: p.Plan, remote: str, conf: dict[str, str], report: Report):
    """A new Spark Connect session at ``remote`` for ``plan`` (see :func:`create_session`)."""
    try:
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies("pyspark.sql.connect.session")
    except ImportError as error:
        raise SqlStreamError(
            f"--remote needs the Spark Connect client libraries: {error}", code="SS531",
            hint="pip install 'sqlstream[connect]' (PySpark's connect extra: grpcio, "
                 "grpcio-status, googleapis-common-protos, pyarrow, pandas, zstandard)") from None
    check_reachable(remote)
    from pyspark.sql import SparkSession

    defaults = session_defaults(plan, None, conf)
    for key, value in defaults.items():
        if not key.startswith(_STATIC):
            report(f"default: {key}={value} (override with SET '{key}' = …)")
    settings = {**defaults, **conf}
    settings.update((k, v) for k, v in plan.settings if not k.lower().startswith("sqlstream."))
    builder = SparkSession.builder.remote(remote)
    for key, value in settings.items():
        if key.startswith(_STATIC):
            if key not in defaults:
                report(f"not sent to the Spark Connect server: {key}={value} (Spark reads "
                       "it only at start: the server's setting applies)")
        else:
            builder = builder.config(key, value)
    report(f"Spark Connect server: {remote} (paths are resolved by the server)")
    return builder.create()
