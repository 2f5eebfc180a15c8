"""The README's third command: ``sqlstream test examples/`` runs every example's
``*.test.yaml`` (one SparkSession, the shared ``spark`` fixture's) and exits 0.

The expected rows of those files were worked out by hand from each pipeline's SQL (window
boundaries, watermark = newest event time minus the delay, late rows, the first row of a
key kept), not recorded from a run; this test keeps them true as sqlstream changes.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.conftest import ROOT

pytestmark = pytest.mark.spark

EXAMPLES = ROOT / "examples"


def test_every_example_test_file_passes(spark, monkeypatch):
    from sqlstream.testing.loading import load
    from sqlstream.testing.suite import discover

    files = discover([EXAMPLES])
    cases = sum(len(load(f)[0].cases) for f in files)
    # every example has a test file beside it, the PostgreSQL one too: in a test its
    # ${env:PGPASSWORD} gets a stand-in value (so it is unset here on purpose)
    pipelines = sorted(p.with_suffix(".test.yaml") for p in EXAMPLES.rglob("*.ssql"))
    assert files == pipelines
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(main, ["test", "examples/"])
    assert result.exit_code == 0, result.output
    assert result.output.count("PASSED ") == cases and f"{cases} passed in" in result.output
