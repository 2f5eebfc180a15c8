"""Walks over a sqlglot tree that the compiler makes many times per query, each faster
than sqlglot's own for the same result: :func:`find_all` and :func:`find_own` (the nodes of
given classes, in sqlglot's order), :func:`copy_tree` (``Expression.copy``'s tree) and
:func:`tree_key` (a hashable key of everything a tree holds, for the stores of
:class:`~sqlstream.ir.caches.CompileCaches`).
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterator
from copy import deepcopy
from typing import TypeVar, overload

from sqlglot import exp
from sqlglot.expressions.core import Expr

__all__ = ["copy_tree", "find_all", "find_own", "tree_key"]


# Nodes that never hold another node (their arguments are strings and flags).
_LEAVES = (exp.Identifier, exp.Literal, exp.Var, exp.Null, exp.Boolean)


@functools.cache
def _skipped(types: tuple[type, ...]) -> frozenset[type]:
    return frozenset(leaf for leaf in _LEAVES if not issubclass(leaf, types))


@overload
def find_all(node: exp.Expr, kind: type[E], /) -> Iterator[E]: ...
@overload
def find_all(node: exp.Expr, *types: type) -> Iterator[exp.Expr]: ...
def find_all(node: exp.Expr, *types: type) -> Iterator[exp.Expr]:
    """The nodes of ``node``'s tree (``node`` included) that are instances of ``types``, in
    sqlglot's ``Expression.find_all`` order (breadth first, arguments in order), without
    its three nested generators per node, and without queueing leaves (identifiers,
    literals, …) that cannot match: about three times as fast, and the compiler walks each
    query some 60 times (``bench/README.md``, "Compile scaling"; the equivalence is
    tested over every query of the tests and examples in tests/sql/test_dialect.py)."""
    return _walk(node, types, own=False)


@overload
def find_own(select: exp.Expr, kind: type[E], /) -> Iterator[E]: ...
@overload
def find_own(select: exp.Expr, *types: type) -> Iterator[exp.Expr]: ...
def find_own(select: exp.Expr, *types: type) -> Iterator[exp.Expr]:
    """The nodes of ``select``'s tree that are instances of ``types`` and whose nearest
    enclosing SELECT is ``select`` (``n.find_ancestor(exp.Select) is select``), in
    :func:`find_all`'s order; nested SELECTs are yielded but not entered. One walk, where
    asking each node for its ancestor costs time quadratic in the depth of the query."""
    return _walk(select, types, own=True)


def _walk(root: exp.Expr, types: tuple[type, ...], own: bool) -> Iterator[exp.Expr]:
    """The breadth-first walk of :func:`find_all` (``own``: of :func:`find_own`)."""
    skipped = _skipped(types)
    queue = deque((root,))
    pop, push = queue.popleft, queue.append
    while queue:
        current = pop()
        if not own or current is not root:
            if isinstance(current, types):
                yield current
            if own and isinstance(current, exp.Select):
                continue
        for value in current.args.values():
            if type(value) is list:
                for item in value:
                    if hasattr(item, "parent") and type(item) not in skipped:
                        push(item)
            elif hasattr(value, "parent") and type(value) not in skipped:
                push(value)


E = TypeVar("E", bound=exp.Expr)

# Meta values deepcopy returns as they are (so a shallow copy of a meta dict holding only
# these is its deep copy); positions (``start``, ``end``, ``line``, ``col``) are ints.
_ATOMIC = frozenset((int, str, float, bool, type(None)))
_new = object.__new__


def _atomic_tuple(value: object) -> bool:
    """A tuple of :data:`_ATOMIC` values (deepcopy returns it as it is, too)."""
    return type(value) is tuple and all(type(x) in _ATOMIC for x in value)


_PLAIN_INIT: dict[type, bool] = {}
"""Class → whether ``cls()`` runs sqlglot's own ``Expr.__init__`` only (with no arguments
it sets the eight slots to an empty dict and ``None``); a few classes (``TimeUnit``'s) add
to it."""


def copy_tree(root: E) -> E:
    """A copy of ``root``'s tree equal in every attribute to sqlglot's ``root.copy()``
    (``Expression.__deepcopy__``: same classes, arguments, ``parent`` / ``arg_key`` /
    ``index`` links, comments, types, cached hashes, and ``meta`` dicts deep-copied), two to
    three times as fast: a node is made without calling its ``__init__`` where that is
    sqlglot's plain one, and a ``meta`` dict holding only ints, strings, floats, booleans,
    ``None`` and tuples of these (positions, a literal's written text) is copied
    shallowly, which is what ``deepcopy`` makes of it.
    The compiler copies each query several times (the parse kept by
    parse kept in the language server's stores, the tree the schema checks change, the
    tree printed). Equality with ``copy()`` attribute by attribute is tested over every
    query of the tests and examples (``tests/sql/test_copy_tree.py``).

    Args:
        root: any sqlglot node.

    Returns:
        The new tree's root (its ``parent`` is ``None``, as ``copy()`` gives).
    """
    new = _blank(root)
    stack: list[tuple[Expr, Expr]] = [(root, new)]
    pop, push, atomic = stack.pop, stack.append, _ATOMIC
    while stack:
        node, copy = pop()
        comments = node.comments
        if comments is not None:
            copy.comments = (
                comments[:] if all(type(c) is str for c in comments) else deepcopy(comments)
            )
        if node._type is not None:
            copy._type = deepcopy(node._type)
        meta = node._meta
        if meta is not None:
            for value in meta.values():
                if type(value) not in atomic and not _atomic_tuple(value):
                    copy._meta = deepcopy(meta)
                    break
            else:
                copy._meta = meta.copy()
        args = copy.args
        nested = False  # copy() sets children with set()/append(), which drop the hash
        for key, value in node.args.items():
            if type(value) is list:
                items: list = []
                for item in value:
                    if isinstance(item, Expr):
                        child = _blank(item)
                        child.parent, child.arg_key, child.index = copy, key, len(items)
                        push((item, child))
                        items.append(child)
                    else:
                        items.append(item)
                args[key] = items
                nested = nested or bool(items)
            elif isinstance(value, Expr):
                child = _blank(value)
                child.parent, child.arg_key = copy, key
                args[key] = child
                push((value, child))
                nested = True
            else:
                args[key] = value
        if not nested:
            copy._hash = node._hash
    return new


def _blank(node: E) -> E:
    """``type(node)()``: an empty node of the same class."""
    cls = node.__class__
    plain = _PLAIN_INIT.get(cls)
    if plain is None:
        plain = _PLAIN_INIT[cls] = cls.__init__ is Expr.__init__
    if not plain:
        return cls()
    new = _new(cls)
    new.args = {}
    new.parent = new.arg_key = new.index = new.comments = new._type = new._meta = new._hash = None
    return new


_CHILD = object()  # in a tree_key: "a node here", its own entries follow in walk order


def tree_key(root: exp.Expr, tables: list | None = None) -> tuple | None:
    """A hashable key of everything ``root``'s tree holds: each node's class, arguments (in
    order: nodes, lists, and values with their types, so ``1``, ``1.0`` and ``TRUE`` differ),
    ``meta`` and comments, in one prefix-free sequence (two trees with equal keys are equal
    in all of these). ``None`` when the tree holds what the key does not capture exactly:
    a type (``_type``, set by annotation), a ``meta`` value that is not an int, string,
    float, boolean, ``None`` or a tuple of these (a lookup join's ``AS OF`` time is a node
    in ``meta``), an argument that is none of the first five. A result computed from these
    alone may be kept under the key (:attr:`sqlstream.ir.caches.CompileCaches.schemas`).

    ``tables``, when given, receives the tree's ``Table`` nodes (in walk order; the walk
    stops early when the result is ``None``)."""
    out: list = []
    add, stack, atomic = out.append, [root], _ATOMIC
    while stack:
        node = stack.pop()
        if node._type is not None:
            return None
        meta, comments, args = node._meta, node.comments, node.args
        if meta:
            entries = []
            for k, v in meta.items():
                if type(v) in atomic:
                    entries.append((k, type(v), v))
                elif _atomic_tuple(v):  # a string literal's written text (``verbatim``)
                    entries.append((k, tuple, tuple((type(x), x) for x in v)))
                else:
                    return None
            add(tuple(entries))
        else:
            add(meta is not None)
        if comments is not None and any(type(c) is not str for c in comments):
            return None
        add(node.__class__)
        if tables is not None and isinstance(node, exp.Table):
            tables.append(node)
        add(None if comments is None else tuple(comments))
        add(len(args))
        children = []
        for key, value in args.items():
            add(key)
            if type(value) is list:
                add((list, len(value)))
                for item in value:
                    if isinstance(item, Expr):
                        add(_CHILD)
                        children.append(item)
                    elif type(item) in atomic:
                        add((type(item), item))
                    else:
                        return None
            elif isinstance(value, Expr):
                add(_CHILD)
                children.append(value)
            elif type(value) in atomic:
                add((type(value), value))
            else:
                return None
        stack.extend(reversed(children))
    return tuple(out)
