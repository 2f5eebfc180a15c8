"""Freeing a replaced analysis without a full garbage collection.

A replaced :class:`~sqlstream.lsp.document_index.Analysis` is mostly reference cycles: each
sqlglot node links to its parent (``parent``) and the parent to it (``args``). Only a full
collection frees such cycles, and CPython's collector holds the GIL for the whole pass —
seconds on a long file, during which the language server's event loop answers nothing.

:func:`free_replaced` breaks those cycles instead, in Python code that lets the GIL switch
(every ``sys.getswitchinterval()`` seconds, 5 ms by default): it walks what the replaced
analysis reaches (``gc.get_referents``), finds the objects only it keeps alive with the
collector's own test restricted to them (:func:`unreachable`: every object held from
outside — the current analysis, the compile stores that share parse results across checks,
a class, a module — and all it reaches are left alone), and empties those: ``parent =
None`` on sqlglot nodes, ``clear()`` on dicts, lists and sets and on the attributes of
sqlstream's and sqlglot's objects. Reference counting then frees them as the last
reference to the replaced analysis goes. The cost is proportional to the replaced
analysis, not to the heap (a full collection walks every live object).
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterable

from sqlglot import exp

_OPAQUE = (type, types.ModuleType, types.BuiltinFunctionType, str, bytes, int, float)
_OURS = ("sqlstream", "sqlglot")
LIVE_DEPTH = 4
"""How many references from the live objects :func:`unreachable` marks alive unwalked."""


def _referents(obj: object) -> Iterable[object]:
    if isinstance(obj, types.FunctionType):  # its closure and defaults, not its globals
        return [*(obj.__closure__ or ()), *(obj.__defaults__ or ())]
    if isinstance(obj, _OPAQUE):
        return ()
    return gc.get_referents(obj)


def reachable(root: object, stop: set[int] | None = None) -> dict[int, object]:
    """``id`` → object, for each object reachable from ``root`` (included) through
    ``gc.get_referents``, not walking into modules, classes or a function's globals, nor
    into the objects whose ids are in ``stop`` (kept, not walked).

    Returns:
        A dict id → object (it keeps the objects alive while it is held).
    """
    stop = stop or set()
    seen: dict[int, object] = {}
    todo = [root]
    while todo:
        obj = todo.pop()
        if id(obj) not in seen:
            seen[id(obj)] = obj
            if id(obj) not in stop:
                todo.extend(_referents(obj))
    return seen


def near(roots: Iterable[object], depth: int) -> set[int]:
    """The ids of the objects at most ``depth`` references from ``roots`` (included)."""
    seen = {id(r) for r in roots}
    layer = list(roots)
    for _ in range(depth):
        layer = [c for obj in layer for c in _referents(obj) if id(c) not in seen]
        seen.update(id(c) for c in layer)
    return seen


def _refcounts(found: dict[int, object]) -> dict[int, int]:
    """id → reference count of each object of ``found`` (the dict's own reference and
    this function's included: see :func:`unreachable`)."""
    return {key: sys.getrefcount(obj) for key, obj in found.items()}


def unreachable(root: object, live: Iterable[object] = ()) -> list[object]:
    """The objects reachable from ``root`` that nothing else holds: CPython's collector's
    own test (a reference count minus the references from inside the set), run over what
    ``root`` reaches only, not over the whole heap. An object referenced from outside
    (the current analysis, the compile stores, a class, a module, a frame), or reachable
    from one that is, is left out; ``root`` itself is taken as unreachable (the caller's
    reference to it is its last).

    Args:
        root: an object no longer used (an analysis replaced or closed).
        live: objects in use (the current analysis, the stores): the objects a few
            references from them (:data:`LIVE_DEPTH`) are alive and not walked through,
            which spares walking the parts ``root`` shares with them.
    Returns:
        The objects that only ``root`` keeps alive, ``root`` first.
    """
    stop = near(live, LIVE_DEPTH)
    if id(root) in stop:  # still in use: nothing to free
        return []
    found = reachable(root, stop)
    inside: dict[int, int] = dict.fromkeys(found, 0)
    for key, obj in found.items():
        if key in stop:  # alive: what it holds is not counted as held from inside
            continue
        for child in _referents(obj):
            if id(child) in inside:
                inside[id(child)] += 1
    held = _refcounts({0: object()})[0]  # what an object only ``found`` holds counts
    counts = _refcounts(found)
    alive = [
        obj
        for key, obj in found.items()
        if key in stop or (key != id(root) and counts[key] - held > inside[key])
    ]
    del counts
    kept: set[int] = set()
    while alive:  # whatever an object held from outside reaches is alive too
        obj = alive.pop()
        if id(obj) not in kept:
            kept.add(id(obj))
            alive.extend(c for c in _referents(obj) if id(c) in found and id(c) not in kept)
    return [obj for key, obj in found.items() if key not in kept]


def _unlink(obj: object) -> bool:
    """Break what ``obj`` (reached only from a replaced analysis) links to, if it is a
    mutable container, a sqlglot node or an instance of a sqlstream/sqlglot class."""
    if isinstance(obj, exp.Expression):
        obj.parent = None
        return True
    if type(obj) in (dict, list, set):
        obj.clear()  # type: ignore[attr-defined]
        return True
    if type(obj).__module__.startswith(_OURS) and hasattr(obj, "__dict__"):
        vars(obj).clear()
        return True
    return False


def free_replaced(replaced: object, live: Iterable[object] = ()) -> int:
    """Break the reference cycles of what only ``replaced`` keeps alive
    (:func:`unreachable`), so reference counting frees it when the caller drops
    ``replaced``. An object held from anywhere else is never modified.

    Args:
        replaced: the analysis no longer used (the caller holds it until this returns;
            it is emptied: not to be used after).
        live: what stays in use (see :func:`unreachable`).
    Returns:
        The number of objects unlinked.
    """
    garbage = unreachable(replaced, live)
    unlinked = 0
    for obj in garbage:
        unlinked += _unlink(obj)
    while garbage:  # freed a few at a time (not one long deallocation holding the GIL)
        garbage.pop()
    return unlinked
