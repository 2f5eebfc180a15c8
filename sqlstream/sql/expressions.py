"""The expression nodes sqlstream adds to sqlglot's tree (as sqlglot's ``expressions``
module defines its own): Spark's ``WATERMARK`` clause and Flink's window TVFs, and the
window TVFs' parameters. :mod:`sqlstream.sql.dialect` parses and prints them.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterator

from sqlglot import exp

__all__ = ["TVF_KINDS", "TVF_PARAMS", "TVF_SIGNATURES", "TVF_NAMED_PARAMS", "Watermark", "WindowTVF",
           "find_all", "find_own"]


# Nodes that never hold another node (their arguments are strings and flags).
_LEAVES = (exp.Identifier, exp.Literal, exp.Var, exp.Null, exp.Boolean)


@functools.lru_cache(maxsize=None)
def _skipped(types: tuple[type, ...]) -> frozenset[type]:
    return frozenset(leaf for leaf in _LEAVES if not issubclass(leaf, types))


def find_all(node: exp.Expr, *types: type) -> Iterator[exp.Expr]:
    """The nodes of ``node``'s tree (``node`` included) that are instances of ``types``, in
    sqlglot's ``Expression.find_all`` order (breadth first, arguments in order), without
    its three nested generators per node, and without queueing leaves (identifiers,
    literals, …) that cannot match: about three times as fast, and the compiler walks each
    query some 60 times (``bench/README.md``, "Compile scaling"; the equivalence is
    tested over every query of the tests and examples in tests/sql/test_dialect.py)."""
    return _walk(node, types, own=False)


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


TVF_KINDS = ("TUMBLE", "HOP", "CUMULATE", "SESSION")

# Positional parameters of each window TVF after the relation and the time column, in
# Flink's order (https://nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/window-tvf/).
TVF_PARAMS: dict[str, tuple[tuple[str, ...], int]] = {
    # kind: (parameter names, number required)
    "TUMBLE": (("size", "offset"), 1),
    "HOP": (("slide", "size", "offset"), 2),
    "CUMULATE": (("step", "size", "offset"), 2),
    "SESSION": (("gap",), 1),
}
TVF_SIGNATURES = {
    "TUMBLE": "TUMBLE(relation, time_column, size [, offset])",
    "HOP": "HOP(relation, time_column, slide, size [, offset])",
    "CUMULATE": "CUMULATE(relation, time_column, step, size [, offset])",
    "SESSION": "SESSION(relation, time_column, gap)",
}
TVF_NAMED_PARAMS = {"DATA": "this", "TIMECOL": "time_column", "SIZE": "size", "SLIDE": "slide",
                 "STEP": "step", "OFFSET": "offset", "GAP": "gap"}


class Watermark(exp.Expression):
    """Spark's ``WATERMARK <column> DELAY OF <interval>`` clause of a FROM relation.

    Args:
        this: the event-time column (a named expression: ``ts`` or ``expr AS ts``).
        expression: the delay, an :class:`~sqlglot.expressions.Interval`.

    Spark source: ``watermarkClause`` in ``SqlBaseParser.g4`` (Spark 4.1+; 4.0 refuses it: SS338).
    """

    arg_types = {"this": True, "expression": True}


class WindowTVF(exp.Expression):
    """A Flink window table-valued function used as a relation: TUMBLE, HOP, CUMULATE or SESSION.

    Args:
        this: the input relation (:class:`~sqlglot.expressions.Table` or ``Subquery``).
        kind: ``"TUMBLE"``, ``"HOP"``, ``"CUMULATE"`` or ``"SESSION"``.
        time_column: the event-time :class:`~sqlglot.expressions.Column`.
        size: window length (TUMBLE, HOP); the largest window (CUMULATE).
        slide: hop length (HOP).
        step: how much each cumulating window grows (CUMULATE).
        offset: window start offset (TUMBLE, HOP, CUMULATE), Spark's ``startTime``.
        gap: session gap (SESSION); may be an expression on the row (dynamic gap).
        partition_by: SESSION's ``PARTITION BY`` keys (Flink 1.19+), a list of columns.
        alias: optional :class:`~sqlglot.expressions.TableAlias`.
        joins: joins parsed after the relation when sqlglot asks for them.

    Flink source: "Windowing table-valued functions" in the Flink SQL docs.
    """

    arg_types = {
        "this": True,
        "kind": True,
        "time_column": True,
        "size": False,
        "slide": False,
        "step": False,
        "offset": False,
        "gap": False,
        "partition_by": False,
        "alias": False,
        "joins": False,
    }

    @property
    def kind(self) -> str:
        """``"TUMBLE"``, ``"HOP"``, ``"CUMULATE"`` or ``"SESSION"``."""
        return self.args["kind"]
