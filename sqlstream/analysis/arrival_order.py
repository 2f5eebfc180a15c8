"""Streaming rules for results that depend on arrival order or on the run (warnings
``SS361``, ``SS362``): queries Spark runs, whose rows a batch query over the same input —
or another run of the stream, cut into other micro-batches — would not give.

These are what ``sqlstream verify`` finds by running a pipeline; the compiler says them
first, where it can name the cause: a keep-first deduplication by event time (Spark keeps
the first row to arrive) and a value that differs from run to run (the current time,
evaluated once per micro-batch; random values and ids). Each is a function of a
:class:`~sqlstream.analysis.rule_context.Context`, as the rules of
:mod:`sqlstream.analysis.checks`.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlstream.analysis.rule_context import Context, Finding

__all__ = ["arrival_order", "nondeterministic"]


def arrival_order(c: Context) -> Iterator[Finding]:
    """SS361 (warning) — ``ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) = 1`` (and its other
    spellings) on a stream: Spark's ``dropDuplicates`` keeps the first row of each key to
    arrive; the SQL means the one with the earliest ``ts``. The same only when rows arrive
    in event-time order per key. A deduplication whose order column is among its keys (or
    that has none) keeps the same row either way when duplicates are equal events."""
    for dedup in c.ops.deduplications:
        if dedup.order is None:
            continue
        keys = ", ".join(dedup.keys) or "*"
        yield Finding(
            "SS361",
            f"this {dedup.spelling} keeps the first row per ({keys}) to arrive, not the one "
            f"with the earliest `{dedup.order}`: a row with an earlier `{dedup.order}` that "
            "arrives in a later micro-batch is dropped (a batch query keeps it)",
            "if duplicates are the same event, this is what you want (say ORDER BY a key "
            "column or DISTINCT ON to silence this); for the earliest row per key, aggregate "
            f"with min_by(…, {dedup.order}) in a window",
            dedup.node,
        )


def nondeterministic(c: Context) -> Iterator[Finding]:
    """SS362 (warning) — a value that differs from run to run on streaming data: the current
    time (Spark evaluates it once per micro-batch), a processing-time column of a source,
    ``rand()``, ``uuid()`` and Spark's other nondeterministic expressions. One finding per
    query, at the first such call."""
    if not c.ops.nondeterministic:
        return
    what = list(dict.fromkeys(w for w, _ in c.ops.nondeterministic))
    named = ", ".join(what[:3]) + (f" and {len(what) - 3} more" if len(what) > 3 else "")
    yield Finding(
        "SS362",
        f"the result depends on when and how the rows were read: {named} "
        f"{'gives' if len(what) == 1 else 'give'} other values in each run, restart or "
        "micro-batch, and in a batch query",
        "derive the value from the data (an event-time column, a hash of key columns) where "
        "the result must be reproducible",
        c.ops.nondeterministic[0][1],
    )
