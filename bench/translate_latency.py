"""translate latency: ``sqlstream translate FILE`` as a process for every ``.ssql`` under
``examples/`` and ``tests/fixtures/translate/`` (the median of ``repeat`` runs; goal
:data:`TRANSLATE_GOAL`), with ``python -c pass`` and ``python -c "import sqlstream"`` as
baselines.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from timing import REPO, sqlstream_command

TRANSLATE_DIRS = [REPO / "examples", REPO / "tests" / "fixtures" / "translate"]
TRANSLATE_GOAL = 0.3

# What tests/lowering/test_golden.py gives the fixtures (some fail to compile without them).
TRANSLATE_VARS = ["--var", "dir=/data", "--var", "threshold=15"]
TRANSLATE_ENV = {"SECRET_TOKEN": "s3cr3t-value"}


def median_process_time(command: list[str], repeat: int) -> tuple[float, float, int]:
    times, code = [], 0
    env = {**os.environ, **TRANSLATE_ENV}
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        times.append(time.perf_counter() - started)
        code = code or done.returncode
    return statistics.median(times), min(times), code


def bench_translate(repeat: int) -> list[tuple[str, float, float, int]]:
    rows = []
    for label, command in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ('python -c "import sqlstream"', [sys.executable, "-c", "import sqlstream"]),
    ):
        rows.append((label, *median_process_time(command, repeat)))
    files = []
    for folder in TRANSLATE_DIRS:
        files += sorted(
            f for f in folder.rglob("*.ssql") if "out" not in f.relative_to(folder).parts
        )
    for ssql in files:
        label = f"sqlstream translate {ssql.relative_to(REPO)}"
        command = sqlstream_command() + ["translate", *TRANSLATE_VARS, str(ssql.relative_to(REPO))]
        rows.append((label, *median_process_time(command, repeat)))
    return rows
