"""Literal values as Spark reads them: duration strings, interval literals, dates and times.

Spark parses a duration string (``withWatermark(col, '10 minutes')``, ``window(ts, '1
hour')``, ``Trigger.ProcessingTime('5 seconds')``, ``INTERVAL '1 hour'``) with
``IntervalUtils.stringToInterval``; a string it cannot read fails the query (at parse
time for an ``INTERVAL`` literal, when the query starts for the others). :func:`duration`
reads them the same way, so that ``check`` refuses at the right position what Spark
would refuse, and each use adds its own rule (:func:`duration_problem`): no months in a
window or a trigger, nothing negative in a watermark delay or a trigger, a window size
greater than zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

__all__ = [
    "Duration",
    "date_problem",
    "duration",
    "duration_problem",
    "interval_value_problem",
    "literal_problem",
    "quote_identifier",
    "seconds",
    "split_interval_offsets",
    "string_literal",
    "timestamp_problem",
]


def quote_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier in backquotes, a backquote inside doubled (Spark SQL
    reference, *Identifiers*: delimited identifiers)."""
    return "`" + name.replace("`", "``") + "`"


def string_literal(text: str) -> str:
    """``text`` as a Spark SQL string literal: ``'`` and ``\\`` escaped with a backslash, as
    Spark's default parser reads them (``spark.sql.parser.escapedStringLiterals = false``;
    Spark SQL reference, *Literals*)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


_UNITS = {  # Spark's unit words (singular or plural): (months, days, microseconds) per unit
    "year": (12, 0, 0),
    "month": (1, 0, 0),
    "week": (0, 7, 0),
    "day": (0, 1, 0),
    "hour": (0, 0, 3_600_000_000),
    "minute": (0, 0, 60_000_000),
    "second": (0, 0, 1_000_000),
    "millisecond": (0, 0, 1_000),
    "microsecond": (0, 0, 1),
}
_TERM = re.compile(r"\s*([+-]?)\s*(\d+)(?:\.(\d*))?\s+([A-Za-z]+)\s*")
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class Duration:
    """A duration string as Spark reads it (its ``CalendarInterval``)."""

    months: int
    days: int
    microseconds: int

    @property
    def negative(self) -> bool:
        """Spark's ``IntervalUtils.isNegative`` (a month counted as 31 days)."""
        return (self.months * 31 + self.days) * 86_400_000_000 + self.microseconds < 0

    @property
    def positive(self) -> bool:
        return (self.months * 31 + self.days) * 86_400_000_000 + self.microseconds > 0


def duration(text: str) -> Duration:
    """Read ``text`` as Spark's ``IntervalUtils.stringToInterval`` does: an optional
    ``interval`` prefix, then terms ``[+|-] number unit`` (a fraction only on seconds).

    Raises:
        ValueError: why Spark cannot read it (one sentence).
    """
    body = text.strip()
    if body.lower().startswith("interval"):
        body = body[len("interval") :]
    if not body.strip():
        raise ValueError(f"'{text}' has no amount and unit")
    months = days = micros = 0
    position = 0
    while position < len(body):
        match = _TERM.match(body, position)
        if match is None:
            raise ValueError(f"cannot read '{body[position:].strip()}' as an amount and a unit")
        sign, whole, fraction, word = match.groups()
        unit = word.lower()
        unit = unit[:-1] if unit.endswith("s") and unit[:-1] in _UNITS else unit
        if unit not in _UNITS:
            raise ValueError(
                f"'{word}' is not a unit (year, month, week, day, hour, minute, "
                "second, millisecond, microsecond)"
            )
        if fraction is not None and unit != "second":
            raise ValueError(
                f"'{whole}.{fraction} {word}' cannot have a fractional part (only seconds can)"
            )
        value = int(whole) * (-1 if sign == "-" else 1)
        per_month, per_day, per_micro = _UNITS[unit]
        months += value * per_month
        days += value * per_day
        micros += value * per_micro
        if fraction:
            scaled = int((fraction + "000000")[:6])
            micros += -scaled if sign == "-" else scaled
        if (
            abs(int(whole)) > _LONG_MAX
            or abs(months) > _INT_MAX
            or abs(days) > _INT_MAX
            or abs(micros) > _LONG_MAX
        ):
            raise ValueError(f"'{text}' overflows Spark's interval")
        position = match.end()
    return Duration(months, days, micros)


_MICROS = {unit: days * 86_400_000_000 + micros for unit, (_, days, micros) in _UNITS.items()}
_SHORT_UNITS = {"ms": "millisecond", "s": "second", "m": "minute", "h": "hour", "d": "day"}
_SHORT_TERM = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?")


def seconds(text: str) -> float:
    """A length of time in seconds, as a command line takes it (``exec --timeout``): a
    duration string Spark reads (:func:`duration`: ``'90 seconds'``, ``'1 hour 30
    minutes'``), or its short form: ``90`` (seconds), ``30s``, ``5m``, ``2h``, ``1d``,
    ``1h30m``, ``500ms``, ``1.5s`` (a unit on every term but a single one; a fraction on any).

    Raises:
        ValueError: neither form, a duration with months or years, or one not more than 0.
    """
    compact = text.strip().lower().replace(" ", "")
    terms = _SHORT_TERM.findall(compact)
    if (
        compact
        and "".join(n + u for n, u in terms) == compact
        and (len(terms) == 1 or all(u for _, u in terms))
    ):
        value = Duration(
            0, 0, sum(round(float(n) * _MICROS[_SHORT_UNITS[u or "s"]]) for n, u in terms)
        )
    else:
        value = duration(text)
    if value.months:
        raise ValueError(f"'{text}' has months or years")
    if not value.positive:
        raise ValueError(f"'{text}' is not more than 0")
    return value.days * 86_400 + value.microseconds / 1_000_000


def duration_problem(text: str, use: str) -> str | None:
    """Why Spark refuses duration string ``text`` for ``use``, or ``None`` if it accepts it.

    Args:
        text: the duration string (``'10 minutes'``).
        use: ``"watermark"`` (not negative), ``"trigger"`` (no months or years, not
            negative), ``"window"`` (no months or years, greater than zero: a window's size
            or slide), ``"window offset"`` or ``"session gap"`` (no months or years) or
            ``"interval"`` (readable).
    """
    try:
        value = duration(text)
    except ValueError as error:
        return str(error)
    if use in ("trigger", "window", "window offset", "session gap") and value.months:
        return f"'{text}' has months or years, which a {use} cannot have"
    if use in ("watermark", "trigger") and value.negative:
        return f"'{text}' is negative"
    if use == "window" and not value.positive:
        return f"'{text}' is not greater than zero"
    return None


_NUMBER = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*\Z")
_YEAR_MONTH = re.compile(r"\s*[+-]?\d+(-\d+)?\s*\Z")
_DAY_TIME = re.compile(r"\s*[+-]?\d+( \d+)?(:\d+){0,2}(\.\d+)?\s*\Z")


def interval_value_problem(value: str, unit: str | None, to_unit: str | None = None) -> str | None:
    """Why Spark's parser refuses ``INTERVAL 'value' unit`` (``INVALID_INTERVAL_FORMAT``),
    or ``None``; a ``unit … TO …`` form is only checked for its characters.

    Args:
        value: the string between quotes.
        unit: the unit after it (``HOUR``), or ``None`` for ``INTERVAL '1 hour'``.
        to_unit: the unit after ``TO`` in ``INTERVAL '1-2' YEAR TO MONTH``.
    """
    if unit is None:
        return duration_problem(value, "interval")
    for word in (unit, to_unit):
        singular = (word or "").lower()
        singular = singular[:-1] if singular.endswith("s") and singular[:-1] in _UNITS else singular
        if word is not None and singular not in _UNITS:
            return (
                f"'{word}' is not a unit (year, month, week, day, hour, minute, second, "
                "millisecond, microsecond)"
            )
    if to_unit is not None:
        pattern = _YEAR_MONTH if unit.upper() in ("YEAR", "MONTH") else _DAY_TIME
        return None if pattern.match(value) else f"cannot read '{value}' as {unit} TO {to_unit}"
    if not _NUMBER.match(value):
        return f"'{value}' is not a number of {unit.lower()}s"
    return None


_DATE = re.compile(r"\s*[+-]?(\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2}))?)?")
_TIME = re.compile(
    r"(?:[ T](\d{1,2})(?::(\d{1,2})(?::(\d{1,2})(?:\.\d{0,9})?)?)?)?"
    r"\s*(?:Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2})?(?::\d{2})?|[A-Za-z]+/[A-Za-z_]+)?\s*\Z"
)


def _date_fields(match) -> str | None:
    month, day = int(match.group(2) or 1), int(match.group(3) or 1)
    if not 1 <= month <= 12:
        return f"month {month} is not between 1 and 12"
    days = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
    if not 1 <= day <= days:
        return f"day {day} is not a day of month {month}"
    return None


def date_problem(text: str) -> str | None:
    """Why Spark's parser refuses ``DATE 'text'``, or ``None`` (``yyyy[-m[-d]]``, with an
    optional time part that is ignored)."""
    match = _DATE.match(text)
    if match is None or not _TIME.match(text, match.end()):
        return f"'{text}' is not a date (yyyy-mm-dd)"
    return _date_fields(match)


def timestamp_problem(text: str) -> str | None:
    """Why Spark's parser refuses ``TIMESTAMP 'text'``, or ``None``
    (``yyyy[-m[-d]][ |T]h[:m[:s[.f]]][zone]``)."""
    match = _DATE.match(text)
    time = _TIME.match(text, match.end()) if match else None
    if match is None or time is None:
        return f"'{text}' is not a timestamp (yyyy-mm-dd hh:mm:ss)"
    problem = _date_fields(match)
    if problem:
        return problem
    hour, minute, second = (int(time.group(i) or 0) for i in (1, 2, 3))
    if hour > 23 or minute > 59 or second > 59:
        return f"'{text}' has a time of day that does not exist"
    return None


# ---- typed literals of a parsed query (sqlglot nodes) ---------------------------------------

_DATE_TYPES = {exp.DType.DATE}
_TIMESTAMP_TYPES = {
    exp.DType.TIMESTAMP,
    exp.DType.TIMESTAMPTZ,
    exp.DType.TIMESTAMPLTZ,
    exp.DType.TIMESTAMPNTZ,
}


def literal_problem(node: exp.Expr) -> str | None:
    """Why Spark's parser refuses a typed literal (``INTERVAL 'abc' HOUR``, ``DATE '2020-13-01'``),
    or ``None`` (also for any other node)."""
    if isinstance(node, exp.Interval):
        value, unit = node.this, node.args.get("unit")
        if not (isinstance(value, exp.Literal) and value.is_string):
            return None
        if isinstance(unit, exp.IntervalSpan):
            problem = interval_value_problem(value.name, unit.this.name, unit.expression.name)
        elif unit is None or isinstance(unit, exp.Var):
            problem = interval_value_problem(value.name, unit.name if unit is not None else None)
        else:
            return None
        return f"invalid INTERVAL literal: {problem}" if problem else None
    if type(node) is exp.Cast and isinstance(node.this, exp.Literal) and node.this.is_string:
        kind = node.to.this if isinstance(node.to, exp.DataType) else None
        if kind in _DATE_TYPES:
            problem = date_problem(node.this.name)
            return f"invalid DATE literal: {problem}" if problem else None
        if kind in _TIMESTAMP_TYPES:
            problem = timestamp_problem(node.this.name)
            return f"invalid TIMESTAMP literal: {problem}" if problem else None
    return None


def split_interval_offsets(sql: str, node: exp.Expr) -> tuple[int, int]:
    """Offsets of ``INTERVAL '1 fortnight'``, which sqlglot splits into ``'1'`` and a unit
    without positions: the first such literal whose text has the unit; else all of ``sql``."""
    unit = node.args.get("unit") if isinstance(node, exp.Interval) else None
    for match in re.finditer(r"INTERVAL\s*'[^']*'", sql, re.I):
        if unit is not None and unit.name.lower() in match.group(0).lower():
            return match.start(), match.end()
    return 0, len(sql)
