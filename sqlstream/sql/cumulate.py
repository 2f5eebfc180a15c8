"""Flink's cumulating windows, ``CUMULATE(rel, ts, step, size [, offset])``, built from Spark's
hopping ``window()``: the relation part of :mod:`sqlstream.sql.window_tvfs`.

Flink's meaning ("Windowing table-valued functions", CUMULATE): the time line is cut into
windows of ``size`` starting at ``offset + k·size`` (the size-aligned start ``S`` of a row);
within each, windows ``[S, S + i·step)`` for ``i = 1 … size/step`` grow by ``step``; a row at
``t`` belongs to every one of them that holds it (``S + i·step > t``). ``size`` must be a
multiple of ``step``.

The same windows in Spark: each cumulating window ``[S, E)`` holding ``t`` has an end ``E``
on the ``step`` grid with ``t < E ≤ S + size``, and ``S ≥ E − size``, so the hopping window
``[E − size, E)`` of ``window(ts, size, step)`` holds ``t`` too; conversely each hopping window
of ``t`` whose end is at most ``S + size`` ends where one cumulating window of ``t`` ends.
So the relation becomes::

    (SELECT * FROM (SELECT *, window(ts, size, step[, offset mod step]) AS __w,
                           timestamp_micros(unix_micros(ts) - pmod(unix_micros(ts) - offset_us, size_us)) AS __cs
                    FROM rel)
     WHERE unix_micros(__w.end) <= unix_micros(__cs) + size_us) AS rel

Spark expands each row into its hopping windows (``__w``, which carries the event-time
watermark: an aggregate grouped by ``__w`` is evicted in append mode when the watermark passes
``__w.end``, which is the cumulating window's end), ``__cs`` is ``S`` computed exactly on
microseconds, and the filter keeps the hopping windows that are cumulating ones. The window
columns are ``window_start = __cs``, ``window_end = __w.end``, ``window_time = window_time(__w)``.
Verified on Spark 4.1 with Flink's documented ``Bid`` example (append and update mode, the
watermark evicting closed windows) and on the flights data against a plain-Python computation
(tests/sql/test_cumulate_spark.py). Spark refuses two ``window()`` calls in one operator, so
``S`` is arithmetic, not a second window; the filter sits one query above the ``window()``
because a WHERE cannot read a select item's alias.
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["CUMULATE_START", "CUMULATE_WINDOW", "cumulate_relation"]

CUMULATE_WINDOW = "__w"  # the hopping window of each row (struct start, end)
CUMULATE_START = "__cs"  # the start of the row's size-aligned window (TIMESTAMP)


def _micros(column: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="unix_micros", expressions=[column])


def cumulate_relation(
    relation: exp.Expr,
    time_column: exp.Column,
    step: str,
    size: str,
    offset: str | None,
    step_us: int,
    size_us: int,
    offset_us: int,
    alias: str | None,
) -> exp.Subquery:
    """The relation ``CUMULATE(relation, time_column, step, size, offset)`` stands for.

    Args:
        relation: the input relation (a Table or Subquery node; used as is).
        time_column: the event-time column, unqualified.
        step, size, offset: Spark duration strings (``'2 minutes'``); ``offset`` may be None.
        step_us, size_us, offset_us: the same in microseconds (``size_us`` a multiple of
            ``step_us``; ``offset_us`` 0 when there is none, may be negative).
        alias: the name of the resulting subquery (the TVF's alias or the relation's name).

    Returns:
        A Subquery with every column of ``relation`` plus ``__w`` (the hopping window) and
        ``__cs`` (the cumulating window's start); one row per cumulating window of each row.
    """
    ts = time_column.copy()
    window_args: list[exp.Expr] = [ts, exp.Literal.string(size), exp.Literal.string(step)]
    hop_offset = offset_us % step_us
    if offset is not None and hop_offset:
        text = offset if hop_offset == offset_us else f"{hop_offset} microseconds"
        window_args.append(exp.Literal.string(text))
    window = exp.Anonymous(this="window", expressions=window_args)
    shifted = (
        exp.Sub(this=_micros(ts.copy()), expression=exp.Literal.number(offset_us))
        if offset_us
        else _micros(ts.copy())
    )
    remainder = exp.Anonymous(this="pmod", expressions=[shifted, exp.Literal.number(size_us)])
    start = exp.Anonymous(
        this="timestamp_micros",
        expressions=[exp.Sub(this=_micros(ts.copy()), expression=remainder)],
    )
    assign = exp.Select(
        expressions=[
            exp.Star(),
            exp.alias_(window, CUMULATE_WINDOW),
            exp.alias_(start, CUMULATE_START),
        ]
    )
    assign.set("from_", exp.From(this=relation))
    keep = exp.LTE(
        this=_micros(exp.column("end", table=CUMULATE_WINDOW)),
        expression=exp.Add(
            this=_micros(exp.column(CUMULATE_START)), expression=exp.Literal.number(size_us)
        ),
    )
    filtered = exp.Select(expressions=[exp.Star()])
    filtered.set("from_", exp.From(this=exp.Subquery(this=assign)))
    filtered.set("where", exp.Where(this=keep))
    subquery = exp.Subquery(this=filtered)
    if alias:
        subquery.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    return subquery
