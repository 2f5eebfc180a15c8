"""Static schemas: the columns and types of every query, from declared schemas, with no JVM.

:func:`query_schema` works on a query as parsed by :func:`sqlstream.dialect.parse_query`
(before :mod:`sqlstream.rewrite`) and a catalog of relation schemas. Name resolution is
sqlglot's (``qualify``: stars, aliases, ``USING``, CTEs, subqueries, lateral column aliases,
struct fields, lambdas); types come from sqlglot's ``TypeAnnotator`` driven by our own
table of Spark typing rules (:data:`_FUNCTIONS`, arithmetic, literals), each checked against
Spark 4.1 (``df.schema``). What is not in the table is ``UNKNOWN``: a type is never guessed,
and ``UNKNOWN`` never causes a finding.

With the query text (``sql=``), every function call is checked by the name written against
Spark's built-in functions (``spark_functions.txt``, written by ``tools/gen_spark_functions.py``);
without it, only the calls sqlglot does not know.

Window TVFs and ``WATERMARK`` clauses are replaced, in a copy, by equivalent subqueries
(``WATERMARK expr AS name`` adds ``name`` first, as Spark does); ``window()`` and
``session_window()`` give ``STRUCT<start, end>`` (``TIMESTAMP_NTZ`` fields on a
``TIMESTAMP_NTZ`` column) and make the column ``window`` / ``session_window`` visible.

Findings (offsets within the query text, end exclusive; ``span`` is ``None``):
``SS205`` unknown column, ``SS206`` unknown function, ``SS207`` ambiguous column, ``SS208``
a type error Spark is certain to raise: a window on a numeric or boolean column,
``TIMESTAMP`` plus or minus a number, a field of a column that is not a struct or map.

Output names follow Spark: the alias, the column or field name as written, a star's
declared names; unaliased expressions get a Spark-like name (``count(1)``,
``(flight + 1)``, ``upper(carrier)``), which is best effort.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources

from sqlglot import exp
from sqlglot.errors import ErrorLevel, OptimizeError
from sqlglot.helper import subclasses
from sqlglot.optimizer.annotate_types import TypeAnnotator
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from sqlstream.dialect import SqlStream, WindowTVF, node_offsets, parse_expression, parse_query
from sqlstream.errors import SemanticError, SqlStreamError, UnknownNameError, did_you_mean

__all__ = ["CODES", "UNKNOWN", "Schema", "expression_type", "known_functions", "query_schema", "spark_type"]

Schema = tuple[tuple[str, str], ...]
UNKNOWN = "UNKNOWN"

_WINDOW_FUNCTIONS = ("window", "session_window")
_BOUND = "__sqlstream_window_bound"  # internal: a window boundary of a TVF, typed like window()
_ROW = "__sqlstream_row"  # internal: the relation of expression_type()
# Called like functions but not listed by SHOW FUNCTIONS (syntax, or table-valued functions).
_SYNTAX_FUNCTIONS = {"try_cast", "rollup", "cube", "grouping_sets", "timestampadd", "dateadd",
                     "timestampdiff", "date_diff", "timediff", "range", "explode_outer",
                     "inline_outer", "sql_keywords", "variant_explode", "variant_explode_outer"}
_TABLE_FUNCTIONS = {"range", "sql_keywords", "variant_explode", "variant_explode_outer"}  # FROM only
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@lru_cache(maxsize=1)
def known_functions() -> frozenset[str]:
    """Lower-case names of Spark's built-in functions (``spark_functions.txt``)."""
    text = resources.files("sqlstream").joinpath("spark_functions.txt").read_text(encoding="utf-8")
    names = {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}
    return frozenset(names | _SYNTAX_FUNCTIONS)


# ---- types: our spelling <-> sqlglot DataType -------------------------------------------

_INTEGRAL = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 20}  # as DECIMAL(p, 0)
_FRACTIONAL = ("FLOAT", "DOUBLE")
_SIMPLE = {
    "TEXT": "STRING", "VARCHAR": "STRING", "CHAR": "STRING", "NVARCHAR": "STRING", "NCHAR": "STRING",
    "INT": "INT", "BIGINT": "BIGINT", "SMALLINT": "SMALLINT", "TINYINT": "TINYINT",
    "DOUBLE": "DOUBLE", "FLOAT": "FLOAT", "BOOLEAN": "BOOLEAN", "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP", "TIMESTAMPLTZ": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMP",
    "DATETIME": "TIMESTAMP",
    "TIMESTAMPNTZ": "TIMESTAMP_NTZ", "BINARY": "BINARY", "VARBINARY": "BINARY",
    "NULL": "VOID", "VARIANT": "VARIANT",
}


def _type_string(dtype: exp.DataType | None) -> str:
    """Spark SQL spelling of a sqlglot type (``STRUCT<`a`: INT>``); ``UNKNOWN`` if any part is."""
    if dtype is None:
        return UNKNOWN
    kind = dtype.this.name if isinstance(dtype.this, exp.DType) else None
    args = dtype.expressions
    if kind == "DECIMAL":
        if not args:
            return "DECIMAL(10, 0)"
        numbers = [a.name for a in args]
        return f"DECIMAL({numbers[0]}, {numbers[1] if len(numbers) > 1 else 0})"
    if kind in ("ARRAY", "MAP") and args:
        parts = [_type_string(a) for a in args]
        return UNKNOWN if UNKNOWN in parts else f"{kind}<{', '.join(parts)}>"
    if kind == "STRUCT" and args:
        fields = []
        for field in args:
            field_type = _type_string(field.args.get("kind")) if isinstance(field, exp.ColumnDef) else UNKNOWN
            if field_type == UNKNOWN:
                return UNKNOWN
            fields.append(f"`{field.name.replace('`', '``')}`: {field_type}")
        return f"STRUCT<{', '.join(fields)}>"
    return _SIMPLE.get(kind, UNKNOWN) if not args or kind in ("VARCHAR", "CHAR") else UNKNOWN


@lru_cache(maxsize=1024)
def _data_type(type_string: str) -> exp.DataType:
    if type_string == "VOID":
        return exp.DataType.build("NULL")
    try:
        return exp.DataType.build(type_string, dialect="spark")
    except Exception:  # noqa: BLE001 - a type sqlglot cannot read is unknown, not an error
        return exp.DataType.build("UNKNOWN")


def spark_type(type_string: str) -> str:
    """Return the Spark SQL spelling of a declared type (``LONG`` → ``BIGINT``,
    ``decimal(5,2)`` → ``DECIMAL(5, 2)``), as :class:`Schema` holds it; ``UNKNOWN`` if sqlglot
    cannot read it."""
    return _type_string(_data_type("VOID" if type_string.lower() == "void" else type_string))


def _ts(node: exp.Expr | None) -> str:
    return UNKNOWN if node is None else _type_string(node.type)


def _decimal(type_string: str) -> tuple[int, int] | None:
    if type_string in _INTEGRAL:
        return _INTEGRAL[type_string], 0
    match = re.fullmatch(r"DECIMAL\((\d+), (\d+)\)", type_string)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _adjusted(precision: int, scale: int) -> str:
    """Spark's ``DecimalType.adjustPrecisionScale`` (precision loss allowed, the default)."""
    if precision > 38:
        scale = max(38 - (precision - scale), min(scale, 6))
        precision = 38
    return f"DECIMAL({precision}, {scale})"


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
    if isinstance(literal, exp.Literal) and literal.is_int and _ts(node) in _INTEGRAL:
        return _ts(node), len(literal.this.lstrip("0")) or 1
    return _ts(node), None


def _is_numeric(t: str) -> bool:
    return t in _INTEGRAL or t in _FRACTIONAL or t.startswith("DECIMAL(")


def _numeric_result(left: str, right: str, op: type) -> str:
    """Result of ``left op right`` for integral and floating operands (decimals: ``UNKNOWN``)."""
    if "VOID" in (left, right):
        other = right if left == "VOID" else left
        return other if other in _INTEGRAL or other in _FRACTIONAL else UNKNOWN
    if left in _INTEGRAL and right in _INTEGRAL:
        if op is exp.Div:
            return "DOUBLE"
        return left if _INTEGRAL[left] >= _INTEGRAL[right] else right
    if (left in _FRACTIONAL or right in _FRACTIONAL) and _is_numeric(left) and _is_numeric(right):
        return "FLOAT" if left == right == "FLOAT" and op is not exp.Div else "DOUBLE"
    return UNKNOWN


def _arithmetic(node: exp.Binary) -> str:
    (left, left_digits), (right, right_digits) = _operand_type(node.this), _operand_type(node.expression)
    op = type(node)
    if op is exp.IntDiv:
        return "BIGINT" if left in _INTEGRAL and right in _INTEGRAL else UNKNOWN
    if op in (exp.BitwiseAnd, exp.BitwiseOr, exp.BitwiseXor):
        return _numeric_result(left, right, exp.Add) if left in _INTEGRAL and right in _INTEGRAL else UNKNOWN
    if op is exp.DPipe:
        return "STRING" if left == right == "STRING" else UNKNOWN
    timestamps = ("TIMESTAMP", "TIMESTAMP_NTZ")
    if op in (exp.Add, exp.Sub) and isinstance(node.expression, exp.Interval) and left in timestamps:
        return left
    if op is exp.Add and isinstance(node.this, exp.Interval) and right in timestamps:
        return right
    if op in (exp.Add, exp.Sub) and left == "DATE" and right in _INTEGRAL:
        return "DATE"
    result = _numeric_result(left, right, op)
    decimals = _decimal(left), _decimal(right)
    if result != UNKNOWN or None in decimals or not ({left, right} - set(_INTEGRAL)):
        return result
    (p1, s1), (p2, s2) = decimals
    p1, p2 = (left_digits or p1), (right_digits or p2)
    if op in (exp.Add, exp.Sub):
        scale = max(s1, s2)
        return _adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if op is exp.Mul:
        return _adjusted(p1 + p2 + 1, s1 + s2)
    if op is exp.Div:
        scale = max(6, s1 + p2 + 1)
        return _adjusted(p1 - s1 + s2 + scale, scale)
    if op is exp.Mod:
        scale = max(s1, s2)
        return _adjusted(min(p1 - s1, p2 - s2) + scale, scale)
    return UNKNOWN


def _common(types: list[str]) -> str:
    """The type of CASE/COALESCE/IF branches: all equal, or integral/double widening."""
    known = [t for t in types if t != "VOID"]
    if not known or UNKNOWN in known:
        return UNKNOWN if UNKNOWN in known or not types else "VOID"
    if len(set(known)) == 1:
        return known[0]
    if all(t in _INTEGRAL for t in known):
        return max(known, key=_INTEGRAL.get)
    if all(t in _INTEGRAL or t == "DOUBLE" for t in known):
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
    if t in _INTEGRAL:
        return "BIGINT"
    if t in _FRACTIONAL or t == "STRING":
        return "DOUBLE"
    decimal = _decimal(t)
    return f"DECIMAL({min(38, decimal[0] + 10)}, {decimal[1]})" if decimal else UNKNOWN


def _avg(t: str) -> str:
    if t in _INTEGRAL or t in _FRACTIONAL or t == "STRING":
        return "DOUBLE"
    decimal = _decimal(t)
    return f"DECIMAL({min(38, decimal[0] + 4)}, {min(38, decimal[1] + 4)})" if decimal else UNKNOWN


def _window(node: exp.Expr) -> str:
    args = _arguments(node)
    time = _ts(args[0]) if args else UNKNOWN
    field = "TIMESTAMP_NTZ" if time == "TIMESTAMP_NTZ" else UNKNOWN if time == UNKNOWN else "TIMESTAMP"
    if node.name.lower() == _BOUND:
        return field
    return UNKNOWN if field == UNKNOWN else f"STRUCT<`start`: {field}, `end`: {field}>"


def _same(types: list[str], numeric_only: bool = False) -> str:
    first = types[0] if types else UNKNOWN
    if numeric_only and first not in _INTEGRAL and first not in _FRACTIONAL:
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
        fields.append(f"`{name}`: {_ts(value)}")
        if _ts(value) in (UNKNOWN, "VOID"):
            return UNKNOWN
    return f"STRUCT<{', '.join(fields)}>"


def _parts(t: str, kind: str) -> list[str] | None:
    """The type arguments of ``ARRAY<…>`` / ``MAP<…>`` / ``STRUCT<…>``, split at top level."""
    if not (t.startswith(kind + "<") and t.endswith(">")):
        return None
    parts, depth, current = [], 0, ""
    for char in t[len(kind) + 1:-1]:
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
    decimal = _decimal(types[0]) if types[0].startswith("DECIMAL(") else None
    if decimal is None:
        return _same(types, numeric_only=True)
    digits = node.args.get("decimals")
    if digits is None and isinstance(node, exp.Anonymous) and len(node.expressions) > 1:
        digits = node.expressions[1]
    scale = 0 if digits is None else int(digits.this) if isinstance(digits, exp.Literal) and digits.is_int else None
    if scale is None:
        return UNKNOWN
    precision, old_scale = decimal  # Spark's RoundBase: one more integral digit, at most s decimals
    scale = min(scale, old_scale)
    return f"DECIMAL({min(38, precision - old_scale + 1 + scale)}, {scale})"


def _floor_ceil(node: exp.Expr, types: list[str]) -> str:
    if node.args.get("decimals") is not None:
        return UNKNOWN
    if types[0] in _INTEGRAL or types[0] in _FRACTIONAL:
        return "BIGINT"
    decimal = _decimal(types[0]) if types[0].startswith("DECIMAL(") else None
    return f"DECIMAL({min(38, decimal[0] - decimal[1] + 1)}, 0)" if decimal and decimal[1] else (
        types[0] if decimal else UNKNOWN)


_EXTRACT_INT = {"YEAR", "YEARS", "Y", "MONTH", "MONTHS", "MON", "DAY", "DAYS", "D", "HOUR", "HOURS",
                "H", "MINUTE", "MINUTES", "MIN", "QUARTER", "QTR", "WEEK", "WEEKS", "W", "DAYOFWEEK",
                "DOW", "DOY"}


def _extract(node: exp.Expr, types: list[str]) -> str:
    unit = node.this if isinstance(node, exp.Extract) else (node.expressions[0] if node.expressions else None)
    if len(types) < 2 or types[-1] not in ("TIMESTAMP", "TIMESTAMP_NTZ", "DATE"):
        return UNKNOWN
    unit_name = unit.name.upper() if isinstance(unit, (exp.Var, exp.Literal, exp.Column)) else ""
    if unit_name in ("SECOND", "SECONDS", "S", "SEC") and types[-1] != "DATE":
        return "DECIMAL(8, 6)"
    return "INT" if unit_name in _EXTRACT_INT else UNKNOWN


def _from_json(node: exp.Expr, types: list[str]) -> str:
    """from_json/from_csv with a literal DDL schema (``'a INT, b STRING'``)."""
    schema = node.expression if isinstance(node, exp.FromJson) else (
        node.expressions[1] if len(node.expressions) > 1 else None)
    if not isinstance(schema, exp.Literal) or not schema.is_string:
        return UNKNOWN
    text = schema.this.strip()
    if not re.match(r"(?i)(struct|array|map)<", text):
        text = f"STRUCT<{text}>"
    try:
        dtype = exp.DataType.build(text, dialect="spark")
    except Exception:  # noqa: BLE001 - a schema we cannot read: unknown
        return UNKNOWN
    return _type_string(dtype)


def _map(node: exp.VarMap) -> str:
    keys, values = _element(_ts(node.args.get("keys"))), _element(_ts(node.args.get("values")))
    return UNKNOWN if UNKNOWN in (keys, values) else f"MAP<{keys}, {values}>"


def _concat(types: list[str]) -> str:
    """concat: strings (with scalars cast to string), binaries, or arrays of one type."""
    simple = {"STRING", "DATE", "TIMESTAMP", "BOOLEAN", *_INTEGRAL, *_FRACTIONAL}
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
# tests/test_schema.py; a function not here is UNKNOWN.
_FUNCTIONS = {k: _rule(v) for k, v in {
    **dict.fromkeys(("upper", "lower", "initcap", "concatws", "trim", "replace", "regexpreplace",
                     "regexpextract", "splitpart", "left", "right", "repeat", "format", "md5",
                     "sha2", "sha", "uuid", "timetostr", "tobase64", "hex", "bin", "conv",
                     "input_file_name", "typeof", "soundex", "translate", "format_number",
                     "tochar", "chr", "elt", "overlay", "regexpsubstr", "jsonformat",
                     "jsonextractscalar", "groupconcat", "currenttimezone", "currentuser",
                     "version", "unixtostr", "decode", "schema_of_json", "arraytostring"), _S),
    **dict.fromkeys(("length", "strposition", "hash", "ascii", "year", "month", "day",
                     "dayofmonth", "hour", "minute", "second", "dayofweek", "weekofyear",
                     "quarter", "datediff", "spark_partition_id", "bitlength", "octet_length",
                     "levenshtein", "find_in_set", "regexpcount", "rownumber", "rank",
                     "denserank", "ntile", "arraysize", "cardinality", "bitwisecount"), _I),
    **dict.fromkeys(("startswith", "endswith", "contains", "arraycontains", "exists", "forall",
                     "mapcontainskey", "logicaland", "logicalor", "every", "isnan", "arrays_overlap",
                     "isnull", "isnotnull"), _B),
    **dict.fromkeys(("sqrt", "pow", "exp", "ln", "log", "sign", "rand", "randn", "monthsbetween",
                     "e", "pi", "degrees", "radians", "cbrt", "stddev", "stddevsamp", "stddevpop",
                     "variance", "variancepop", "median", "corr", "covarpop", "covarsamp",
                     "kurtosis", "skewness", "percentrank", "cumedist", "quantile", "sin", "cos",
                     "atan2"), _D),
    **dict.fromkeys(("count", "countif", "approxdistinct", "factorial", "strtounix",
                     "unixseconds", "unixmillis", "monotonically_increasing_id", "crc32",
                     "xxhash64", "widthbucket", "arrayposition"), _L),
    **dict.fromkeys(("currenttimestamp", "now", "timestamptrunc", "strtotime", "timestampfromparts",
                     "timestamp_seconds", "timestamp_millis", "timestamp_micros"), _TS),
    **dict.fromkeys(("currentdate", "datetrunc", "tsordstodate", "tsordsadd", "addmonths",
                     "lastday", "nextday", "datefromunixdate", "make_date"), "DATE"),
    **dict.fromkeys(("frombase64", "unhex", "encode"), "BINARY"),
    **dict.fromkeys(("regexpsplit", "regexpextractall"), "ARRAY<STRING>"),
    "to_timestamp_ntz": "TIMESTAMP_NTZ",
    "strtomap": "MAP<STRING, STRING>",
    **dict.fromkeys(("min", "max", "first", "last", "anyvalue", "argmax", "argmin", "mode",
                     "firstvalue", "lag", "lead", "nullif", "abs", "reverse", "arraydistinct",
                     "arraysort", "arrayslice", "array_union", "arrayexcept", "arrayintersect",
                     "arrayremove", "arrayappend", "arraycompact", "arrayfilter", "map_filter",
                     "positive", "negative", "safeadd"),
                    lambda node, types: _same(types)),
    **dict.fromkeys(("round", "bround"), _round),
    **dict.fromkeys(("floor", "ceil"), _floor_ceil),
    **dict.fromkeys(("extract", "date_part"), _extract),
    **dict.fromkeys(("fromjson", "from_csv"), _from_json),
    "approxquantile": lambda n, t: _same(t, numeric_only=True),
    "explode": lambda n, t: _element(t[0]) if t[0].startswith("ARRAY<") else UNKNOWN,
    **dict.fromkeys(("arrayagg", "arrayuniqueagg", "array_repeat"), lambda n, t: _array_of(t[0])),
    **dict.fromkeys(("get", "arraymax", "arraymin"), lambda n, t: _element(t[0])),
    "flatten": lambda n, t: _element(t[0]) if _element(t[0]).startswith("ARRAY<") else UNKNOWN,
    "map_values": lambda n, t: _array_of(_element(t[0])) if t[0].startswith("MAP<") else UNKNOWN,
    "mapkeys": lambda n, t: _array_of(_parts(t[0], "MAP")[0]) if _parts(t[0], "MAP") else UNKNOWN,
    "varmap": lambda n, t: _map(n),
    **dict.fromkeys(("coalesce", "greatest", "least"), lambda n, t: _common(t)),
    "generateseries": lambda n, t: _array_of(_common([_ts(n.args.get("start")), _ts(n.args.get("end"))]))
    if _common([_ts(n.args.get("start")), _ts(n.args.get("end"))]) in _INTEGRAL else UNKNOWN,
    "pmod": lambda n, t: _numeric_result(t[0], t[1], exp.Mod) if len(t) == 2 else UNKNOWN,
    "nanvl": lambda n, t: _numeric_result(t[0], t[1], exp.Add)
    if len(t) == 2 and (t[0] in _FRACTIONAL or t[1] in _FRACTIONAL) else UNKNOWN,
    **dict.fromkeys(("window", "session_window", _BOUND), lambda n, t: _window(n)),
    "window_time": lambda n, t: (_parts(t[0], "STRUCT") or [": " + UNKNOWN])[0].split(": ")[-1],
    "sum": lambda n, t: _sum(t[0]),
    **dict.fromkeys(("avg", "mean"), lambda n, t: _avg(t[0])),
    "safedivide": lambda n, t: "DOUBLE" if all(x in _INTEGRAL or x in _FRACTIONAL for x in t) else UNKNOWN,
    "concat": lambda n, t: _concat(t),
    **dict.fromkeys(("substring", "pad"), lambda n, t: t[0] if t[0] in ("STRING", "BINARY") else UNKNOWN),
    "if": lambda n, t: _common([_ts(n.args.get("true")), _ts(n.args.get("false")) if n.args.get("false") else "VOID"]),
    "nvl2": lambda n, t: _common([_ts(n.args.get("true")), _ts(n.args.get("false"))]),
    "case": lambda n, t: _common([_ts(i.args.get("true")) for i in n.args.get("ifs") or []]
                                 + [_ts(n.args.get("default")) if n.args.get("default") else "VOID"]),
    "struct": lambda n, t: _struct(n),
    "array": lambda n, t: _array_of(_common(t)),
}.items()}


def _annotate_function(annotator: TypeAnnotator, node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Cast):  # CAST, TRY_CAST, TIMESTAMP '…', ::
        result = _type_string(node.to)
    else:
        key = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
        rule = _FUNCTIONS.get(key)
        try:
            result = rule(node, [_ts(a) for a in _arguments(node)]) if rule else UNKNOWN
        except (IndexError, AttributeError, ValueError, TypeError):  # a call with other arguments
            result = UNKNOWN
    return annotator._set_type(node, _data_type(result) if result != UNKNOWN else exp.DType.UNKNOWN)


def _annotate_with(function):
    def annotate(annotator: TypeAnnotator, node: exp.Expr) -> exp.Expr:
        result = function(node)
        return annotator._set_type(node, _data_type(result) if result != UNKNOWN else exp.DType.UNKNOWN)
    return annotate


class _Annotator(TypeAnnotator):
    """sqlglot's annotator, except that LATERAL VIEW columns are typed by what is exploded
    (sqlglot gives an exploded array's column the array's type)."""

    def _get_source_scope_selects(self, source: Scope):
        expression = source.expression
        if not isinstance(expression, exp.UDTF):
            return super()._get_source_scope_selects(source)
        if isinstance(expression, exp.Lateral) and isinstance(expression.this, exp.Explode):
            names = expression.alias_column_names
            element = _element(_ts(expression.this.this)) if _ts(expression.this.this).startswith("ARRAY<") else UNKNOWN
            if len(names) == 1 and element != UNKNOWN and not isinstance(expression.this, exp.Posexplode):
                return {names[0]: _data_type(element)}
        return {}


def _annotate_dot(annotator: TypeAnnotator, node: exp.Dot) -> exp.Expr:
    """A struct field (sqlglot's rule), or ``map.key`` on a map with string keys (Spark's)."""
    annotator._annotate_dot(node)
    parts = _parts(_ts(node.this), "MAP")
    if _ts(node) == UNKNOWN and parts and parts[0] == "STRING" and isinstance(node.expression, exp.Identifier):
        annotator._set_type(node, _data_type(parts[1]))
    return node


_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.BitwiseAnd,
               exp.BitwiseOr, exp.BitwiseXor, exp.DPipe)
# sqlglot's own rules are kept only for structure (aliases, parentheses, struct fields,
# subqueries, window functions); every other expression follows our rules or is UNKNOWN.
_STRUCTURE = (exp.Alias, exp.Paren, exp.Boolean, exp.Null, exp.Subquery, exp.Window,
              exp.IgnoreNulls, exp.RespectNulls, exp.HexString, exp.DataType, exp.Distinct)
_METADATA = {
    **{cls: SqlStream.EXPRESSION_METADATA[cls] for cls in _STRUCTURE if cls in SqlStream.EXPRESSION_METADATA},
    **{cls: {"annotator": _annotate_function} for cls in subclasses(exp.__name__, exp.Func)},
    **{cls: {"annotator": _annotate_with(_arithmetic)} for cls in _ARITHMETIC},
    **{cls: {"returns": exp.DType.BOOLEAN}
       for cls in subclasses(exp.__name__, (exp.Predicate, exp.Connector, exp.Not))},
    exp.Literal: {"annotator": _annotate_with(_literal)},
    exp.Dot: {"annotator": _annotate_dot},
    exp.Neg: {"annotator": _annotate_with(lambda n: _ts(n.this) if _is_numeric(_ts(n.this)) else UNKNOWN)},
    **{cls: {"annotator": _annotate_with(lambda n: _ts(n.this) if _ts(n.this) in _INTEGRAL else UNKNOWN)}
       for cls in (exp.BitwiseNot, exp.BitwiseLeftShift, exp.BitwiseRightShift)},
    **{cls: {"returns": exp.DType.TIMESTAMPTZ} for cls in (exp.AtTimeZone, exp.FromTimeZone)},
    exp.Filter: {"annotator": _annotate_with(lambda n: _ts(n.this))},
    exp.Bracket: {"annotator": _annotate_with(
        lambda n: _element(_ts(n.this)) if len(n.expressions) == 1 else UNKNOWN)},
}


# ---- output names -----------------------------------------------------------------------

_NAME = "sqlstream_name"  # meta key: the output name of a select item, decided before qualify
_ALIASES = "sqlstream_aliases"  # meta key: the aliases a SELECT was written with
_OPERATORS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.EQ: "=",
              exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<=", exp.And: "AND", exp.Or: "OR",
              exp.NullSafeEQ: "<=>", exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^",
              exp.IntDiv: "div"}


_UPPER_NAMES = {"floor", "ceil", "sqrt", "power", "exp", "log", "log2", "log1p", "expm1", "sin",
                "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "cot",
                "degrees", "radians", "cbrt", "signum", "rint", "e", "pi", "spark_partition_id",
                "dense_rank", "percent_rank", "rank", "row_number"}


def _pretty(node: exp.Expr, top: bool = False) -> str:
    """Spark's automatic name of an unaliased expression, as Spark names the SQL that
    :func:`~sqlstream.dialect.to_spark_sql` prints (common cases; best effort otherwise)."""
    if isinstance(node, (exp.Column, exp.Dot)) and not node.is_star:
        if isinstance(node, exp.Dot) and not isinstance(node.this, (exp.Column, exp.Dot)):
            return f"{_pretty(node.this)}.{node.name}"
        return node.name if top else ".".join(part.name for part in node.parts)
    if isinstance(node, exp.Paren):
        return _pretty(node.this, top)
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
            return _pretty(node.this, top)
        return f"CAST({_pretty(node.this)} AS {_type_string(node.to)})"
    if type(node) in _OPERATORS:
        return f"({_pretty(node.this)} {_OPERATORS[type(node)]} {_pretty(node.expression)})"
    if isinstance(node, exp.NEQ):
        return f"(NOT ({_pretty(node.this)} = {_pretty(node.expression)}))"
    if isinstance(node, exp.Neg):
        return f"(- {_pretty(node.this)})"
    if isinstance(node, exp.Is):
        return f"({_pretty(node.this)} IS NULL)"
    if isinstance(node, exp.Not):
        return f"(NOT {_pretty(node.this.unnest())})"
    if isinstance(node, exp.In) and node.expressions:
        return f"({_pretty(node.this)} IN ({', '.join(_pretty(e) for e in node.expressions)}))"
    if isinstance(node, exp.Between):
        return f"between({_pretty(node.this)}, {_pretty(node.args['low'])}, {_pretty(node.args['high'])})"
    if isinstance(node, exp.Like):
        return f"{_pretty(node.this)} LIKE {_pretty(node.expression)}"
    if isinstance(node, exp.RegexpLike):
        return f"RLIKE({_pretty(node.this)}, {_pretty(node.expression)})"
    if isinstance(node, exp.DPipe):
        return f"concat({_pretty(node.this)}, {_pretty(node.expression)})"
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:
        return f"{_pretty(node.this)}[{_pretty(node.expressions[0])}]"
    if isinstance(node, exp.Case):
        subject = node.this
        parts = ["CASE"]
        for branch in node.args.get("ifs") or []:
            condition = _pretty(branch.this)
            if subject is not None:
                condition = f"({_pretty(subject)} = {condition})"
            parts.append(f"WHEN {condition} THEN {_pretty(branch.args['true'])}")
        if node.args.get("default") is not None:
            parts.append(f"ELSE {_pretty(node.args['default'])}")
        return " ".join([*parts, "END"])
    if isinstance(node, exp.If):
        args = [node.this, node.args.get("true"), node.args.get("false")]
        return f"(IF({', '.join(_pretty(a) for a in args if a is not None)}))"
    if isinstance(node, exp.PropertyEQ):
        return f"{_pretty(node.expression)} AS {node.name}"
    if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
        return "count(1)"
    if isinstance(node, exp.Anonymous) and top and node.name.lower() in _WINDOW_FUNCTIONS:
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
                args.append("DISTINCT " + ", ".join(_pretty(a) for a in arg.expressions))
            elif not isinstance(arg, (exp.Var, exp.DataType)):
                args.append(_pretty(arg))
        return f"{name}({', '.join(args)})"
    return _spark_sql(node)


def _spark_sql(node: exp.Expr) -> str:
    return SqlStream().generate(node, copy=True, comments=False, normalize_functions=False,
                                unsupported_level=ErrorLevel.IGNORE)


def _output_name(item: exp.Expr) -> str | None:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and item.is_star):
        return None
    return _pretty(item, top=True)


# ---- preparing a copy for sqlglot's optimizer ---------------------------------------------


def _window_bound(time_column: exp.Column) -> exp.Anonymous:
    column = time_column.copy()
    for part in ("table", "db", "catalog"):  # DESCRIPTOR(t.ts): ts of the TVF's own relation
        column.set(part, None)
    return exp.Anonymous(this=_BOUND, expressions=[column])


def _replace_tvf(tvf: WindowTVF) -> None:
    """``TUMBLE(rel, ts, …)`` → ``(SELECT *, <bound> AS window_start, … FROM rel) AS rel``."""
    relation = tvf.this
    name = tvf.alias or (relation.name if isinstance(relation, exp.Table) else None)
    time = tvf.args["time_column"]
    inner = exp.Select(expressions=[exp.Star(), *(
        exp.alias_(_window_bound(time), column)
        for column in ("window_start", "window_end", "window_time"))])
    checked = [e for e in (tvf.args.get("gap"), *(tvf.args.get("partition_by") or [])) if e is not None]
    if checked:  # their columns are checked against the relation like any other
        inner.set("where", exp.Where(this=exp.and_(
            *(exp.Is(this=e.copy(), expression=exp.Null()) for e in checked))))
    joins = tvf.args.get("joins") or []
    subquery = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(name)) if name else None)
    tvf.replace(subquery)
    inner.set("from_", exp.From(this=relation))
    select = subquery.parent.parent if isinstance(subquery.parent, (exp.From, exp.Join)) else None
    if joins and isinstance(select, exp.Select):
        select.set("joins", [*joins, *(select.args.get("joins") or [])])


def _replace_watermark(relation: exp.Expr) -> None:
    """``rel WATERMARK c DELAY OF i AS a`` → ``(SELECT * FROM rel WHERE c IS NULL) AS a``;
    ``WATERMARK expr AS name`` puts ``name`` first, as Spark does."""
    watermark = relation.args.get("watermark")
    relation.set("watermark", None)
    alias = relation.args.get("alias")
    relation.set("alias", None)
    if alias is None and isinstance(relation, exp.Table):
        alias = exp.TableAlias(this=exp.to_identifier(relation.name))
    column = watermark.this
    inner = exp.Select(expressions=[column.copy(), exp.Star()] if isinstance(column, exp.Alias) else [exp.Star()])
    if not isinstance(column, exp.Alias):
        inner.set("where", exp.Where(this=exp.Is(this=column.copy(), expression=exp.Null())))
    subquery = exp.Subquery(this=inner, alias=alias)
    relation.replace(subquery)
    inner.set("from_", exp.From(this=exp.Subquery(this=relation.this) if isinstance(relation, exp.Subquery) else relation))


def _check_positions(select: exp.Select, findings: list) -> None:
    """``GROUP BY 3`` / ``ORDER BY 3`` beyond the select list (Spark: GROUP_BY_POS_OUT_OF_RANGE)."""
    count = len(select.expressions)
    if any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and i.is_star) for i in select.expressions):
        return
    for key, label in (("group", "GROUP BY"), ("order", "ORDER BY")):
        clause = select.args.get(key)
        for item in list(clause.expressions if clause else ()):
            literal = item.this if isinstance(item, exp.Ordered) else item
            if isinstance(literal, exp.Literal) and literal.is_int and not 1 <= int(literal.this) <= count:
                findings.append(_finding("SS205", f"{label} position {literal.this} is not in the select "
                                         f"list (it has {count} item{'s' if count != 1 else ''})", literal))
                item.pop()
        if clause is not None and not clause.expressions and key == "group":
            select.set("group", None)


def _where_alias_refs(select: exp.Select) -> list[exp.Column]:
    """Unqualified columns in WHERE named like a select alias: Spark does not see aliases there."""
    where = select.args.get("where")
    aliases = {i.alias.lower() for i in select.expressions if isinstance(i, exp.Alias)}
    if where is None or not aliases:
        return []
    return [c for c in where.find_all(exp.Column) if not c.table and c.name.lower() in aliases
            and c.find_ancestor(exp.Select) is select]


def _prepare(tree: exp.Expr, findings: list) -> dict[int, list[exp.Column]]:
    for table in tree.find_all(exp.Table):
        table.args.pop("stream", None)
    for tvf in list(tree.find_all(WindowTVF)):
        _replace_tvf(tvf)
    for relation in [n for n in tree.find_all(exp.Table, exp.Subquery) if n.args.get("watermark")]:
        _replace_watermark(relation)
    where_refs = {}
    for select in tree.find_all(exp.Select):
        _check_positions(select, findings)
        where_refs[id(select)] = _where_alias_refs(select)
        select.meta[_ALIASES] = [i.alias for i in select.expressions if isinstance(i, exp.Alias)]
        for item in select.expressions:
            name = _output_name(item)
            if name is not None:
                item.meta[_NAME] = name
    return where_refs


# ---- findings ---------------------------------------------------------------------------


CODES: dict[str, str] = {
    "SS205": "unknown column, struct field or USING column (with a \"did you mean\")",
    "SS206": "unknown function (with a \"did you mean\")",
    "SS207": "ambiguous column: more than one relation of the FROM clause has it",
    "SS208": "a type error Spark raises at analysis (window on a number, TIMESTAMP ± number, "
             "field of a non-struct)",
}

_HINTS = {
    "SS205": "check the spelling against the relation's declared columns (CREATE STREAM/TABLE) "
             "or the view's SELECT list",
    "SS206": "use one of Spark's built-in functions (SHOW FUNCTIONS lists them); "
             "sqlstream does not know user-defined functions",
    "SS207": "qualify it with the relation's name or alias, e.g. f.carrier",
}


def _finding(code: str, message: str, node: exp.Expr | None, kind=UnknownNameError,
             hint: str | None = None) -> SqlStreamError:
    error = kind(message, code=code, hint=hint or _HINTS.get(code))
    offsets = node_offsets(node) if node is not None else None
    error.offset_start, error.offset_end = offsets or (None, None)
    return error


def _check_functions(tree: exp.Expr, sql: str | None, findings: list) -> None:
    """Unknown functions: every call sqlglot does not know; with ``sql``, every call by name."""
    known = known_functions()
    for node in tree.find_all(exp.Func):
        meta = node._meta or {}
        if isinstance(node, exp.Anonymous):
            if isinstance(node.parent, exp.Dot) and node.arg_key == "expression":
                continue  # db.func(…) or a method-like call: not ours to judge
            name = node.name
        elif sql is not None and meta.get("start") is not None and meta.get("end") is not None:
            name = sql[meta["start"]:meta["end"] + 1]
            if not _IDENTIFIER.match(name) or not sql[meta["end"] + 1:].lstrip().startswith("("):
                continue
        else:
            continue
        if name.lower() not in known:
            error = _finding("SS206", f"unknown function '{name}'"
                             f"{did_you_mean(name, known - _TABLE_FUNCTIONS)}", node)
            if meta.get("start") is not None and meta.get("end") is not None:
                error.offset_start, error.offset_end = meta["start"], meta["end"] + 1
            findings.append(error)


class _Sources:
    """The relations a SELECT scope reads: name → lower-case column names, ``None`` if unknown."""

    def __init__(self, scope: Scope, schemas: Mapping[str, list[str]]):
        self.local: dict[str, list[str] | None] = {}
        selected = dict(scope.selected_sources)
        for join in scope.expression.args.get("joins") or []:  # LEFT SEMI/ANTI sides too
            name = join.this.alias_or_name
            if name in scope.sources and name not in selected:
                selected[name] = (join.this, scope.sources[name])
        for name, (node, source) in selected.items():
            columns = None
            if node is not None and getattr(node, "alias_column_names", None):
                columns = [c.lower() for c in node.alias_column_names]
            elif isinstance(source, exp.Table):
                columns = schemas.get(source.name.lower())
            elif isinstance(source, Scope) and isinstance(source.expression, (exp.Select, exp.SetOperation)):
                selects = source.expression.selects
                if not any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects):
                    columns = [s.alias_or_name.lower() for s in selects]
            self.local[name] = columns
        self.outer: dict[str, list[str] | None] = {}
        parent, child = scope.parent, scope
        while parent is not None and (child.is_subquery or child.can_be_correlated):
            for name, columns in _Sources(parent, schemas).local.items():
                self.outer.setdefault(name, columns)
            parent, child = parent.parent, parent
        self.incomplete = any(c is None for c in (*self.local.values(), *self.outer.values()))


def _suggestion(name: str, candidates: list[str], listed: int = 8) -> str:
    """``; did you mean 'x'?``, or when nothing is close, the columns there are (up to ``listed``)."""
    close = did_you_mean(name, candidates)
    if close or not candidates:
        return close
    shown = list(dict.fromkeys(candidates))
    more = ", …" if len(shown) > listed else ""
    return f" (its columns: {', '.join(shown[:listed])}{more})"


def _lambda_variable(column: exp.Column) -> bool:
    node = column.parent
    while node is not None:
        if isinstance(node, exp.Lambda) and column.name in {v.name for v in node.expressions}:
            return True
        node = node.parent
    return False


def _check_columns(scopes: list[Scope], schemas, case: dict[str, str], where_refs, findings: list) -> None:
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        sources = _Sources(scope, schemas)
        pseudo = {n.name.lower() for n in select.find_all(exp.Anonymous) if n.name.lower() in _WINDOW_FUNCTIONS}
        aliases = select.meta.get(_ALIASES, [])
        from_where = {id(c) for c in where_refs.get(id(select), ())}
        columns_named = [case.get(c, c) for cols in sources.local.values() for c in cols or ()]
        where = " (a select alias is not visible in WHERE)"
        single = next(iter(sources.local)) if len(sources.local) == 1 else None
        having = [c for c in select.args["having"].find_all(exp.Column)
                  if not c.table and c.find_ancestor(exp.Select) is select and not _lambda_variable(c)
                  ] if select.args.get("having") else []  # sqlglot leaves them out of scope.columns
        for column in [*scope.columns, *where_refs.get(id(select), ()), *having]:
            name, table = column.name, column.table
            lowered = name.lower()
            if table:
                columns = sources.local.get(table, sources.outer.get(table, False))
                lateral = table.lower() in {a.lower() for a in aliases}  # `SELECT s AS t, t.a`
                if columns is False and table.lower() not in pseudo and not lateral and not sources.incomplete:
                    findings.append(_finding(
                        "SS205", f"unknown column '{table}.{name}'{did_you_mean(name, columns_named + aliases)}", column))
                elif columns and lowered not in columns:
                    findings.append(_finding("SS205", f"unknown column '{name}' in {table}"
                                             + _suggestion(name, [case.get(c, c) for c in columns]), column))
                continue
            if lowered in pseudo or sources.incomplete:
                continue
            owners = [n for n, cols in sources.local.items() if lowered in cols]
            if len(owners) > 1:
                findings.append(_finding("SS207", f"column '{name}' is ambiguous: it is a column of "
                                         + " and ".join(owners) + "; qualify it", column))
            elif not owners and not any(lowered in cols for cols in sources.outer.values()):
                if id(column) in from_where or lowered not in {a.lower() for a in aliases}:
                    place = f" in {single}" if single and single != _ROW else ""
                    why = where if id(column) in from_where else ""
                    candidates = columns_named if why else columns_named + aliases
                    suggestion = _suggestion(name, candidates) if place and not why else \
                        did_you_mean(name, candidates)
                    findings.append(_finding("SS205", f"unknown column '{name}'{place}{why}"
                                             + suggestion, column))


def _window_columns(scopes: list[Scope]) -> None:
    """``window`` / ``window.start`` next to ``GROUP BY window(…)`` → that call (for typing)."""
    for scope in scopes:
        calls = {n.name.lower(): n for n in scope.expression.find_all(exp.Anonymous)
                 if n.name.lower() in _WINDOW_FUNCTIONS}
        for column in scope.columns if calls else ():
            if not column.table and column.name.lower() in calls:
                column.replace(calls[column.name.lower()].copy())
            elif column.table.lower() in calls and column.table not in scope.sources:
                column.replace(exp.Dot(this=calls[column.table.lower()].copy(), expression=column.this))


def _display(node: exp.Expr) -> str:
    """A column or field path as the user wrote it, without the qualifier ``qualify`` added."""
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Dot):
        return f"{_display(node.this)}.{node.name}"
    return _pretty(node)


def _field_names(dtype: exp.DataType | None) -> list[str] | None:
    if dtype is None or not dtype.is_type(exp.DType.STRUCT) or not dtype.expressions:
        return None
    return [f.name for f in dtype.expressions]


def _check_types(tree: exp.Expr, findings: list) -> None:
    """Type errors Spark is certain to raise at analysis (each verified on Spark 4.1)."""
    numeric = (*_INTEGRAL, *_FRACTIONAL, "BOOLEAN")
    for node in tree.walk():
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
            fields, base = _field_names(node.this.type), _ts(node.this)
            field = node.expression.name
            if fields is not None and field.lower() not in {f.lower() for f in fields}:
                findings.append(_finding("SS205", f"unknown field '{field}' of {_display(node.this)}"
                                         + did_you_mean(field, fields), node.expression))
            elif base in (*numeric, "STRING", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "BINARY") \
                    or base.startswith("DECIMAL("):
                findings.append(_finding("SS208", f"{_display(node.this)} has type {base}: it has no "
                                         f"field '{field}'", node.expression, SemanticError,
                                         "only STRUCT and MAP values have fields; check the column's type"))
            continue
        if isinstance(node, exp.Anonymous) and node.name.lower() in (*_WINDOW_FUNCTIONS, _BOUND):
            time = node.expressions[0] if node.expressions else None
            if time is not None and (_ts(time) in numeric or _ts(time).startswith("DECIMAL(")):
                findings.append(_finding("SS208", f"the time column of a window has type {_ts(time)}; "
                                         "it must be a TIMESTAMP", time, SemanticError,
                                         "window on a TIMESTAMP column, e.g. CAST(col AS TIMESTAMP) "
                                         "or timestamp_seconds(col) for epoch seconds"))
        elif isinstance(node, (exp.Add, exp.Sub)):
            sides = _ts(node.this), _ts(node.expression)
            if any(s in ("TIMESTAMP", "TIMESTAMP_NTZ") for s in sides) and any(_is_numeric(s) for s in sides):
                findings.append(_finding("SS208", f"cannot add or subtract {' and '.join(sides)}",
                                         node, SemanticError,
                                         "add or subtract an INTERVAL, e.g. ts + INTERVAL 1 HOUR"))


# ---- entry points -----------------------------------------------------------------------


def _dedupe(findings: list) -> list:
    seen, result = set(), []
    for finding in findings:
        key = (finding.code, finding.message, getattr(finding, "offset_start", None))
        if key not in seen:
            seen.add(key)
            result.append(finding)
    return sorted(result, key=lambda f: (getattr(f, "offset_start", None) or 0))


def _analyze(expression: exp.Expr, catalog: Mapping[str, Schema], sql: str | None):
    tree = expression.copy()
    findings: list[SqlStreamError] = []
    _check_functions(tree, sql, findings)
    names = {t.name.lower() for t in tree.find_all(exp.Table)}
    known = {name: catalog[name] for name in names if catalog.get(name)}
    case = {c.lower(): c for s in known.values() for c, _ in s}
    where_refs = _prepare(tree, findings)
    for node in tree.find_all(exp.Expr):
        if _NAME in (node._meta or {}):
            case.setdefault(node.meta[_NAME].lower(), node.meta[_NAME])
    case.update({c: c for c in ("window_start", "window_end", "window_time")})
    mapping = MappingSchema({n: {c: _data_type(t) for c, t in s} for n, s in known.items()}, dialect="spark")
    try:
        tree = qualify(tree, schema=mapping, dialect="spark", validate_qualify_columns=False,
                       quote_identifiers=False, identify=False, allow_partial_qualification=True)
    except OptimizeError as error:
        findings += _optimizer_finding(str(error), expression)
        return None, _dedupe(findings)
    except Exception:  # noqa: BLE001 - sqlglot could not follow valid SQL: types stay unknown
        return None, _dedupe(findings)
    schemas = {n: [c.lower() for c, _ in s] for n, s in known.items()}
    try:
        scopes = traverse_scope(tree)
    except Exception:  # noqa: BLE001 - as above
        return None, _dedupe(findings)
    _check_columns(scopes, schemas, case, where_refs, findings)
    try:
        _window_columns(scopes)
        _Annotator(mapping, expression_metadata=_METADATA).annotate(tree)
        _check_types(tree, findings)
    except Exception:  # noqa: BLE001 - sqlglot could not type it: the types stay unknown
        for node in tree.walk():
            node.type = None
    return _output(tree, case), _dedupe(findings)


def _optimizer_finding(message: str, expression: exp.Expr) -> list[SqlStreamError]:
    """The qualify errors that certainly are Spark errors too; others are dropped."""
    match = re.match(r"Cannot automatically join: (\w+)", message)
    if match:
        name = match.group(1)
        node = next((i for j in expression.find_all(exp.Join) for i in j.args.get("using") or []
                     if i.name.lower() == name.lower()), None)
        return [_finding("SS205", f"USING column '{name}' is not a column of both sides of the join", node)]
    match = re.match(r"Unknown table: (\w+)", message)
    if match:
        node = next((c for c in expression.find_all(exp.Column)
                     if c.is_star and c.table.lower() == match.group(1).lower()), None)
        if node is not None:
            return [_finding("SS205", f"unknown relation '{node.table}' in {node.table}.*", node)]
    return []


def _output(tree: exp.Expr, case: dict[str, str]) -> Schema | None:
    branches = [tree]
    while any(isinstance(b, exp.SetOperation) for b in branches):
        branches = [p for b in branches for p in ((b.left, b.right) if isinstance(b, exp.SetOperation) else (b,))]
    selects = [b.unnest().selects for b in branches]
    if any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects[0]):
        return None
    result = []
    for position, item in enumerate(selects[0]):
        name = (item._meta or {}).get(_NAME) or (item.unalias()._meta or {}).get(_NAME)
        name = name or case.get(item.alias_or_name.lower(), item.alias_or_name)
        types = [_ts(s[position]) if position < len(s) else UNKNOWN for s in selects]
        result.append((name, types[0] if len(types) == 1 else _common(types)))
    return tuple(result)


def query_schema(expression: exp.Expr | str, catalog: Mapping[str, Schema],
                 sql: str | None = None) -> tuple[Schema | None, list[SqlStreamError]]:
    """Return the output schema of a query and the problems found in it.

    Args:
        expression: a tree from :func:`sqlstream.dialect.parse_query` (before rewriting), or
            the query's text. The tree is not modified.
        catalog: lower-case relation name → its schema. Relations not in it (unknown, or
            their schema unknown) have unknown columns: never a finding.
        sql: the text ``expression`` was parsed from; with it, every function call is checked
            by the name written (without it, only calls sqlglot does not know).

    Returns:
        ``(schema, findings)``: ``schema`` is ``None`` when its columns cannot be known (a
        ``*`` over an unknown relation); a type that cannot be known is ``UNKNOWN``.
        ``findings`` are :class:`~sqlstream.errors.UnknownNameError` (``SS205`` unknown
        column, ``SS206`` unknown function, ``SS207`` ambiguous column) and
        :class:`~sqlstream.errors.SemanticError` (``SS208`` type error), in text order, each
        with ``offset_start``/``offset_end`` (end exclusive) within the query text.
    """
    if isinstance(expression, str):
        sql, expression = expression, parse_query(expression)
    try:
        return _analyze(expression, catalog, sql)
    except Exception:  # noqa: BLE001 - never fail a valid query: its schema is just unknown
        return None, []


def expression_type(sql_expression: exp.Expr | str, schema: Schema,
                    sql: str | None = None) -> tuple[str, list[SqlStreamError]]:
    """Return the type of a scalar expression over one row of ``schema`` (a computed column).

    Args:
        sql_expression: the expression's text (e.g. ``dep_delay > 15``) or its parsed tree.
        schema: the columns it may use.
        sql: the text a parsed ``sql_expression`` came from (see :func:`query_schema`).

    Returns:
        ``(type, findings)`` as in :func:`query_schema`; a syntax error is returned as a
        :class:`~sqlstream.errors.SqlSyntaxError` finding with type ``UNKNOWN``.
    """
    if isinstance(sql_expression, str):
        sql = sql_expression
        try:
            sql_expression = parse_expression(sql)
        except SqlStreamError as error:
            return UNKNOWN, [error]
    query = exp.Select(expressions=[sql_expression.copy()]).from_(_ROW)
    result, findings = _analyze(query, {_ROW: schema}, sql)
    return (result[0][1] if result else UNKNOWN), findings
