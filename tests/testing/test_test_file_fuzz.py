"""The fuzz campaign over test files (tests/support/fuzz_test_files.py): hypothesis-built
hostile ``*.test.yaml`` files and mutations of the project's own load with a positioned
``SqlStreamError`` or none, never an internal error, each within seconds (fixed seeds,
bounded examples; ``tools/fuzz.py`` runs longer campaigns)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from tests.support.fuzz_test_files import (
    assert_test_file_robust,
    hostile_test_files,
    mutated_test_files,
)


def _fuzz(max_examples: int) -> settings:
    return settings(
        derandomize=True,
        deadline=None,
        database=None,
        max_examples=max_examples,
        suppress_health_check=list(HealthCheck),
    )


@_fuzz(60)
@given(text=hostile_test_files())
def test_fuzz_hostile_test_files(text):
    with tempfile.TemporaryDirectory() as folder:
        assert_test_file_robust(text, Path(folder))


@_fuzz(60)
@given(text=mutated_test_files())
def test_fuzz_mutated_test_files(text):
    with tempfile.TemporaryDirectory() as folder:
        assert_test_file_robust(text, Path(folder))
