"""Remembered parses (the ``parses`` store of :class:`~sqlstream.ir.caches.CompileCaches`,
the language server's): a text parsed again is answered with a copy of the tree kept for
it, which is the tree a new parse gives — node types, arguments, positions (``meta``),
comments and printed SQL — for every query and expression of the tests and examples;
copies are independent; failures are parsed (and refused) again. No JVM."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir.caches import BoundedCache, CompileCaches
from sqlstream.sql.parsing import parse_expression, parse_query, to_spark_sql
from tests.support.query_texts import query_texts


@pytest.fixture
def caches():
    """Compile stores with parses remembered, this test's own."""
    return CompileCaches(parses=BoundedCache(10_000))


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


def test_a_remembered_parse_is_the_tree_a_new_parse_gives(caches):
    texts = query_texts()
    assert len(texts) > 300
    for kind, text in texts:
        parser = parse_query if kind == "query" else parse_expression
        try:
            fresh = parser(text)  # no stores
        except SqlStreamError:
            continue
        first, again = parser(text, caches), parser(text, caches)
        assert (kind, text) in caches.parses
        for tree in (first, again):
            assert tree is not fresh and tree == fresh
            assert _shape(tree) == _shape(fresh)
            assert to_spark_sql(tree) == to_spark_sql(fresh)


def test_remembered_trees_are_independent_copies(caches):
    sql = "SELECT a, b FROM s WHERE a > 1"
    first = parse_query(sql, caches)
    first.find(exp.Where).pop()  # callers rewrite the trees they get
    again = parse_query(sql, caches)
    assert again.find(exp.Where) is not None
    assert to_spark_sql(again) == "SELECT a, b FROM s WHERE a > 1"
    assert parse_query(sql, caches) is not again


def test_a_refused_text_is_refused_again_and_not_kept(caches):
    for _ in range(2):
        with pytest.raises(SqlStreamError) as refused:
            parse_query("SELECT a FROM s WHERE", caches)
        assert refused.value.code == "SS102"
    assert not caches.parses


def test_a_full_store_evicts_the_least_recently_used_answer_of_an_earlier_check():
    caches = CompileCaches(parses=BoundedCache(2))
    for sql in ("a + 1", "b + 1", "c + 1"):  # one check: its first two answers are kept
        parse_expression(sql, caches)
    assert list(caches.parses) == [("expression", "a + 1"), ("expression", "b + 1")]
    caches.next_check()
    parse_expression("a + 1", caches)  # answered, now the most recently used
    parse_expression("c + 1", caches)  # evicts b, used only by the earlier check
    assert list(caches.parses) == [("expression", "a + 1"), ("expression", "c + 1")]
