"""Spark's JVM launched while the pipeline compiles (``sqlstream exec``'s start-up).

Launching the JVM (``spark-submit``, the JVM, PySpark's py4j gateway: seconds) does not
depend on the plan, except for the settings ``spark-submit`` and the JVM read before a
SparkContext exists (:data:`LAUNCH_PREFIXES`: the driver's JVM options and memory, jars and
packages). So ``exec`` starts the launch in a thread before it imports the compiler and
compiles the file (about half a second: sqlglot's import and the compile), and
:func:`sqlstream.runtime.spark_session.create_session` takes the launched JVM when the
compiled plan needs no other launch settings than those it was launched with; otherwise
the JVM is stopped and a new one launched as before (nothing is lost but the overlap).
The SparkContext (and every other setting, the plan's ``SET`` statements included) is
created on it as on a JVM launched afterwards: PySpark's ``SparkContext(conf, gateway)``
copies the whole configuration into the JVM's ``SparkConf``.

Not used with a Spark Connect ``remote``, under ``spark-submit`` (its JVM exists already),
or for a file that uses ``${env:…}`` (the launch happens before its secrets are known, and
the JVM's standard output could not pass through ``exec``'s redaction).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping

LAUNCH_PREFIXES = ("spark.driver.", "spark.jars", "spark.submit.", "spark.files",
                   "spark.archives", "spark.pyfiles", "spark.master")
"""Settings read before a SparkContext exists (``spark-submit`` and the JVM's command
line); lower-case prefixes. Source: Spark's configuration guide (*Application
Properties*: "cannot be set through SparkConf … in client mode … use --driver-memory" and
``spark.driver.extraJavaOptions``; *Runtime Environment*: ``spark.jars*``)."""


def launch_settings(settings: Mapping[str, str], master: str | None) -> dict[str, str]:
    """The settings of a JVM launch: ``spark.master`` = ``master`` (default ``local[*]``),
    the driver's JVM options with sqlstream's log4j configuration first, and every other
    setting of ``settings`` whose key starts with one of :data:`LAUNCH_PREFIXES`.

    Args:
        settings: every Spark setting of the session (``{key: value}``).
        master: the master URL, as for ``exec --master``.

    Returns:
        ``{key: value}``, what ``spark-submit`` receives as ``--conf``.
    """
    from sqlstream.runtime.spark_session import LOG4J_CONFIG

    launch = {k: v for k, v in settings.items() if k.lower().startswith(LAUNCH_PREFIXES)}
    java_options = f"-Dlog4j.configurationFile=file:{LOG4J_CONFIG}"
    given = launch.pop("spark.driver.extraJavaOptions", None)
    launch["spark.driver.extraJavaOptions"] = f"{java_options} {given}" if given else java_options
    launch.setdefault("spark.master", master or "local[*]")  # a setting wins, as in a launch
    return launch


class Prelaunch:
    """A JVM being launched in a thread, for a session of ``master`` with ``conf``.

    Args:
        master: the Spark master (``None``: ``local[*]``).
        conf: the session's settings known before the compile (``exec --conf``).
        jvm_output: receives the JVM's stderr lines, as for
            :func:`~sqlstream.runtime.spark_session.launch_jvm`.
    """

    def __init__(self, master: str | None, conf: Mapping[str, str],
                 jvm_output: Callable[[str], None] | None = None) -> None:
        self.master = master
        self.settings = launch_settings(conf, master)
        self._jvm_output = jvm_output
        self._gateway = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._launch, name="sqlstream-prelaunch",
                                        daemon=True)
        self._thread.start()

    def _launch(self) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # as create_session does
        try:
            from pyspark import SparkConf

            from sqlstream.runtime.spark_session import launch_jvm

            conf = SparkConf()
            for key, value in self.settings.items():
                conf.set(key, value)
            # marks the JVM as this one (a query can read it: tests/spark/test_prelaunch.py)
            options = self.settings["spark.driver.extraJavaOptions"]
            conf.set("spark.driver.extraJavaOptions", f"{options} -Dsqlstream.prelaunched=true")
            self._gateway = launch_jvm(conf, self._jvm_output)
        except BaseException as error:  # noqa: BLE001 - reported by take(): a launch as before
            self._error = error

    def take(self, settings: Mapping[str, str], master: str | None):
        """The launched JVM's py4j gateway if it was launched with the launch settings of
        ``settings`` and ``master`` (:func:`launch_settings`), else ``None`` (the JVM, if
        any, stopped: the caller launches another). Waits for the launch to end; once.

        Returns:
            The ``py4j.java_gateway.JavaGateway``, or ``None``.
        """
        self._thread.join()
        gateway, self._gateway = self._gateway, None
        if gateway is not None and launch_settings(settings, master) != self.settings:
            _stop(gateway)
            return None
        return gateway

    def discard(self) -> None:
        """Stop the launched JVM if nobody took it (a compile error, a refused run)."""
        self._thread.join()
        gateway, self._gateway = self._gateway, None
        if gateway is not None:
            _stop(gateway)


def _stop(gateway) -> None:
    """Shut a gateway and its JVM down (PySpark's ``gateway.proc``)."""
    try:
        gateway.shutdown()
    finally:
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def prelaunch_for(path: str, master: str | None, remote: str | None, conf: Mapping[str, str],
                  jvm_output: Callable[[str], None] | None = None) -> Prelaunch | None:
    """A :class:`Prelaunch` for ``exec`` of the file at ``path``, or ``None``: not for a
    Spark Connect ``remote``, under ``spark-submit`` (``PYSPARK_GATEWAY_PORT`` set), for a
    file that uses ``${env:…}`` (its secrets are not known yet) or one that cannot be read
    (the compile reports it). Arguments as for :class:`Prelaunch`."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeError):
        return None
    if remote or "${env:" in text.replace(" ", "") or "PYSPARK_GATEWAY_PORT" in os.environ:
        return None
    return Prelaunch(master, conf, jvm_output)
