"""Hostile test files (issue 32 item 5): each is a positioned code at once, or works within
the documented limits (docs/pipeline-tests.md#limits), without Spark.

Real files under ``tmp_path``: alias bombs, deep nesting, tags, huge integers, dates that
are none, NUL bytes, merge keys, symbolic links to ``/dev/zero`` and out of the project,
FIFOs, oversized files, too many rows, tolerances that cannot fail; and ``sqlstream test``
run as a subprocess over a folder of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.testing import safe_yaml
from sqlstream.testing.loading import load
from tests.conftest import FIXTURES, ROOT

PIPELINE = (FIXTURES / "spark_suites" / "watermark.ssql").read_text(encoding="utf-8")
HEAD = "pipeline: watermark.ssql\n"
STEP = "tests:\n  - name: t\n    steps:\n      - input: {input: [{value: 1}]}\n"
SECONDS = 5  # CPU seconds; each answer takes well under 1 s but the 10,001 rows (about 1 s)


def _bomb(indent: str, levels: int = 9) -> str:
    """Anchors ``l0`` … each holding nine aliases of the one before: 9**levels values."""
    lines = [f"{indent}l0: &l0 [x, x, x, x, x, x, x, x, x]\n"]
    for i in range(1, levels):
        lines.append(f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n")
    return "".join(lines)


def _project(tmp_path: Path) -> Path:
    """A project folder (it holds ``.git``) with the watermark pipeline."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "watermark.ssql").write_text(PIPELINE, encoding="utf-8")
    return root


def _refused(path: Path) -> SqlStreamError:
    """The error of loading ``path``, within :data:`SECONDS` of CPU time (what a loaded
    machine cannot trip; the wall time is bounded more loosely)."""
    started, cpu = time.monotonic(), time.process_time()
    with pytest.raises(SqlStreamError) as caught:
        load(path)
    assert time.process_time() - cpu < SECONDS
    assert time.monotonic() - started < 12 * SECONDS
    return caught.value


def _load_text(tmp_path: Path, text: str | bytes) -> SqlStreamError:
    path = _project(tmp_path) / "case.test.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return _refused(path)


BOMB_ROW = "      - input: {input: [{value: *l8}]}\n"
CASES = {
    "bomb in variables": (HEAD + "variables:\n" + _bomb("  ") + STEP, "SS104", 9),
    "bomb in settings": (HEAD + "settings:\n" + _bomb("  ") + STEP, "SS104", 9),
    "bomb in a row value": (
        HEAD + "x-anchors:\n" + _bomb("  ") + "tests:\n  - name: t\n    steps:\n" + BOMB_ROW,
        "SS104",
        9,
    ),
    "bomb in an expected row": (
        HEAD
        + "x-anchors:\n"
        + _bomb("  ")
        + STEP
        + "        expect: {appended: [{start: *l8, count: 1}]}\n",
        "SS104",
        9,
    ),
    "deep brackets": (
        HEAD + "variables: {a: " + "[" * 5000 + "]" * 5000 + "}\n" + STEP,
        "SS104",
        2,
    ),
    "deep blocks": (
        HEAD + "variables:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 400)) + STEP,
        "SS104",
        None,
    ),
    "deep dashes": (HEAD + "variables:\n" + "- " * 5000 + "x\n" + STEP, "SS104", 3),
    "deep values through aliases": (
        HEAD
        + "x-anchors:\n"
        + "".join(f"  a{i}: &a{i} [" + (f"*a{i - 1}" if i else "x") + "]\n" for i in range(0, 60))
        + "  b: [[[[[[*a59]]]]]]\n"
        + STEP,
        "SS104",
        None,
    ),
    "bomb through merge keys": (  # second probe: each level merges and nests the one before
        HEAD
        + "x-anchors:\n  m0: &m0 {x: 1, y: 2}\n"
        + "".join(
            f"  m{i}: &m{i} {{<<: [*m{i - 1}], a{i}: *m{i - 1}, b{i}: *m{i - 1}}}\n"
            for i in range(1, 40)
        )
        + STEP,
        "SS104",
        None,
    ),
    "bomb through a merged list of aliases": (
        HEAD
        + "x-anchors:\n  n0: &n0 {<<: {a: 1}}\n"
        + "".join(
            f"  n{i}: &n{i} {{<<: [*n{i - 1}], b{i}: [*n{i - 1}, *n{i - 1}]}}\n"
            for i in range(1, 40)
        )
        + STEP,
        "SS104",
        None,
    ),
    "python tag": (HEAD + "variables: {a: !!python/object:os.system x}\n" + STEP, "SS101", 2),
    "local tag": (HEAD + STEP.replace("{value: 1}", "{value: !foo 1}"), "SS101", 5),
    "binary tag": (HEAD + "variables: {a: !!binary aGVsbG8=}\n" + STEP, "SS101", 2),
    "5,000-digit integer": (HEAD + STEP.replace("value: 1", "value: " + "9" * 5000), "SS101", 5),
    "5,000-digit string for an INT": (
        HEAD + STEP.replace("value: 1", 'value: "' + "9" * 5000 + '"'),
        "SS203",
        5,
    ),
    "5,000-digit state_rows": (
        HEAD + STEP + "        state_rows: {appended: " + "9" * 5000 + "}\n",
        "SS101",
        6,
    ),
    "watermark 2013-13-45": (
        HEAD + STEP + "        watermark: {appended: 2013-13-45}\n",
        "SS101",
        6,
    ),
    "NUL byte": (HEAD + "tests:\n  - name: t\0\n", "SS101", 3),
    "tolerance .nan": (HEAD + STEP.replace("steps:", "tolerance: .nan\n    steps:"), "SS203", 4),
    "tolerance 1e999": (HEAD + STEP.replace("steps:", "tolerance: 1e999\n    steps:"), "SS203", 4),
    "tolerance -1": (HEAD + STEP.replace("steps:", "tolerance: -1\n    steps:"), "SS203", 4),
    "pipeline /etc/passwd": ("pipeline: /etc/passwd\n" + STEP, "SS002", 1),
    "pipeline ../": ("pipeline: ../secret.ssql\n" + STEP, "SS002", 1),
    "rows past the limit": (
        HEAD
        + "tests:\n  - name: t\n    steps:\n      - input: {input: ["
        + ", ".join(["{value: 1}"] * (safe_yaml.MAX_ROWS + 1))
        + "]}\n",
        "SS104",
        5,
    ),
    "rows past the limit as a table": (
        HEAD
        + "tests:\n  - name: t\n    steps:\n      - input: {input: {columns: [value], rows: ["
        + ", ".join(["[1]"] * (safe_yaml.MAX_ROWS + 1))
        + "]}}\n",
        "SS104",
        5,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_hostile_file_is_a_positioned_code_at_once(tmp_path, name):
    text, code, line = CASES[name]
    (tmp_path / "secret.ssql").write_text("SECRET-LINE root:x:0:0\n")
    error = _load_text(tmp_path, text)
    assert error.code == code, str(error)
    assert error.span is not None and error.source is not None, str(error)
    if line is not None:
        assert error.span.line == line, str(error)
    assert "SECRET-LINE" not in str(error) and "root:x" not in str(error)


def test_a_merge_key_is_yaml_and_works(tmp_path):
    root = _project(tmp_path)
    path = root / "merge.test.yaml"
    path.write_text(
        HEAD + "variables: &base {a: '1', b: '2'}\n"
        "tests:\n"
        "  - name: t\n"
        "    variables: {<<: *base, b: '3'}\n"
        "    steps:\n"
        "      - input: {input: [&row {value: 10}, {<<: *row}, {<<: *row, value: 11}]}\n",
        encoding="utf-8",
    )
    test_file, _ = load(path)
    case = test_file.cases[0]
    assert case.variables == {"a": "1", "b": "3"}
    assert case.steps[0].input["input"].values == [(10,), (10,), (11,)]
    path.write_text(
        path.read_text().replace("{<<: *row, value: 11}", "{<<: *row, valu: 11}"), encoding="utf-8"
    )
    error = _refused(path)
    assert error.code == "SS201" and (error.span.line, error.span.column) == (7, 66)


def test_rows_within_the_limit_load(tmp_path):
    root = _project(tmp_path)
    path = root / "many.test.yaml"
    rows = ", ".join(f"[{i}]" for i in range(safe_yaml.MAX_ROWS))
    path.write_text(
        HEAD + "tests:\n  - name: t\n    steps:\n"
        f"      - input: {{input: {{columns: [value], rows: [{rows}]}}}}\n",
        encoding="utf-8",
    )
    started = time.monotonic()
    test_file, _ = load(path)
    assert time.monotonic() - started < 30  # about 1 s unloaded: ruamel.yaml's pure Python
    assert len(test_file.cases[0].steps[0].input["input"].values) == safe_yaml.MAX_ROWS


def test_links_fifos_devices_and_large_files_are_not_read(tmp_path):
    root = _project(tmp_path)
    (tmp_path / "outside.test.yaml").write_text(HEAD + STEP, encoding="utf-8")
    os.symlink("/dev/zero", root / "zero.test.yaml")
    os.symlink(tmp_path / "outside.test.yaml", root / "out.test.yaml")
    os.mkfifo(root / "fifo.test.yaml")
    with open(root / "large.test.yaml", "wb") as handle:
        handle.truncate(safe_yaml.MAX_TEST_FILE_BYTES + 1)  # sparse
    with open(root / "large.ssql", "wb") as handle:
        handle.truncate(8 * 1024 * 1024 + 1)
    (root / "large_pipeline.test.yaml").write_text(
        "pipeline: large.ssql\n" + STEP, encoding="utf-8"
    )
    for name, says in [
        ("zero.test.yaml", "symbolic link out of its project"),
        ("out.test.yaml", "symbolic link out of its project"),
        ("fifo.test.yaml", "not a regular file"),
        ("large.test.yaml", f"larger than {safe_yaml.MAX_TEST_FILE_BYTES:,} bytes"),
        ("large_pipeline.test.yaml", "larger than 8,388,608 bytes"),
    ]:
        error = _refused(root / name)
        assert error.code == "SS002" and says in str(error), (name, str(error))
    os.symlink(root / "large_pipeline.test.yaml", root / "inside.test.yaml")
    assert "8,388,608" in str(_refused(root / "inside.test.yaml"))  # a link inside is read
    (root / ".ci").mkdir()  # a test file named on the command line in a hidden folder loads
    (root / ".ci" / "h.test.yaml").write_text("pipeline: ../watermark.ssql\n" + STEP)
    assert load(root / ".ci" / "h.test.yaml")[0].cases[0].name == "t"


def test_the_test_command_answers_every_hostile_file(tmp_path):
    """``sqlstream test DIR`` as CI runs it: one error per file, exit 2, within seconds."""
    root = _project(tmp_path)
    for index, name in enumerate(CASES):
        text = CASES[name][0]
        (root / f"case{index}.test.yaml").write_text(text, encoding="utf-8")
    os.symlink("/dev/zero", root / "zero.test.yaml")
    os.mkfifo(root / "fifo.test.yaml")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sqlstream.cli", "test", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert time.monotonic() - started < 60
    assert "Traceback" not in done.stdout + done.stderr
    for index in range(len(CASES)):
        assert f"case{index}.test.yaml" in done.stdout + done.stderr
    assert "root:x" not in done.stdout + done.stderr
