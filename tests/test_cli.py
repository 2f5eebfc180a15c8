"""The command line: translate, check and exec; exit codes 0/1/2; errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.conftest import ROOT
from tests.support.user_modules import project, sqlstream_process
from tests.support.written_constraints import FIXTURE, written_in

EXAMPLE = ROOT / "examples" / "flights" / "hourly_delays.ssql"
BAD = "CREATE STREAM s (a INT) WITH (connector = 'files', path = 'x', format = 'csv');\nSELECT b\nFROM s\nWHERE a >;\n"


@pytest.fixture
def runner():
    return CliRunner()


def test_translate_prints_sql_and_binding(runner):
    result = runner.invoke(main, ["translate", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "spark.readStream" in result.output
    assert ".withWatermark('time_hour', '1 hour')" in result.output
    assert "GROUP BY window(time_hour, '1 hour')" in result.output
    assert ".outputMode('append')" in result.output
    assert ".trigger(availableNow=True)" in result.output


def test_error_exit_1_with_position_line_and_caret(runner, tmp_path):
    bad = tmp_path / "bad.ssql"
    bad.write_text(BAD)
    result = runner.invoke(main, ["translate", str(bad)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{bad}:4:")
    assert lines[1] == "  WHERE a >;"
    assert lines[2].strip() == "^" or lines[2].strip().startswith("^")


def test_usage_errors_exit_2(runner, tmp_path):
    assert runner.invoke(main, ["translate"]).exit_code == 2
    assert runner.invoke(main, ["translate", str(EXAMPLE), "--var", "novalue"]).exit_code == 2
    assert runner.invoke(main, ["frobnicate"]).exit_code == 2


def test_missing_file_is_an_error_not_a_traceback(runner, tmp_path):
    result = runner.invoke(main, ["translate", str(tmp_path / "nope.ssql")])
    assert result.exit_code == 1
    assert "cannot read" in result.output and "Traceback" not in result.output


def test_check_reports_modes_and_fails_on_errors(runner, tmp_path):
    bad = tmp_path / "bad.ssql"
    bad.write_text(BAD)
    ok = runner.invoke(main, ["check", str(EXAMPLE)])
    assert ok.exit_code == 0 and "query hourly: append (from EMIT)" in ok.output
    result = runner.invoke(main, ["check", str(EXAMPLE), str(bad)])
    assert result.exit_code == 1 and f"{bad}:4:" in result.output


def test_variables_from_the_command_line(runner, tmp_path):
    f = tmp_path / "v.ssql"
    f.write_text(
        "CREATE STREAM s WITH (connector = 'rate', rowsPerSecond = ${rate});\n"
        "SELECT value FROM s WHERE value > ${min};"
    )
    result = runner.invoke(main, ["translate", str(f), "--var", "rate=7", "--var", "min=3"])
    assert result.exit_code == 0, result.output
    assert ".option('rowsPerSecond', '7')" in result.output and "value > 3" in result.output
    missing = runner.invoke(main, ["translate", str(f), "--var", "rate=7"])
    assert missing.exit_code == 1 and "undefined variable 'min'" in missing.output


def test_translate_as_a_process_imports_no_pyspark():
    code = (
        "import sys, sqlstream\n"
        f"text = open({str(EXAMPLE)!r}).read()\n"
        f"out = sqlstream.translate(text, path={str(EXAMPLE)!r})\n"
        "assert 'withWatermark' in out\n"
        "assert not any(m == 'pyspark' or m.startswith(('pyspark.', 'py4j')) for m in sys.modules), "
        "sorted(m for m in sys.modules if 'spark' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


MANY = """CREATE STREAM s (a INT) WITH (connector = 'rat');
CREATE STREAM t (ts TIMESTAMP, a INT) WITH (connector = 'files', path = 'x', format = 'json');
SELECT a FROM t WHERE a > ;
SELECT * FROM flihgts;
SELECT a, COUNT(*) FROM s GROUP BY a EMIT FINAL;
SELECT a, COUNT(*) FROM t GROUP BY a EMIT FINAL;
SELECT b, upperr(a) FROM t;
"""


def test_check_reports_every_finding_of_a_file_in_one_run(runner, tmp_path):
    f = tmp_path / "many.ssql"
    f.write_text(MANY)
    result = runner.invoke(main, ["check", str(f)])
    assert result.exit_code == 1
    heads = [
        line.split(" ", 2)[:2]
        for line in result.output.splitlines()
        if line.startswith(f"{f}:") and not line.startswith(f"{f}: ")
    ]
    # line 5 reads the stream whose declaration failed: no second error for the same mistake
    assert heads == [
        [f"{f}:1:43:", "SS202"],
        [f"{f}:3:25:", "SS102"],
        [f"{f}:4:15:", "SS201"],
        [f"{f}:6:38:", "SS301"],
        [f"{f}:7:8:", "SS205"],
        [f"{f}:7:11:", "SS206"],
    ]
    assert f"{f}: 6 error(s), 0 warning(s)" in result.output
    assert "unknown column 'b' in t (its columns: ts, a)" in result.output
    assert result.stdout == result.output, "the findings are check's report: all on stdout"
    assert "unknown function 'upperr'; did you mean 'upper'?" in result.output


def test_check_json_format(runner, tmp_path):
    f = tmp_path / "many.ssql"
    f.write_text(MANY)
    result = runner.invoke(main, ["check", "--format", "json", str(f), str(EXAMPLE)])
    assert result.exit_code == 1
    import json

    document = json.loads(result.stdout)
    assert [d["path"] for d in document] == [str(f), str(EXAMPLE)]
    first = document[0]["findings"][0]
    assert (first["code"], first["severity"], first["line"], first["column"]) == (
        "SS202",
        "error",
        1,
        43,
    )
    assert "did you mean 'rate'" in first["message"]
    assert document[1]["findings"] == []
    assert document[1]["queries"][0]["output_mode"] == "append"
    columns = document[1]["queries"][0]["columns"]
    assert columns[:3] == [
        {"name": "window_start", "type": "TIMESTAMP"},
        {"name": "window_end", "type": "TIMESTAMP"},
        {"name": "origin", "type": "STRING"},
    ]
    assert {"name": "avg_dep_delay", "type": "DOUBLE"} in columns
    state = document[1]["queries"][0]["state"]
    assert state["output_mode"] == "append" and state["sink"][:2] == ["files", "parquet"]
    assert state["operators"][0]["kind"] == "aggregation"
    assert state["operators"][0]["keys"] == ["window(time_hour, '1 hour')", "origin"]
    assert state["watermarks"] == [
        {"relation": "flights", "column": "time_hour", "delay": "1 hour"}
    ]


def test_check_json_redacts_secrets_in_state(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLSTREAM_TEST_BUCKET", "hunter2-bucket")
    f = tmp_path / "secret.ssql"
    f.write_text(
        "CREATE STREAM t WITH (connector = 'rate');\n"
        "CREATE SINK s WITH (connector = 'files', format = 'json',\n"
        "  path = '${env:SQLSTREAM_TEST_BUCKET}/out');\n"
        "INSERT INTO s SELECT value FROM t;\n"
    )
    result = runner.invoke(main, ["check", "--format", "json", str(f)])
    assert result.exit_code == 0, result.output
    assert "hunter2" not in result.stdout and "***" in result.stdout


def test_several_syntax_errors_are_reported_together():
    import sqlstream

    findings = sqlstream.check(
        "CREATE STREAM s (a INT WITH (connector = 'rate');\nSELECT 1;\nCREATE SINK k;\n",
        path="p.ssql",
    )
    assert [(f.code, f.span.line) for f in findings] == [("SS101", 1), ("SS101", 3)]


def test_check_as_a_process_imports_no_pyspark():
    code = (
        "import sys, sqlstream\n"
        f"text = open({str(EXAMPLE)!r}).read()\n"
        f"findings = sqlstream.check(text, path={str(EXAMPLE)!r})\n"
        "assert findings == [], findings\n"
        "assert not any(m == 'pyspark' or m.startswith(('pyspark.', 'py4j')) for m in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)  # timing lives in bench/, not here


def test_inputs_that_are_not_regular_files_are_ss002_not_a_hang(runner, tmp_path):
    import os

    fifo = tmp_path / "fifo.ssql"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    huge = tmp_path / "huge.ssql"
    with open(huge, "wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: 2 GB, no disk used
    for path, why in (
        (fifo, "not a regular file"),
        ("/dev/zero", "not a regular file"),
        (huge, "larger than 8,388,608 bytes"),
    ):
        for command in ("check", "translate", "explain"):
            result = runner.invoke(main, [command, str(path)])
            assert result.exit_code == 1, (command, path, result.output)
            assert f"SS002 cannot read {path}: {why}" in result.output
            assert "internal error" not in result.output
            assert isinstance(result.exception, SystemExit)  # sys.exit(1), nothing raised
    result = runner.invoke(main, ["check", str(tmp_path)])  # a directory: a usage error
    assert result.exit_code == 2 and "is a directory" in result.output


def test_check_through_a_subprocess_returns_on_dev_zero():
    result = subprocess.run(
        [sys.executable, "-m", "sqlstream.cli", "check", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1 and "SS002" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_translate_output_that_cannot_be_written_is_an_error_without_traceback(runner, tmp_path):
    missing = tmp_path / "no" / "such" / "out.py"
    result = runner.invoke(main, ["translate", str(EXAMPLE), "-o", str(missing)])
    assert result.exit_code == 1, result.output
    assert f"Could not open file '{missing}': No such file or directory" in result.output
    assert "internal error" not in result.output and "Traceback" not in result.output
    assert runner.invoke(main, ["translate", str(EXAMPLE), "-o", str(tmp_path)]).exit_code == 2
    written = tmp_path / "out.py"
    assert runner.invoke(main, ["translate", str(EXAMPLE), "-o", str(written)]).exit_code == 0
    assert "spark.readStream" in written.read_text(encoding="utf-8")


def test_a_parenthesised_query_with_an_alias_is_a_positioned_error(runner, tmp_path):
    for tail in (";\n", "\0", ";\0"):
        path = tmp_path / "alias.ssql"
        path.write_text(
            "CREATE STREAM s (a INT) WITH (connector = 'files', path = 'x', format = 'json');\n"
            "(SELECT a FROM s) AS x" + tail,
            encoding="utf-8",
        )
        for command in ("check", "translate"):
            result = runner.invoke(main, [command, str(path)])
            assert result.exit_code == 1 and f"{path}:2:" in result.output, result.output
            assert "internal error" not in result.output


# ---- trust (docs/operations.md#trust): no code of the project runs unless trusted


@pytest.mark.parametrize(
    "command",
    [
        ("check",),
        ("check", "--format", "json"),
        ("translate",),
        ("translate", "--to", "pyspark"),
        ("explain",),
        ("explain", "--format", "json"),
        ("graph", "--format", "mermaid"),
    ],
    ids=" ".join,
)
def test_static_commands_run_no_code_of_an_untrusted_project(tmp_path, command):
    pipeline = project(tmp_path)
    result = sqlstream_process(*command, str(pipeline))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "MARKER").exists()  # the module was not imported
    assert "Content-Length" not in result.stdout + result.stderr
    if command == ("check", "--format", "json"):
        (report,) = json.loads(result.stdout)
        assert report["findings"] == []  # shout typed from its annotations, write read
        assert report["queries"][0]["columns"] == [{"name": "b", "type": "STRING"}]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_trusted_the_module_is_imported_and_its_output_goes_to_stderr(tmp_path, how):
    pipeline = project(tmp_path)
    flag = ("--trust",) if how == "flag" else ()
    result = sqlstream_process(
        "check", "--format", "json", *flag, str(pipeline), trust_env=how == "env"
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "MARKER").read_text() == "imported"
    (report,) = json.loads(result.stdout)  # stdout is the JSON document alone
    assert report["queries"][0]["columns"] == [{"name": "b", "type": "STRING"}]
    assert "Content-Length: 7" in result.stderr
    for command in ("translate", "explain", "graph"):
        (tmp_path / "MARKER").unlink()
        result = sqlstream_process(command, *flag, str(pipeline), trust_env=how == "env")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "MARKER").exists(), command
        assert "Content-Length" not in result.stdout


def test_an_installed_module_is_not_imported_untrusted(tmp_path):
    """``AS 'this:s'`` names the standard library's ``this`` (it prints at import)."""
    path = tmp_path / "p.ssql"
    path.write_text(
        "CREATE FUNCTION s AS 'this:s' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION t(x STRING) RETURNS STRING LANGUAGE PYTHON AS 'this.s';\n"
    )
    result = sqlstream_process("check", str(path))
    assert result.returncode == 0
    assert "Zen of Python" not in result.stdout + result.stderr
    assert result.stdout.count("SS274") == 1  # t declares its types: typed from them
    assert "p.ssql:1:22: SS274" in result.stdout
    trusted = sqlstream_process("check", "--trust", str(path))
    assert "Zen of Python" in trusted.stderr and "Zen of Python" not in trusted.stdout


def test_a_module_named_through_a_variable_is_not_imported_untrusted(tmp_path):
    """Second probe of issue 32: the module named by ``${m}`` (``--var``), in
    ``CREATE FUNCTION`` (both spellings, ``TEMPORARY``) and a ``foreach_batch`` function,
    beside a ``SET`` of the name."""
    pipeline = project(tmp_path)
    text = pipeline.read_text().replace("evil_udfs:", "${m}:")
    text += "CREATE TEMPORARY FUNCTION g AS '${m}.shout';\nSET 'm' = 'evil_udfs';\n"
    pipeline.write_text(text, encoding="utf-8")
    for command in ("check", "translate", "explain", "graph"):
        result = sqlstream_process(command, "--var", "m=evil_udfs", str(pipeline))
        assert result.returncode == 0, result.stderr
        assert not (tmp_path / "MARKER").exists(), command
        assert "Content-Length" not in result.stdout + result.stderr


@pytest.mark.parametrize("command", ["check", "translate", "explain", "graph"])
def test_a_pipeline_linked_out_of_its_project_is_not_read_untrusted(tmp_path, command):
    """A committed ``x.ssql -> <a file outside>`` (``/etc/passwd``, a key): a syntax error
    would quote its first line into CI's log (second probe of issue 32). Untrusted it is
    SS002 without a byte of it; a link inside the project, and any link trusted, is read."""
    outside, repo = tmp_path / "outside", tmp_path / "repo"
    outside.mkdir()
    (repo / ".git").mkdir(parents=True)
    (outside / "secret.txt").write_text("TOPSECRET-LINE one two\n", encoding="utf-8")
    (repo / "x.ssql").symlink_to(outside / "secret.txt")
    (repo / "inside.ssql").write_text(
        "CREATE STREAM s (a INT) WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK o WITH (connector = 'console');\n"
        "INSERT INTO o SELECT a FROM s;\n",
        encoding="utf-8",
    )
    (repo / "y.ssql").symlink_to(repo / "inside.ssql")
    result = sqlstream_process(command, "x.ssql", cwd=repo)
    assert result.returncode == 1
    assert (
        "SS002" in result.stdout + result.stderr
        and "symbolic link" in result.stdout + result.stderr
    )
    assert "TOPSECRET" not in result.stdout + result.stderr
    trusted = sqlstream_process(command, "--trust", "x.ssql", cwd=repo)
    assert trusted.returncode == 1 and "TOPSECRET" in trusted.stdout + trusted.stderr  # SS101
    assert sqlstream_process(command, "y.ssql", cwd=repo).returncode == 0


def test_check_summary_lists_each_relations_expectations(runner):
    """Text: a line per stream and sink with rules, then each rule as written; JSON: the
    same under ``expectations`` (name, action, ON VIOLATION clause, condition, line)."""
    rules = written_in(FIXTURE)
    text = runner.invoke(main, ["check", str(FIXTURE), "--var", "dir=/data"])
    assert text.exit_code == 0, text.output
    for relation in dict.fromkeys((r.kind, r.relation) for r in rules):
        count = sum((r.kind, r.relation) == relation for r in rules)
        assert f"\n  {relation[0]} {relation[1]}: {count} expectation(s)\n" in text.output
    for rule in rules:
        line = f"    {rule.name} EXPECT ({rule.condition})"
        assert (f"{line} {rule.on_violation}" if rule.on_violation else line) + "\n" in (
            text.output
        )
    result = runner.invoke(main, ["check", "--format", "json", str(FIXTURE), "--var", "dir=/data"])
    assert result.exit_code == 0, result.output
    (document,) = json.loads(result.output)
    listed = [
        (g["kind"], g["relation"], e["name"], e["condition"], e["on_violation"])
        for g in document["expectations"]
        for e in g["expectations"]
    ]
    assert listed == [(r.kind, r.relation, r.name, r.condition, r.on_violation) for r in rules]
    actions = {e["name"]: e["action"] for g in document["expectations"] for e in g["expectations"]}
    assert actions == {
        r.name: {"": "keep", "ON VIOLATION DROP ROW": "drop"}.get(r.on_violation, "fail")
        for r in rules
    }
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    for group in document["expectations"]:
        for rule in group["expectations"]:
            assert f"CONSTRAINT {rule['name']} " in lines[rule["line"] - 1]


def test_check_summary_without_expectations_lists_none(runner):
    result = runner.invoke(main, ["check", "--format", "json", str(EXAMPLE)])
    assert json.loads(result.output)[0]["expectations"] == []
    assert "expectation" not in runner.invoke(main, ["check", str(EXAMPLE)]).output
