"""Every pipeline we ship streams what it means: ``sqlstream verify`` on every example's
test file (examples/) and every Spark-suite test file (tests/fixtures/spark_suites/), each
test of each file, on the test run's one SparkSession.

A query that differs is listed in :data:`DIFFERS` with the property it breaks and the
reason (docs/pipeline-tests.md#verify says the same); every other query must be ``equal``.
To keep the CI cost low each file is verified with ``--splits 0`` (the one-batch and the
per-step runs, each with a restart: the two cuts and the restart that prove split and
restart invariance, and batch equivalence on each) and a fixed seed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.spark

FILES = sorted((ROOT / "examples").rglob("*.test.yaml")) + sorted(
    (FIXTURES / "spark_suites").glob("*.test.yaml")
)

DIFFERS: dict[tuple[str, str], tuple[str, str]] = {
    # ROW_NUMBER() OVER (PARTITION BY k ORDER BY eventTime) = 1 streams as
    # dropDuplicatesWithinWatermark: the first row per key to arrive, (a, 17), where the
    # batch query keeps the earliest, (a, 13) (SS361)
    ("spark_suites/dedup", "first_within_watermark"): ("batch", "SS361"),
}
"""(test file as :func:`_id` names it, query) → the property it breaks and the code of
the compiler's reason; the reason is in the module's and
docs/pipeline-tests.md's words."""


def _pipeline(path: Path) -> Path:
    from sqlstream.testing.loading import load

    return Path(load(path)[0].pipeline)


def _id(path: Path) -> str:
    """``flights/dedup``, ``spark_suites/dedup``: the file without its suffix, in its
    folder."""
    return str(path.relative_to(path.parent.parent)).removesuffix(".test.yaml")


@pytest.mark.parametrize("path", FILES, ids=[_id(p) for p in FILES])
def test_shipped_pipeline_streams_its_batch_meaning(spark, path, tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "verify",
            str(_pipeline(path)),
            "--test",
            str(path),
            "--splits",
            "0",
            "--no-shrink",
            "--seed",
            "1",
            "--format",
            "json",
            "--counterexamples",
            str(tmp_path),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    document = json.loads(result.stdout)
    from sqlstream.testing.loading import load

    names = [c.name for c in load(path)[0].cases]
    assert [t["test"] for t in document["tests"]] == names
    found = {}
    for query in document["queries"]:
        key = (_id(path), query["query"])
        found[key] = (query["property"], (query["reason"] or "")[:5] or None)
        assert query["result"] == ("differs" if key in DIFFERS else "equal"), (
            f"{query['test']}: {query['query']} {query['result']} ({query['property']}): "
            f"missing {query['missing']}, unexpected {query['unexpected']}, "
            f"late {query['late_rows']}, not compared {query['not_compared']}"
        )
    # each test's input gives rows to compare (a query fed no matching row may give none)
    for test in document["tests"]:
        rows = [
            q["final_rows"] + q["not_final_rows"]
            for q in document["queries"]
            if q["test"] == test["test"]
        ]
        assert sum(rows) > 0, test["test"]
    for key, expected in DIFFERS.items():
        if key[0] == _id(path):
            assert found.get(key) == expected
