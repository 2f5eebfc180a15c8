"""Spark's type names and function names, read statically (no JVM).

Types are spelt as Spark SQL prints them (``BIGINT``, ``DECIMAL(10, 2)``,
``STRUCT<`a`: INT>``); :data:`UNKNOWN` is a type that cannot be known. This module reads
and prints types (:func:`data_type`, :func:`type_string`, :func:`spark_type`); the rules
that give an expression its type are in :mod:`sqlstream.analysis.type_rules`.

:func:`known_functions` lists Spark's built-in function names of a Spark minor
(``spark_functions_<X.Y>.txt``, one per supported minor, written by
``tools/gen_spark_functions.py`` from ``SHOW FUNCTIONS`` on that Spark): callers pass the
minor the file is judged for (:attr:`sqlstream.ir.context.CompileContext.spark_version`).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from importlib import resources

from sqlglot import exp

from sqlstream.frontend.literals import quote_identifier

__all__ = [
    "FRACTIONAL",
    "INTEGRAL",
    "UNKNOWN",
    "WINDOW_BOUND",
    "WINDOW_FUNCTIONS",
    "aggregate_functions",
    "data_type",
    "known_functions",
    "spark_type",
    "type_of",
    "type_string",
]

UNKNOWN = "UNKNOWN"
WINDOW_FUNCTIONS = ("window", "session_window")
WINDOW_BOUND = (
    "__sqlstream_window_bound"  # internal: a window boundary of a TVF, typed like window()
)
# Called like functions but not listed by SHOW FUNCTIONS (syntax, or table-valued functions).
_SYNTAX_FUNCTIONS = {
    "try_cast",
    "rollup",
    "cube",
    "grouping_sets",
    "timestampadd",
    "dateadd",
    "timestampdiff",
    "date_diff",
    "timediff",
    "range",
    "explode_outer",
    "inline_outer",
    "sql_keywords",
    "variant_explode",
    "variant_explode_outer",
}


def _names(resource: str) -> set[str]:
    text = resources.files("sqlstream.analysis").joinpath(resource).read_text(encoding="utf-8")
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


@cache
def aggregate_functions(version: str) -> frozenset[str]:
    """Lower-case names of Spark's aggregate and window functions in Spark ``version`` (a
    supported major.minor, :data:`sqlstream.ir.spark_versions.SUPPORTED`):
    ``spark_aggregate_functions_<version>.txt``, an ``AggregateFunction`` class or group
    ``agg_funcs``."""
    return frozenset(_names(f"spark_aggregate_functions_{version}.txt"))


def aggregate_call(node, version: str, sql: str | None = None) -> bool:
    """Whether ``node`` calls a Spark aggregate function: a sqlglot ``AggFunc``, or a call
    whose name — as sqlglot knows it or, given the SQL text ``sql``, as written there
    (``try_sum``, ``histogram_numeric``, ``every``) — is in :func:`aggregate_functions`
    of Spark ``version``."""
    if isinstance(node, exp.AggFunc):
        return True
    if not isinstance(node, exp.Func):
        return False
    names = {node.name.lower()} if isinstance(node, exp.Anonymous) else {node.sql_name().lower()}
    meta = node._meta or {}
    if sql is not None and meta.get("start") is not None and meta.get("end") is not None:
        names.add(sql[meta["start"] : meta["end"] + 1].lower())
    return bool(names & aggregate_functions(version))


@cache
def known_functions(version: str) -> frozenset[str]:
    """Lower-case names of Spark's built-in functions in Spark ``version`` (a supported
    major.minor): ``spark_functions_<version>.txt``, one file per supported minor
    (``tools/gen_spark_functions.py``)."""
    return frozenset(_names(f"spark_functions_{version}.txt") | _SYNTAX_FUNCTIONS)


# ---- types: our spelling <-> sqlglot DataType -------------------------------------------

INTEGRAL = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 20}  # as DECIMAL(p, 0)
FRACTIONAL = ("FLOAT", "DOUBLE")
_SIMPLE = {
    "TEXT": "STRING",
    "VARCHAR": "STRING",
    "CHAR": "STRING",
    "NVARCHAR": "STRING",
    "NCHAR": "STRING",
    "INT": "INT",
    "BIGINT": "BIGINT",
    "SMALLINT": "SMALLINT",
    "TINYINT": "TINYINT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "FLOAT",
    "BOOLEAN": "BOOLEAN",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP",
    "TIMESTAMPLTZ": "TIMESTAMP",
    "TIMESTAMPTZ": "TIMESTAMP",
    "DATETIME": "TIMESTAMP",
    "TIMESTAMPNTZ": "TIMESTAMP_NTZ",
    "BINARY": "BINARY",
    "VARBINARY": "BINARY",
    "NULL": "VOID",
    "VARIANT": "VARIANT",
}


def type_string(dtype: exp.DataType | None) -> str:
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
        parts = [type_string(a) for a in args]
        return UNKNOWN if UNKNOWN in parts else f"{kind}<{', '.join(parts)}>"
    if kind == "STRUCT" and args:
        fields = []
        for field in args:
            field_type = (
                type_string(field.args.get("kind")) if isinstance(field, exp.ColumnDef) else UNKNOWN
            )
            if field_type == UNKNOWN:
                return UNKNOWN
            fields.append(f"{quote_identifier(field.name)}: {field_type}")
        return f"STRUCT<{', '.join(fields)}>"
    return _SIMPLE.get(kind or "", UNKNOWN) if not args or kind in ("VARCHAR", "CHAR") else UNKNOWN


@lru_cache(maxsize=1024)
def data_type(text: str) -> exp.DataType:
    """The sqlglot type of a type written in Spark SQL (``UNKNOWN`` if sqlglot cannot read it)."""
    if text == "VOID":
        return exp.DataType.build("NULL")
    try:
        return exp.DataType.build(text, dialect="spark")
    except Exception:  # noqa: BLE001 - a type sqlglot cannot read is unknown, not an error
        return exp.DataType.build("UNKNOWN")


def spark_type(text: str) -> str:
    """Return the Spark SQL spelling of a declared type (``LONG`` → ``BIGINT``,
    ``decimal(5,2)`` → ``DECIMAL(5, 2)``), as :class:`Schema` holds it; ``UNKNOWN`` if sqlglot
    cannot read it."""
    return type_string(data_type("VOID" if text.lower() == "void" else text))


def type_of(node: exp.Expr | None) -> str:
    """The type of an annotated sqlglot node in our spelling (``UNKNOWN`` if none)."""
    return UNKNOWN if node is None else type_string(node.type)


def decimal_parts(text: str) -> tuple[int, int] | None:
    """``(precision, scale)`` of a decimal type, or of an integral type read as Spark's
    ``DecimalType.forType`` reads it (``INT`` → ``(10, 0)``); ``None`` for any other type."""
    if text in INTEGRAL:
        return INTEGRAL[text], 0
    match = re.fullmatch(r"DECIMAL\((\d+), (\d+)\)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def adjusted_decimal(precision: int, scale: int) -> str:
    """The decimal type of ``precision`` and ``scale`` digits as Spark's
    ``DecimalType.adjustPrecisionScale`` bounds it (precision loss allowed, the default):
    at most 38 digits, keeping at least 6 of the scale. Returns its spelling."""
    if precision > 38:
        scale = max(38 - (precision - scale), min(scale, 6))
        precision = 38
    return f"DECIMAL({precision}, {scale})"
