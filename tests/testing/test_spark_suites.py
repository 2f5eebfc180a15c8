"""Pipeline tests against an independent oracle: cases of Apache Spark's own streaming
test suites (EventTimeWatermarkSuite, StreamingAggregationSuite,
StreamingDeduplicationSuite, StreamingDeduplicationWithinWatermarkSuite, StreamingJoinSuite,
StreamingSessionWindowSuite) and the worked examples of Spark's Structured Streaming guide,
written as ``*.test.yaml`` files in tests/fixtures/spark_suites/, with the suites' expected
answers, watermarks, state rows and late rows. Every one must pass; and changing any one
expected value (rows, watermark, state_rows, dropped_by_watermark, error) in any of those
files must make its test fail with a diff naming it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

pytestmark = pytest.mark.spark

SUITES = FIXTURES / "spark_suites"


def _cases() -> list[tuple[Path, str]]:
    from sqlstream.testing.loading import load

    return [
        (path, case.name)
        for path in sorted(SUITES.glob("*.test.yaml"))
        for case in load(path)[0].cases
    ]


CASES = _cases()


@pytest.fixture(scope="module")
def harness(spark, tmp_path_factory):
    from sqlstream.testing.harness import Harness

    return Harness(spark, tmp_path_factory.mktemp("suites"))


def _run(harness, path: Path, name: str):
    from sqlstream.testing.loading import load
    from sqlstream.testing.report import text

    test_file, pipelines = load(path)
    case = next(c for c in test_file.cases if c.name == name)
    result = harness.run(test_file, case, pipelines[name])
    return result, text([result], result.seconds)


@pytest.mark.parametrize("path,name", CASES, ids=[n for _, n in CASES])
def test_spark_suite_case_passes(harness, path, name):
    result, report = _run(harness, path, name)
    assert result.status == "passed", report


PIPELINE_TESTS = FIXTURES / "pipeline_tests"


def _mutated(tmp_path: Path, source: Path, name: str, change) -> Path:
    """A copy of the test file ``source`` (and its pipeline), holding only the test
    ``name``, with ``change(test)`` applied to that test's mapping."""
    from sqlstream.testing.loading import yaml

    document = yaml().load(source.read_text(encoding="utf-8"))
    shutil.copy(source.parent / document["pipeline"], tmp_path / document["pipeline"])
    document["tests"] = [t for t in document["tests"] if t["name"] == name]
    change(document["tests"][0])
    target = tmp_path / source.name
    with open(target, "w", encoding="utf-8") as out:
        yaml().dump(document, out)
    return target


def _set(*path):
    """A change that sets ``test[path[0]][path[1]]…[path[-2]]`` to ``path[-1]``."""
    *keys, value = path

    def change(test):
        node = test
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


# kind: (test file, test, change, the failing check, text the report must show)
MUTATIONS = {
    "rows": (
        SUITES / "guide_word_count.test.yaml",
        "Structured Streaming guide word count in complete mode",
        _set("steps", 1, "expect", "word_counts", 1, "count", 4),
        "sink word_counts",
        "count: 4",
    ),
    "rows of a table": (
        SUITES / "aggregation.test.yaml",
        "StreamingAggregationSuite sort after aggregate in complete mode",
        _set("steps", 4, "expect", "sorted_counts", "rows", 0, 1, 5),
        "sink sorted_counts",
        "count: 5",
    ),
    "watermark": (
        SUITES / "guide_late_data.test.yaml",
        "Structured Streaming guide late data in update and append mode",
        _set("steps", 1, "watermark", "final_counts", "2024-01-01 12:05:00"),
        "watermark of final_counts",
        "2024-01-01 12:05:00",
    ),
    "state_rows": (
        SUITES / "dedup.test.yaml",
        "StreamingDeduplicationSuite deduplicate with all columns",
        _set("steps", 2, "state_rows", "distinct_words", 3),
        "state_rows of distinct_words",
        "expected 3",
    ),
    "dropped_by_watermark": (
        SUITES / "session_words.test.yaml",
        "StreamingSessionWindowSuite append mode - session window",
        _set("steps", 2, "dropped_by_watermark", "closed_sessions", 3),
        "dropped_by_watermark of closed_sessions",
        "expected 3",
    ),
    "error expected, none raised": (
        SUITES / "watermark.test.yaml",
        "EventTimeWatermarkSuite append mode",
        _set("steps", 0, "error", "SS501"),
        "error",
        "expected error 'SS501'",
    ),
    "error of another code": (
        PIPELINE_TESTS / "errors.test.yaml",
        "a division by zero fails the query with SS501",
        _set("steps", 1, "error", "SS502"),
        "error",
        "expected error 'SS502'",
    ),
}


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_changing_one_expected_value_fails_naming_it(harness, tmp_path, kind):
    source, name, change, check, named = MUTATIONS[kind]
    result, report = _run(harness, _mutated(tmp_path, source, name, change), name)
    assert result.status == "failed", report
    assert [f.check for f in result.failures] == [check], report
    assert named in report


EXAMPLES = FIXTURES.parent.parent / "examples"

# An input that a test gives but no expectation names directly: changing it must change
# what the sink receives (so it reaches the pipeline) and fail naming the new value.
INPUT_CHANGES = {
    "tables row (stream-static join)": (
        EXAMPLES / "joins" / "lookups.test.yaml",
        "each flight is joined with the tables as it arrives, once, across a restart",
        _set("tables", "airlines", 0, "name", "United Air Lines (changed)"),
        "sink named",
        "United Air Lines (changed)",
    ),
    "metadata column": (
        EXAMPLES / "kafka" / "hourly_delays_kafka.test.yaml",
        "windows close at the watermark, a late row reaches only the stateless query, "
        "across a restart",
        _set("steps", 0, "input", "flights", 1, "received", "2013-01-01 05:25:00"),
        "sink late_flights",
        "2013-01-01 05:25:00",
    ),
}


@pytest.mark.parametrize("kind", sorted(INPUT_CHANGES))
def test_changing_one_input_value_fails_naming_it(harness, tmp_path, kind):
    source, name, change, check, named = INPUT_CHANGES[kind]
    result, report = _run(harness, _mutated(tmp_path, source, name, change), name)
    assert result.status == "failed", report
    assert {f.check for f in result.failures} == {check}, report
    assert named in report


def test_expected_error_of_code_ss501_passes(harness):
    """A step that fails its query (a division by zero under ANSI SQL) with ``error: SS501``
    or a fragment of Spark's message passes; the rows before it are checked as usual."""
    path = PIPELINE_TESTS / "errors.test.yaml"
    from sqlstream.testing.loading import load

    for case in load(path)[0].cases:
        result, report = _run(harness, path, case.name)
        assert result.status == "passed", report
