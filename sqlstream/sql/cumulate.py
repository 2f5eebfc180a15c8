"""Flink's cumulating windows, ``CUMULATE(rel, ts, step, size [, offset])``, built from Spark's
hopping ``window()``: the CUMULATE part of :mod:`sqlstream.sql.window_tvfs` (its relation, and
the query grouped by it or expanding each row into its windows).

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

from sqlstream.sql.dialect import WindowTVF
from sqlstream.sql.window_durations import micros_of, window_duration, window_error
from sqlstream.sql.window_grouping import group_by_window, minus_micro

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


def cumulate_window(tvf: WindowTVF) -> exp.Subquery:
    """The relation of a CUMULATE (:func:`sqlstream.sql.cumulate.cumulate_relation`)."""
    step = window_duration(tvf.args["step"], "step", "CUMULATE")
    size = window_duration(tvf.args["size"], "size", "CUMULATE")
    step_us, size_us = micros_of(step), micros_of(size)
    if size_us % step_us:
        raise window_error(
            f"the size of CUMULATE ('{size.name}') is not a multiple of its step ('{step.name}')",
            tvf.args["size"],
            hint="Flink's rule: size = n × step, e.g. step INTERVAL '1' HOUR, "
            "size INTERVAL '1' DAY",
        )
    offset = tvf.args.get("offset")
    offset_literal = window_duration(offset, "offset", "CUMULATE") if offset is not None else None
    offset_us = micros_of(offset_literal) if offset_literal is not None else 0
    relation = tvf.this
    alias = tvf.alias or (relation.name if isinstance(relation, exp.Table) else None)
    time_column = tvf.args["time_column"].copy()
    for part in ("table", "db", "catalog"):
        time_column.set(part, None)
    return cumulate_relation(
        relation,
        time_column,
        step.name,
        size.name,
        offset_literal.name if offset_literal is not None else None,
        step_us,
        size_us,
        offset_us,
        alias,
    )


def rewrite_cumulate_aggregated(
    select: exp.Select, tvf: WindowTVF, qualifiers: set[str]
) -> exp.Expr:
    """CUMULATE under ``GROUP BY window_start, window_end``: group by the hopping window and
    the cumulating start (see :mod:`sqlstream.sql.cumulate`)."""
    relation = cumulate_window(tvf)
    qualifier = relation.alias if select.args.get("joins") and relation.alias else None
    calls = [
        exp.column(CUMULATE_WINDOW, table=qualifier),
        exp.column(CUMULATE_START, table=qualifier),
    ]

    def fields(ref: str) -> exp.Expr:
        if ref == "window_start":
            return exp.column(CUMULATE_START, table=qualifier)
        end = (
            exp.Dot(
                this=exp.column(CUMULATE_WINDOW, table=qualifier),
                expression=exp.to_identifier("end"),
            )
            if qualifier
            else exp.column("end", table=CUMULATE_WINDOW)
        )
        return end if ref == "window_end" else minus_micro(end)

    return group_by_window(select, tvf, qualifiers, calls, relation, fields, CUMULATE_WINDOW)


def rewrite_cumulate_per_row(tvf: WindowTVF) -> None:
    """CUMULATE without aggregation: one row per cumulating window of each row."""
    relation = cumulate_window(tvf)
    alias = relation.alias
    relation.set("alias", None)
    hidden = exp.column(CUMULATE_WINDOW)
    expand = exp.Select(
        expressions=[
            exp.Star(except_=[hidden.copy(), exp.column(CUMULATE_START)]),
            exp.alias_(exp.column(CUMULATE_START), "window_start"),
            exp.alias_(exp.column("end", table=CUMULATE_WINDOW), "window_end"),
            exp.alias_(
                exp.Anonymous(this="window_time", expressions=[hidden.copy()]), "window_time"
            ),
        ]
    )
    expand.set("from_", exp.From(this=relation))
    subquery = exp.Subquery(this=expand)
    if alias:
        subquery.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    tvf.replace(subquery)
