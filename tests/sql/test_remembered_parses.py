"""Remembered parses (:func:`sqlstream.sql.parsing.remember_parses`, used by the language
server): a text parsed again is answered with a copy of the tree kept for it, which is the
tree a new parse gives — node types, arguments, positions (``meta``), comments and printed
SQL — for every query and expression of the tests and examples; copies are independent;
failures are parsed (and refused) again. No JVM."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.sql import parsing
from sqlstream.sql.expressions import BoundedCache
from sqlstream.sql.parsing import parse_expression, parse_query, to_spark_sql
from tests.support.query_texts import query_texts


@pytest.fixture
def remembering():
    """Parses remembered, in a store of this test's own (the process's is put back)."""
    kept = parsing._remembered
    parsing._remembered = BoundedCache()
    parsing.remember_parses(limit=10_000)
    yield parsing._remembered
    parsing._remembered = kept


def _shape(tree: exp.Expr) -> list:
    """Every node in walk order: its type, its non-node arguments, positions and comments."""
    return [
        (
            type(n),
            n._meta,
            n.comments,
            {k: v for k, v in n.args.items() if not isinstance(v, exp.Expr | list)},
        )
        for n in tree.walk()
    ]


def test_a_remembered_parse_is_the_tree_a_new_parse_gives(remembering):
    texts = query_texts()
    assert len(texts) > 300
    for kind, text in texts:
        parser = parse_query if kind == "query" else parse_expression
        parsing._remembered = BoundedCache()  # off
        try:
            fresh = parser(text)
        except SqlStreamError:
            continue
        parsing._remembered = remembering
        first, again = parser(text), parser(text)
        assert (kind, text) in remembering
        for tree in (first, again):
            assert tree is not fresh and tree == fresh
            assert _shape(tree) == _shape(fresh)
            assert to_spark_sql(tree) == to_spark_sql(fresh)


def test_remembered_trees_are_independent_copies(remembering):
    sql = "SELECT a, b FROM s WHERE a > 1"
    first = parse_query(sql)
    first.find(exp.Where).pop()  # callers rewrite the trees they get
    again = parse_query(sql)
    assert again.find(exp.Where) is not None
    assert to_spark_sql(again) == "SELECT a, b FROM s WHERE a > 1"
    assert parse_query(sql) is not again


def test_a_refused_text_is_refused_again_and_not_kept(remembering):
    for _ in range(2):
        with pytest.raises(SqlStreamError) as refused:
            parse_query("SELECT a FROM s WHERE")
        assert refused.value.code == "SS102"
    assert not remembering


def test_the_store_is_emptied_when_full(remembering):
    parsing.remember_parses(limit=2)
    for sql in ("a + 1", "b + 1", "c + 1"):
        parse_expression(sql)
    assert list(remembering) == [("expression", "c + 1")]
