"""sqlglot's compiled build (``sqlglotc``, ``pip install 'sqlglot[c]'``) cannot run sqlstream's
dialect (sqlglot issue 7923): with it installed, ``check`` says so once, as SS003, instead of
failing every query. A real ``sqlglotc`` from the package registry, in a venv of its own."""

from __future__ import annotations

import subprocess
import venv
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_check_refuses_the_compiled_sqlglot_build_once(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    sqlglot = version("sqlglot")
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            f"sqlglot=={sqlglot}",
            f"sqlglotc=={sqlglot}",
            f"lark=={version('lark')}",
            f"click=={version('click')}",
            f"rich=={version('rich')}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if install.returncode != 0:
        pytest.skip(f"sqlglotc=={sqlglot} could not be installed here: {install.stderr[-300:]}")
    run = subprocess.run(
        [str(python), "-m", "sqlstream.cli", "check", "examples/flights/hourly_delays.ssql"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert output.count("SS003") == 1, output
    assert "pip uninstall sqlglotc" in output
    assert "Traceback" not in output


def test_the_python_build_passes_the_probe():
    from sqlstream.sql.parsing import check_sqlglot_build

    check_sqlglot_build()  # raises SS003 under sqlglotc
