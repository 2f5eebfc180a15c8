"""A project whose Python module has top-level code: it writes a marker file beside itself
and prints (a broken JSON-RPC header and a JSON fragment), so a test sees both whether the
module was imported and whether its output reached a machine-read standard output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

MODULE = """\
import pathlib

pathlib.Path(__file__).with_name("MARKER").write_text("imported")
print("Content-Length: 7\\r\\n\\r\\n{oops}")


def shout(text: str) -> str:
    return text.upper()


def write(df, batch_id):
    pass
"""
"""The module: a marker file at import, a print, a typed function and a batch writer."""

PIPELINE = """\
CREATE FUNCTION shout AS '{module}:shout' LANGUAGE PYTHON;
CREATE STREAM s (a STRING, ts TIMESTAMP) WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK o WITH (connector = 'foreach_batch', function = '{module}:write');
INSERT INTO o SELECT shout(a) AS b FROM s;
"""
"""A pipeline naming the module both ways: ``CREATE FUNCTION`` and a ``foreach_batch`` sink."""


def project(folder: Path, module: str = "evil_udfs") -> Path:
    """Write the module and the pipeline (``p.ssql``) into ``folder``; return the pipeline."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(MODULE, encoding="utf-8")
    pipeline = folder / "p.ssql"
    pipeline.write_text(PIPELINE.format(module=module), encoding="utf-8")
    return pipeline


def sqlstream_process(
    *args: str, trust_env: bool = False, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """``python -m sqlstream.cli ARGS`` as a process (``SQLSTREAM_TRUST=1`` when
    ``trust_env``), seeing this checkout on ``PYTHONPATH``; text output captured."""
    env = {k: v for k, v in os.environ.items() if k != "SQLSTREAM_TRUST"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if trust_env:
        env["SQLSTREAM_TRUST"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "sqlstream.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
