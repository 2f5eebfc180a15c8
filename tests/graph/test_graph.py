"""``sqlstream graph``: every relation, query and sink of each example in the DOT with the
edges its SQL implies; every format renders; the pictures in docs/pipelines are current."""

from __future__ import annotations

import html
import importlib.util
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.graph.dot import to_dot, to_mermaid
from sqlstream.graph.model import build
from sqlstream.graph.render import FORMATS, render
from tests.conftest import ROOT
from tests.support.written_constraints import FIXTURE, written_in

EXAMPLES = sorted((ROOT / "examples").rglob("*.ssql"))
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot not installed")


def _tool():
    spec = importlib.util.spec_from_file_location(
        "gen_pipeline_pictures", ROOT / "tools" / "gen_pipeline_pictures.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()


def _declared(text: str) -> dict[str, set[str]]:
    """What the file declares, read from its text (not from the code under test)."""
    body = re.sub(r"--[^\n]*", "", text)
    found = {
        kind: {m.lower() for m in re.findall(rf"CREATE\s+{kind}\s+(\w+)", body, re.I)}
        for kind in ("STREAM", "TABLE", "VIEW", "SINK")
    }
    found["INSERT"] = {m.lower() for m in re.findall(r"INSERT\s+INTO\s+(\w+)", body, re.I)}
    return found


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_dot_holds_every_relation_and_edge(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    graph = TOOL.graph_of(path)
    dot = to_dot(graph)
    declared = _declared(path.read_text(encoding="utf-8"))
    for kind, prefix in (
        ("STREAM", "stream"),
        ("TABLE", "table"),
        ("VIEW", "view"),
        ("SINK", "sink"),
    ):
        for name in declared[kind]:
            assert f'"{prefix}:{name}"' in dot, (path.name, name)
    for sink in declared["INSERT"]:  # each INSERT INTO is a query writing its sink
        assert f'-> "sink:{sink}"' in dot
    ids = {n.id for n in graph.nodes}
    for edge in graph.edges:  # every edge joins two drawn nodes, and is in the DOT
        assert {edge.source, edge.target} <= ids
        assert f'"{edge.source}" -> "{edge.target}"' in dot
    for node in graph.nodes:  # every relation is read, or reads something
        touching = [e for e in graph.edges if node.id in (e.source, e.target)]
        assert touching, node.id


def test_edges_follow_the_sql(monkeypatch):
    monkeypatch.chdir(ROOT)
    chained = TOOL.graph_of(ROOT / "examples/stateful/chained.ssql")
    edges = {(e.source, e.target, e.kind) for e in chained.edges}
    assert edges == {
        ("stream:flights", "view:unique_flights", "reads"),  # through the dedup steps
        ("view:unique_flights", "view:hourly", "reads"),
        ("view:hourly", "query:daily", "reads"),
        ("view:unique_flights", "query:daily_delayed", "reads"),
        ("query:daily", "sink:daily", "writes"),
        ("query:daily_delayed", "sink:daily_delayed", "writes"),
    }
    weather = TOOL.graph_of(ROOT / "examples/joins/weather.ssql")
    assert {(e.source, e.kind) for e in weather.edges if e.target == "query:flight_weather"} == {
        ("stream:flights", "join"),
        ("stream:weather", "join"),
    }
    query = weather.node("query:flight_weather")
    assert "join" in query.marks and "stateful" in query.marks
    assert "stream-stream inner join on f.origin = w.origin" in query.details
    assert "watermark time_hour − 30 minute" in weather.node("stream:flights").details


def test_dead_letter_path_is_marked():
    text = (ROOT / "tests/fixtures/translate/on_error.ssql").read_text(encoding="utf-8")
    graph = build(sqlstream.compile(text, {"dir": "/data"}).plan)
    assert ("stream:flights", "query:bad", "dead_letter") in {
        (e.source, e.target, e.kind) for e in graph.edges
    }
    assert "dead_letter" in graph.node("query:bad").marks
    assert "dead letters" in to_dot(graph) and "-.->|dead letters|" in to_mermaid(graph)


def test_secrets_are_not_drawn():
    text = (
        "CREATE STREAM s (a INT) WITH (connector = 'files', format = 'csv', "
        "path = '/data/${env:SECRET_DIR}');\nSELECT a FROM s;\n"
    )
    import os

    os.environ["SECRET_DIR"] = "hush-hush"
    try:
        graph = build(sqlstream.compile(text).plan)
    finally:
        del os.environ["SECRET_DIR"]
    assert "hush-hush" not in to_dot(graph) and "/data/***" in to_dot(graph)


@needs_dot
@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_renders(fmt, monkeypatch):
    monkeypatch.chdir(ROOT)
    data = render(TOOL.graph_of(ROOT / "examples/joins/weather.ssql"), fmt)
    expected = {
        "svg": b"<svg",
        "png": b"\x89PNG",
        "dot": b"digraph",
        "mermaid": b"flowchart LR",
        "html": b"<!DOCTYPE html>",
    }[fmt]
    assert expected in data[:400]
    if fmt in ("svg", "html"):
        assert b"flights_and_weather" in data and b"<svg" in data


@needs_dot
def test_cli_writes_the_file_and_stdout(tmp_path):
    runner = CliRunner()
    out = tmp_path / "p.svg"
    example = str(ROOT / "examples/stateful/two_feeds.ssql")
    result = runner.invoke(main, ["graph", example, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"<?xml") and b"jfk_lga_feed" in out.read_bytes()
    result = runner.invoke(main, ["graph", example, "--format", "mermaid"])
    assert result.exit_code == 0 and result.output.startswith("flowchart LR")
    result = runner.invoke(main, ["graph", str(ROOT / "examples/kafka/hourly_delays_kafka.ssql")])
    assert result.exit_code == 1 and "SS001" in result.output


def test_graph_does_not_import_pyspark():
    code = (
        "import sys, sqlstream.cli, sqlstream.graph.render, sqlstream.graph.model; "
        "assert not any(m.startswith('pyspark') for m in sys.modules), 'pyspark'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_pictures_in_docs_are_current():
    assert TOOL.main(["--check"]) == 0, "run python tools/gen_pipeline_pictures.py"
    for path in EXAMPLES:
        name = TOOL.picture_name(path)
        for suffix in (".svg", ".png"):
            assert (ROOT / "docs" / "pipelines" / f"{name}{suffix}").exists()


def test_mermaid_ids_are_distinct():
    """Streams `a-b` and `a_b` (and names only punctuation tells apart) are distinct nodes;
    every edge joins the ids of its own two nodes."""
    names = ["`a-b`", "a_b", "`a b`", "`a.b`", "`a__b`", "`a_2d_b`", "`end`", "`é`"]
    text = "".join(
        f"CREATE STREAM {name} (value BIGINT) WITH (connector = 'rate');\n"
        f"CREATE SINK k{i} WITH (connector = 'console');\n"
        f"INSERT INTO k{i} SELECT value FROM {name};\n"
        for i, name in enumerate(names)
    )
    graph = build(sqlstream.compile(text).plan)
    mermaid = to_mermaid(graph)
    declared = re.findall(r"^  (\w+)[(\[]", mermaid, re.M)
    assert len(declared) == len(graph.nodes) == len(set(declared))
    edges = re.findall(r"^  (\w+) [-=.]\S* (\w+)$", mermaid, re.M)
    assert len(edges) == len(graph.edges) and {e for pair in edges for e in pair} <= set(declared)
    assert "stream_a_2d_b" in declared and "stream_a__b" in declared


def test_expectations_are_drawn_on_the_node_they_guard():
    """Each rule is a line of its stream's or sink's box (DOT and Mermaid): its name, its
    condition and, for DROP ROW and FAIL UPDATE, its action; the query box has none."""
    rules = written_in(FIXTURE)
    graph = build(sqlstream.compile(FIXTURE.read_text(encoding="utf-8"), {"dir": "/data"}).plan)
    dot, mermaid = to_dot(graph), to_mermaid(graph)
    for rule in rules:
        line = f"expect {rule.name}: {rule.condition}" + (
            f" → {rule.on_violation.removeprefix('ON VIOLATION ')}" if rule.on_violation else ""
        )
        assert line in graph.node(f"{rule.kind}:{rule.relation}").details
        assert html.escape(line) in dot
        assert html.escape(line, quote=False).replace("#", "#35;") in mermaid
    assert not [d for d in graph.node("query:hourly_out").details if d.startswith("expect ")]


def test_mermaid_labels_keep_quotes_readable():
    text = (
        "CREATE STREAM s (origin STRING, CONSTRAINT known EXPECT (origin IN ('EWR', \"#1\")))\n"
        "  WITH (connector = 'files', path = '/in', format = 'json');\n"
        "CREATE SINK k WITH (connector = 'console');\nINSERT INTO k SELECT origin FROM s;\n"
    )
    mermaid = to_mermaid(build(sqlstream.compile(text).plan))
    assert "expect known: origin IN ('EWR', #quot;#35;1#quot;)" in mermaid
