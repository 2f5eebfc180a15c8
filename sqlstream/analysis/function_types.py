"""Spark's result type of each function by its argument types (:data:`FUNCTIONS`), applied
statically (no JVM) by :mod:`sqlstream.analysis.type_annotation`; operators, literals and
type coercion are :mod:`sqlstream.analysis.type_rules`. Every rule was checked against Spark
4.1.4 (``df.schema`` of a query over columns of each type) and is pinned by
tests/analysis/test_schema.py.
"""

from __future__ import annotations

import re

from sqlglot import exp

from sqlstream.analysis.spark_types import (
    FRACTIONAL,
    INTEGRAL,
    UNKNOWN,
    WINDOW_BOUND,
    decimal_parts,
    type_of,
    type_string,
)
from sqlstream.analysis.type_rules import (
    call_arguments,
    common_type,
    element_type,
    numeric_result,
    type_parts,
)

__all__ = ["FUNCTIONS"]


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
    args = call_arguments(node)
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
        element_type(type_of(node.args.get("keys"))),
        element_type(type_of(node.args.get("values"))),
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
        "explode": lambda n, t: element_type(t[0]) if t[0].startswith("ARRAY<") else UNKNOWN,
        **dict.fromkeys(
            ("arrayagg", "arrayuniqueagg", "array_repeat"), lambda n, t: _array_of(t[0])
        ),
        **dict.fromkeys(("get", "arraymax", "arraymin"), lambda n, t: element_type(t[0])),
        "flatten": lambda n, t: (
            element_type(t[0]) if element_type(t[0]).startswith("ARRAY<") else UNKNOWN
        ),
        "map_values": lambda n, t: (
            _array_of(element_type(t[0])) if t[0].startswith("MAP<") else UNKNOWN
        ),
        "mapkeys": lambda n, t: (
            _array_of((type_parts(t[0], "MAP") or [UNKNOWN])[0])
            if type_parts(t[0], "MAP")
            else UNKNOWN
        ),
        "varmap": lambda n, t: _map(n),
        **dict.fromkeys(("coalesce", "greatest", "least"), lambda n, t: common_type(t)),
        "generateseries": lambda n, t: (
            _array_of(common_type([type_of(n.args.get("start")), type_of(n.args.get("end"))]))
            if common_type([type_of(n.args.get("start")), type_of(n.args.get("end"))]) in INTEGRAL
            else UNKNOWN
        ),
        "pmod": lambda n, t: numeric_result(t[0], t[1], exp.Mod) if len(t) == 2 else UNKNOWN,
        "nanvl": lambda n, t: (
            numeric_result(t[0], t[1], exp.Add)
            if len(t) == 2 and (t[0] in FRACTIONAL or t[1] in FRACTIONAL)
            else UNKNOWN
        ),
        **dict.fromkeys(("window", "session_window", WINDOW_BOUND), lambda n, t: _window(n)),
        "window_time": lambda n, t: (type_parts(t[0], "STRUCT") or [": " + UNKNOWN])[0].split(": ")[
            -1
        ],
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
