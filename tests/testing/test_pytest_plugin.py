"""The pytest plugin's trust option (docs/pipeline-tests.md#pytest, docs/operations.md#trust):
a real ``pytest --collect-only`` process over a project whose module writes a marker file
at import (``tests/support/user_modules.py``). Collecting its test file imports nothing
untrusted (the function is typed from its source); ``--sqlstream-trust`` or
``SQLSTREAM_TRUST=1`` imports it. No Spark: collection compiles, it does not run."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.user_modules import project

TEST_FILE = """\
pipeline: p.ssql
tests:
  - name: shouts
    steps:
      - input: {s: [{a: x, ts: 2024-01-01 00:00:00}]}
        expect: {o: [{b: X}]}
"""


def _collect(folder, *options: str, trust_env: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SQLSTREAM_TRUST"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if trust_env:
        env["SQLSTREAM_TRUST"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + [*options, str(folder / "p.test.yaml")],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("options", "trust_env", "imported"),
    [((), False, False), (("--sqlstream-trust",), False, True), ((), True, True)],
    ids=["untrusted", "--sqlstream-trust", "SQLSTREAM_TRUST=1"],
)
def test_collecting_imports_the_projects_module_only_when_trusted(
    tmp_path, options, trust_env, imported
):
    project(tmp_path)
    (tmp_path / "p.test.yaml").write_text(TEST_FILE)
    run = _collect(tmp_path, *options, trust_env=trust_env)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "p.test.yaml::shouts" in output
    assert (tmp_path / "MARKER").exists() == imported, output


def test_the_option_is_documented_in_pytest_help(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "--sqlstream-trust" in run.stdout and "SQLSTREAM_TRUST=1" in run.stdout
