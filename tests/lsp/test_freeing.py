"""Freeing a replaced analysis without a full garbage collection
(:mod:`sqlstream.lsp.freeing`): what only the replaced analysis holds is unlinked and freed
by reference counting; what anything else holds (the current analysis, the stores, an
outside reference) is left as it was. No JVM."""

from __future__ import annotations

import gc

import sqlglot
from sqlglot import exp

from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp.analysis import analyze
from sqlstream.lsp.document_index import Analysis
from sqlstream.lsp.freeing import free_replaced
from tests.support.long_files import mixed_file


def _nodes() -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, exp.Expression))


def _summary(analysis: Analysis) -> tuple:
    return (
        [(f.code, f.span) for f in analysis.findings],
        [(s.start, s.end) for s in analysis.statements],
        sorted(analysis.declarations),
        [(r.start, r.end) for r in analysis.references],
    )


def _edits(text: str, count: int) -> list[str]:
    return [text.replace("WHERE a > 0;", f"WHERE a > {i + 1};", 1) for i in range(count)]


def test_replaced_analyses_are_freed_and_the_current_one_is_untouched():
    text = mixed_file(200)
    caches = CompileCaches.for_language_server()
    edits = _edits(text, 3)
    expected = [_summary(analyze(edited)) for edited in edits]  # checks from scratch
    gc.collect()
    base = _nodes()
    analysis = analyze(text, caches=caches)
    gc.collect()
    size = _nodes() - base  # the nodes of one analysis and its stores
    nodes: list[int] = []
    for edited, summary in zip(edits, expected, strict=True):
        current = analyze(edited, previous=analysis, caches=caches)
        assert free_replaced(analysis, [current, caches]) > 0
        analysis = current  # the replaced analysis's last reference goes
        # freed by reference counting: a collection finds far less than an analysis
        assert gc.collect() < size / 5
        nodes.append(_nodes())
        assert _summary(current) == summary
    assert abs(nodes[2] - nodes[1]) < size / 50  # no growth per edit (an analysis each)


def test_an_object_held_from_outside_is_not_modified():
    tree = sqlglot.parse_one("SELECT a + 1 AS b FROM t WHERE c > 2")
    kept = tree.find(exp.Add)
    assert kept is not None
    replaced = {"tree": tree, "cycle": [tree]}
    replaced["cycle"].append(replaced)
    free_replaced(replaced)
    assert kept.parent is not None and kept.parent.parent is tree  # held: left as it was
    assert tree.sql() == "SELECT a + 1 AS b FROM t WHERE c > 2"
    assert replaced == {}  # only the replaced one held it: emptied


def test_a_replaced_object_still_in_use_is_not_freed():
    tree = sqlglot.parse_one("SELECT a FROM t")
    replaced = {"tree": tree}
    assert free_replaced(replaced, [[replaced]]) == 0
    assert replaced["tree"] is tree
