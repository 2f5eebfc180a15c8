"""The durations of window TVFs and of Spark's ``window()`` / ``session_window()`` calls.

Spark's ``window()`` and ``session_window()`` refuse interval literals: ``window(ts,
INTERVAL 10 MINUTES)`` fails ("must be an integer, long or string literal") and
``session_window(ts, INTERVAL '5' SECOND)`` fails ("must be CalendarIntervalType, but got
DayTimeIntervalType"). Durations are therefore written as strings: ``INTERVAL '1' HOUR`` →
``'1 hour'`` (:func:`duration_text`, :func:`window_duration`), also inside a dynamic session
gap (a ``CASE`` of intervals becomes a ``CASE`` of strings, which Spark accepts:
:func:`dynamic_duration`). :func:`check_window_durations` refuses the constant durations Spark
refuses when the query starts (``TimeWindow``).

Errors are :class:`~sqlstream.diagnostics.errors.SemanticError` with ``offset_start``/``offset_end``
(end exclusive) within the parsed query text.
"""

from __future__ import annotations

from sqlglot import exp

from sqlstream.diagnostics.errors import SemanticError
from sqlstream.frontend.literals import duration, duration_problem
from sqlstream.sql.parsing import node_offsets
from sqlstream.sql.tree_walks import find_all


def window_error(message: str, node: exp.Expr | None, hint: str | None = None) -> SemanticError:
    """A :class:`SemanticError` positioned at ``node`` in the parsed query text (none: unpositioned)."""
    error = SemanticError(message, hint=hint)
    offsets = node_offsets(node) if node is not None else None
    error.offset_start, error.offset_end = offsets or (None, None)
    return error


def duration_text(node: exp.Expr) -> str | None:
    """Spark duration string of an interval literal (``INTERVAL '1' HOUR`` → ``1 hour``)."""
    if isinstance(node, exp.Paren):
        return duration_text(node.this)
    if isinstance(node, exp.Neg):
        text = duration_text(node.this)
        single = text is not None and len(text.split()) == 2 and not text.startswith("-")
        return f"-{text}" if single else None
    if isinstance(node, exp.Add):
        left, right = duration_text(node.this), duration_text(node.expression)
        return f"{left} {right}" if left and right else None
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        return None
    unit = node.args.get("unit")
    if unit is not None and not isinstance(unit, exp.Var):
        return None  # INTERVAL '1:30' HOUR TO MINUTE: Spark's duration strings have no such form
    value = node.this.name.strip()
    return f"{value} {unit.name.lower()}" if unit is not None else value


def window_duration(node: exp.Expr, what: str, kind: str) -> exp.Expr:
    """The ``what`` (size, slide, offset, step) of a ``kind`` TVF as a Spark duration string
    literal.

    Raises:
        SemanticError: not a constant duration, or one Spark refuses (months, years).
    """
    if isinstance(node, exp.Literal):
        text = node.name if node.is_string else None
    else:
        text = duration_text(node)
        if text is None:
            raise window_error(
                f"the {what} of {kind} must be a constant duration",
                node,
                hint="write e.g. INTERVAL '10' MINUTES or '10 minutes'",
            )
    problem = (
        duration_problem(text, "window offset" if what == "offset" else "window")
        if text is not None
        else None
    )
    if problem:
        raise window_error(
            f"the {what} of {kind} is not a duration Spark accepts: {problem}",
            node,
            hint="write e.g. INTERVAL '10' MINUTES or '10 minutes' (no months or years)",
        )
    return node.copy() if isinstance(node, exp.Literal) else exp.Literal.string(text)


_WINDOW_ARGS = {"window": ("window", "window", "window offset"), "session_window": ("session gap",)}


def check_window_durations(expression: exp.Expr) -> exp.Expr:
    """Refuse the constant durations of ``window()`` / ``session_window()`` calls that Spark
    refuses when the query starts (``TimeWindow``): one it cannot read, months or years,
    a size or slide not greater than zero, a slide longer than the size, an offset not
    shorter than the slide.

    Returns:
        ``expression``, unchanged.

    Raises:
        SemanticError: at the duration.
    """
    for call in find_all(expression, exp.Anonymous):
        uses = _WINDOW_ARGS.get(call.name.lower())
        if uses is None:
            continue
        micros = []
        # strict=False: a call may pass fewer durations than it can take (offset, slide)
        for use, arg in zip(uses, call.expressions[1:], strict=False):
            if not (isinstance(arg, exp.Literal) and arg.is_string):
                break
            problem = duration_problem(arg.name, use)
            if problem:
                raise window_error(
                    f"{call.name}(): {problem}",
                    arg,
                    hint="write e.g. '10 minutes' (no months or years)",
                )
            value = duration(arg.name)
            micros.append((value.days * 86_400_000_000 + value.microseconds, arg))
        if len(micros) >= 2 and micros[1][0] > micros[0][0]:
            raise window_error(
                f"{call.name}(): the slide '{micros[1][1].name}' is longer than the "
                f"window '{micros[0][1].name}'",
                micros[1][1],
                hint="a slide is at most the window's size",
            )
        if len(micros) >= 3 and abs(micros[2][0]) >= micros[1][0]:
            raise window_error(
                f"{call.name}(): the offset '{micros[2][1].name}' is not shorter than "
                f"the slide '{micros[1][1].name}'",
                micros[2][1],
                hint="an offset is shorter than the slide",
            )
    return expression


def dynamic_duration(node: exp.Expr) -> exp.Expr:
    """A session gap: a constant, or an expression whose interval literals become strings."""
    text = duration_text(node)
    if text is not None:
        return exp.Literal.string(text)

    def convert(child: exp.Expr) -> exp.Expr:
        if isinstance(child, (exp.Interval, exp.Add, exp.Neg)):
            text = duration_text(child)
            if text is not None:
                return exp.Literal.string(text)
        return child

    return node.copy().transform(convert, copy=False)


def micros_of(literal: exp.Expr) -> int:
    """The microseconds of a duration string literal (months and years were refused)."""
    value = duration(literal.name)
    return value.days * 86_400_000_000 + value.microseconds
