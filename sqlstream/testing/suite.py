"""A test run: find ``*.test.yaml`` files, load them, run their tests on one SparkSession.

Used by ``sqlstream test`` and the pytest plugin. Importing it imports no pyspark; the
session is created (:func:`test_session`) only when a test is about to run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.testing.compare import CaseResult

SUFFIX = ".test.yaml"

SESSION_DEFAULTS = {
    "spark.sql.shuffle.partitions": "1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}
"""The session of ``sqlstream test`` (a pipeline's ``SET`` or a test's ``settings`` win):
1 shuffle partition, UTC, no UI.

A test has a few rows: each stateful operator then runs one state store and one task per
micro-batch. Spark's default of 200 partitions would cost seconds per micro-batch; 2 (the
earlier value) made the Spark-suite set about 10 % slower than 1, measured side by side
(wall time 89.4/94.4 s against 82.4/80.8 s; ``durationMs.addBatch`` median 249/265 ms
against 235/233 ms; bench/README.md). A result does not
depend on the number: rows are compared as multisets unless a test is ``ordered``, and
with one partition a micro-batch's rows come from one task, so their order is no less
stable than with two."""


CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"
"""Spark's (internal) SQL conf naming the class that writes checkpoint files."""


def checkpoint_file_manager(spark_version: str) -> dict[str, str]:
    """The conf that writes a session's checkpoints (offset and commit logs, state store
    files, a files sink's ``_spark_metadata`` log) through Hadoop's ``FileSystem`` API:
    Spark's ``FileSystemBasedCheckpointFileManager``, in place of its default, the
    ``FileContext``-based one. For checkpoints on the local disk only (a test run's).

    Args:
        spark_version: the running Spark's version (``"4.0.5"`` or ``"4.3"``): the class
            moved to the package ``…streaming.checkpointing`` in Spark 4.1.

    Returns:
        ``{"spark.sql.streaming.checkpointFileManagerClass": <class name>}``.

    Why: PySpark ships Hadoop without its native library, so Hadoop's local file system
    starts a process for what it would otherwise do in the JVM: ``readlink`` for each
    ``getFileLinkStatus`` (``FileContext.rename`` asks it of the source and the target of
    every checkpoint file's rename, and of their ``.crc`` files) and ``chmod`` for each
    file it creates (Hadoop's ``RawLocalFileSystem``). Counted with ``perf`` while the check
    corpus ran on Spark 4.3: 110 ``readlink`` and 41 ``chmod`` processes a second, each
    started through the JDK's ``jspawnhelper``, about a fifth of the CPU. The
    ``FileSystem`` manager renames with ``java.io.File.renameTo`` (atomic on a local disk,
    as the ``FileContext`` rename): no ``readlink``. The corpus took 111 s against 150 s.
    The results are Spark's either way: the class only writes and renames the files."""
    from sqlstream.ir.spark_versions import SUPPORTED, at_least, major_minor

    package = "org.apache.spark.sql.execution.streaming"
    if at_least(major_minor(spark_version) or SUPPORTED[-1], "4.1"):
        package += ".checkpointing"
    return {CHECKPOINT_FILE_MANAGER: f"{package}.FileSystemBasedCheckpointFileManager"}


def discover(paths: Iterable[str | Path]) -> list[Path]:
    """The test files of ``paths``: each file as given, and every ``*.test.yaml`` under
    each directory (sorted; hidden folders, ``.venv`` and ``node_modules`` skipped).

    Raises:
        SqlStreamError: ``SS002``: a path that does not exist.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for candidate in sorted(path.rglob(f"*{SUFFIX}")):
                parts = candidate.relative_to(path).parts
                if not any(
                    p.startswith(".") or p in ("node_modules", "__pycache__") for p in parts[:-1]
                ):
                    found.append(candidate)
        elif path.is_file():
            found.append(path)
        else:
            raise SqlStreamError(f"no such file or directory: {path}", code="SS002")
    return list(dict.fromkeys(found))


def test_session(master: str = "local[2]", conf: dict[str, str] | None = None):
    """Get or create the SparkSession of a run (:data:`SESSION_DEFAULTS` and
    :func:`checkpoint_file_manager`, then ``conf``), its JVM launched with the class-data
    archive of :mod:`sqlstream.runtime.class_archive`. An active session is reused as it is."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from pyspark import SparkContext, __version__

    from sqlstream.runtime.class_archive import finish_at_exit, with_archive

    settings = {**SESSION_DEFAULTS, **checkpoint_file_manager(__version__), **(conf or {})}
    archive = None
    if SparkContext._active_spark_context is None:  # noqa: SLF001 - a JVM is launched here
        java, archive = with_archive(settings, settings.get("spark.driver.extraJavaOptions"))
        if java:
            settings["spark.driver.extraJavaOptions"] = java
    builder = SparkSession.builder.master(master).appName("sqlstream-test")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if archive is not None:
        finish_at_exit(archive, getattr(spark.sparkContext._gateway, "proc", None))  # noqa: SLF001
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run(
    paths: Iterable[str | Path],
    keyword: str | None = None,
    variables: dict[str, str] | None = None,
    session: Callable[[], object] = test_session,
    record: bool = False,
    on_result: Callable[[CaseResult], None] = lambda r: None,
    trust: bool = False,
) -> list[CaseResult]:
    """Run the tests of ``paths``.

    Args:
        paths: test files or directories (see :func:`discover`).
        keyword: run only the tests whose name contains it (case-sensitive, as pytest's
            ``-k`` with a plain word).
        variables: ``--var`` values for every pipeline.
        session: returns the SparkSession; called once, before the first test runs.
        record: write each file's actual results into it as its expectations
            (:func:`sqlstream.testing.record.record`).
        on_result: called with each result as it is known.
        trust: import the pipelines' Python modules while loading (``test --trust``);
            ``False``: no user code runs before the tests run (then Spark runs them).

    Returns:
        One :class:`~sqlstream.testing.compare.CaseResult` per test, in file order; a test
        file with an error gives one ``error`` result (named after the file).

    Raises:
        SqlStreamError: ``SS002``: a path that does not exist.
    """
    from sqlstream.testing.loading import load

    results: list[CaseResult] = []
    harness = None
    for path in discover(paths):
        try:
            test_file, pipelines = load(path, variables, trust)
        except SqlStreamError as error:
            result = CaseResult(
                path, path.name, error.span.line if error.span else 0, "error", error=error
            )
            results.append(result)
            on_result(result)
            continue
        file_results = []
        for case in test_file.cases:
            if keyword and keyword not in case.name:
                continue
            if harness is None:
                from sqlstream.testing.harness import Harness

                harness = Harness(session())
            result = harness.run(test_file, case, pipelines[case.name], every_query=record)
            file_results.append(result)
            results.append(result)
            on_result(result)
        if record and file_results:
            from sqlstream.testing.record import record as write_record

            write_record(test_file, file_results)
    return results


def exit_code(results: list[CaseResult]) -> int:
    """0: every test passed; 2: a test file or test with an error; 1: a test failed."""
    if any(r.status == "error" for r in results):
        return 2
    return 1 if any(r.status == "failed" for r in results) else 0
