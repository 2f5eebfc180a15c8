"""What the language server keeps across checks besides parses: rewritten trees
(:func:`sqlstream.sql.rewrite.remember_rewrites`), query schemas
(:func:`sqlstream.analysis.schema.remember_schemas`) and printed Spark SQL
(:func:`sqlstream.sql.parsing.remember_printing`), all keyed by
:func:`sqlstream.sql.expressions.tree_key`. A compile answered from the stores gives the
findings and the plan a compile with every store off gives, for every program of the tests
and examples; the key tells apart what a result depends on. No JVM."""

from __future__ import annotations

from dataclasses import replace

import pytest
from sqlglot import exp

import sqlstream
from sqlstream.analysis import schema
from sqlstream.lsp.analysis import analyze
from sqlstream.sql import parsing, rewrite
from sqlstream.sql.expressions import BoundedCache, copy_tree, remembering, tree_key
from sqlstream.sql.parsing import parse_query
from tests.conftest import PROGRAMS, program_variables

STORES = (
    (parsing, "_remembered"),
    (schema, "_remembered"),
    (parsing, "_printed"),
    (rewrite, "_remembered"),
    (rewrite, "_texts"),
)


@pytest.fixture
def stores():
    """Every store off (a fresh cache of its own), the process's put back after the test."""
    kept = [getattr(module, name) for module, name in STORES]
    for module, name in STORES:
        setattr(module, name, BoundedCache())
    yield
    for (module, name), value in zip(STORES, kept, strict=True):
        setattr(module, name, value)


def _on() -> None:
    parsing.remember_parses(limit=100_000)
    schema.remember_schemas(limit=100_000)
    parsing.remember_printing(limit=100_000)
    rewrite.remember_rewrites(limit=100_000)


def _outcome(text: str, variables=None):
    """The findings and plan of the language server's check (inside ``remembering``)."""
    analysis = analyze(text, variables)
    # errors compare by identity: the plan's warnings are compared as the findings are
    return (
        [(f.code, f.severity, f.message, f.span) for f in analysis.findings],
        None if analysis.plan is None else replace(analysis.plan, warnings=()),
    )


def test_answers_from_the_stores_are_what_every_program_compiles_to(stores):
    texts = [(p.read_text("utf-8-sig"), p) for p in PROGRAMS]
    fresh = [_outcome(text, program_variables(text)) for text, _ in texts]
    _on()
    for _ in range(2):  # filling the stores, then answered from them
        for (text, path), expected in zip(texts, fresh, strict=True):
            assert _outcome(text, program_variables(text)) == expected, path
    assert len(schema._remembered) > 100 and len(rewrite._remembered) > 100
    assert len(parsing._printed) > 300 and len(rewrite._texts) > 300


def test_a_query_kept_by_its_text_is_still_checked_against_the_catalog(stores):
    _on()
    head = (
        "CREATE STREAM s (a INT, ts TIMESTAMP) "
        "WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK out WITH (connector = 'console');\n"
    )
    query = "INSERT INTO out SELECT a FROM t;\n"
    declared = head.replace("CREATE STREAM s", "CREATE STREAM t")
    assert not [f for f in _outcome(declared + query)[0] if f[1] == "error"]
    assert "SELECT a FROM t" in rewrite._texts
    assert [c for c, *_ in _outcome(head + query)[0]] == ["SS201"]  # t is not declared here


def test_a_ksql_window_query_is_not_kept_by_its_text(stores):
    _on()
    text = (
        "CREATE STREAM s (a INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
        "WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK out WITH (connector = 'console');\n"
        "INSERT INTO out SELECT a, COUNT(*) AS n FROM s "
        "WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY a;\n"
    )
    first = _outcome(text)
    assert not [f for f in first[0] if f[1] == "error"]
    assert not rewrite._texts  # its rewrite reads the stream's event time from the catalog
    assert _outcome(text) == first


def test_the_judged_spark_minor_and_defined_functions_are_part_of_what_is_kept(stores):
    _on()
    head = (
        "CREATE STREAM s (a INT, b STRING, ts TIMESTAMP) "
        "WITH (connector = 'files', path = 'in', format = 'json');\n"
        "CREATE SINK out WITH (connector = 'console');\n"
    )
    query = "INSERT INTO out SELECT jaro_winkler_similarity(b, b) AS x FROM s;\n"
    codes = lambda text: [c for c, *_ in _outcome(text)[0]]  # noqa: E731
    version = "SET 'sqlstream.spark_version' = '{}';\n"
    assert "SS206" not in codes(version.format("4.3") + head + query)
    assert "SS206" in codes(version.format("4.0") + head + query)  # 4.3 added the function
    assert "SS206" in codes(head + "INSERT INTO out SELECT to_f(a) AS x FROM s;\n")
    defined = head + "CREATE FUNCTION to_f(x INT) RETURNS STRING RETURN CAST(x AS STRING);\n"
    kept = len(schema._remembered)
    assert "SS206" not in codes(defined + "INSERT INTO out SELECT to_f(a) AS x FROM s;\n")
    assert len(schema._remembered) == kept  # nothing kept while a function is defined


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


def test_a_rewrite_is_answered_with_an_independent_copy(stores):
    rewrite.remember_rewrites()
    sql = "SELECT window_start, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end"
    with remembering():
        first = rewrite.rewrite_parsed(parse_query(sql))
        again = rewrite.rewrite_parsed(parse_query(sql))
        assert again is not first and again == first and tree_key(again) == tree_key(first)
        again.find(exp.Group).pop()  # the compiler changes the tree it gets
        third = rewrite.rewrite_parsed(parse_query(sql))
        assert third.find(exp.Group) is not None and third == first
    assert len(rewrite._remembered) == 1


def test_outside_remembering_nothing_is_kept_or_answered(stores):
    _on()
    text = PROGRAMS[0].read_text("utf-8-sig")
    sqlstream.check_plan(text, program_variables(text))  # as `check` does
    assert not schema._remembered and not rewrite._remembered and not parsing._printed
