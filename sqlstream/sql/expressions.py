"""The expression nodes sqlstream adds to sqlglot's tree (as sqlglot's ``expressions``
module defines its own): Spark's ``WATERMARK`` clause and Flink's window TVFs, and the
window TVFs' parameters. :mod:`sqlstream.sql.dialect` parses and prints them; the walks,
copies and keys of trees are :mod:`sqlstream.sql.tree_walks`.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = [
    "TVF_KINDS",
    "TVF_PARAMS",
    "TVF_SIGNATURES",
    "TVF_NAMED_PARAMS",
    "Watermark",
    "WindowTVF",
]


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
TVF_NAMED_PARAMS = {
    "DATA": "this",
    "TIMECOL": "time_column",
    "SIZE": "size",
    "SLIDE": "slide",
    "STEP": "step",
    "OFFSET": "offset",
    "GAP": "gap",
}


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
