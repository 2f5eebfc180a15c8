"""ksqlDB's windowed aggregation, ``FROM s WINDOW TUMBLING|HOPPING|SESSION (…) GROUP BY k``,
as the window TVF it means (the parser makes the :class:`~sqlstream.sql.expressions.WindowTVF`
with a placeholder time column; this pass completes it, before the TVF rewrite).

ksqlDB windows a stream by its event time and groups by the window implicitly, so:

* the TVF's time column is the event-time column of the stream, the column of its
  ``WATERMARK FOR`` (or of a ``WATERMARK`` clause on it in this ``FROM``); a relation
  without one is refused (``SS260``) with the TVF to write;
* ``window_start, window_end`` are added to the ``GROUP BY`` (a query that aggregates
  without ``GROUP BY`` groups by the window alone; one that does not aggregate is refused:
  ksqlDB's ``WINDOW`` windows an aggregation);
* ``WINDOWSTART`` / ``WINDOWEND`` in that query are ``window_start`` / ``window_end`` (as a
  selected column they keep their names); here they are ``TIMESTAMP``s, where ksqlDB's are
  ``BIGINT`` epoch milliseconds;
* ``GRACE PERIOD g`` is how late a row may arrive after its window's end. A window is final
  in ksqlDB when the stream time (the largest event time seen) passes its end plus ``g``;
  Spark writes it when the watermark (the largest event time seen minus the watermark's
  delay) passes its end: the same when the delay is ``g``. So ``GRACE PERIOD`` must equal
  the delay of the stream's watermark (otherwise ``SS260``, saying which to change);
* ``RETENTION`` (how long ksqlDB keeps a window's state for pull queries) changes no
  result here: Spark drops a window's state once the watermark passes its end.

Source: ksqlDB reference, *Time and Windows in ksqlDB* (tumbling, hopping, session windows,
grace period); Spark guide, *Handling Late Data and Watermarking*.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlstream.diagnostics.errors import ForeignSpellingError
from sqlstream.frontend.literals import duration
from sqlstream.sql.expressions import WindowTVF
from sqlstream.sql.window_durations import duration_text

__all__ = ["EventTime", "ksql_windows"]

# (event-time column or None, the watermark's delay as a Spark duration string or None when
# not known, e.g. for a view) of a relation, or None for a name that is no relation.
EventTime = Callable[[str], "tuple[str | None, str | None] | None"]

_BOUNDS = {"windowstart": "window_start", "windowend": "window_end"}
_KSQL_KIND = {"TUMBLE": "TUMBLING", "HOP": "HOPPING", "SESSION": "SESSION"}


def ksql_windows(tree: exp.Expr, event_time: EventTime) -> exp.Expr:
    """Complete every ksqlDB window of ``tree`` (in place) as the module docstring says.

    Args:
        tree: a parsed query.
        event_time: the event-time column and watermark delay of a relation, by lower-case name.

    Returns:
        ``tree``.

    Raises:
        ForeignSpellingError: ``SS260`` with ``offset_start``/``offset_end`` (offsets in the
            query's text) on the clause: a relation without event-time column, a
            ``GRACE PERIOD`` other than the watermark's delay, a query that does not aggregate.
    """
    for tvf in [n for n in tree.find_all(WindowTVF) if "ksql" in n.meta]:
        _complete(tvf, event_time)
    return tree


def _tvf_text(tvf: WindowTVF, relation: str, column: str) -> str:
    args = {"TUMBLE": ("size",), "HOP": ("slide", "size"), "SESSION": ("gap",)}[tvf.args["kind"]]
    shown = ", ".join(tvf.args[a].sql(dialect="spark") for a in args)
    return f"{tvf.args['kind']}({relation}, {column}, {shown})"


def _complete(tvf: WindowTVF, event_time: EventTime) -> None:
    grace = tvf.meta.pop("ksql")
    kind = _KSQL_KIND[tvf.args["kind"]]
    relation = tvf.this
    name = relation.name if isinstance(relation, exp.Table) else ""
    clause = relation.args.get("watermark")  # FROM s WATERMARK ts DELAY OF … WINDOW …
    found: tuple[str | None, str | None] | None
    if clause is not None:
        found = (clause.this.alias_or_name, duration_text(clause.expression))
    else:
        found = event_time(name.lower()) if name else None
    if found is None or found[0] is None:
        what = (
            f"'{name}' has no event-time column (no WATERMARK FOR)"
            if name
            else "it follows a subquery, which has no event-time column of its own"
        )
        raise _error(
            tvf,
            f"ksqlDB's WINDOW {kind} windows by event time, and {what}",
            f"declare the stream's event-time column: WATERMARK FOR ts AS ts - INTERVAL "
            f"'…' (GRACE PERIOD's value) in CREATE STREAM {name or 's'}, or name the column: "
            f"FROM {_tvf_text(tvf, name or 's', 'ts')} … GROUP BY window_start, window_end, …",
        )
    column, delay = found
    assert column is not None  # (refused above)
    if grace is not None:
        given = duration_text(grace)
        assert given is not None  # the parser takes a constant duration only
        number, unit = given.split()
        shown = _plural(given)
        if delay is None or duration(delay) != duration(given):
            have = (
                f"the watermark's delay of '{name}' is {_plural(delay)}"
                if delay is not None
                else f"'{name}' is a view, whose watermark is set on the stream it reads"
            )
            raise _error(
                grace,
                f"GRACE PERIOD {shown} is how late a row may arrive after its "
                f"window's end, which Spark's watermark sets: {have}",
                f"declare WATERMARK FOR {column} AS {column} - INTERVAL "
                f"'{number}' {unit.upper()} on the stream, or drop "
                "GRACE PERIOD to keep the watermark's delay",
            )
    tvf.set("time_column", exp.column(column))
    select = tvf.parent_select
    assert select is not None  # a TVF is in a FROM
    _bounds(select, tvf)
    group = select.args.get("group")
    if group is None and not any(select.find_all(exp.AggFunc)):
        raise _error(
            tvf,
            f"ksqlDB's WINDOW {kind} windows an aggregation, and this query does not aggregate",
            "GROUP BY the keys to aggregate per window; to give each row "
            f"its windows write FROM {_tvf_text(tvf, name, column)}",
        )
    keys = {
        k.name.lower() for k in (group.expressions if group else []) if isinstance(k, exp.Column)
    }
    missing = [b for b in ("window_start", "window_end") if b not in keys]
    if missing:
        select.group_by(*missing, copy=False)


def _plural(text: str) -> str:
    """``'5 minute'`` → ``'5 minutes'`` (a Spark duration of one term, else ``text``)."""
    words = text.split()
    if len(words) != 2 or words[0] == "1" or words[1].endswith("s"):
        return text
    return f"{words[0]} {words[1]}s"


def _bounds(select: exp.Select, tvf: WindowTVF) -> None:
    """``WINDOWSTART`` / ``WINDOWEND`` of ``select`` (not of its subqueries) → the window's
    columns; a selected one keeps its name."""
    alias = tvf.alias_or_name.lower() if tvf.args.get("alias") else None
    for column in list(select.find_all(exp.Column)):
        bound = _BOUNDS.get(column.name.lower())
        if bound is None or column.parent_select is not select or column.this.quoted:
            continue
        qualifier = column.table.lower()
        if qualifier and qualifier not in (alias, tvf.this.name.lower()):
            continue
        replacement: exp.Expr = exp.column(bound, table=column.table or None)
        if column.parent is select and column.arg_key == "expressions":
            replacement = exp.alias_(replacement, column.this.copy())
        column.replace(replacement)


def _error(node: exp.Expr, message: str, hint: str) -> ForeignSpellingError:
    error = ForeignSpellingError(message, hint=hint)
    start, end = node.meta.get("start"), node.meta.get("end")
    if start is not None and end is not None:
        error.offset_start, error.offset_end = start, end + 1
    return error
