"""A Spark standalone cluster (master + one worker) and a Spark Connect server on 127.0.0.1,
started from the installed pyspark's own distribution (``pyspark/bin/spark-class``,
``spark-submit``) for the tests of ``--master spark://…`` and ``--remote sc://…``.

Small on purpose (the test machine is shared): the worker offers 1 core and 1 GB, the
daemons (the Connect server too: Spark launches it as one) get 512 MB heaps, the Connect server runs ``local[1]``. Every process is started in
a process group of its own and stopped (SIGTERM, then SIGKILL) by its group id.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
START_SECONDS = 120.0


def free_port() -> int:
    """A TCP port nothing listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _env() -> dict[str, str]:
    return dict(
        os.environ,
        SPARK_HOME=str(SPARK_HOME),
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_DAEMON_MEMORY="512m",
        SPARK_NO_DAEMONIZE="1",
    )


class Daemon:
    """One JVM started with its output in ``log``; :meth:`wait_for` a line, :meth:`stop`."""

    def __init__(self, name: str, args: list[str], log: Path, cwd: Path) -> None:
        self.name, self.log = name, log
        self.handle = log.open("w")
        self.proc = subprocess.Popen(
            args,
            stdout=self.handle,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=_env(),
            start_new_session=True,
        )

    def wait_for(self, text: str, deadline: float) -> None:
        while text not in self.log.read_text(errors="replace"):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-3000:]}")
            time.sleep(0.3)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.handle.close()


class Cluster:
    """A standalone master and worker and a Spark Connect server, started together.

    Attributes:
        master_url: ``spark://127.0.0.1:<port>``; ``remote_url``: ``sc://127.0.0.1:<port>``.
    """

    def __init__(self, logs: Path, connect_cwd: Path) -> None:
        bin_ = SPARK_HOME / "bin"
        master_port, connect_port = free_port(), free_port()
        self.master_url = f"spark://127.0.0.1:{master_port}"
        self.remote_url = f"sc://127.0.0.1:{connect_port}"
        self.daemons: list[Daemon] = []
        try:
            self.master = self._start(
                "master",
                [
                    str(bin_ / "spark-class"),
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(master_port),
                    "--webui-port",
                    str(free_port()),
                ],
                logs,
                logs,
            )
            self.worker = self._start(
                "worker",
                [
                    str(bin_ / "spark-class"),
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(logs / "work"),
                    self.master_url,
                ],
                logs,
                logs,
            )
            self.connect = self._start(
                "connect",
                [
                    str(bin_ / "spark-submit"),
                    "--class",
                    "org.apache.spark.sql.connect.service.SparkConnectServer",
                    "--master",
                    "local[1]",
                    "--conf",
                    f"spark.connect.grpc.binding.port={connect_port}",
                    "--conf",
                    "spark.ui.enabled=false",
                    "--conf",
                    "spark.driver.host=127.0.0.1",
                    "--name",
                    "sqlstream-connect-test",
                    "spark-internal",
                ],
                logs,
                connect_cwd,
            )
            deadline = time.monotonic() + START_SECONDS
            self.master.wait_for("I have been elected leader", deadline)
            self.worker.wait_for("Successfully registered with master", deadline)
            self.connect.wait_for("Spark Connect server started", deadline)
        except BaseException:
            self.stop()
            raise

    def _start(self, name: str, args: list[str], logs: Path, cwd: Path) -> Daemon:
        daemon = Daemon(name, args, logs / f"{name}.log", cwd)
        self.daemons.append(daemon)
        return daemon

    def stop(self) -> None:
        """Stop every process started, the Connect server and worker first."""
        for daemon in reversed(self.daemons):
            daemon.stop()
