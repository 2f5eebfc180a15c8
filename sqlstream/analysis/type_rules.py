"""Spark's typing rules, applied statically (no JVM): the type of every expression.

:data:`FUNCTIONS` gives Spark's result type of each function by its argument types;
arithmetic, literals and the rest of the expression types are in
:data:`EXPRESSION_METADATA`, the table sqlglot's ``TypeAnnotator`` is driven by
(:class:`Annotator`). Types are spelt as :mod:`sqlstream.analysis.spark_types` spells them.
Every rule was checked against Spark 4.1.4 (``df.schema`` of a query over columns of each
type) and is pinned by the schema tests. The decimal rules are Spark's ``DecimalPrecision``
with precision loss allowed (``spark.sql.decimalOperations.allowPrecisionLoss``, the
default).
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.helper import subclasses
from sqlglot.optimizer.annotate_types import TypeAnnotator
from sqlglot.optimizer.scope import Scope

from sqlstream.analysis.spark_types import (
    FRACTIONAL,
    INTEGRAL,
    UNKNOWN,
    WINDOW_BOUND,
    adjusted_decimal,
    data_type,
    decimal_parts,
    type_of,
    type_string,
)
from sqlstream.ir.user_functions import defined
from sqlstream.sql.dialect import SqlStream

__all__ = ["EXPRESSION_METADATA", "FUNCTIONS", "Annotator", "common_type", "is_numeric"]


# ---- typing rules -----------------------------------------------------------------------


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    if isinstance(node, (exp.Distinct, exp.Filter)):
        return _arguments(node.this) if isinstance(node, exp.Filter) else list(node.expressions)
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


def _numeric_result(left: str, right: str, op: type) -> str:
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


def _arithmetic(node: exp.Binary) -> str:
    (left, left_digits), (right, right_digits) = (
        _operand_type(node.this),
        _operand_type(node.expression),
    )
    op = type(node)
    if op is exp.IntDiv:
        return "BIGINT" if left in INTEGRAL and right in INTEGRAL else UNKNOWN
    if op in (exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor):
        return (
            _numeric_result(left, right, exp.Add)
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
    result = _numeric_result(left, right, op)
    decimals = decimal_parts(left), decimal_parts(right)
    if result != UNKNOWN or None in decimals or not ({left, right} - set(INTEGRAL)):
        return result
    (p1, s1), (p2, s2) = decimals
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
        return max(known, key=INTEGRAL.get)
    if all(t in INTEGRAL or t == "DOUBLE" for t in known):
        return "DOUBLE"
    return UNKNOWN


def _literal(node: exp.Literal) -> str:
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


def _sum(t: str) -> str:
    if t in INTEGRAL:
        return "BIGINT"
    if t in FRACTIONAL or t == "STRING":
        return "DOUBLE"
    decimal = decimal_parts(t)
    return f"DECIMAL({min(38, decimal[0] + 10)}, {decimal[1]})" if decimal else UNKNOWN


def _avg(t: str) -> str:
    if t in INTEGRAL or t in FRACTIONAL or t == "STRING":
        return "DOUBLE"
    decimal = decimal_parts(t)
    return f"DECIMAL({min(38, decimal[0] + 4)}, {min(38, decimal[1] + 4)})" if decimal else UNKNOWN


def _window(node: exp.Expr) -> str:
    args = _arguments(node)
    time = type_of(args[0]) if args else UNKNOWN
    field = (
        "TIMESTAMP_NTZ" if time == "TIMESTAMP_NTZ" else UNKNOWN if time == UNKNOWN else "TIMESTAMP"
    )
    if node.name.lower() == WINDOW_BOUND:
        return field
    return UNKNOWN if field == UNKNOWN else f"STRUCT<`start`: {field}, `end`: {field}>"


def _same(types: list[str], numeric_only: bool = False) -> str:
    first = types[0] if types else UNKNOWN
    if numeric_only and first not in INTEGRAL and first not in FRACTIONAL:
        return UNKNOWN
    return first


def _struct(node: exp.Struct) -> str:
    fields = []
    for arg in node.expressions:
        if isinstance(arg, exp.PropertyEQ):
            name, value = arg.name, arg.expression
        elif isinstance(arg, (exp.Column, exp.Dot, exp.Alias)):
            name, value = arg.alias_or_name, arg
        else:
            return UNKNOWN
        fields.append(f"`{name}`: {type_of(value)}")
        if type_of(value) in (UNKNOWN, "VOID"):
            return UNKNOWN
    return f"STRUCT<{', '.join(fields)}>"


def _parts(t: str, kind: str) -> list[str] | None:
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


def _element(t: str) -> str:
    """Element type of an array, value type of a map."""
    parts = _parts(t, "ARRAY") or _parts(t, "MAP")
    return parts[-1] if parts else UNKNOWN


def _array_of(t: str) -> str:
    return f"ARRAY<{t}>" if t not in (UNKNOWN, "VOID") else UNKNOWN


def _round(node: exp.Expr, types: list[str]) -> str:
    """round/bround: the input type; a decimal keeps ``decimals`` digits (Spark's RoundBase)."""
    decimal = decimal_parts(types[0]) if types[0].startswith("DECIMAL(") else None
    if decimal is None:
        return _same(types, numeric_only=True)
    digits = node.args.get("decimals")
    if digits is None and isinstance(node, exp.Anonymous) and len(node.expressions) > 1:
        digits = node.expressions[1]
    scale = (
        0
        if digits is None
        else int(digits.this)
        if isinstance(digits, exp.Literal) and digits.is_int
        else None
    )
    if scale is None:
        return UNKNOWN
    precision, old_scale = decimal  # Spark's RoundBase: one more integral digit, at most s decimals
    scale = min(scale, old_scale)
    return f"DECIMAL({min(38, precision - old_scale + 1 + scale)}, {scale})"


def _floor_ceil(node: exp.Expr, types: list[str]) -> str:
    if node.args.get("decimals") is not None:
        return UNKNOWN
    if types[0] in INTEGRAL or types[0] in FRACTIONAL:
        return "BIGINT"
    decimal = decimal_parts(types[0]) if types[0].startswith("DECIMAL(") else None
    return (
        f"DECIMAL({min(38, decimal[0] - decimal[1] + 1)}, 0)"
        if decimal and decimal[1]
        else (types[0] if decimal else UNKNOWN)
    )


_EXTRACT_INT = {
    "YEAR",
    "YEARS",
    "Y",
    "MONTH",
    "MONTHS",
    "MON",
    "DAY",
    "DAYS",
    "D",
    "HOUR",
    "HOURS",
    "H",
    "MINUTE",
    "MINUTES",
    "MIN",
    "QUARTER",
    "QTR",
    "WEEK",
    "WEEKS",
    "W",
    "DAYOFWEEK",
    "DOW",
    "DOY",
}


def _extract(node: exp.Expr, types: list[str]) -> str:
    unit = (
        node.this
        if isinstance(node, exp.Extract)
        else (node.expressions[0] if node.expressions else None)
    )
    if len(types) < 2 or types[-1] not in ("TIMESTAMP", "TIMESTAMP_NTZ", "DATE"):
        return UNKNOWN
    unit_name = unit.name.upper() if isinstance(unit, (exp.Var, exp.Literal, exp.Column)) else ""
    if unit_name in ("SECOND", "SECONDS", "S", "SEC") and types[-1] != "DATE":
        return "DECIMAL(8, 6)"
    return "INT" if unit_name in _EXTRACT_INT else UNKNOWN


def _from_json(node: exp.Expr, types: list[str]) -> str:
    """from_json/from_csv with a literal DDL schema (``'a INT, b STRING'``)."""
    schema = (
        node.expression
        if isinstance(node, exp.FromJson)
        else (node.expressions[1] if len(node.expressions) > 1 else None)
    )
    if not isinstance(schema, exp.Literal) or not schema.is_string:
        return UNKNOWN
    text = schema.this.strip()
    if not re.match(r"(?i)(struct|array|map)<", text):
        text = f"STRUCT<{text}>"
    try:
        dtype = exp.DataType.build(text, dialect="spark")
    except Exception:  # noqa: BLE001 - a schema we cannot read: unknown
        return UNKNOWN
    return type_string(dtype)


def _map(node: exp.VarMap) -> str:
    keys, values = (
        _element(type_of(node.args.get("keys"))),
        _element(type_of(node.args.get("values"))),
    )
    return UNKNOWN if UNKNOWN in (keys, values) else f"MAP<{keys}, {values}>"


def _concat(types: list[str]) -> str:
    """concat: strings (with scalars cast to string), binaries, or arrays of one type."""
    simple = {"STRING", "DATE", "TIMESTAMP", "BOOLEAN", *INTEGRAL, *FRACTIONAL}
    if "STRING" in types and all(t in simple or t.startswith("DECIMAL(") for t in types):
        return "STRING"
    same = types[0] if types and len(set(types)) == 1 else UNKNOWN
    return same if same == "BINARY" or same.startswith("ARRAY<") else UNKNOWN


def _rule(rule):
    if isinstance(rule, str):
        return lambda node, types: rule
    return rule


_S, _I, _B, _D, _L, _TS = "STRING", "INT", "BOOLEAN", "DOUBLE", "BIGINT", "TIMESTAMP"
# Spark's result types, keyed by sqlglot class key (``type(node).key``) or, for functions
# sqlglot does not know (``exp.Anonymous``), by the Spark name. Rules get the node and its
# argument types. Every key was checked against Spark 4.1.4 (``df.schema``) and is pinned by
# tests/analysis/test_schema.py; a function not here is UNKNOWN.
FUNCTIONS = {
    k: _rule(v)
    for k, v in {
        **dict.fromkeys(
            (
                "upper",
                "lower",
                "initcap",
                "concatws",
                "trim",
                "replace",
                "regexpreplace",
                "regexpextract",
                "splitpart",
                "left",
                "right",
                "repeat",
                "format",
                "md5",
                "sha2",
                "sha",
                "uuid",
                "timetostr",
                "tobase64",
                "hex",
                "bin",
                "conv",
                "input_file_name",
                "typeof",
                "soundex",
                "translate",
                "format_number",
                "tochar",
                "chr",
                "elt",
                "overlay",
                "regexpsubstr",
                "jsonformat",
                "jsonextractscalar",
                "groupconcat",
                "currenttimezone",
                "currentuser",
                "version",
                "unixtostr",
                "decode",
                "schema_of_json",
                "arraytostring",
            ),
            _S,
        ),
        **dict.fromkeys(
            (
                "length",
                "strposition",
                "hash",
                "ascii",
                "year",
                "month",
                "day",
                "dayofmonth",
                "hour",
                "minute",
                "second",
                "dayofweek",
                "weekofyear",
                "quarter",
                "datediff",
                "spark_partition_id",
                "bitlength",
                "octet_length",
                "levenshtein",
                "find_in_set",
                "regexpcount",
                "rownumber",
                "rank",
                "denserank",
                "ntile",
                "arraysize",
                "cardinality",
                "bitwisecount",
            ),
            _I,
        ),
        **dict.fromkeys(
            (
                "startswith",
                "endswith",
                "contains",
                "arraycontains",
                "exists",
                "forall",
                "mapcontainskey",
                "logicaland",
                "logicalor",
                "every",
                "isnan",
                "arrays_overlap",
                "isnull",
                "isnotnull",
            ),
            _B,
        ),
        **dict.fromkeys(
            (
                "sqrt",
                "pow",
                "exp",
                "ln",
                "log",
                "sign",
                "rand",
                "randn",
                "monthsbetween",
                "e",
                "pi",
                "degrees",
                "radians",
                "cbrt",
                "stddev",
                "stddevsamp",
                "stddevpop",
                "variance",
                "variancepop",
                "median",
                "corr",
                "covarpop",
                "covarsamp",
                "kurtosis",
                "skewness",
                "percentrank",
                "cumedist",
                "quantile",
                "sin",
                "cos",
                "atan2",
            ),
            _D,
        ),
        **dict.fromkeys(
            (
                "count",
                "countif",
                "approxdistinct",
                "factorial",
                "strtounix",
                "unixseconds",
                "unixmillis",
                "monotonically_increasing_id",
                "crc32",
                "xxhash64",
                "widthbucket",
                "arrayposition",
            ),
            _L,
        ),
        **dict.fromkeys(
            (
                "currenttimestamp",
                "now",
                "timestamptrunc",
                "strtotime",
                "timestampfromparts",
                "timestamp_seconds",
                "timestamp_millis",
                "timestamp_micros",
            ),
            _TS,
        ),
        **dict.fromkeys(
            (
                "currentdate",
                "datetrunc",
                "tsordstodate",
                "tsordsadd",
                "addmonths",
                "lastday",
                "nextday",
                "datefromunixdate",
                "make_date",
            ),
            "DATE",
        ),
        **dict.fromkeys(("frombase64", "unhex", "encode"), "BINARY"),
        **dict.fromkeys(("regexpsplit", "regexpextractall"), "ARRAY<STRING>"),
        "to_timestamp_ntz": "TIMESTAMP_NTZ",
        "strtomap": "MAP<STRING, STRING>",
        **dict.fromkeys(
            (
                "min",
                "max",
                "first",
                "last",
                "anyvalue",
                "argmax",
                "argmin",
                "mode",
                "firstvalue",
                "lag",
                "lead",
                "nullif",
                "abs",
                "reverse",
                "arraydistinct",
                "arraysort",
                "arrayslice",
                "array_union",
                "arrayexcept",
                "arrayintersect",
                "arrayremove",
                "arrayappend",
                "arraycompact",
                "arrayfilter",
                "map_filter",
                "positive",
                "negative",
                "safeadd",
            ),
            lambda node, types: _same(types),
        ),
        **dict.fromkeys(("round", "bround"), _round),
        **dict.fromkeys(("floor", "ceil"), _floor_ceil),
        **dict.fromkeys(("extract", "date_part"), _extract),
        **dict.fromkeys(("fromjson", "from_csv"), _from_json),
        "approxquantile": lambda n, t: _same(t, numeric_only=True),
        "explode": lambda n, t: _element(t[0]) if t[0].startswith("ARRAY<") else UNKNOWN,
        **dict.fromkeys(
            ("arrayagg", "arrayuniqueagg", "array_repeat"), lambda n, t: _array_of(t[0])
        ),
        **dict.fromkeys(("get", "arraymax", "arraymin"), lambda n, t: _element(t[0])),
        "flatten": lambda n, t: _element(t[0]) if _element(t[0]).startswith("ARRAY<") else UNKNOWN,
        "map_values": lambda n, t: (
            _array_of(_element(t[0])) if t[0].startswith("MAP<") else UNKNOWN
        ),
        "mapkeys": lambda n, t: (
            _array_of(_parts(t[0], "MAP")[0]) if _parts(t[0], "MAP") else UNKNOWN
        ),
        "varmap": lambda n, t: _map(n),
        **dict.fromkeys(("coalesce", "greatest", "least"), lambda n, t: common_type(t)),
        "generateseries": lambda n, t: (
            _array_of(common_type([type_of(n.args.get("start")), type_of(n.args.get("end"))]))
            if common_type([type_of(n.args.get("start")), type_of(n.args.get("end"))]) in INTEGRAL
            else UNKNOWN
        ),
        "pmod": lambda n, t: _numeric_result(t[0], t[1], exp.Mod) if len(t) == 2 else UNKNOWN,
        "nanvl": lambda n, t: (
            _numeric_result(t[0], t[1], exp.Add)
            if len(t) == 2 and (t[0] in FRACTIONAL or t[1] in FRACTIONAL)
            else UNKNOWN
        ),
        **dict.fromkeys(("window", "session_window", WINDOW_BOUND), lambda n, t: _window(n)),
        "window_time": lambda n, t: (_parts(t[0], "STRUCT") or [": " + UNKNOWN])[0].split(": ")[-1],
        "sum": lambda n, t: _sum(t[0]),
        **dict.fromkeys(("avg", "mean"), lambda n, t: _avg(t[0])),
        "safedivide": lambda n, t: (
            "DOUBLE" if all(x in INTEGRAL or x in FRACTIONAL for x in t) else UNKNOWN
        ),
        "concat": lambda n, t: _concat(t),
        **dict.fromkeys(
            ("substring", "pad"), lambda n, t: t[0] if t[0] in ("STRING", "BINARY") else UNKNOWN
        ),
        "if": lambda n, t: common_type(
            [
                type_of(n.args.get("true")),
                type_of(n.args.get("false")) if n.args.get("false") else "VOID",
            ]
        ),
        "nvl2": lambda n, t: common_type(
            [type_of(n.args.get("true")), type_of(n.args.get("false"))]
        ),
        "case": lambda n, t: common_type(
            [type_of(i.args.get("true")) for i in n.args.get("ifs") or []]
            + [type_of(n.args.get("default")) if n.args.get("default") else "VOID"]
        ),
        "struct": lambda n, t: _struct(n),
        "array": lambda n, t: _array_of(common_type(t)),
    }.items()
}


def _annotate_function(annotator: TypeAnnotator, node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Cast):  # CAST, TRY_CAST, TIMESTAMP '…', ::
        result = type_string(node.to)
    else:
        key = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
        user = defined().get(key) if isinstance(node, exp.Anonymous) else None
        if user is not None:  # CREATE FUNCTION: its declared (or annotated) type
            return _set_type(annotator, node, user.returns)
        rule = FUNCTIONS.get(key)
        try:
            result = rule(node, [type_of(a) for a in _arguments(node)]) if rule else UNKNOWN
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
    """sqlglot's annotator, except that LATERAL VIEW columns are typed by what is exploded
    (sqlglot gives an exploded array's column the array's type)."""

    def _get_source_scope_selects(self, source: Scope):
        expression = source.expression
        if not isinstance(expression, exp.UDTF):
            return super()._get_source_scope_selects(source)
        if isinstance(expression, exp.Lateral) and isinstance(expression.this, exp.Explode):
            names = expression.alias_column_names
            element = (
                _element(type_of(expression.this.this))
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
    parts = _parts(type_of(node.this), "MAP")
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
EXPRESSION_METADATA = {
    **{
        cls: SqlStream.EXPRESSION_METADATA[cls]
        for cls in _STRUCTURE
        if cls in SqlStream.EXPRESSION_METADATA
    },
    **{cls: {"annotator": _annotate_function} for cls in subclasses(exp.__name__, exp.Func)},
    **{cls: {"annotator": _annotate_with(_arithmetic)} for cls in _ARITHMETIC},
    **{
        cls: {"returns": exp.DType.BOOLEAN}
        for cls in subclasses(exp.__name__, (exp.Predicate, exp.Connector, exp.Not))
    },
    exp.Literal: {"annotator": _annotate_with(_literal)},
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
            lambda n: _element(type_of(n.this)) if len(n.expressions) == 1 else UNKNOWN
        )
    },
}
