"""Functions that ``CREATE FUNCTION`` statements of the tests name (``AS
'tests.udf_functions:…'``): real callables, imported by the compiler (``check``) and,
in the Spark tests, called by Spark's Python workers. Nothing here imports pyspark."""

from __future__ import annotations

import datetime
import decimal

import pandas as pd


def shout(text: str) -> str:
    """Flink's form: the types come from these annotations."""
    return None if text is None else text.upper() + "!"


def celsius(fahrenheit: float) -> float:
    return None if fahrenheit is None else (fahrenheit - 32) / 1.8


def every_type(
    a: int,
    b: float,
    c: str,
    d: bool,
    e: datetime.datetime,
    f: datetime.date,
    g: decimal.Decimal,
    h: bytes,
    i: int | None = None,
) -> datetime.date | None:
    """Each annotation PySpark maps to a Spark type (``i`` may be left out)."""
    return f


def untyped(code):
    """No annotations: Flink's form cannot type it."""
    return code


def annotated_list(codes: list) -> str:
    """An annotation Spark has no type for."""
    return ",".join(codes)


def any_number(*values: float) -> float:
    return sum(v for v in values if v is not None)


def doubled(values: pd.Series) -> pd.Series:
    """A pandas function: one call per Arrow batch."""
    return values * 2


NOT_CALLABLE = 42


def upper_code(code: str) -> str:
    """An airline code in upper case, without surrounding blanks."""
    return None if code is None else code.strip().upper()
