"""Secrets never appear (docs/dialect.md#secrets, issue 12 item 4).

Programs use a value of ``${env:…}`` in every position: an option value, a source and a
sink path, a ``SET`` value, a string literal in a query (WHERE, a select item), a datetime
pattern, a JSON path, a comment, in a computed column, and — refused with a positioned
finding — as a quoted alias, an unquoted name, a watermark interval, an unquoted option
value, an unaliased expression Spark would name after it, a query name, a struct field name
(``named_struct``, a ``from_json`` / ``from_csv`` schema); and in values that other findings
echo (an unknown format, connector, metadata key, setting). A ``SET`` turning Spark's own
``${…}`` substitution back on is refused. Every
command runs on each (``check`` text and JSON, ``translate`` text and ``--to pyspark``,
``explain`` text and JSON; on Spark: a run through the API with its events, a query that
fails on the secret's value at run time, ``explain --physical`` and one ``sqlstream
exec`` process) and every byte it prints or sqlstream writes is searched for the secret
and for fragments of it, in any case.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.lowering.printer import _secret_literal
from sqlstream.runtime.renderers import JsonLinesRenderer, TextRenderer
from tests.conftest import ROOT

SP = "Hunter2 Sw0rdfish"  # in paths: a space (Hadoop writes %20)
SQ = "Xyzzy9'Plugh\\Quux"  # a quote and a backslash: escaped in SQL, repr, JSON
ENV = {"SP": SP, "SQ": SQ}
FRAGMENTS = ("hunter2", "sw0rdfish", "xyzzy9", "plugh", "quux")
DAY = ROOT / "examples" / "flights" / "data" / "flights" / "2013-01-01.csv"

ACCEPTED = """
SET 'spark.hadoop.fs.s3a.secret.key' = '${{env:SQ}}';
CREATE STREAM flights (
    carrier STRING, origin STRING, dep_delay DOUBLE, time_hour TIMESTAMP,
    keyed AS sha2(concat(carrier, '${{env:SQ}}'), 256),
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', format = 'csv', header = true, nullValue = 'NA',
        path = '{tmp}/in ${{env:SP}}', password = '${{env:SQ}}', maxFilesPerTrigger = 1);
CREATE SINK kept WITH (connector = 'files', format = 'json', path = '{tmp}/out ${{env:SP}}');
INSERT INTO kept
SELECT origin, time_hour, dep_delay, -- ${{env:SQ}} in a comment stays a comment
       length(date_format(time_hour, 'yyyy \\'${{env:SP}}\\' E')) AS formatted,
       get_json_object(carrier, '$.${{env:SP}} [') AS json_path,
       length(concat(origin, '${{env:SQ}}')) AS select_item  -- the rows are data: no secret
FROM flights WHERE carrier <> '${{env:SQ}}' AND keyed <> ''
EMIT ONCE;
"""
_STREAM = (
    "CREATE STREAM flights (carrier STRING, origin STRING, time_hour TIMESTAMP) WITH "
    "(connector = 'files', format = 'csv', header = true, path = '{tmp}/in ${{env:SP}}');\n"
)
# (program, the code check reports); each uses a secret where it is refused or echoed.
REFUSED = {
    "quoted_alias": (_STREAM + "SELECT origin AS `${{env:SQ}}` FROM flights;", "SS240"),
    "unquoted_name": (_STREAM + "SELECT ${{env:SP}} FROM flights;", "SS240"),
    "name_in_string_and_name": (
        _STREAM + "SELECT carrier AS c FROM flights WHERE ${{env:SP}} = '${{env:SQ}}';",
        "SS240",
    ),
    "watermark_interval": (
        _STREAM.replace(
            "TIMESTAMP)",
            "TIMESTAMP, WATERMARK FOR time_hour AS time_hour - INTERVAL '${{env:SQ}}' HOUR)",
        )
        + "SELECT origin FROM flights;",
        "SS240",
    ),
    "unquoted_option": (
        _STREAM.replace("header = true", "maxFilesPerTrigger = ${{env:SQ}}")
        + "SELECT origin FROM flights;",
        "SS240",
    ),
    "unaliased_literal": (_STREAM + "SELECT concat(origin, '${{env:SQ}}') FROM flights;", "SS241"),
    "query_name": (
        _STREAM + "CREATE SINK s WITH (connector = 'noop', query_name = 'q ${{env:SP}}');\n"
        "INSERT INTO s SELECT origin FROM flights;",
        "SS240",
    ),
    "struct_field_name": (
        _STREAM + "SELECT named_struct('${{env:SP}}', origin) AS s FROM flights;",
        "SS241",
    ),
    "json_schema_field": (
        _STREAM + "SELECT from_json(origin, '`${{env:SP}}` INT') AS j FROM flights;",
        "SS241",
    ),
    "csv_schema_field": (
        _STREAM + "SELECT from_csv(origin, 'a INT, `${{env:SQ}}` INT') AS c FROM flights;",
        "SS241",
    ),
    "spark_substitution_on": (
        "SET 'spark.sql.variable.substitute' = 'true';\n"
        + _STREAM
        + "SELECT origin FROM flights WHERE carrier <> '${{env:SQ}}';",
        "SS202",
    ),
    "format_value": (
        _STREAM.replace("'csv'", "'${{env:SQ}}'") + "SELECT origin FROM flights;",
        "SS202",
    ),
    "connector_value": (_STREAM.replace("'files'", "'${{env:SP}}'") + "SELECT 1;", "SS202"),
    "metadata_key": (
        _STREAM.replace("TIMESTAMP)", "TIMESTAMP, f STRING METADATA FROM '${{env:SP}}')")
        + "SELECT origin FROM flights;",
        "SS201",
    ),
    "setting_key": ("SET 'sqlstream.${{env:SP}}' = 'x';\n" + _STREAM + "SELECT 1;", "SS202"),
    "unknown_column_with_secret_literal": (
        _STREAM + "SELECT nosuch FROM flights WHERE carrier = '${{env:SQ}}';",
        "SS205",
    ),
}
# Spark (ANSI mode) fails the first micro-batch with CAST_INVALID_INPUT, quoting the value.
FAILING = """
CREATE SINK bad WITH (connector = 'noop');
INSERT INTO bad SELECT origin FROM flights WHERE CAST(concat(carrier, '${{env:SQ}}') AS INT) > 0
EMIT ONCE;
"""
CLI_COMMANDS = (
    ["check"],
    ["check", "--format", "json"],
    ["translate"],
    ["translate", "--to", "pyspark"],
    ["explain"],
    ["explain", "--format", "json"],
)


def leaks(text: str) -> list[str]:
    """The fragments of the secrets in ``text``, in any case."""
    return [f for f in FRAGMENTS if f in text.lower()]


def _write(tmp_path, name, program):
    path = tmp_path / f"{name}.ssql"
    path.write_text(program.format(tmp=tmp_path), encoding="utf-8")
    return path


def _cli(*args):
    result = CliRunner().invoke(main, list(args), env=ENV)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_or_echoed_positions_print_no_secret(tmp_path, name):
    program, code = REFUSED[name]
    path = _write(tmp_path, name, program)
    for command in CLI_COMMANDS:
        status, output = _cli(*command, str(path))
        assert status == 1, (command, output)
        assert not leaks(output), (command, output)
        assert code in output, (command, output)
    status, output = _cli("check", str(path))
    assert f"{path}:" in output.split(code)[0].splitlines()[-1]  # positioned in the file


def test_accepted_positions_print_no_secret_and_the_script_reads_the_environment(
    tmp_path, monkeypatch
):
    path = _write(tmp_path, "accepted", ACCEPTED)
    outputs = {}
    for command in CLI_COMMANDS:
        status, output = _cli(*command, str(path))
        assert status == 0, (command, output)
        assert not leaks(output), (command, output)
        outputs[" ".join(command)] = output
    assert "password=***" in outputs["explain"] and "out ***" in outputs["explain"]
    assert "carrier <> '***'" in outputs["translate"]
    # the pattern and the path are printed as written, so redaction finds the value in them
    assert "DATE_FORMAT(time_hour, 'yyyy \\\\'***\\\\' E')" in outputs["translate"]
    assert "'$.*** ['" in outputs["translate"]
    assert "sqlglot" not in outputs["check"] and "Invalid JSON path" not in outputs["translate"]
    script = outputs["translate --to pyspark"]
    assert "***" not in script  # every secret is read from the environment: the script runs
    assert "os.environ['SQ']" in script and "os.environ['SP']" in script
    # translate prints what runs: each printed expression evaluates to the text exec hands
    # to Spark (the binder's Source.unseal: escaped in SQL text, as it is in a value)
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    plan = sqlstream.compile_file(str(path)).plan
    literal = _secret_literal(plan)
    (source,) = plan.relations
    sql_texts = [plan.queries[0].sql, *source.projection]
    values = [
        *(v for _, v in source.options),
        source.path,
        plan.queries[0].sink.path,
        *(v for _, v in plan.settings),
    ]
    for text, sql in [*((t, True) for t in sql_texts), *((v, False) for v in values)]:
        # the compiled plan holds tokens, never a value: nothing printed from it can leak
        assert not leaks(text), text
        assert eval(literal(text, sql), {"os": os}) == plan.source.unseal(text, sql)  # noqa: S307
    escaped = SQ.replace("\\", "\\\\").replace("'", "\\'")
    assert any(escaped in plan.source.unseal(t, sql=True) for t in sql_texts)  # escaped in SQL
    assert ("password", SQ) in [(k, plan.source.unseal(v)) for k, v in source.options]


def _day_folder(tmp_path):
    folder = tmp_path / f"in {SP}"
    folder.mkdir()
    shutil.copy(DAY, folder / DAY.name)
    stamp = datetime(2013, 1, 1, tzinfo=timezone.utc).timestamp()
    os.utime(folder / DAY.name, (stamp, stamp))
    return folder


def _sqlstream_files(tmp_path) -> dict[str, str]:
    """What sqlstream itself writes (the state signatures in the checkpoints), and the
    sink's files, by path."""
    files = {}
    for path in tmp_path.rglob("*"):
        if path.is_file() and (
            "sqlstream" in path.parts
            or path.parent.name.startswith("out ")
            or path.suffix == ".json"
        ):
            files[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    return files


@pytest.mark.spark
def test_a_run_its_events_files_errors_and_physical_plan_show_no_secret(
    spark, tmp_path, monkeypatch
):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    _day_folder(tmp_path)
    path = _write(tmp_path, "accepted", ACCEPTED)
    events, lines = [], []
    with sqlstream.Session(
        spark,
        listeners=[events.append, TextRenderer(lines.append), JsonLinesRenderer(lines.append)],
        state_dir=str(tmp_path / "state"),
    ) as session:
        pipeline = session.compile_file(str(path))
        session.run(pipeline, available_now=True)
        assert [e.kind for e in events].count("batch_progress") >= 1
        signatures = list((tmp_path / "state").rglob("state_signature.json"))
        assert signatures and json.loads(signatures[0].read_text())  # written, redacted
        # a failure on the secret's value at run time (Spark's CAST_INVALID_INPUT quotes it)
        failing = _write(tmp_path, "failing", _STREAM + FAILING)
        with pytest.raises(sqlstream.SqlStreamError) as info:
            session.run(session.compile_file(str(failing)), available_now=True)
        assert "CAST_INVALID_INPUT" in info.value.render() and "***" in info.value.render()
    spark.conf.unset("spark.hadoop.fs.s3a.secret.key")
    texts = [
        info.value.render(),
        json.dumps(info.value.to_dict()),
        *lines,
        json.dumps([e.to_dict() for e in events]),
        repr(events),
        *_sqlstream_files(tmp_path).values(),
    ]
    assert any(e.kind == "query_failed" for e in events)
    for text in texts:
        assert not leaks(text), text
    status, output = _cli("explain", "--physical", str(path))  # reuses the active session
    assert status == 0 and "StreamingRelation" in output, output
    assert not leaks(output), output
    spark.conf.unset("spark.hadoop.fs.s3a.secret.key")


@pytest.mark.spark
def test_exec_process_prints_no_secret(tmp_path):
    """One ``sqlstream exec`` process (its own JVM: Spark's log lines included): a query
    that writes, and one that fails on the secret's value in its first micro-batch."""
    _day_folder(tmp_path)
    program = ACCEPTED + FAILING
    path = _write(tmp_path, "exec", program)
    env = dict(os.environ, **ENV, PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sqlstream.cli",
            "exec",
            str(path),
            "--master",
            "local[1]",
            "--log-format",
            "json",
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    assert '"event": "query_failed"' in proc.stderr and "CAST_INVALID_INPUT" in proc.stderr
    assert not leaks(proc.stdout + proc.stderr), proc.stdout + proc.stderr
    for name, text in _sqlstream_files(tmp_path / "state").items():
        assert not leaks(text), name
    assert re.search(r"\*\*\*", proc.stderr)


def test_a_secret_query_name_is_refused_at_the_option_value(monkeypatch):
    """SS240 points at the ``query_name`` value that holds the secret, not at the sink."""
    monkeypatch.setenv("QN_SECRET", "hunter2-qn")
    text = (
        "CREATE STREAM s WITH (connector = 'rate');\n"
        "CREATE SINK o WITH (connector = 'noop', query_name = 'q ${env:QN_SECRET}');\n"
        "INSERT INTO o SELECT value FROM s;\n"
    )
    (finding,) = [f for f in sqlstream.check(text, path="q.ssql") if f.code == "SS240"]
    assert finding.render().startswith("q.ssql:2:54: SS240 the query name 'q ***' contains")
    assert "hunter2" not in finding.render()
