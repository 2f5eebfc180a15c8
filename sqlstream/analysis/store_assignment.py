"""Spark's store assignment: which column types may be written into a column declared with
another type, statically (no JVM).

When Spark writes a query into a table (``INSERT INTO``, ``DataFrameWriterV2``), each
column of the query is assigned to the table's column by the policy
``spark.sql.storeAssignmentPolicy``, ``ANSI`` by default since Spark 3.0: the rule is
``Cast.canANSIStoreAssign`` (``sql/catalyst/.../expressions/Cast.scala``), and an assignable
value is converted with a ``CAST`` that fails on overflow (``TableOutputResolver``). The
rule, on Spark's types:

* the same type, or ``NULL`` (``VOID``) into any type;
* a number into any number (``TINYINT`` … ``DECIMAL`` … ``DOUBLE``; a narrowing fails at
  run time when a value does not fit);
* any atomic type (numbers, ``STRING``, ``BOOLEAN``, ``BINARY``, dates, timestamps,
  intervals) into ``STRING``;
* a date or timestamp into a date or timestamp (``DATE``, ``TIMESTAMP``, ``TIMESTAMP_NTZ``);
* ``ARRAY`` / ``MAP`` / ``STRUCT`` element by element (a struct's fields by position, the
  same number of them).

Refused: anything else — ``STRING`` into a number, a date or a ``BOOLEAN``, a number into
``BOOLEAN`` or a timestamp, a ``BOOLEAN`` into a number (Spark's ``INCOMPATIBLE_DATA_FOR_TABLE
.CANNOT_SAFELY_CAST``). Types are spelt as :mod:`sqlstream.analysis.spark_types` spells them.
"""

from __future__ import annotations

from sqlstream.analysis.spark_types import FRACTIONAL, INTEGRAL, UNKNOWN
from sqlstream.analysis.type_rules import type_parts

__all__ = ["assignable", "widening"]

_DATETIME = ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ")
_COMPLEX = ("ARRAY<", "MAP<", "STRUCT<")


def _numeric(t: str) -> bool:
    return t in INTEGRAL or t in FRACTIONAL or t.startswith("DECIMAL(")


def _atomic(t: str) -> bool:
    return not t.startswith(_COMPLEX) and t not in ("VARIANT", "VOID", UNKNOWN)


def _struct_fields(t: str) -> list[str] | None:
    """The field types of ``STRUCT<`a`: INT, …>`` in order, or ``None``."""
    parts = type_parts(t, "STRUCT")
    if parts is None:
        return None
    return [p.split(":", 1)[1].strip() if ":" in p else UNKNOWN for p in parts if p]


def assignable(source: str, target: str) -> bool | None:
    """Whether a value of type ``source`` may be stored into a column of type ``target``
    under Spark's ANSI store assignment (this module's docstring).

    Args:
        source: the query column's type (Spark's spelling, e.g. ``BIGINT``, ``ARRAY<INT>``).
        target: the declared column's type.

    Returns:
        ``True`` or ``False``; ``None`` when either type is unknown here (``UNKNOWN``).
    """
    if UNKNOWN in (source, target) or UNKNOWN in source or UNKNOWN in target:
        return None
    if source == target or source == "VOID":
        return True
    if _numeric(source) and _numeric(target):
        return True
    if target == "STRING" and _atomic(source):
        return True
    if source in _DATETIME and target in _DATETIME:
        return True
    for kind in ("ARRAY", "MAP"):
        left, right = type_parts(source, kind), type_parts(target, kind)
        if left is not None and right is not None and len(left) == len(right):
            answers = [assignable(a, b) for a, b in zip(left, right, strict=True)]
            return None if None in answers else all(answers)
    left, right = _struct_fields(source), _struct_fields(target)
    if left is not None and right is not None:
        if len(left) != len(right):
            return False
        answers = [assignable(a, b) for a, b in zip(left, right, strict=True)]
        return None if None in answers else all(answers)
    return False


def widening(source: str, target: str) -> bool:
    """Whether ``source`` into ``target`` keeps every value and keeps distinct values
    distinct: the same type, or a wider integral type (``INT`` into ``BIGINT``). Used for
    key columns, whose values must identify the same rows after the ``CAST``."""
    if source == target:
        return True
    return source in INTEGRAL and target in INTEGRAL and INTEGRAL[source] <= INTEGRAL[target]
