"""The Spark session of ``sqlstream exec`` and :class:`sqlstream.Session`, and its defaults.

Local runs get the defaults of :func:`sqlstream.lowering.session_config.session_defaults`
(each reported by ``exec``, overridden by a ``SET`` of the same key or ``--conf``),
``PYSPARK_PYTHON`` = this interpreter (so Python workers import the same packages) and
``spark.jars.packages`` = Spark's Kafka (and Avro) package when the plan needs it
(:mod:`sqlstream.lowering.packages`), unless the user configured jars.

The JVM a created session launches is quiet and shielded (:func:`launch_jvm`): Spark logs
only fatal messages (``log4j2.properties`` beside this module, which also silences the
"Setting default log level" banner of PySpark's shell mode); the JVM's own stderr lines
that are not log output ("WARNING: Using incubator modules …") and Ivy's report while
``spark-submit`` resolves ``spark.jars.packages`` are filtered out (:class:`JvmStderr`);
and the JVM runs in a process group of its own, so a signal sent to the process group of
``sqlstream exec`` (Ctrl-C in a terminal, ``timeout -s INT``, a supervisor's SIGTERM) reaches
only the Python driver, which stops the queries itself (:mod:`sqlstream.runtime.runner`).
Beyond one machine: ``master`` may be a standalone cluster (``spark://host:port``; YARN and
Kubernetes take ``spark-submit``), and ``remote`` a Spark Connect server (``sc://host:port``,
Spark guide *Spark Connect Overview*). Both are probed with a TCP connection first
(:func:`check_reachable`, ``SS530``: Spark itself would retry for minutes). Through Spark
Connect the settings Spark reads only at start (:data:`sqlstream.planning.settings.STATIC_SETTINGS`:
``spark.ui.*``, ``spark.driver.*``, …) are the server's, and :func:`refuse_on_connect`
refuses what cannot run there (``SS405``).

Starting and waiting for queries is :mod:`sqlstream.session`'s job.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable

from sqlstream.connectors import connector
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir import plan as p
from sqlstream.lowering.lowered import Lowered
from sqlstream.lowering.session_config import session_defaults, session_settings
from sqlstream.planning.settings import is_static
from sqlstream.runtime.class_archive import finish_at_exit, with_archive

Report = Callable[[str], None]

LOG4J_CONFIG = os.path.join(os.path.dirname(__file__), "log4j2.properties")
"""Spark's log4j 2 configuration for sessions sqlstream creates: fatal messages only."""

JVM_NOISE = re.compile(
    r"WARNING: Using incubator modules|Setting default log level to"
    r"|To adjust logging level use sc\.setLogLevel|Using Spark's default log4j profile"
    r"|NativeCodeLoader|resolves to a loopback address|Set SPARK_LOCAL_IP if you need"
)
"""Lines of the JVM's stderr that say nothing about the pipeline (printed by the JVM
itself before logging starts, or Spark's start-up notes): dropped by :class:`JvmStderr`."""

IVY_REPORT = (":: loading settings ::", "Ivy Default Cache")
"""How the report of Ivy begins, printed by ``spark-submit`` while it resolves
``spark.jars.packages`` (before the JVM's gateway starts); it ends with the summary line
``… artifacts copied, … already retrieved …``, or with the JVM when nothing resolves."""

UNRESOLVED = re.compile(r"[\w.\-]+#[\w.\-]+;[\w.\-]+: [\w ]+")
"""Ivy's reason for a package it cannot resolve
(``org.apache.spark#spark-sql-kafka-0-10_2.13;4.1.99: not found``)."""


class JvmStderr:
    """The one filter of the JVM's stderr lines (:func:`launch_jvm`).

    Dropped: :data:`JVM_NOISE`; Ivy's resolution report (from a line starting with one of
    :data:`IVY_REPORT` to its end); while the JVM starts (``starting``), the stack trace
    of a start that fails (``Exception in thread …``, ``at …``). Ivy's reasons for
    packages it cannot resolve (:data:`UNRESOLVED`) seen while the JVM starts are kept in
    ``unresolved`` for the ``SS510`` message (:func:`sqlstream.lowering.packages.resolution_error`).
    Every other line goes on to ``write``.

    Args:
        write: receives each line passed on (no newline), on the JVM's stderr thread.
    """

    def __init__(self, write: Report) -> None:
        self.write = write
        self.unresolved: list[str] = []
        self.starting = True
        self._in_report = False

    def line(self, line: str) -> None:
        """Take one stderr line of the JVM (no newline)."""
        if not line or JVM_NOISE.search(line):
            return
        text = line.strip()
        if self.starting and ("unresolved dependency" in text or "not found" in text):
            self.unresolved += UNRESOLVED.findall(text)
        if text.startswith(IVY_REPORT):
            self._in_report = True
        if self._in_report:
            self._in_report = "artifacts copied" not in text
            return
        if not (self.starting and text.startswith(("at ", "Exception in thread"))):
            self.write(line)


def _copy_stderr(stream, take: Report) -> None:
    """Give the JVM's stderr, line by line (decoded, no newline), to ``take``."""
    try:
        for raw in iter(stream.readline, b""):
            take(raw.decode("utf-8", "replace").rstrip("\r\n"))
    except (OSError, ValueError):  # the pipe closed under us: the JVM is gone
        pass


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # sys.stderr at call time (rich may redirect it)


def launch_jvm(conf, jvm_output: Report | None = None):
    """Launch Spark's JVM for a new SparkContext and return its py4j gateway.

    PySpark's ``launch_gateway(conf, popen_kwargs)`` (``pyspark.java_gateway``: "intended
    for … customizing how pyspark interacts with the py4j JVM (e.g., capturing
    stdout/stderr)") starts ``spark-submit`` with ``conf``; here with its stderr piped
    through a thread and :class:`JvmStderr` (no start-up noise, no Ivy report), and in a
    new session (``start_new_session``): the JVM is in a process group of its own and
    receives no signal sent to sqlstream's group (PySpark already makes it ignore SIGINT).
    The JVM still exits when this process does (PySpark's gateway server exits at the end
    of its stdin).

    Args:
        conf: the ``pyspark.SparkConf`` of the context (master, app name, settings).
        jvm_output: receives each stderr line of the JVM that :class:`JvmStderr` passes on
            (no newline), on the copying thread; default: this process's ``sys.stderr``.
            Console sinks write to stdout, which is not touched.

    Returns:
        The py4j gateway (``gateway.proc`` is the JVM's ``Popen``).

    Raises:
        PackageError: (``SS510``) with ``spark.jars.packages`` in ``conf``, the JVM exited
            before its gateway started (``spark-submit`` resolves the packages first): the
            message names them and Ivy's reason.
    """
    from pyspark.java_gateway import launch_gateway

    # The pipe and its reader exist before the JVM does: a JVM that exits during start-up
    # (Ivy cannot resolve a package) still has every line read, before the error is raised.
    read, write = os.pipe()
    output = JvmStderr(jvm_output or _to_stderr)
    reader = threading.Thread(
        target=_copy_stderr,
        args=(os.fdopen(read, "rb"), output.line),
        name="sqlstream-jvm-stderr",
        daemon=True,
    )
    reader.start()
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write, "start_new_session": True})
    except BaseException as error:
        os.close(write)
        reader.join(timeout=5)  # the JVM is gone: its pipe ends once read
        packages = conf.get("spark.jars.packages")
        if packages and isinstance(error, Exception):  # PySpark's JAVA_GATEWAY_EXITED
            from sqlstream.lowering.packages import resolution_error

            raise resolution_error(packages, error, output.unresolved) from None
        raise
    os.close(write)  # the JVM holds its own copy (none under spark-submit: the reader ends)
    output.starting = False
    return gateway


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


def _runtime_settings(
    settings: dict[str, str], defaults: dict[str, str], report: Report, where: str, whose: str
) -> dict[str, str]:
    """The ``settings`` a session that already runs (or Spark Connect's server) can take:
    those Spark does not read only at start (:func:`sqlstream.planning.settings.is_static`). Each
    static one that is not one of ``defaults`` is reported: ``not <where>: key=value
    (… <whose> setting applies)``."""
    kept = {}
    for key, value in settings.items():
        if not is_static(key):
            kept[key] = value
        elif key not in defaults:
            report(
                f"not {where}: {key}={value} (Spark reads it only at start: {whose} "
                "setting applies)"
            )
    return kept


def _endpoints(url: str) -> list[tuple[str, int]]:
    """``[(host, port)]`` of a ``spark://h1:p1,h2:p2`` or ``sc://host:port/;params`` URL;
    ``[]`` for any other master (``local[*]``, ``yarn``, ``k8s://…``: not probed)."""
    if url.startswith("sc://"):
        match = re.match(r"sc://(\[[^\]]+\]|[^:/;]+)(?::(\d+))?", url)
        return [(match.group(1).strip("[]"), int(match.group(2) or CONNECT_PORT))] if match else []
    if url.startswith("spark://"):
        found = []
        for part in url[len("spark://") :].split(","):
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
        what = (
            "Spark Connect server" if (url or "").startswith("sc://") else "Spark standalone master"
        )
        raise SqlStreamError(
            f"cannot reach the {what} at {url} ({'; '.join(errors)})",
            code="SS530",
            hint="start it, or correct the URL (Spark Connect's default port is 15002, a "
            "standalone master's 7077)",
        )


def refuse_on_connect(pipeline: Lowered, report: Report) -> None:
    """Check that every binding call of ``pipeline``'s program means the same through Spark
    Connect; report (through ``report``) that a console sink prints on the server.

    Source: Spark guide *Spark Connect Overview* (what is supported) and PySpark
    ``DataStreamWriter.foreachBatch`` (on Connect, the function is serialized and run on
    the server).

    Raises:
        SqlStreamError: (``SS405``) a call of :data:`CONNECT_UNSUPPORTED`, at its statement.
    """
    plan = pipeline.plan
    for block in pipeline.program.blocks:
        for chain in block.chains:
            for step in chain.steps:
                if step.name in CONNECT_UNSUPPORTED:
                    raise SqlStreamError(
                        f"query '{block.name}' uses {step.name}, which Spark Connect cannot "
                        f"run here: {CONNECT_UNSUPPORTED[step.name]}",
                        chain.span,
                        plan.source,
                        code="SS405",
                        hint="run with --master (this process is then the driver), or submit "
                        "the pipeline with spark-submit (see docs/operations.md#beyond-one-machine)",
                    )
    for query in plan.queries:
        if connector(query.sink.connector).prints_rows:
            report(
                f"query '{query.name}': Spark Connect prints console output on the server, not here"
            )


def is_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (``pyspark.sql.connect``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def create_session(
    plan: p.Plan,
    master: str | None,
    conf: dict[str, str],
    report: Report,
    remote: str | None = None,
    jvm_output: Report | None = None,
):
    """Get or create the SparkSession for ``plan``.

    A new session gets ``master`` (default ``local[*]``, or under ``spark-submit`` its
    ``--master``), the defaults of :func:`session_defaults`, ``conf`` and the plan's
    ``spark.*`` settings as the configuration of its SparkContext (so static settings
    work), in a JVM started by :func:`launch_jvm` (``jvm_output`` as there). An active
    session in this process is reused (``master`` is then ignored) and gets the defaults
    and ``conf`` that are not static (:data:`sqlstream.planning.settings.STATIC_SETTINGS`); each
    static one given in ``conf`` or a ``SET`` is reported as not applied.

    With ``remote`` (``sc://host:port``; not with ``master``), a Spark Connect session
    (``SparkSession.builder.remote``): the same settings except those Spark reads only at
    start (:data:`sqlstream.planning.settings.STATIC_SETTINGS`), which are the server's (each one
    given is reported).

    Returns:
        ``(spark, created)``: the session and whether this call created it.

    Raises:
        SqlStreamError: (``SS530``) the standalone master or Spark Connect server does not
            accept a connection; (``SS531``) ``remote`` without the Spark Connect client
            libraries; (``SS510``) a Spark package the plan needs cannot be resolved.
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
    if active is not None:  # Spark refuses static settings on a live session
        static = {k: v for k, v in plan.settings if is_static(k)}  # reported, never set
        kept = _runtime_settings(
            {**defaults, **conf, **static},
            defaults,
            report,
            "applied to the running session",
            "the session's",
        )
        for key, value in kept.items():
            active.conf.set(key, plan.source.unseal(value))
        return active, False
    from pyspark import SparkConf, SparkContext

    from sqlstream.lowering.packages import packages_with_note

    packages, note = packages_with_note(plan, {**conf, **dict(plan.settings)})
    if packages:
        report(
            f"default: spark.jars.packages={packages} (the plan reads or writes Kafka, Delta or Iceberg; "
            "override with --packages or SET 'spark.jars.packages' = …)"
        )
    if note:
        report(f"note: {note}")
    spark_conf = SparkConf().setAppName(f"sqlstream:{plan.name}")
    if master or SUBMIT_GATEWAY not in os.environ:
        spark_conf.setMaster(master or "local[*]")  # under spark-submit: its --master
    settings = session_settings(plan, defaults, conf, packages)
    java_options = f"-Dlog4j.configurationFile=file:{LOG4J_CONFIG}"
    given = settings.pop("spark.driver.extraJavaOptions", None)
    spark_conf.set(
        "spark.driver.extraJavaOptions", f"{java_options} {given}" if given else java_options
    )
    for key, value in settings.items():  # the one place a SET's secret enters the JVM's conf
        spark_conf.set(key, plan.source.unseal(value))
    if SparkContext._active_spark_context is None:  # noqa: SLF001 - PySpark's own test
        archive = None
        if SUBMIT_GATEWAY not in os.environ:  # this process launches the JVM: with the
            java, archive = with_archive(  # class-data archive (runtime/class_archive.py)
                settings, spark_conf.get("spark.driver.extraJavaOptions")
            )
            if java is not None:  # (given above: never None here)
                spark_conf.set("spark.driver.extraJavaOptions", java)
        main = threading.current_thread() is threading.main_thread()
        handler = signal.getsignal(signal.SIGINT) if main else None
        gateway = launch_jvm(spark_conf, jvm_output)
        if archive is not None:
            finish_at_exit(archive, getattr(gateway, "proc", None))
        SparkContext(conf=spark_conf, gateway=gateway)
        if main:  # SparkContext replaced it with one that cancels all jobs and raises
            signal.signal(signal.SIGINT, handler)  # KeyboardInterrupt, mid-py4j call
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")
    return spark, True


def _connect_session(plan: p.Plan, remote: str, conf: dict[str, str], report: Report):
    """A new Spark Connect session at ``remote`` for ``plan`` (see :func:`create_session`)."""
    try:
        import inspect

        from pyspark.sql.connect.utils import check_dependencies

        # PySpark 4.0/4.1 take the calling module's name; 4.2 and later take no argument.
        named = bool(inspect.signature(check_dependencies).parameters)
        check_dependencies(*(("pyspark.sql.connect.session",) if named else ()))
    except ImportError as error:
        raise SqlStreamError(
            f"--remote needs the Spark Connect client libraries: {error}",
            code="SS531",
            hint="pip install 'sqlstream[connect]' (PySpark's connect extra: grpcio, "
            "grpcio-status, googleapis-common-protos, pyarrow, pandas, zstandard)",
        ) from None
    check_reachable(remote)
    from pyspark.sql import SparkSession

    defaults = session_defaults(plan, None, conf)
    for key, value in defaults.items():
        if not is_static(key):
            report(f"default: {key}={value} (override with SET '{key}' = …)")
    settings = session_settings(plan, defaults, conf)
    builder = SparkSession.builder.remote(remote)
    for key, value in _runtime_settings(
        settings, defaults, report, "sent to the Spark Connect server", "the server's"
    ).items():
        builder = builder.config(key, plan.source.unseal(value))
    report(f"Spark Connect server: {remote} (paths are resolved by the server)")
    return builder.create()
