"""Pipeline tests against an independent oracle: cases of Apache Spark's own streaming
test suites (EventTimeWatermarkSuite, StreamingAggregationSuite,
StreamingDeduplicationSuite, StreamingJoinSuite) written as ``*.test.yaml`` files in
tests/fixtures/spark_suites/, with the suites' expected answers, state rows and late
rows. Every one must pass; and changing any one expected value (rows, watermark,
state_rows, dropped_by_watermark, error) must make its test fail with a diff naming it.
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

    return [(path, case.name) for path in sorted(SUITES.glob("*.test.yaml"))
            for case in load(path)[0].cases]


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


def _mutated(tmp_path: Path, change) -> Path:
    """A copy of watermark.test.yaml (and its pipeline) with ``change(document)`` applied."""
    from sqlstream.testing.loading import yaml

    shutil.copy(SUITES / "watermark.ssql", tmp_path / "watermark.ssql")
    document = yaml().load((SUITES / "watermark.test.yaml").read_text(encoding="utf-8"))
    change(document["tests"][0]["steps"])
    target = tmp_path / "watermark.test.yaml"
    with open(target, "w", encoding="utf-8") as out:
        yaml().dump(document, out)
    return target


def _set_count(steps):
    steps[1]["expect"]["appended"][0]["count"] = 6


def _set_watermark(steps):
    steps[1]["watermark"]["appended"] = "1970-01-01 00:00:16"


def _set_state_rows(steps):
    steps[2]["state_rows"]["appended"] = 3


def _set_dropped(steps):
    steps[2]["dropped_by_watermark"]["appended"] = 2


def _set_error(steps):
    steps[0]["error"] = "SS501"


MUTATIONS = {
    "rows": (_set_count, "sink appended", "count: 6"),
    "watermark": (_set_watermark, "watermark of appended", "1970-01-01 00:00:16"),
    "state_rows": (_set_state_rows, "state_rows of appended", "expected 3"),
    "dropped_by_watermark": (_set_dropped, "dropped_by_watermark of appended", "expected 2"),
    "error": (_set_error, "error", "expected error 'SS501'"),
}


@pytest.mark.parametrize("kind", sorted(MUTATIONS))
def test_changing_one_expected_value_fails_naming_it(harness, tmp_path, kind):
    change, check, named = MUTATIONS[kind]
    result, report = _run(harness, _mutated(tmp_path, change),
                          "EventTimeWatermarkSuite append mode")
    assert result.status == "failed", report
    assert [f.check for f in result.failures] == [check], report
    assert named in report
