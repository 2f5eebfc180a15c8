"""Shared fixtures: one SparkSession for the whole test run (Spark takes ~10 s to start)."""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.kafka_broker import kafka_broker, spark_jars  # noqa: F401  (the broker fixture)

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
UPDATE_GOLDEN = os.environ.get("SQLSTREAM_UPDATE_GOLDEN") == "1"
SUBPROCESS_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""The JVM options of the drivers the tests start as processes (``sqlstream exec``, ``sqlstream
test``, the SIGKILL harness): each runs for seconds on little data, where the JIT's second
tier (C2) and G1's threads cost more CPU than they save — the exec-process, checkpoint-lock and
session tests took 219 s instead of 355 s run side by side on this 2-core machine. Spark's
launcher adds ``SPARK_SUBMIT_OPTS`` to a client-mode driver's command line (Spark's
``SparkSubmitCommandBuilder``), and, unlike ``JAVA_TOOL_OPTIONS``, the JVM prints nothing for
it. Performance only: no option changes what a run computes. The run's own session (the
``spark`` fixture) is started without them; a value set by the user is kept."""
os.environ.setdefault("SPARK_SUBMIT_OPTS", SUBPROCESS_JVM_OPTIONS)
collect_ignore_glob = ["fixtures/*.test.yaml"]
"""The ``*.test.yaml`` fixtures run in tests/testing/test_spark_suites.py (with the session
fixture), not through the pytest plugin of sqlstream."""

PROGRAMS = sorted(
    p for folder in ("tests/fixtures", "examples") for p in (ROOT / folder).rglob("*.ssql")
)
"""Every ``.ssql`` program of the tests and examples (the check corpus included)."""


def program_variables(text: str) -> dict[str, str]:
    """A value for each ``${name}`` in a program's ``text``: a folder under
    ``/tmp/sqlstream-vars`` (never read by the tests that compile them)."""
    return {n: f"/tmp/sqlstream-vars/{n}" for n in re.findall(r"\$\{([\w.-]+)\}", text)}


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the run: local[2], 2 shuffle partitions, no UI, UTC, with
    Spark's Kafka and Avro packages as local jars (``tests/kafka_broker.spark_jars``), on
    PySpark 4.0-4.2 Delta's package and settings (a ``delta`` sink's JVM path), on 4.0 and
    4.1 Iceberg's runtime and extensions (an ``iceberg`` sink's JVM path), and
    checkpoints written as ``sqlstream test`` writes them (``checkpoint_file_manager``: a
    fifth of the CPU otherwise goes to processes Hadoop starts)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark import __version__
    from pyspark.sql import SparkSession

    from sqlstream.connectors.iceberg_jvm import EXTENSIONS as ICEBERG_EXTENSIONS
    from sqlstream.connectors.lakehouse_jvm import DELTA_PACKAGES, DELTA_SETTINGS, ICEBERG_PACKAGES
    from sqlstream.testing.suite import checkpoint_file_manager
    from tests.support.lakehouse_jvm import jars as lakehouse_jars

    # on the minors where a delta or iceberg sink takes the JVM path, the session has its
    # package and extensions (an iceberg writer gives the session its catalog itself)
    minor = ".".join(__version__.split(".")[:2])
    delta, iceberg = minor in DELTA_PACKAGES, minor in ICEBERG_PACKAGES
    formats = ("delta",) * delta + ("iceberg",) * iceberg
    jars = spark_jars() + (lakehouse_jars(minor, formats) if formats else [])
    lakehouse_settings = dict(DELTA_SETTINGS) if delta else {}
    if iceberg:
        extensions = (lakehouse_settings.get("spark.sql.extensions"), ICEBERG_EXTENSIONS)
        lakehouse_settings["spark.sql.extensions"] = ",".join(e for e in extensions if e)

    # the run's own driver lives for the whole run: the JVM's default JIT and collector
    submit_opts = os.environ.pop("SPARK_SUBMIT_OPTS", None)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("sqlstream-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.jars", ",".join(jars))
        .config(map=lakehouse_settings)
        # the run's one driver holds the state stores and memory sinks of hundreds of
        # queries; Spark's local default (1g) is too small for the whole suite
        .config("spark.driver.memory", "4g")
        .config(map=checkpoint_file_manager(__version__))
        .getOrCreate()
    )
    if submit_opts is not None:
        os.environ["SPARK_SUBMIT_OPTS"] = submit_opts
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def pytest_collection_modifyitems(config, items):
    """The marker ``spark`` is what makes a test a Spark test (``-m spark`` selects them,
    ``-m "not spark"`` the fast suite), wherever its module is: a test that asks for the
    ``spark`` fixture (itself or through another fixture) without the marker would start a
    JVM in the fast suite, so it stops the run here, by name (``pytest.UsageError``)."""
    unmarked = [
        item.nodeid
        for item in items
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "tests using the spark fixture must be marked spark "
            "(pytestmark = pytest.mark.spark, or @pytest.mark.spark):\n  " + "\n  ".join(unmarked)
        )


@pytest.fixture(autouse=True)
def _shared_session_still_running(request):
    """A test that uses the shared SparkSession must leave its SparkContext running: every
    later test would fail (``dagScheduler()`` is null). The test that stopped it fails here,
    by name, instead."""
    yield
    if "spark" not in request.fixturenames:
        return
    session = request.getfixturevalue("spark")
    if session.sparkContext._jsc.sc().isStopped():  # noqa: SLF001 - Spark's own flag
        pytest.fail(
            "the shared SparkContext was stopped during this test (Spark stops it "
            "itself after a fatal error in the driver, e.g. out of memory)"
        )


@contextmanager
def settings_kept(spark, pipeline):
    """A pipeline's ``SET``s apply to the shared session (``spark.conf.set``): while the
    block runs they stay, afterwards what was there before is put back (unset when it was
    unset), so the next test runs with the fixture's settings. Static settings are never
    set on a running session (``sqlstream.planning.settings.is_static``): nothing to put back."""
    from sqlstream.planning.settings import is_static

    keys = {
        k
        for k, _ in pipeline.plan.settings
        if not k.lower().startswith("sqlstream.") and not is_static(k)
    }
    before = {k: spark.conf.get(k, None) for k in keys}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def check_golden(path: Path, actual: str) -> None:
    """Compare ``actual`` with the golden file ``path``; rewrite it when
    ``SQLSTREAM_UPDATE_GOLDEN=1`` (review the diff like code)."""
    if UPDATE_GOLDEN or not path.exists():
        if not UPDATE_GOLDEN:
            pytest.fail(f"missing golden file {path}; run with SQLSTREAM_UPDATE_GOLDEN=1")
        path.write_text(actual, encoding="utf-8")
        return
    assert actual == path.read_text(encoding="utf-8"), f"differs from {path}"


from tests.support.postgres_server import postgres  # noqa: E402,F401 - the PostgreSQL server fixture
