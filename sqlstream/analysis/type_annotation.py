"""The types of a query tree's expressions: sqlglot's ``TypeAnnotator`` driven by Spark's
typing rules (:mod:`sqlstream.analysis.type_rules`) and by the user functions of the
compile context, through :data:`EXPRESSION_METADATA` (:class:`Annotator`).

sqlglot's own rules are kept only for structure (aliases, parentheses, struct fields,
subqueries, window functions); every other expression follows the rules or is ``UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlglot import exp
from sqlglot.helper import subclasses
from sqlglot.optimizer.annotate_types import TypeAnnotator
from sqlglot.optimizer.scope import Scope

from sqlstream.analysis.function_types import FUNCTIONS
from sqlstream.analysis.spark_types import INTEGRAL, UNKNOWN, data_type, type_of, type_string
from sqlstream.analysis.type_rules import (
    arithmetic_type,
    call_arguments,
    element_type,
    is_numeric,
    literal_type,
    type_parts,
)
from sqlstream.ir.user_functions import UserFunction
from sqlstream.sql.dialect import SqlStream

__all__ = ["EXPRESSION_METADATA", "Annotator"]


def _annotate_function(annotator: Annotator, node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Cast):  # CAST, TRY_CAST, TIMESTAMP '…', ::
        result = type_string(node.to)
    else:
        key = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
        user = annotator.functions.get(key) if isinstance(node, exp.Anonymous) else None
        if user is not None:  # CREATE FUNCTION: its declared (or annotated) type
            return _set_type(annotator, node, user.returns)
        rule = FUNCTIONS.get(key)
        try:
            result = rule(node, [type_of(a) for a in call_arguments(node)]) if rule else UNKNOWN
        except (IndexError, AttributeError, ValueError, TypeError):  # a call with other arguments
            result = UNKNOWN
    return _set_type(annotator, node, result)


# Inferred types holding more nested types than this are left UNKNOWN (no finding rests on
# them): each is parsed from its text, so a call nested d deep in constructors
# (array(array(…)), struct(struct(…))) would otherwise cost time quadratic in d
# (measured: 300 levels of array(…) 10 s).
MAX_INFERRED_NESTED_TYPES = 32


def _set_type(annotator: TypeAnnotator, node: exp.Expr, result: str) -> exp.Expr:
    """Annotate ``node`` with the type ``result`` (Spark SQL spelling), ``UNKNOWN`` when it
    is unknown or holds more than :data:`MAX_INFERRED_NESTED_TYPES` nested types."""
    if result == UNKNOWN or result.count("<") > MAX_INFERRED_NESTED_TYPES:
        return annotator._set_type(node, exp.DType.UNKNOWN)
    return annotator._set_type(node, data_type(result))


def _annotate_with(function):
    def annotate(annotator: TypeAnnotator, node: exp.Expr) -> exp.Expr:
        return _set_type(annotator, node, function(node))

    return annotate


class Annotator(TypeAnnotator):
    """sqlglot's annotator driven by :data:`EXPRESSION_METADATA`, except that LATERAL VIEW
    columns are typed by what is exploded (sqlglot gives an exploded array's column the
    array's type).

    Args:
        schema: the relations' schemas (sqlglot's ``MappingSchema``).
        functions: the user functions defined so far (the compile context's), by lower-case
            name: a call of one has its declared (or annotated) return type.
    """

    def __init__(self, schema, functions: Mapping[str, UserFunction]) -> None:
        super().__init__(schema, expression_metadata=EXPRESSION_METADATA)
        self.functions = functions

    def _get_source_scope_selects(self, source: Scope):
        expression = source.expression
        if not isinstance(expression, exp.UDTF):
            return super()._get_source_scope_selects(source)
        if isinstance(expression, exp.Lateral) and isinstance(expression.this, exp.Explode):
            names = expression.alias_column_names
            element = (
                element_type(type_of(expression.this.this))
                if type_of(expression.this.this).startswith("ARRAY<")
                else UNKNOWN
            )
            if (
                len(names) == 1
                and element != UNKNOWN
                and not isinstance(expression.this, exp.Posexplode)
            ):
                return {names[0]: data_type(element)}
        return {}


def _annotate_dot(annotator: TypeAnnotator, node: exp.Dot) -> exp.Expr:
    """A struct field (sqlglot's rule), or ``map.key`` on a map with string keys (Spark's)."""
    annotator._annotate_dot(node)
    parts = type_parts(type_of(node.this), "MAP")
    if (
        type_of(node) == UNKNOWN
        and parts
        and parts[0] == "STRING"
        and isinstance(node.expression, exp.Identifier)
    ):
        annotator._set_type(node, data_type(parts[1]))
    return node


_ARITHMETIC = (
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.IntDiv,
    exp.BitwiseAnd,
    exp.BitwiseOr,
    exp.BitwiseXor,
    exp.DPipe,
)
# sqlglot's own rules are kept only for structure (aliases, parentheses, struct fields,
# subqueries, window functions); every other expression follows our rules or is UNKNOWN.
_STRUCTURE = (
    exp.Alias,
    exp.Paren,
    exp.Boolean,
    exp.Null,
    exp.Subquery,
    exp.Window,
    exp.IgnoreNulls,
    exp.RespectNulls,
    exp.HexString,
    exp.DataType,
    exp.Distinct,
)
EXPRESSION_METADATA: dict[type[exp.Expr], dict[str, Any]] = {
    **{
        cls: SqlStream.EXPRESSION_METADATA[cls]
        for cls in _STRUCTURE
        if cls in SqlStream.EXPRESSION_METADATA
    },
    **{cls: {"annotator": _annotate_function} for cls in subclasses(exp.__name__, exp.Func)},
    **{cls: {"annotator": _annotate_with(arithmetic_type)} for cls in _ARITHMETIC},
    **{
        cls: {"returns": exp.DType.BOOLEAN}
        for cls in subclasses(exp.__name__, (exp.Predicate, exp.Connector, exp.Not))
    },
    exp.Literal: {"annotator": _annotate_with(literal_type)},
    exp.Dot: {"annotator": _annotate_dot},
    exp.Neg: {
        "annotator": _annotate_with(
            lambda n: type_of(n.this) if is_numeric(type_of(n.this)) else UNKNOWN
        )
    },
    **{
        cls: {
            "annotator": _annotate_with(
                lambda n: type_of(n.this) if type_of(n.this) in INTEGRAL else UNKNOWN
            )
        }
        for cls in (exp.BitwiseNot, exp.BitwiseLeftShift, exp.BitwiseRightShift)
    },
    **{cls: {"returns": exp.DType.TIMESTAMPTZ} for cls in (exp.AtTimeZone, exp.FromTimeZone)},
    exp.Filter: {"annotator": _annotate_with(lambda n: type_of(n.this))},
    exp.Bracket: {
        "annotator": _annotate_with(
            lambda n: element_type(type_of(n.this)) if len(n.expressions) == 1 else UNKNOWN
        )
    },
}
