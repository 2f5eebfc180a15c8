"""``sqlstream test`` beyond a passing run: ``--record``, ``--format json|junit -o``, and
the pytest plugin run by a pytest of its own on a folder of test files.

They use the guide's word count (tests/fixtures/spark_suites/guide_word_count.*): one
query in complete mode, three steps, whose expected tables are the Structured Streaming
guide's; a copy with one count changed is the failing case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.conftest import FIXTURES
from tests.support.user_modules import sqlstream_process

pytestmark = pytest.mark.spark

SUITES = FIXTURES / "spark_suites"
NAME = "Structured Streaming guide word count in complete mode"


def _folder(tmp_path: Path, wrong_count: bool) -> Path:
    """tmp_path holding the word count pipeline and ``ok.test.yaml`` (the guide's tables);
    with ``wrong_count``, also ``bad.test.yaml``, the same with dog's count 4 in step 2."""
    shutil.copy(SUITES / "guide_word_count.ssql", tmp_path)
    text = (SUITES / "guide_word_count.test.yaml").read_text(encoding="utf-8")
    (tmp_path / "ok.test.yaml").write_text(text, encoding="utf-8")
    if wrong_count:
        bad = text.replace(
            "{word: dog, count: 3}, {word: owl, count: 1}",
            "{word: dog, count: 4}, {word: owl, count: 1}",
        )
        assert bad != text
        (tmp_path / "bad.test.yaml").write_text(bad, encoding="utf-8")
    return tmp_path


def _expectations(path: Path) -> list[list[tuple]]:
    """The expected rows of each step of the file's one test, as sorted (word, count)."""
    from sqlstream.testing.loading import yaml

    steps = yaml().load(path.read_text(encoding="utf-8"))["tests"][0]["steps"]
    return [sorted((r["word"], r["count"]) for r in s["expect"]["word_counts"]) for s in steps]


def test_record_writes_what_spark_did_as_the_expectations(spark, tmp_path):
    folder = _folder(tmp_path, wrong_count=True)
    bad = folder / "bad.test.yaml"
    runner = CliRunner()
    failed = runner.invoke(main, ["test", str(bad)])
    assert failed.exit_code == 1, failed.output
    assert "count: 4" in failed.output

    recorded = runner.invoke(main, ["test", "--record", str(bad)])
    assert recorded.exit_code == 1, recorded.output  # the run itself still failed
    # the recorded expectations are the guide's tables, read from the untouched copy
    assert _expectations(bad) == _expectations(folder / "ok.test.yaml")
    assert "guide" in bad.read_text(encoding="utf-8")  # comments are kept
    again = runner.invoke(main, ["test", str(bad)])
    assert again.exit_code == 0, again.output


def test_json_and_junit_reports_written_with_o(spark, tmp_path):
    folder = _folder(tmp_path, wrong_count=True)
    runner = CliRunner()
    as_json = runner.invoke(
        main, ["test", str(folder), "--format", "json", "-o", str(tmp_path / "report.json")]
    )
    assert as_json.exit_code == 1, as_json.output
    document = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    statuses = {Path(t["file"]).name: t["status"] for t in document["tests"]}
    assert statuses == {"bad.test.yaml": "failed", "ok.test.yaml": "passed"}
    assert document["summary"]["passed"] == 1 and document["summary"]["failed"] == 1
    (failure,) = next(t for t in document["tests"] if t["status"] == "failed")["failures"]
    assert failure["step"] == 2 and failure["check"] == "sink word_counts"

    as_junit = runner.invoke(
        main, ["test", str(folder), "--format", "junit", "-o", str(tmp_path / "report.xml")]
    )
    assert as_junit.exit_code == 1, as_junit.output
    root = ET.parse(tmp_path / "report.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("2", "1", "0")
    failures = root.findall(".//testcase/failure")
    assert len(failures) == 1 and "count: 4" in failures[0].text
    assert all(case.get("name") == NAME for case in root.iter("testcase"))


def test_pytest_plugin_collects_and_runs_test_files_in_a_pytest_of_its_own(tmp_path):
    folder = _folder(tmp_path, wrong_count=True)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rN", str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "1 failed, 1 passed" in output
    assert f"bad.test.yaml::{NAME}" in output
    assert "step 2 (line" in output and "count: 4" in output


POLICY_PIPELINE = """\
{set}CREATE STREAM fast (k STRING, t TIMESTAMP, WATERMARK FOR t AS t - INTERVAL 1 SECOND)
    WITH (connector = 'files', path = 'a', format = 'json');
CREATE STREAM slow (k STRING, t TIMESTAMP, WATERMARK FOR t AS t - INTERVAL 10 SECONDS)
    WITH (connector = 'files', path = 'b', format = 'json');
CREATE SINK both WITH (connector = 'memory');
INSERT INTO both SELECT k FROM fast UNION ALL SELECT k FROM slow;
"""

POLICY_TEST = """\
pipeline: {name}.ssql
tests:
  - name: {name} watermark
    steps:
      - input: {{fast: [{{k: a, t: '2020-01-01 00:00:20'}}], slow: [{{k: b, t: '2020-01-01 00:00:20'}}]}}
        expect: {{both: [{{k: a}}, {{k: b}}]}}
      - input: {{fast: [{{k: c, t: '2020-01-01 00:00:30'}}]}}
        expect: {{both: [{{k: c}}]}}
        watermark: '2020-01-01 00:00:{second}'
"""


def test_a_pipelines_set_does_not_reach_the_next_pipelines_tests(spark, tmp_path):
    """Spark's global watermark of two streams is the min of theirs by default and the max
    under ``multipleWatermarkPolicy = max`` (Spark guide, "Policy for handling multiple
    watermarks"): after a first batch at 20 s, 20 s - 10 s or 20 s - 1 s. The first file's pipeline sets max; the
    second's, run after it in the same session, must get Spark's default again."""
    from sqlstream.testing.suite import run

    for name, setting, second in (
        ("a_max", "SET 'spark.sql.streaming.multipleWatermarkPolicy' = 'max';\n", 19),
        ("b_default", "", 10),
    ):
        (tmp_path / f"{name}.ssql").write_text(
            POLICY_PIPELINE.format(set=setting), encoding="utf-8"
        )
        (tmp_path / f"{name}.test.yaml").write_text(
            POLICY_TEST.format(name=name, second=second), encoding="utf-8"
        )
    before = spark.conf.get("spark.sql.streaming.multipleWatermarkPolicy", None)
    results = run([tmp_path], session=lambda: spark)
    assert [(r.name, r.status) for r in results] == [
        ("a_max watermark", "passed"),
        ("b_default watermark", "passed"),
    ], [f.message for r in results for f in r.failures]
    assert spark.conf.get("spark.sql.streaming.multipleWatermarkPolicy", None) == before


PRINTING_UDFS = """\
print("PRINTED-AT-IMPORT")


def up(s: str) -> str:
    print("PRINTED-BY-A-CALL")  # in Spark's Python worker, a process of its own
    return s.upper()
"""


def test_json_report_on_stdout_alone_while_user_code_prints(tmp_path):
    """``sqlstream test --format json`` as a process: a function that prints at import
    and at each call (in Spark's Python worker, whose standard output is a file
    descriptor, not ``sys.stdout``) leaves stdout the JSON report alone (second probe of
    issue 32)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "udfs.py").write_text(PRINTING_UDFS, encoding="utf-8")
    (tmp_path / "p.ssql").write_text(
        "CREATE FUNCTION up AS 'udfs:up';\n"
        "CREATE STREAM s (b STRING) WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK o WITH (connector = 'console');\n"
        "INSERT INTO o SELECT up(b) AS u FROM s;\n",
        encoding="utf-8",
    )
    (tmp_path / "p.test.yaml").write_text(
        "pipeline: p.ssql\ntests:\n  - name: upper\n    steps:\n"
        "      - input: {s: [{b: x}]}\n        expect: {o: [{u: X}]}\n",
        encoding="utf-8",
    )
    run = sqlstream_process("test", "--format", "json", "p.test.yaml", cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)  # nothing else on stdout
    assert report["summary"]["passed"] == 1
    assert "PRINTED-AT-IMPORT" in run.stderr and "PRINTED-BY-A-CALL" in run.stderr
