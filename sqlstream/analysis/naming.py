"""Output names: the name Spark gives a select item that has no alias.

Spark names an unaliased expression after its SQL, in its own spelling: ``count(1)`` for
``COUNT(*)``, ``(flight + 1)``, ``upper(carrier)``, ``CAST(x AS INT)`` (or ``x`` at the top
of the list), ``window`` for a ``window(…)`` call. :func:`output_name` follows Spark 4.1
for the common cases (checked against ``df.schema`` in ``tests/analysis/test_schema.py``) and is
best effort otherwise.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ErrorLevel

from sqlstream.analysis.spark_types import WINDOW_FUNCTIONS, type_string
from sqlstream.sql.dialect import SqlStream
from sqlstream.sql.tree_walks import copy_tree

__all__ = ["output_name", "pretty"]

_OPERATORS: dict[type[exp.Expr], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.EQ: "=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.And: "AND",
    exp.Or: "OR",
    exp.NullSafeEQ: "<=>",
    exp.BitwiseAnd: "&",
    exp.BitwiseOr: "|",
    exp.BitwiseXor: "^",
    exp.IntDiv: "div",
}


_UPPER_NAMES = {
    "floor",
    "ceil",
    "sqrt",
    "power",
    "exp",
    "log",
    "log2",
    "log1p",
    "expm1",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinh",
    "cosh",
    "tanh",
    "cot",
    "degrees",
    "radians",
    "cbrt",
    "signum",
    "rint",
    "e",
    "pi",
    "spark_partition_id",
    "dense_rank",
    "percent_rank",
    "rank",
    "row_number",
}


def pretty(node: exp.Expr, top: bool = False) -> str:
    """Spark's automatic name of an unaliased expression, as Spark names the SQL that
    :func:`~sqlstream.sql.parsing.to_spark_sql` prints (common cases; best effort otherwise)."""
    if isinstance(node, (exp.Column, exp.Dot)) and not node.is_star:
        if isinstance(node, exp.Dot) and not isinstance(node.this, (exp.Column, exp.Dot)):
            return f"{pretty(node.this)}.{node.name}"
        return node.name if top else ".".join(part.name for part in node.parts)
    if isinstance(node, exp.Paren):
        return pretty(node.this, top)
    if isinstance(node, exp.Literal):
        return node.this
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Null):
        return "NULL"
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and node.this.is_number:
        return f"-{node.this.this}"
    if isinstance(node, exp.Cast):
        if top and not (isinstance(node.this, exp.Literal) and node.this.is_string):
            return pretty(node.this, top)
        return f"CAST({pretty(node.this)} AS {type_string(node.to)})"
    if type(node) in _OPERATORS:
        return f"({pretty(node.this)} {_OPERATORS[type(node)]} {pretty(node.expression)})"
    if isinstance(node, exp.NEQ):
        return f"(NOT ({pretty(node.this)} = {pretty(node.expression)}))"
    if isinstance(node, exp.Neg):
        return f"(- {pretty(node.this)})"
    if isinstance(node, exp.Is):
        return f"({pretty(node.this)} IS NULL)"
    if isinstance(node, exp.Not):
        return f"(NOT {pretty(node.this.unnest())})"
    # subqueries: Spark names them without their query (Spark 4.1: `scalarsubquery()`,
    # `exists()`, `(a IN (listquery()))`)
    if isinstance(node, exp.Subquery):
        return "scalarsubquery()"
    if isinstance(node, exp.Exists):
        return "exists()"
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        return f"({pretty(node.this)} IN (listquery()))"
    if isinstance(node, exp.In) and node.expressions:
        return f"({pretty(node.this)} IN ({', '.join(pretty(e) for e in node.expressions)}))"
    if isinstance(node, exp.Between):
        return (
            f"between({pretty(node.this)}, {pretty(node.args['low'])}, {pretty(node.args['high'])})"
        )
    if isinstance(node, exp.Like):
        return f"{pretty(node.this)} LIKE {pretty(node.expression)}"
    if isinstance(node, exp.RegexpLike):
        return f"RLIKE({pretty(node.this)}, {pretty(node.expression)})"
    if isinstance(node, exp.DPipe):
        return f"concat({pretty(node.this)}, {pretty(node.expression)})"
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        return f"{pretty(node.this)}[{pretty(node.expressions[0])}]"
    if isinstance(node, exp.Case):
        subject = node.this
        parts = ["CASE"]
        for branch in node.args.get("ifs") or []:
            condition = pretty(branch.this)
            if subject is not None:
                condition = f"({pretty(subject)} = {condition})"
            parts.append(f"WHEN {condition} THEN {pretty(branch.args['true'])}")
        if node.args.get("default") is not None:
            parts.append(f"ELSE {pretty(node.args['default'])}")
        return " ".join([*parts, "END"])
    if isinstance(node, exp.If):
        args = [node.this, node.args.get("true"), node.args.get("false")]
        return f"(IF({', '.join(pretty(a) for a in args if a is not None)}))"
    if isinstance(node, exp.PropertyEQ):
        return f"{pretty(node.expression)} AS {node.name}"
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return "count(1)"
    if isinstance(node, exp.Anonymous) and top and node.name.lower() in WINDOW_FUNCTIONS:
        return node.name.lower()  # Spark names the column `window` / `session_window`
    if isinstance(node, exp.Func):
        text = node.name + "(" if isinstance(node, exp.Anonymous) else _spark_sql(node)
        match = re.match(r"(\w+)\(", text)
        if match is None:
            return text
        name = match.group(1).lower()
        name = name.upper() if name in _UPPER_NAMES else name
        args = []
        for arg in node.iter_expressions():
            if isinstance(arg, exp.Distinct):
                args.append("DISTINCT " + ", ".join(pretty(a) for a in arg.expressions))
            elif not isinstance(arg, (exp.Var, exp.DataType)):
                args.append(pretty(arg))
        return f"{name}({', '.join(args)})"
    return _spark_sql(node)


def _spark_sql(node: exp.Expr) -> str:
    return SqlStream().generate(
        copy_tree(node),
        copy=False,
        comments=False,
        normalize_functions=False,
        unsupported_level=ErrorLevel.IGNORE,
    )


def output_name(item: exp.Expr) -> str | None:
    """The column name Spark gives select item ``item``: its alias, or Spark's name for the
    expression; ``None`` for a star."""
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and item.is_star):
        return None
    return pretty(item, top=True)
