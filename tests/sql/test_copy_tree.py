"""The compiler's tree copy (:func:`sqlstream.sql.tree_walks.copy_tree`) equals sqlglot's
``Expression.copy`` attribute by attribute — class, arguments (in order), ``parent`` /
``arg_key`` / ``index`` links, comments, ``meta``, types and cached hashes — and shares
nothing mutable with the original, for every query and computed column of the tests and
examples: as parsed, with hashes computed, with types annotated, and rewritten. No JVM."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.sql.expressions import Watermark, WindowTVF
from sqlstream.sql.parsing import parse_expression, parse_query, to_spark_sql
from sqlstream.sql.rewrite import rewrite
from sqlstream.sql.tree_walks import copy_tree
from tests.support.query_texts import query_texts


def _nodes(tree: exp.Expr) -> list[exp.Expr]:
    """Every node, depth first, arguments in order (lists item by item)."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        children = []
        for value in node.args.values():
            for item in value if type(value) is list else [value]:
                if isinstance(item, exp.Expr):
                    children.append(item)
        stack.extend(reversed(children))
    return found


def _assert_same_copy(original: exp.Expr) -> None:
    expected, got = original.copy(), copy_tree(original)
    want, have, source = _nodes(expected), _nodes(got), _nodes(original)
    assert len(want) == len(have) == len(source)
    position = {id(n): i for i, n in enumerate(have)}
    expected_position = {id(n): i for i, n in enumerate(want)}
    originals = {id(n) for n in source}
    for w, h, o in zip(want, have, source, strict=True):
        assert type(h) is type(w)
        assert id(h) not in originals
        assert list(h.args) == list(w.args)
        for key, value in w.args.items():
            mine = h.args[key]
            if type(value) is list:
                assert type(mine) is list and mine is not o.args[key]
                assert [type(v) for v in mine] == [type(v) for v in value]
                assert [v for v in mine if not isinstance(v, exp.Expr)] == [
                    v for v in value if not isinstance(v, exp.Expr)
                ]
            elif not isinstance(value, exp.Expr):
                assert mine is value or mine == value
        assert (h.arg_key, h.index) == (w.arg_key, w.index)
        if w.parent is None:
            assert h.parent is None
        else:
            assert position[id(h.parent)] == expected_position[id(w.parent)]
        assert h._meta == w._meta and (h._meta is None or h._meta is not o._meta)
        assert h.comments == w.comments and (h.comments is None or h.comments is not o.comments)
        assert h._type == w._type and (h._type is None or h._type is not o._type)
        assert h._hash == w._hash
    assert got == expected
    assert to_spark_sql(got) == to_spark_sql(expected)


def _trees() -> list[exp.Expr]:
    trees = []
    for kind, text in query_texts():
        try:
            trees.append(parse_query(text) if kind == "query" else parse_expression(text))
        except SqlStreamError:
            continue
    return trees


def test_copy_tree_is_copy_for_every_parsed_query_and_expression():
    trees = _trees()
    assert len(trees) > 300
    assert any(t.find(WindowTVF) for t in trees) and any(t.find(Watermark) for t in trees)
    commented = parse_query("SELECT a /* first */, b -- second\nFROM s /* third */")
    assert any(n.comments for n in commented.walk())
    for tree in [*trees, commented]:
        _assert_same_copy(tree)


def test_copy_tree_is_copy_with_hashes_types_and_rewrites():
    annotated = hashed = 0
    for tree in _trees():
        hash(tree.find(exp.Column) or tree)  # a cached hash on part of the tree
        hashed += 1
        _assert_same_copy(tree)
        try:
            rewritten = rewrite(tree.copy())
        except SqlStreamError:
            continue
        _assert_same_copy(rewritten)
        typed = annotate_types(rewritten.copy(), dialect="spark")
        annotated += any(n._type is not None for n in typed.walk())
        _assert_same_copy(typed)
    assert hashed > 300 and annotated > 300


def test_copy_tree_deep_copies_meta_that_holds_nodes():
    tree = parse_query("SELECT a FROM s WHERE a > 1")
    where = tree.find(exp.Where)
    where.meta["kept"] = exp.column("b")  # e.g. a lookup join's AS OF time
    where.meta["pair"] = (1, 2)
    copied = copy_tree(tree).find(exp.Where)
    assert (
        copied.meta["kept"] == where.meta["kept"] and copied.meta["kept"] is not where.meta["kept"]
    )
    assert copied.meta["pair"] == (1, 2)


def test_copy_tree_makes_time_units_as_their_constructor_does():
    tree = parse_expression("date_trunc('HOUR', ts) + INTERVAL '1' DAY")
    _assert_same_copy(tree)
    assert any(
        isinstance(n, (exp.TimeUnit, exp.DateTrunc, exp.Interval)) for n in copy_tree(tree).walk()
    )
