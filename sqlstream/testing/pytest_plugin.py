"""The pytest plugin (entry point ``pytest11``): ``*.test.yaml`` files as pytest tests.

pytest's "Working with non-python tests" pattern: :func:`pytest_collect_file` makes a
:class:`PipelineTestFile` of each ``*.test.yaml`` file pytest meets, whose items are its
tests (:class:`PipelineTest`, marked ``spark``); a test file with an error is a collection
error showing the error at its line with a caret; a failed test shows the steps and the row
diff of ``sqlstream test``. All items of a session share one SparkSession, created when
the first one runs (an active session, such as a ``spark`` fixture's, is reused).
Importing the plugin imports no pyspark.

While a test file is collected its pipeline is compiled, and no Python module it names is
imported unless the project is trusted: ``--sqlstream-trust`` on pytest's command line, or
``SQLSTREAM_TRUST=1`` in the environment (:func:`sqlstream.ir.context.trusted`;
docs/operations.md#trust). Running the tests runs the pipeline, and its functions, on Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from sqlstream.diagnostics.errors import SqlStreamError

if TYPE_CHECKING:
    from sqlstream.testing.harness import Harness

_HARNESS: list[Harness] = []


def pytest_addoption(parser) -> None:
    """``--sqlstream-trust``: the pipelines' Python modules may be imported while their test
    files are collected (as ``sqlstream test --trust``)."""
    parser.getgroup("sqlstream").addoption(
        "--sqlstream-trust",
        action="store_true",
        default=False,
        help="trust the project: import the Python modules the pipelines name while the "
        "*.test.yaml files are collected (also SQLSTREAM_TRUST=1); docs/operations.md#trust",
    )


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "spark: runs real Spark streaming queries")


def pytest_collect_file(file_path, parent):
    """A :class:`PipelineTestFile` for a file named ``*.test.yaml``; ``None`` otherwise."""
    if file_path.name.endswith(".test.yaml"):
        return PipelineTestFile.from_parent(parent, path=file_path)
    return None


class PipelineTestFile(pytest.File):
    """A ``*.test.yaml`` file: one item per test."""

    def collect(self):
        from sqlstream.ir.context import trusted
        from sqlstream.testing.loading import load

        trust = trusted(bool(self.config.getoption("sqlstream_trust", False)))
        try:
            test_file, pipelines = load(self.path, trust=trust)
        except SqlStreamError as error:
            raise self.CollectError(error.render()) from None
        for case in test_file.cases:
            yield PipelineTest.from_parent(
                self, name=case.name, test_file=test_file, case=case, pipeline=pipelines[case.name]
            )


class PipelineFailed(Exception):
    """A test that failed or had an error (its :class:`~sqlstream.testing.compare.CaseResult`)."""

    def __init__(self, result):
        super().__init__(result.name)
        self.result = result


class PipelineTest(pytest.Item):
    """One test of a ``*.test.yaml`` file, run by :class:`~sqlstream.testing.harness.Harness`."""

    def __init__(self, *, test_file, case, pipeline, **kwargs):
        super().__init__(**kwargs)
        self.test_file, self.case, self.pipeline = test_file, case, pipeline
        # no fixtures; but plugins that wrap pytest_runtest_call may read ``funcargs`` as
        # on a Python test function (pytest-lsp 1.x returns without yielding when it is
        # missing, which breaks the run of every item)
        self.funcargs = {}
        self.add_marker("spark")

    def runtest(self) -> None:
        if not _HARNESS:
            from sqlstream.testing.harness import Harness
            from sqlstream.testing.suite import test_session

            _HARNESS.append(Harness(test_session()))
        result = _HARNESS[0].run(self.test_file, self.case, self.pipeline)
        if result.status != "passed":
            raise PipelineFailed(result)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, PipelineFailed):
            from sqlstream.testing.report import failure_lines

            result = excinfo.value.result
            if result.error is not None:
                return result.error.render()
            return "\n".join(line for f in result.failures for line in failure_lines(f))
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, self.case.span.line - 1, f"{self.path.name}::{self.name}"
