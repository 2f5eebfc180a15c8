"""Loading test files: shapes, names and values checked against the pipeline, every error
at its line and column with a caret (no JVM)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.testing.compare import CaseResult
from sqlstream.testing.loading import load
from sqlstream.testing.suite import discover, exit_code
from tests.conftest import FIXTURES
from tests.support.user_modules import project

SUITE = (FIXTURES / "spark_suites" / "watermark.test.yaml").read_text(encoding="utf-8")


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "watermark.ssql").write_text(
        (FIXTURES / "spark_suites" / "watermark.ssql").read_text(encoding="utf-8"), encoding="utf-8"
    )
    path = tmp_path / "case.test.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(tmp_path: Path, text: str) -> SqlStreamError:
    with pytest.raises(SqlStreamError) as caught:
        load(_write(tmp_path, text))
    return caught.value


def test_suite_file_loads_with_typed_input_values(tmp_path):
    test_file, pipelines = load(_write(tmp_path, SUITE))
    assert [c.name for c in test_file.cases][0] == "EventTimeWatermarkSuite append mode"
    first = test_file.cases[0].steps[0]
    assert first.input["input"].values == [(v,) for v in range(10, 16)]
    assert test_file.cases[0].steps[1].watermark[0].query == "appended"
    assert set(pipelines[test_file.cases[0].name].sinks) == {
        "appended",
        "updated",
        "completed",
        "distinct_times",
    }


@pytest.mark.parametrize(
    "old,new,code,line,column,caret,says",
    [
        (
            "input: {input: [{value: 25}]}",
            "input: {input: [{valu: 25}]}",
            "SS201",
            11,
            26,
            "^^^^",
            "'input' has no column 'valu'; did you mean 'value'?",
        ),
        (
            "input: {input: [{value: 25}]}",
            "input: {input: [{value: x}]}",
            "SS203",
            11,
            33,
            "^",
            "column 'value' (INT): 'x' is not a whole number",
        ),
        (
            "expect: {appended: []}",
            "expect: {appendd: []}",
            "SS201",
            10,
            18,
            "^^^^^^^",
            "the pipeline has no sink 'appendd'; did you mean 'appended'?",
        ),
        (
            "state_rows: {appended: 2}",
            "state_row: {appended: 2}",
            "SS202",
            14,
            9,
            "^^^^^^^^^",
            "unknown key 'state_row' in a step; did you mean 'state_rows'?",
        ),
        (
            "expect: {appended: [{start: 10, count: 5}]}",
            "expect: {appended: [{start: 10, cnt: 5}]}",
            "SS201",
            12,
            41,
            "^^^",
            "sink 'appended' has no column 'cnt'",
        ),
        (
            "watermark: {appended: '1970-01-01 00:00:15'}",
            "watermark: {appendd: '1970-01-01 00:00:15'}",
            "SS201",
            13,
            21,
            "^^^^^^^",
            "the pipeline has no query 'appendd'",
        ),
        (
            "watermark: {appended: '1970-01-01 00:00:15'}",
            "watermark: {appended: 'noon'}",
            "SS203",
            13,
            31,
            "^^^^^^",
            "'noon' is not a timestamp",
        ),
        (
            "state_rows: {appended: 2}",
            "state_rows: 2",
            "SS203",
            14,
            21,
            "^",
            "the pipeline has 4 queries",
        ),
        (
            "    steps:\n      - input: {input: {columns",
            "    steps:\n      - inputs: {input: {columns",
            "SS202",
            9,
            9,
            "^^^^^^",
            "unknown key 'inputs'",
        ),
        ("[[10], [11]", "[[10, 1], [11]", "SS203", 9, 50, "^", "a row of 1 values (value)"),
    ],
)
def test_errors_are_at_their_line_and_column(tmp_path, old, new, code, line, column, caret, says):
    assert old in SUITE
    error = _error(tmp_path, SUITE.replace(old, new, 1))
    assert (error.code, error.span.line, error.span.column) == (code, line, column), error.render()
    assert says in error.message
    rendered = error.render().splitlines()
    assert rendered[0].startswith(f"{tmp_path / 'case.test.yaml'}:{line}:{column}: {code} ")
    assert rendered[2].strip() == caret


def test_not_yaml_is_a_syntax_error_at_its_place(tmp_path):
    error = _error(tmp_path, "pipeline: watermark.ssql\ntests: [\n  - {name: x\n")
    assert error.code == "SS101" and error.span.line >= 3


def test_missing_pipeline_file_and_duplicate_names(tmp_path):
    assert (
        _error(tmp_path, SUITE.replace("pipeline: watermark.ssql", "pipeline: nowhere.ssql")).code
        == "SS002"
    )
    twice = SUITE.replace(
        "name: EventTimeWatermarkSuite update mode", "name: EventTimeWatermarkSuite append mode"
    )
    error = _error(tmp_path, twice)
    assert error.code == "SS204" and error.span.line == 21


def test_a_step_is_input_or_restart(tmp_path):
    error = _error(
        tmp_path,
        SUITE.replace(
            "- input: {input: [{value: 10}]}         # less",
            "- restart: true\n        input: {input: [{value: 10}]}  #",
            1,
        ),
    )
    assert error.code == "SS203" and "either 'input'" in error.message


def test_discover_finds_test_files_and_exit_codes(tmp_path):
    path = _write(tmp_path, SUITE)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.test.yaml").write_text("", encoding="utf-8")
    assert discover([tmp_path]) == [path]
    with pytest.raises(SqlStreamError):
        discover([tmp_path / "missing"])
    passed, failed = CaseResult(path, "a", 1, "passed"), CaseResult(path, "b", 1, "failed")
    assert exit_code([passed]) == 0
    assert exit_code([passed, failed]) == 1
    assert exit_code([failed, CaseResult(path, "c", 1, "error")]) == 2


def test_loading_a_test_file_runs_no_code_of_an_untrusted_project(tmp_path):
    pipeline = project(tmp_path)
    spec = tmp_path / "p.test.yaml"
    spec.write_text(
        "pipeline: p.ssql\n"
        "tests:\n"
        "  - name: shouts\n"
        "    steps:\n"
        "      - input: {s: [{a: x, ts: 2024-01-01 00:00:00}]}\n"
        "        expect: {o: [{b: X}]}\n"
    )
    assert pipeline.exists()
    test_file, _ = load(spec)
    assert not (tmp_path / "MARKER").exists()  # untrusted: read, not imported
    assert [c.name for c in test_file.cases] == ["shouts"]
    try:
        load(spec, trust=True)  # `sqlstream test --trust`
        assert (tmp_path / "MARKER").exists()
    finally:
        sys.modules.pop("evil_udfs", None)
        if str(tmp_path) in sys.path:
            sys.path.remove(str(tmp_path))
