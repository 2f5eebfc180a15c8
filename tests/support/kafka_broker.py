"""A real single-node Apache Kafka broker (KRaft mode) on 127.0.0.1, for tests and examples.

The broker is Apache Kafka's own ``kafka.Kafka`` main class from its Maven Central jars
(``tests/support/kafka/pom.xml``, resolved with ``mvn dependency:copy-dependencies`` into
``.cache/kafka-jars``; :func:`ensure_jars` runs it when the folder is missing), started with
``java`` as one process that is both controller and broker (``process.roles =
broker,controller``), after its log directory was formatted with ``kafka.tools.StorageTool
format`` (what ``kafka-storage.sh format`` runs). Kafka docs: *KRaft* (Operations),
*Quick Start*.

Used by the session-scoped pytest fixture ``kafka_broker`` (imported by
``tests/conftest.py``) and by ``examples/kafka/run_example.py``.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "tests" / "support" / "kafka" / "pom.xml"
JARS = Path(os.environ.get("SQLSTREAM_KAFKA_JARS", ROOT / ".cache" / "kafka-jars"))
JVM_OPTS = [
    "-Xms64m",
    "-Xmx384m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
]


def ensure_jars(jars: Path = JARS) -> Path:
    """Resolve the broker's jars into ``jars`` with Maven unless it already holds them.

    Returns:
        The folder (its ``*`` is the broker's class path).

    Raises:
        RuntimeError: ``mvn`` is missing or failed (its output in the message).
    """
    if jars.is_dir() and any(jars.glob("kafka_2.13-*.jar")):
        return jars
    if shutil.which("mvn") is None:
        raise RuntimeError(
            "mvn is not installed: it resolves the Kafka broker's jars "
            f"({POM}); install Maven (apt-get install maven)"
        )
    done = subprocess.run(
        [
            "mvn",
            "-q",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={jars}",
            "-DincludeScope=runtime",
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"mvn could not resolve the Kafka broker's jars:\n{done.stdout}{done.stderr}"
        )
    return jars


SPARK_POM = ROOT / "tests" / "support" / "kafka" / "spark-pom.xml"
SPARK_JARS = ROOT / ".cache" / "spark-kafka-jars"
"""One folder per package version under it (``.cache/spark-kafka-jars/4.2.0``): the supported
Spark minors' venvs share a checkout; ``$SQLSTREAM_SPARK_KAFKA_JARS`` names one folder instead."""


def _artifact(jar: str) -> str:
    """``kafka-clients-3.9.1.jar`` → ``kafka-clients`` (Ivy's ``group_`` prefix dropped)."""
    return re.sub(
        r"-\d[\w.]*\.jar$", "", jar.split("_", 1)[-1] if "_" in jar.split("-")[0] else jar
    )


def spark_jars(folder: Path | None = None) -> list[str]:
    """Spark's Kafka and Avro packages as local jars for ``spark.jars``: the artifacts
    ``exec`` adds to ``spark.jars.packages`` (version: :func:`sqlstream.lowering.packages.package_version`
    for the installed pyspark), resolved with Maven (``tests/support/kafka/spark-pom.xml``) into
    ``folder`` (default ``$SQLSTREAM_SPARK_KAFKA_JARS``, else :data:`SPARK_JARS`/<version>) once, without the
    jars pyspark already ships (Scala, Hadoop client, compression codecs), as Spark's own
    package resolution leaves them out.

    Raises:
        RuntimeError: ``mvn`` is missing or failed.
    """
    from sqlstream.lowering.packages import package_version

    if folder is None:
        given = os.environ.get("SQLSTREAM_SPARK_KAFKA_JARS")
        folder = Path(given) if given else SPARK_JARS / package_version()[0]
    if not (folder.is_dir() and any(folder.glob("spark-sql-kafka-*.jar"))):
        version, _ = package_version()
        if shutil.which("mvn") is None:
            raise RuntimeError(
                "mvn is not installed: it resolves Spark's Kafka package for the tests"
            )
        done = subprocess.run(
            [
                "mvn",
                "-q",
                "-f",
                str(SPARK_POM),
                "dependency:copy-dependencies",
                f"-Dspark.package.version={version}",
                f"-DoutputDirectory={folder}",
                "-DincludeScope=runtime",
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"mvn could not resolve Spark's Kafka package:\n{done.stdout}{done.stderr}"
            )
    import pyspark

    shipped = {_artifact(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(str(j) for j in folder.glob("*.jar") if _artifact(j.name) not in shipped)


def free_port() -> int:
    """A TCP port nobody listens on at 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    """One broker process. ``start()`` returns once it accepts clients; ``stop()`` ends it
    and removes its data.

    Attributes:
        bootstrap_servers: ``127.0.0.1:<port>`` (set by :meth:`start`).
        log_file: the broker's stdout and stderr.
    """

    def __init__(self, jars: Path = JARS, data_dir: str | None = None):
        self.jars = jars
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="sqlstream-kafka-"))
        self.log_file = self.data_dir / "broker.log"
        self.bootstrap_servers = ""
        self._process: subprocess.Popen | None = None

    def _java(self, *args: str) -> list[str]:
        return ["java", *JVM_OPTS, "-cp", f"{self.jars}/*", *args]

    def start(self, timeout: float = 60.0) -> KafkaBroker:
        """Format the storage, start the broker, wait until it serves metadata.

        Raises:
            RuntimeError: it did not start within ``timeout`` seconds (its log in the message).
        """
        ensure_jars(self.jars)
        port, controller = free_port(), free_port()
        self.bootstrap_servers = f"127.0.0.1:{port}"
        properties = self.data_dir / "server.properties"
        properties.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{controller}",
                    f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={self.data_dir / 'logs'}",
                    "num.partitions=1",
                    "offsets.topic.replication.factor=1",
                    "offsets.topic.num.partitions=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=true",
                    "",
                ]
            )
        )
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        formatted = subprocess.run(
            # --cluster-id=…: a base64 id may start with '-', which argparse takes for an option
            self._java(
                "kafka.tools.StorageTool",
                "format",
                f"--cluster-id={cluster_id}",
                "--config",
                str(properties),
            ),
            capture_output=True,
            text=True,
        )
        if formatted.returncode != 0:
            raise RuntimeError(
                f"kafka.tools.StorageTool format failed:\n{formatted.stdout}{formatted.stderr}"
            )
        with open(self.log_file, "wb") as log:
            self._process = subprocess.Popen(
                self._java("kafka.Kafka", str(properties)), stdout=log, stderr=subprocess.STDOUT
            )
        self._wait(timeout)
        return self

    def _wait(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        host, port = self.bootstrap_servers.split(":")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._process.poll() is None:
            try:
                socket.create_connection((host, int(port)), timeout=1).close()
            except OSError:  # not listening yet
                time.sleep(0.2)
                continue
            admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 2})
            try:
                if admin.list_topics(timeout=5).brokers:
                    return
            except Exception:  # noqa: BLE001 - listening, not serving yet (KafkaException)
                time.sleep(0.2)
        log = self.log_file.read_text(errors="replace")[-4000:]
        self.stop()
        raise RuntimeError(f"the Kafka broker did not start in {timeout:.0f} s:\n{log}")

    def create_topic(self, name: str, partitions: int = 1) -> str:
        """Create topic ``name`` (replication factor 1) and wait until it exists."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 2})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(30)
        return name

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after 3 s) and delete its data.

        The data is thrown away, so nothing needs the broker's controlled shutdown (which
        can wait on Kafka's own timeouts)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(3)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


try:
    import pytest
except ImportError:  # examples/kafka imports this module without pytest installed
    pytest = None

if pytest is not None:

    @pytest.fixture(scope="session")
    def kafka_broker():
        """A started :class:`KafkaBroker`, shared by the run, stopped at its end."""
        with KafkaBroker() as broker:
            yield broker
