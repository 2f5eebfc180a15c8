"""Values of a test file, by the column's Spark type: read from YAML, compared, shown.

A Spark SQL type name (``BIGINT``, ``DECIMAL(10,2)``, ``ARRAY<STRUCT<a: INT>>``,
``MAP<STRING, DOUBLE>``, ``TIMESTAMP``) is parsed into a :data:`Type`; a YAML value is
turned into the Python value PySpark takes for that type (:func:`to_python`: a
``datetime`` with the session time zone for ``TIMESTAMP``, a ``Decimal`` for
``DECIMAL``, …) and both expected and actual values into a comparable form
(:func:`normal`: a ``TIMESTAMP`` as microseconds since the epoch, an instant). Floating
point values are equal within a relative tolerance (:func:`equal`). No pyspark import.

Source: Spark SQL *Data Types* (Python types of each Spark type); PySpark converts a
``TimestampType`` value to a naive ``datetime`` in the Python process's local time zone
(``TimestampType.fromInternal``), which :func:`normal` turns back into the instant.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from decimal import Decimal, InvalidOperation
from zoneinfo import ZoneInfo

Type = tuple
"""``("bigint",)``, ``("decimal", p, s)``, ``("array", T)``, ``("map", K, V)``,
``("struct", ((name, T), …))``; ``("unknown",)`` for a type not known statically."""

INTEGERS = {
    "tinyint": 8,
    "byte": 8,
    "smallint": 16,
    "short": 16,
    "int": 32,
    "integer": 32,
    "bigint": 64,
    "long": 64,
}
FLOATS = {"double", "float", "real"}
_TOKEN = re.compile(r"\s*(<|>|\(|\)|,|:|`(?:[^`]|``)*`|[A-Za-z_][\w]*|\d+)")
_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*\Z")


class ValueProblem(ValueError):
    """A value that does not fit its type (the message says why)."""


def parse_type(text: str) -> Type:
    """The :data:`Type` of a Spark SQL type name (as ``DataType.simpleString`` or the
    plan's columns give it; case-insensitive). An unknown name is ``("unknown",)``."""
    tokens = [t for t in _TOKEN.findall(text) if t]
    position = 0

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1] if position <= len(tokens) else ""

    def one() -> Type:
        name = take().lower()
        if name in ("array", "map", "struct"):
            take()  # <
            inner: Type
            if name == "array":
                inner = ("array", one())
            elif name == "map":
                key = one()
                take()  # ,
                inner = ("map", key, one())
            else:
                fields = []
                while tokens[position : position + 1] != [">"]:
                    field = take().strip("`")
                    if tokens[position : position + 1] == [":"]:
                        take()
                    fields.append((field, one()))
                    if tokens[position : position + 1] == [","]:
                        take()
                inner = ("struct", tuple(fields))
            take()  # >
            return inner
        if name in ("decimal", "numeric", "dec"):
            if tokens[position : position + 1] == ["("]:
                take()
                precision = int(take())
                scale = 0
                if take() == ",":
                    scale = int(take())
                    take()
                return ("decimal", precision, scale)
            return ("decimal", 10, 0)
        if name in ("varchar", "char") and tokens[position : position + 1] == ["("]:
            take(), take(), take()
            return ("string",)
        if name == "timestamp_ltz":
            return ("timestamp",)
        return (name,) if name else ("unknown",)

    try:
        return one()
    except (IndexError, ValueError):
        return ("unknown",)


def type_name(kind: Type) -> str:
    """A :data:`Type` as Spark writes it (``ARRAY<BIGINT>``)."""
    if kind[0] == "decimal":
        return f"DECIMAL({kind[1]},{kind[2]})"
    if kind[0] == "array":
        return f"ARRAY<{type_name(kind[1])}>"
    if kind[0] == "map":
        return f"MAP<{type_name(kind[1])}, {type_name(kind[2])}>"
    if kind[0] == "struct":
        return "STRUCT<" + ", ".join(f"{n}: {type_name(t)}" for n, t in kind[1]) + ">"
    return kind[0].upper()


def parse_time(text: str, zone: str | None) -> dt.datetime:
    """``YYYY-MM-DD[ HH:MM[:SS[.f…]]]`` (or with ``T``) as a ``datetime``: aware, in
    ``zone`` (an IANA name such as ``UTC``), or naive when ``zone`` is ``None``.

    Raises:
        ValueProblem: not such a text.
    """
    match = _TIME.match(str(text).strip())
    if not match:
        raise ValueProblem(f"'{text}' is not a timestamp 'YYYY-MM-DD HH:MM:SS[.ffffff]'")
    day, hour, minute, second, fraction = match.groups()
    try:
        value = dt.datetime.fromisoformat(day).replace(
            hour=int(hour or 0),
            minute=int(minute or 0),
            second=int(second or 0),
            microsecond=int((fraction or "0")[:6].ljust(6, "0")),
        )
    except ValueError as exc:
        raise ValueProblem(f"'{text}' is not a timestamp: {exc}") from None
    return value.replace(tzinfo=ZoneInfo(zone)) if zone else value


def epoch_micros(value: dt.datetime) -> int:
    """An aware ``datetime`` (or a naive one in the process's local time zone, as PySpark
    returns a ``TimestampType`` value) as microseconds since 1970-01-01 UTC."""
    whole = value.replace(microsecond=0)
    return int(whole.timestamp()) * 1_000_000 + value.microsecond


def show_time(micros: int, zone: str) -> str:
    """An instant as ``YYYY-MM-DD HH:MM:SS[.ffffff]`` in ``zone``."""
    value = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)
    local = value.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    return local.isoformat(sep=" ", timespec="microseconds" if local.microsecond else "seconds")


def to_python(value, kind: Type, zone: str):
    """A YAML value as the Python value PySpark takes for a column of type ``kind``
    (``None`` stays ``None``: SQL NULL).

    Raises:
        ValueProblem: the value does not fit the type.
    """
    if value is None:
        return None
    name = kind[0]
    if name in INTEGERS:
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and re.fullmatch(r"[+-]?\d{1,40}", value.strip()):
                value = int(value)  # (40 digits: past any integer type, short of int()'s limit)
            else:
                raise ValueProblem(f"{value!r} is not a whole number ({type_name(kind)})")
        bits = INTEGERS[name]
        if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            raise ValueProblem(f"{value} is out of the range of {type_name(kind)}")
        return int(value)
    if name in FLOATS:
        if isinstance(value, bool):
            raise ValueProblem(f"{value!r} is not a number ({type_name(kind)})")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ValueProblem(f"{value!r} is not a number ({type_name(kind)})") from None
    if name == "decimal":
        if isinstance(value, bool):
            raise ValueProblem(f"{value!r} is not a number ({type_name(kind)})")
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            raise ValueProblem(f"{value!r} is not a number ({type_name(kind)})") from None
        if (
            not number.is_finite()
            or number.as_tuple().exponent < -kind[2]
            or abs(number) >= Decimal(10) ** (kind[1] - kind[2])
        ):
            raise ValueProblem(f"{value} does not fit {type_name(kind)}")
        return number
    if name == "boolean":
        if not isinstance(value, bool):
            raise ValueProblem(f"{value!r} is not true or false (BOOLEAN)")
        return value
    if name in ("string", "varchar", "char"):
        if isinstance(value, (dict, list)):
            raise ValueProblem(f"{value!r} is not a scalar (STRING)")
        return (
            value
            if isinstance(value, str)
            else (str(value).lower() if isinstance(value, bool) else str(value))
        )
    if name == "timestamp":
        return _datetime(value, zone)
    if name == "timestamp_ntz":
        return _datetime(value, None)
    if name == "date":
        if isinstance(value, dt.datetime):
            raise ValueProblem(f"{value} is not a date 'YYYY-MM-DD'")
        if isinstance(value, dt.date):
            return value
        try:
            return dt.date.fromisoformat(str(value).strip())
        except ValueError:
            raise ValueProblem(f"'{value}' is not a date 'YYYY-MM-DD'") from None
    if name == "binary":
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        if isinstance(value, str):
            return value.encode("utf-8")
        raise ValueProblem(f"{value!r} is not binary (a string or !!binary)")
    if name == "array":
        if not isinstance(value, (list, tuple)):
            raise ValueProblem(f"{value!r} is not a list ({type_name(kind)})")
        return [to_python(v, kind[1], zone) for v in value]
    if name == "map":
        if not isinstance(value, dict):
            raise ValueProblem(f"{value!r} is not a mapping ({type_name(kind)})")
        return {to_python(k, kind[1], zone): to_python(v, kind[2], zone) for k, v in value.items()}
    if name == "struct":
        names = [n for n, _ in kind[1]]
        if isinstance(value, (list, tuple)) and len(value) == len(names):
            value = dict(zip(names, value, strict=True))
        if not isinstance(value, dict):
            raise ValueProblem(
                f"{value!r} is not a mapping of {', '.join(names)} ({type_name(kind)})"
            )
        extra = [k for k in value if k not in names]
        if extra:
            raise ValueProblem(f"field '{extra[0]}' is not one of {', '.join(names)}")
        return tuple(to_python(value.get(n), t, zone) for n, t in kind[1])
    return value


def _datetime(value, zone: str | None) -> dt.datetime:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:  # YAML timestamps with an offset: the instant
            return value.astimezone(ZoneInfo(zone)) if zone else value.replace(tzinfo=None)
        return value.replace(tzinfo=ZoneInfo(zone)) if zone else value
    if isinstance(value, dt.date):
        value = value.isoformat()
    if not isinstance(value, str):
        raise ValueProblem(f"{value!r} is not a timestamp 'YYYY-MM-DD HH:MM:SS[.ffffff]'")
    return parse_time(value, zone)


def normal(value, kind: Type, zone: str):
    """``value`` (a Python value of type ``kind``: given to or returned by PySpark) in a
    form to compare: a ``TIMESTAMP`` as epoch microseconds (an aware ``datetime`` as its
    instant, a naive one as local time), an array as a tuple, a map as a sorted tuple of
    pairs, a struct as a tuple of its fields (a ``Row`` or a tuple)."""
    if value is None:
        return None
    name = kind[0]
    if name == "timestamp" and isinstance(value, dt.datetime):
        return epoch_micros(value)
    if name == "array":
        return tuple(normal(v, kind[1], zone) for v in value)
    if name == "map":
        return tuple(
            sorted(
                (
                    (normal(k, kind[1], zone), normal(v, kind[2], zone))
                    for k, v in dict(value).items()
                ),
                key=repr,
            )
        )
    if name == "struct":
        fields = tuple(value[n] for n, _ in kind[1]) if isinstance(value, dict) else tuple(value)
        return tuple(normal(v, t, zone) for v, (_, t) in zip(fields, kind[1], strict=True))
    if name in FLOATS:
        return float(value)
    if name == "decimal":
        return Decimal(value)
    return value


def expected(value, kind: Type, zone: str):
    """A YAML value as :func:`normal` gives it for type ``kind``.

    Raises:
        ValueProblem: the value does not fit the type.
    """
    return normal(to_python(value, kind, zone), kind, zone)


def equal(left, right, tolerance: float) -> bool:
    """Two :func:`normal` values are equal: floats within the relative ``tolerance`` (NaN
    equals NaN, an infinity only the same infinity: ``inf - 1e308`` is within any relative
    tolerance of ``inf``, and ``inf`` of ``-inf``), tuples element by element, anything
    else with ``==``."""
    if isinstance(left, float) or isinstance(right, float):
        if left is None or right is None:
            return left is right
        left, right = float(left), float(right)
        if math.isnan(left) or math.isnan(right):
            return math.isnan(left) and math.isnan(right)
        if math.isinf(left) or math.isinf(right):
            return left == right
        return left == right or abs(left - right) <= tolerance * max(abs(left), abs(right))
    if isinstance(left, tuple) and isinstance(right, tuple):
        return len(left) == len(right) and all(
            equal(a, b, tolerance) for a, b in zip(left, right, strict=True)
        )
    return left == right


def shown(value, kind: Type, zone: str):
    """A :func:`normal` value as plain YAML data: a timestamp as its text in ``zone``, a
    date as ``YYYY-MM-DD``, a decimal as a number, arrays as lists, maps and structs as
    mappings."""
    if value is None:
        return None
    name = kind[0]
    if name == "timestamp":
        return show_time(value, zone)
    if name in ("timestamp_ntz", "date"):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if name == "decimal":
        return (
            int(value)
            if value == value.to_integral_value()
            and "E" not in str(value)
            and value.as_tuple().exponent >= 0
            else float(value)
        )
    if name == "binary":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(bytes(value)).decode("ascii")
    if name == "array":
        return [shown(v, kind[1], zone) for v in value]
    if name == "map":
        return {shown(k, kind[1], zone): shown(v, kind[2], zone) for k, v in value}
    if name == "struct":
        return {n: shown(v, t, zone) for v, (n, t) in zip(value, kind[1], strict=True)}
    return value
