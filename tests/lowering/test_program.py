"""What is printed is what runs.

* Every translate golden program (``tests/fixtures/translate/*.ssql``, its paths moved
  to a temporary folder so that its sources load) is started through a recorder around
  the real SparkSession; the calls recorded, all the way down the chains, equal the calls
  the printed translation makes when executed as Python against a stand-in session.
* ``translate --to pyspark`` of the flights example, run with plain ``python``, writes the
  same rows as ``sqlstream`` on the same input.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.connectors import CONNECTORS, resolve_options
from sqlstream.ir import plan as p
from tests.conftest import FIXTURES, ROOT, settings_kept
from tests.support.flights import copy_days
from tests.support.recording import Log, Recorded, Symbol, canonical
from tests.support.secret_token import SECRET

CASES = sorted((FIXTURES / "translate").glob("*.ssql"), key=lambda c: c.name)


def _compile_in(tmp_path: Path, case: Path) -> sqlstream.Pipeline:
    """``case`` compiled as if it lived in ``tmp_path/translate``, its inputs created."""
    text = case.read_text(encoding="utf-8").replace("'/tmp/ckpt/", f"'{tmp_path}/ckpt/")
    folder = tmp_path / "translate"
    folder.mkdir()
    pipeline = sqlstream.compile(  # trusted: the program runs, as exec compiles it
        text,
        {"dir": str(tmp_path / "data"), "threshold": 15},
        path=str(folder / case.name),
        trust=True,
    )
    for relation in pipeline.plan.relations:
        if isinstance(relation, p.SourceRelation) and relation.connector == "files":
            path = Path(relation.path)
            if path.suffix:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:
                path.mkdir(parents=True, exist_ok=True)
            if relation.infer_schema:
                (path / "part-0.csv").write_text("id,name\n1,a\n")
    return pipeline


def _printed_calls(text: str) -> list[str]:
    """The calls the translation makes when run as Python (``--`` comments dropped)."""
    code = "\n".join(line for line in text.splitlines() if not line.startswith("--"))
    log = Log()
    namespace = {
        "spark": Symbol(log, log.new()),
        "F": Symbol(log, log.new()),
        "importlib": importlib,
    }  # F: dead letters; importlib: foreachBatch functions
    exec(compile(code, "<translation>", "exec"), namespace)  # noqa: S102
    return canonical(log.events)


@pytest.mark.spark
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stem)
def test_printed_calls_are_the_calls_that_run(spark, tmp_path, monkeypatch, case):
    from pyspark.sql import functions

    from sqlstream.runtime import binder

    monkeypatch.setenv("SECRET_TOKEN", SECRET)
    pipeline = _compile_in(tmp_path, case)
    log = Log()
    before = spark.conf.get("spark.sql.shuffle.partitions")
    with settings_kept(spark, pipeline):  # a golden's SET (a watermark policy) must not leak
        started = binder.start(
            Recorded(spark, log, log.new()),
            pipeline,
            report=lambda _: None,
            check_restarts=False,  # reads settings and files: no binding call
            sql_functions=Recorded(functions, log, log.new()),
        )
        recorded = canonical(log.events)
        try:
            assert len(started) == len(pipeline.plan.queries)
            assert all(q._obj.exception() is None for q in started)  # started, not failed
        finally:
            for query in started:
                query._obj.stop()
            spark.conf.set("spark.sql.shuffle.partitions", before)
    printed = _printed_calls(pipeline.translate())
    redact = pipeline.plan.source.redact
    assert [redact(row) for row in recorded] == printed
    assert any(".start(" in row or ".toTable(" in row for row in printed)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.stem)
def test_binder_makes_the_printed_calls_without_spark(monkeypatch, case):
    """The same comparison with a stand-in session (no JVM): fast, and for every golden."""
    from sqlstream.runtime import binder

    monkeypatch.setenv("SECRET_TOKEN", SECRET)
    pipeline = sqlstream.compile(
        case.read_text(encoding="utf-8"),
        {"dir": "/data", "threshold": 15},
        path=f"translate/{case.name}",
    )
    log = Log()
    started = binder.start(
        Symbol(log, log.new()),
        pipeline,
        report=lambda _: None,
        check_restarts=False,  # reads settings and files: no binding call
        sql_functions=Symbol(log, log.new()),
    )
    assert len(started) == len(pipeline.plan.queries)
    redact = pipeline.plan.source.redact
    assert [redact(row) for row in canonical(log.events)] == _printed_calls(pipeline.translate())


@pytest.mark.spark
def test_pyspark_script_writes_what_sqlstream_writes(spark, tmp_path):
    example = ROOT / "examples" / "flights"
    days = sorted((example / "data" / "flights").glob("*.csv"))[:4]
    runs = {}
    for name in ("script", "sqlstream"):
        work = tmp_path / name
        copy_days(work, days)
        shutil.copy(example / "hourly_delays.ssql", work)
        runs[name] = sqlstream.compile_file(work / "hourly_delays.ssql")

    script = tmp_path / "hourly_delays.py"
    script.write_text(runs["script"].to_pyspark(master="local[1]"), encoding="utf-8")
    assert "import sqlstream" not in script.read_text()
    assert "from sqlstream" not in script.read_text()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    # what `sqlstream exec` runs: Session.run (the run API), here in the shared session
    ended = sqlstream.Session(spark).run(runs["sqlstream"])
    assert [(e.name, e.exception) for e in ended] == [("hourly", None)]

    script_rows = spark.read.parquet(str(tmp_path / "script" / "out" / "hourly")).collect()
    exec_rows = spark.read.parquet(str(tmp_path / "sqlstream" / "out" / "hourly")).collect()
    assert len(script_rows) > 4 * 3 * 10
    assert sorted(map(tuple, script_rows)) == sorted(map(tuple, exec_rows))


def test_translate_to_pyspark_writes_a_script_without_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", SECRET)
    out = tmp_path / "job.py"
    result = CliRunner().invoke(
        main,
        [
            "translate",
            "--to",
            "pyspark",
            "-o",
            str(out),
            "--master",
            "local[2]",
            "--conf",
            "spark.sql.shuffle.partitions=3",
            "--var",
            "threshold=15",
            str(FIXTURES / "translate" / "secrets.ssql"),
        ],
    )
    assert result.exit_code == 0, result.output
    script = out.read_text(encoding="utf-8")
    compile(script, str(out), "exec")
    assert SECRET not in script and "***" not in script
    assert "os.environ['SECRET_TOKEN']" in script
    assert "import sqlstream" not in script and "from sqlstream" not in script
    assert ".master('local[2]')" in script
    assert ".config('spark.sql.shuffle.partitions', '3')" in script
    assert ".config('spark.sql.session.timeZone', 'UTC')" in script
    assert "# QUERY out -> files sink out (line 5)" in script
    assert "spark.streams.awaitAnyTermination()" in script


def test_translate_text_is_the_default(tmp_path):
    case = FIXTURES / "translate" / "flights_hourly.ssql"
    result = CliRunner().invoke(main, ["translate", "--var", "dir=/data", str(case)])
    assert result.exit_code == 0, result.output
    assert result.output == sqlstream.compile_file(case, {"dir": "/data"}).translate()


def _resolve(text_options: dict[str, str], role: str):
    from sqlstream.diagnostics.source_text import Source
    from sqlstream.frontend import ast

    source = Source("x")
    span = source.span(0, 1)
    options = tuple(ast.Option(k, v, span, span, span) for k, v in text_options.items())
    return resolve_options(options, source, role, ast.Name("n", span), span)


def test_connector_modules_decide_format_and_path():
    assert sorted(CONNECTORS) == [
        "console",
        "delta",
        "files",
        "foreach_batch",
        "iceberg",
        "jdbc",
        "kafka",
        "memory",
        "noop",
        "postgres",
        "rate",
        "rate_micro_batch",
        "socket",
        "table",
    ]
    files = _resolve({"connector": "files", "format": "CSV", "path": "in"}, "source")
    assert files.source_target(lambda path: "/base/" + path) == ("csv", "/base/in")
    assert files.sink_target(lambda path: "/base/" + path) == ("csv", "/base/in")
    table = _resolve({"connector": "table", "table": "db.t"}, "sink")
    assert table.source_target(str) == (None, "db.t") == table.sink_target(str)
    rate = _resolve({"connector": "rate"}, "source")
    assert rate.source_target(str) == ("rate", None)
    memory = _resolve({"connector": "memory"}, "sink")
    assert memory.sink_target(str) == ("memory", None)
    assert CONNECTORS["rate"].continuous_source and not CONNECTORS["files"].continuous_sink


@pytest.mark.spark
def test_an_untrusted_compile_is_refused_before_any_call(spark, tmp_path):
    """A Python function an untrusted compile could not read (SS274) has no types: running
    the pipeline is refused at the function (SS271), before any binding call."""
    from sqlstream.diagnostics.errors import SqlStreamError
    from sqlstream.runtime import binder

    case = next(c for c in CASES if c.stem == "udfs")
    text = case.read_text(encoding="utf-8").replace("'/tmp/ckpt/", f"'{tmp_path}/ckpt/")
    folder = tmp_path / "outside"
    folder.mkdir()
    variables = {"dir": str(tmp_path / "data"), "threshold": 15}
    pipeline = sqlstream.compile(text, variables, path=str(folder / case.name))
    assert any(w.code == "SS274" for w in pipeline.plan.warnings)
    log = Log()
    with pytest.raises(SqlStreamError) as refused:
        binder.start(Recorded(spark, log, log.new()), pipeline, report=lambda _: None)
    assert refused.value.code == "SS271" and "trust=True" in (refused.value.hint or "")
    assert log.events == []
