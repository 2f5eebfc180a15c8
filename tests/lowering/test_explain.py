"""``sqlstream explain``: each query's mode, trigger, state, watermarks, sources and sink
from the plan (no JVM), secrets redacted; ``--physical`` adds Spark's formatted plan."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.conftest import ROOT
from tests.support.written_constraints import FIXTURE, written_in

EXAMPLE = ROOT / "examples" / "flights" / "hourly_delays.ssql"
DEDUP = ROOT / "examples" / "flights" / "dedup.ssql"
JOIN = ROOT / "tests" / "fixtures" / "check" / "118_ss_inner_watermarks_range.ssql"
SECRET = "s3cr3t-t0ken"
SECRETS = """CREATE STREAM s (value BIGINT) WITH (connector = 'files', format = 'json',
                      path = '/in/${env:EXPLAIN_TOKEN}', pathGlobFilter = '*${env:EXPLAIN_TOKEN}*');
CREATE SINK out WITH (connector = 'files', format = 'json',
                      path = 'out/${env:EXPLAIN_TOKEN}/x', checkpoint_location = '/ckpt/${env:EXPLAIN_TOKEN}');
INSERT INTO out SELECT value FROM s EMIT EVERY INTERVAL '10' SECONDS;
"""


@pytest.fixture
def runner():
    return CliRunner()


def _json(runner, *args):
    result = runner.invoke(main, ["explain", *map(str, args), "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_text_of_the_example(runner):
    result = runner.invoke(main, ["explain", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("query hourly (line 44)\n")
    assert "  output mode: append (from EMIT)\n" in out
    assert "  trigger: trigger(availableNow=True)\n    why: from EMIT … ONCE" in out
    assert "state keys: window(time_hour, '1 hour'), origin" in out
    assert "aggregates: COUNT(*), AVG(dep_delay)" in out
    assert "watermarks: flights.time_hour delay 1 hour" in out
    assert f"flights: files csv {EXAMPLE.parent / 'data' / 'flights'}" in out
    assert "options: header=true, nullValue=NA, maxFilesPerTrigger=31" in out
    assert f"sink hourly: files parquet {EXAMPLE.parent / 'out' / 'hourly'}" in out


def test_json_shape_of_the_example(runner):
    (query,) = _json(runner, EXAMPLE)
    assert set(query) == {
        "name",
        "line",
        "sql",
        "output_mode",
        "output_mode_reason",
        "trigger",
        "stateful",
        "operators",
        "watermarks",
        "sources",
        "state_store",
        "global_watermark",
        "sink",
    }
    assert query["state_store"] is None and query["global_watermark"] is None
    assert query["trigger"] == {
        "kind": "available_now",
        "interval": None,
        "call": "trigger(availableNow=True)",
        "reason": query["trigger"]["reason"],
    }
    assert query["stateful"] is True
    (operator,) = query["operators"]
    assert operator["kind"] == "aggregation"
    assert operator["keys"] == ["window(time_hour, '1 hour')", "origin"]
    assert query["watermarks"] == [
        {"relation": "flights", "column": "time_hour", "delay": "1 hour"}
    ]
    (source,) = query["sources"]
    assert source["options"] == {
        "header": "true",
        "nullValue": "NA",
        "maxFilesPerTrigger": "31",
        "enforceSchema": "false",
        "mode": "FAILFAST",
    }
    assert source["watermark"] == {"column": "time_hour", "delay": "1 hour"}
    assert query["sink"]["format"] == "parquet"
    assert query["sink"]["checkpoint_location"].endswith("hourly_delays/hourly")


def test_default_trigger_and_dedup_operators(runner):
    queries = {q["name"]: q for q in _json(runner, DEDUP)}
    assert queries["routes"]["trigger"]["kind"] == "default"
    assert "as soon as the previous batch ends" in queries["routes"]["trigger"]["reason"]
    assert [o["kind"] for o in queries["hourly"]["operators"]] == ["deduplicate", "aggregation"]
    assert queries["unique_flights"]["operators"][0]["keys"] == ["carrier", "flight", "time_hour"]


def test_stream_stream_join(runner):
    result = runner.invoke(main, ["explain", str(JOIN), "--var", "data=/tmp/d"])
    assert result.exit_code == 0, result.output
    assert "stream_stream_join inner\n      state keys: c.user_id = v.user_id" in result.output
    assert "watermarks: clicks.ts delay 1 minute; views.ts delay 1 minute" in result.output
    assert "checkpoint: (temporary)" in result.output


def test_secrets_are_redacted(runner, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPLAIN_TOKEN", SECRET)
    path = tmp_path / "secrets.ssql"
    path.write_text(SECRETS, encoding="utf-8")
    for fmt in ("text", "json"):
        result = runner.invoke(main, ["explain", str(path), "--format", fmt])
        assert result.exit_code == 0, result.output
        assert SECRET not in result.output
        assert "***" in result.output
    (query,) = json.loads(result.output)
    assert query["sources"][0]["path"] == "/in/***"
    assert query["sources"][0]["options"]["pathGlobFilter"] == "*****"
    assert query["sink"]["checkpoint_location"] == "/ckpt/***"
    assert query["trigger"]["call"] == "trigger(processingTime='10 seconds')"


def test_errors_are_positioned(runner, tmp_path):
    path = tmp_path / "bad.ssql"
    path.write_text("SELECT a FROM nowhere;\n", encoding="utf-8")
    result = runner.invoke(main, ["explain", str(path)])
    assert result.exit_code == 1
    assert "SS201" in result.output


@pytest.mark.spark
def test_physical_plan_of_the_example(runner, spark):
    result = runner.invoke(main, ["explain", str(EXAMPLE), "--physical"])
    assert result.exit_code == 0, result.output
    assert "  physical plan:\n" in result.output
    assert "StateStoreSave" in result.output
    assert "HashAggregate" in result.output
    assert not spark.streams.active


def test_trigger_of_every_kind():
    from sqlstream.ir.plan import Trigger
    from sqlstream.lowering.explain import trigger_of

    assert trigger_of(None)["call"] is None
    every = trigger_of(Trigger("processing_time", "1 minute"))
    assert every["call"] == "trigger(processingTime='1 minute')"
    assert "a micro-batch every 1 minute" in every["reason"]
    continuous = trigger_of(Trigger("continuous", "5 seconds"))
    assert continuous == {
        "kind": "continuous",
        "interval": "5 seconds",
        "call": "trigger(continuous='5 seconds')",
        "reason": continuous["reason"],
    }
    assert "a checkpoint every 5 seconds" in continuous["reason"]


@pytest.mark.spark
@pytest.mark.parametrize("declared", [False, True], ids=["annotated", "declared"])
def test_physical_plans_json_stays_clean_of_a_module_print(tmp_path, spark, declared):
    """``explain --physical --format json`` defines the functions in Spark (it trusts): a
    module's print at import goes to stderr, imported by the compile (``annotated``) or
    only by the program's function block (``declared`` types: nothing to check)."""
    from tests.support.user_modules import project

    module = f"printing_{tmp_path.name.replace('-', '_')}{int(declared)}"
    pipeline = project(tmp_path, module)
    (tmp_path / "in").mkdir()
    if declared:
        text = pipeline.read_text(encoding="utf-8")
        pipeline.write_text(
            text.replace(
                "CREATE FUNCTION shout AS", "CREATE FUNCTION shout(a STRING) RETURNS STRING AS"
            ),
            encoding="utf-8",
        )
    result = CliRunner().invoke(main, ["explain", "--physical", "--format", "json", str(pipeline)])
    assert result.exit_code == 0, result.output
    (described,) = json.loads(result.stdout)  # stdout is the JSON document alone
    assert (
        "BatchEvalPython" in described["physical_plan"]
        or "ArrowEvalPython" in described["physical_plan"]
    )
    assert "Content-Length: 7" in result.stderr
    assert (tmp_path / "MARKER").exists()
    assert not spark.streams.active


def test_expectations_at_the_stream_and_sink_they_guard(runner):
    """Each stream rule under the source it is checked on, each sink rule under the sink,
    as written in the file (text and JSON)."""
    rules = written_in(FIXTURE)
    (query,) = _json(runner, FIXTURE, "--var", "dir=/data")
    (source,) = query["sources"]
    shown = [
        (source["relation"], e["name"], e["condition"], e["on_violation"])
        for e in source["expectations"]
    ]
    shown += [
        (query["sink"]["name"], e["name"], e["condition"], e["on_violation"])
        for e in query["sink"]["expectations"]
    ]
    assert shown == [(r.relation, r.name, r.condition, r.on_violation) for r in rules]
    result = runner.invoke(main, ["explain", str(FIXTURE), "--var", "dir=/data"])
    assert result.exit_code == 0, result.output
    out = result.output
    stream_part, sink_part = out.split("\n  sink ")
    stream_part += "\n"
    for rule in rules:
        line = f"{rule.name} EXPECT ({rule.condition})" + (
            f" {rule.on_violation}" if rule.on_violation else ""
        )
        part = sink_part if rule.kind == "sink" else stream_part
        indent = "      " if rule.kind == "sink" else "        "
        assert f"\n{indent}{line}\n" in "\n" + part, line
    assert "      expectations (on each row read):\n" in stream_part
    assert "    expectations (on each row written):\n" in sink_part


def test_no_expectations_no_lines(runner):
    result = runner.invoke(main, ["explain", str(EXAMPLE)])
    assert "expectations" not in result.output
    (query,) = _json(runner, EXAMPLE)
    assert query["sources"][0]["expectations"] == [] and query["sink"]["expectations"] == []
