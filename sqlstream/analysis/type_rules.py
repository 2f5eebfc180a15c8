"""Spark's typing rules, applied statically (no JVM): the types of operators and literals,
and the type two or more types meet in.

:func:`arithmetic_type` and :func:`literal_type` give the types of arithmetic and
literals, :func:`common_type` Spark's type coercion of several types; the result types of
functions are :data:`sqlstream.analysis.function_types.FUNCTIONS`; the annotator that
applies them all to a tree (sqlglot's ``TypeAnnotator`` driven by them) is
:mod:`sqlstream.analysis.type_annotation`. Types are spelt as
:mod:`sqlstream.analysis.spark_types` spells them. Every rule was checked against Spark
4.1.4 (``df.schema`` of a query over columns of each type) and is pinned by the schema
tests. The decimal rules are Spark's ``DecimalPrecision`` with precision loss allowed
(``spark.sql.decimalOperations.allowPrecisionLoss``, the default).
"""

from __future__ import annotations

import re

from sqlglot import exp

from sqlstream.analysis.spark_types import (
    FRACTIONAL,
    INTEGRAL,
    UNKNOWN,
    adjusted_decimal,
    decimal_parts,
    type_of,
)

__all__ = [
    "arithmetic_type",
    "call_arguments",
    "common_type",
    "element_type",
    "is_numeric",
    "literal_type",
    "numeric_result",
    "type_parts",
]


# ---- typing rules -----------------------------------------------------------------------


def call_arguments(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, (exp.Distinct, exp.Filter)):
        return call_arguments(node.this) if isinstance(node, exp.Filter) else list(node.expressions)
    args = [node.args[k] for k in ("this", "expression") if isinstance(node.args.get(k), exp.Expr)]
    args += [a for a in node.expressions if isinstance(a, exp.Expr)]
    return [a.expressions[0] if isinstance(a, exp.Distinct) and a.expressions else a for a in args]


def _operand_type(node: exp.Expr) -> tuple[str, int | None]:
    """Type of an arithmetic operand, and the precision of an integer literal (Spark uses it)."""
    literal = node.this if isinstance(node, exp.Neg) else node
    if isinstance(literal, exp.Literal) and literal.is_int and type_of(node) in INTEGRAL:
        return type_of(node), len(literal.this.lstrip("0")) or 1
    return type_of(node), None


def is_numeric(t: str) -> bool:
    """Whether the type ``t`` (our spelling) is integral, fractional or decimal."""
    return t in INTEGRAL or t in FRACTIONAL or t.startswith("DECIMAL(")


def numeric_result(left: str, right: str, op: type) -> str:
    """Result of ``left op right`` for integral and floating operands (decimals: ``UNKNOWN``)."""
    if "VOID" in (left, right):
        other = right if left == "VOID" else left
        return other if other in INTEGRAL or other in FRACTIONAL else UNKNOWN
    if left in INTEGRAL and right in INTEGRAL:
        if op is exp.Div:
            return "DOUBLE"
        return left if INTEGRAL[left] >= INTEGRAL[right] else right
    if (left in FRACTIONAL or right in FRACTIONAL) and is_numeric(left) and is_numeric(right):
        return "FLOAT" if left == right == "FLOAT" and op is not exp.Div else "DOUBLE"
    return UNKNOWN


def arithmetic_type(node: exp.Binary) -> str:
    (left, left_digits), (right, right_digits) = (
        _operand_type(node.this),
        _operand_type(node.expression),
    )
    op = type(node)
    if op is exp.IntDiv:
        return "BIGINT" if left in INTEGRAL and right in INTEGRAL else UNKNOWN
    if op in (exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor):
        return (
            numeric_result(left, right, exp.Add)
            if left in INTEGRAL and right in INTEGRAL
            else UNKNOWN
        )
    if op is exp.DPipe:
        return "STRING" if left == right == "STRING" else UNKNOWN
    timestamps = ("TIMESTAMP", "TIMESTAMP_NTZ")
    if (
        op in (exp.Add, exp.Sub)
        and isinstance(node.expression, exp.Interval)
        and left in timestamps
    ):
        return left
    if op is exp.Add and isinstance(node.this, exp.Interval) and right in timestamps:
        return right
    if op in (exp.Add, exp.Sub) and left == "DATE" and right in INTEGRAL:
        return "DATE"
    result = numeric_result(left, right, op)
    decimals = decimal_parts(left), decimal_parts(right)
    if result != UNKNOWN or None in decimals or not ({left, right} - set(INTEGRAL)):
        return result
    left_parts, right_parts = decimals
    assert left_parts is not None and right_parts is not None  # (returned above)
    (p1, s1), (p2, s2) = left_parts, right_parts
    p1, p2 = (left_digits or p1), (right_digits or p2)
    if op in (exp.Add, exp.Sub):
        scale = max(s1, s2)
        return adjusted_decimal(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op is exp.Mul:
        return adjusted_decimal(p1 + p2 + 1, s1 + s2)
    if op is exp.Div:
        scale = max(6, s1 + p2 + 1)
        return adjusted_decimal(p1 - s1 + s2 + scale, scale)
    if op is exp.Mod:
        scale = max(s1, s2)
        return adjusted_decimal(min(p1 - s1, p2 - s2) + scale, scale)
    return UNKNOWN


def common_type(types: list[str]) -> str:
    """The type of CASE/COALESCE/IF branches: all equal, or integral/double widening."""
    known = [t for t in types if t != "VOID"]
    if not known or UNKNOWN in known:
        return UNKNOWN if UNKNOWN in known or not types else "VOID"
    if len(set(known)) == 1:
        return known[0]
    if all(t in INTEGRAL for t in known):
        return max(known, key=INTEGRAL.__getitem__)
    if all(t in INTEGRAL or t == "DOUBLE" for t in known):
        return "DOUBLE"
    return UNKNOWN


def literal_type(node: exp.Literal) -> str:
    if node.is_string:
        return "STRING"
    text = node.this
    if re.fullmatch(r"\d+", text):
        return "INT" if int(text) < 2**31 else "BIGINT" if int(text) < 2**63 else UNKNOWN
    match = re.fullmatch(r"(\d*)\.(\d*)", text)
    if match:
        scale = len(match.group(2))
        return f"DECIMAL({max(len(match.group(1).lstrip('0')) + scale, 1)}, {scale})"
    return "DOUBLE" if re.fullmatch(r"[\d.]+[eE][-+]?\d+", text) else UNKNOWN


def type_parts(t: str, kind: str) -> list[str] | None:
    """The type arguments of ``ARRAY<…>`` / ``MAP<…>`` / ``STRUCT<…>``, split at top level."""
    if not (t.startswith(kind + "<") and t.endswith(">")):
        return None
    parts, depth, current = [], 0, ""
    for char in t[len(kind) + 1 : -1]:
        depth += (char in "<(") - (char in ">)")
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()]


def element_type(t: str) -> str:
    """Element type of an array, value type of a map."""
    parts = type_parts(t, "ARRAY") or type_parts(t, "MAP")
    return parts[-1] if parts else UNKNOWN
