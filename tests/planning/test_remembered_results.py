"""What the language server keeps across checks besides parses
(:meth:`sqlstream.ir.caches.CompileCaches.for_language_server`): rewritten trees
(``rewrites``, ``query_texts``), query schemas (``schemas``) and printed Spark SQL
(``printed``), keyed by :func:`sqlstream.sql.tree_walks.tree_key` (or the query text). A
compile answered from the stores gives the findings and the plan a compile with every store
off gives, for every program of the tests and examples; the key tells apart what a result
depends on. No JVM."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlglot import exp

import sqlstream
from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp.analysis import analyze
from sqlstream.sql import rewrite
from sqlstream.sql.parsing import parse_query
from sqlstream.sql.tree_walks import copy_tree, tree_key
from tests.conftest import PROGRAMS, program_variables


@pytest.fixture
def stores() -> CompileCaches:
    """The language server's stores, every one on, this test's own."""
    return CompileCaches.for_language_server(limit=100_000)


def _outcome(text: str, variables=None, caches: CompileCaches | None = None):
    """The findings and plan of the language server's check, answered from ``caches``
    (``None``: every store off)."""
    analysis = analyze(text, variables, caches=caches if caches is not None else CompileCaches())
    # errors compare by identity: the plan's warnings are compared as the findings are
    return (
        [(f.code, f.severity, f.message, f.span) for f in analysis.findings],
        None if analysis.plan is None else replace(analysis.plan, warnings=()),
    )


def test_answers_from_the_stores_are_what_every_program_compiles_to(stores):
    texts = [(p.read_text("utf-8-sig"), p) for p in PROGRAMS]
    fresh = [_outcome(text, program_variables(text)) for text, _ in texts]
    for _ in range(2):  # filling the stores, then answered from them
        for (text, path), expected in zip(texts, fresh, strict=True):
            assert _outcome(text, program_variables(text), stores) == expected, path
    assert len(stores.schemas) > 100 and len(stores.rewrites) > 100
    assert len(stores.printed) > 300 and len(stores.query_texts) > 300


def test_a_query_kept_by_its_text_is_still_checked_against_the_catalog(stores):
    head = (
        "CREATE STREAM s (a INT, ts TIMESTAMP) "
        "WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK out WITH (connector = 'console');\n"
    )
    query = "INSERT INTO out SELECT a FROM t;\n"
    declared = head.replace("CREATE STREAM s", "CREATE STREAM t")
    assert not [f for f in _outcome(declared + query, caches=stores)[0] if f[1] == "error"]
    assert "SELECT a FROM t" in stores.query_texts
    assert [c for c, *_ in _outcome(head + query, caches=stores)[0]] == [
        "SS201"
    ]  # t is not declared here


def test_a_ksql_window_query_is_not_kept_by_its_text(stores):
    text = (
        "CREATE STREAM s (a INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
        "WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK out WITH (connector = 'console');\n"
        "INSERT INTO out SELECT a, COUNT(*) AS n FROM s "
        "WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY a;\n"
    )
    first = _outcome(text, caches=stores)
    assert not [f for f in first[0] if f[1] == "error"]
    assert not stores.query_texts  # its rewrite reads the stream's event time from the catalog
    assert _outcome(text, caches=stores) == first


def test_the_judged_spark_minor_and_defined_functions_are_part_of_what_is_kept(stores):
    head = (
        "CREATE STREAM s (a INT, b STRING, ts TIMESTAMP) "
        "WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK out WITH (connector = 'console');\n"
    )
    query = "INSERT INTO out SELECT jaro_winkler_similarity(b, b) AS x FROM s;\n"
    codes = lambda text: [c for c, *_ in _outcome(text, caches=stores)[0]]  # noqa: E731
    version = "SET 'sqlstream.spark_version' = '{}';\n"
    assert "SS206" not in codes(version.format("4.3") + head + query)
    assert "SS206" in codes(version.format("4.0") + head + query)  # 4.3 added the function
    assert "SS206" in codes(head + "INSERT INTO out SELECT to_f(a) AS x FROM s;\n")
    defined = head + "CREATE FUNCTION to_f(x INT) RETURNS STRING RETURN CAST(x AS STRING);\n"
    kept = len(stores.schemas)
    assert "SS206" not in codes(defined + "INSERT INTO out SELECT to_f(a) AS x FROM s;\n")
    assert len(stores.schemas) == kept  # nothing kept while a function is defined


def test_tree_key_is_equal_for_equal_trees_and_tells_apart_what_differs():
    sql = "SELECT a, upper(b) AS u FROM s /* note */ WHERE a > 1 AND b = 'x'"
    tree = parse_query(sql)
    assert tree_key(tree) == tree_key(parse_query(sql)) == tree_key(copy_tree(tree))
    hash(tree_key(tree))
    different = [
        "SELECT a, upper(b) AS v FROM s /* note */ WHERE a > 1 AND b = 'x'",  # an alias
        "SELECT a, upper(b) AS u FROM s /* other */ WHERE a > 1 AND b = 'x'",  # a comment
        'SELECT a, upper(b) AS u FROM s /* note */ WHERE a > 1 AND b = "x"',  # written text
        "SELECT a, upper(b) AS u FROM s /* note */ WHERE a > 1 AND b = 'x' ",  # (same tree)
        "SELECT a,  upper(b) AS u FROM s /* note */ WHERE a > 1 AND b = 'x'",  # positions
        "SELECT a, upper(b) AS u FROM s /* note */ WHERE a > 1.0 AND b = 'x'",
    ]
    keys = [tree_key(parse_query(text)) for text in different]
    assert keys[3] == tree_key(tree)
    assert all(k != tree_key(tree) for i, k in enumerate(keys) if i != 3)
    one, true = exp.Literal(this="1", is_string=False), exp.Literal(this="1", is_string=0)
    assert tree_key(one) != tree_key(true)  # values keyed with their types
    marked = copy_tree(tree)
    marked.meta["x"] = 1
    flagged = copy_tree(tree)
    flagged.meta["x"] = True
    assert tree_key(marked) != tree_key(flagged)


def test_tree_key_refuses_what_it_cannot_key():
    tree = parse_query("SELECT a FROM s")
    typed = copy_tree(tree)
    typed.find(exp.Column).type = "INT"
    holding = copy_tree(tree)
    holding.meta["time"] = exp.column("ts")  # a node in meta (a lookup join's AS OF time)
    odd = copy_tree(tree)
    odd.find(exp.Identifier).args["extra"] = {"a": 1}
    assert tree_key(typed) is None and tree_key(holding) is None and tree_key(odd) is None


def test_a_rewrite_is_answered_with_an_independent_copy():
    stores = CompileCaches.for_language_server()
    sql = "SELECT window_start, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end"
    first = rewrite.rewrite_parsed(parse_query(sql), stores)
    again = rewrite.rewrite_parsed(parse_query(sql), stores)
    assert again is not first and again == first and tree_key(again) == tree_key(first)
    again.find(exp.Group).pop()  # the compiler changes the tree it gets
    third = rewrite.rewrite_parsed(parse_query(sql), stores)
    assert third.find(exp.Group) is not None and third == first
    assert len(stores.rewrites) == 1


def test_check_keeps_nothing_in_the_language_servers_stores(stores):
    text = PROGRAMS[0].read_text("utf-8-sig")
    _outcome(text, program_variables(text), stores)
    sizes = [len(s) for s in (stores.schemas, stores.rewrites, stores.printed, stores.parses)]
    sqlstream.check_plan(text, program_variables(text))  # as `check` does: stores of its own
    assert [
        len(s) for s in (stores.schemas, stores.rewrites, stores.printed, stores.parses)
    ] == sizes
    own = CompileCaches.for_compile()  # check's: the computed-column types only
    assert own.computed_types is not None
    assert (own.parses, own.printed, own.rewrites, own.query_texts, own.schemas) == (None,) * 5
