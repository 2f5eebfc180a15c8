"""Streaming rules (docs/dialect.md#checks): what Spark Structured Streaming refuses, found
statically.

Each rule has a stable code and is a function of a
:class:`~sqlstream.analysis.rule_context.Context` (the query's facts from
:mod:`sqlstream.analysis.facts`, its output mode, sink, trigger and sources) that yields
:class:`~sqlstream.analysis.rule_context.Finding` records; the output mode they judge is
chosen before they run (:mod:`sqlstream.analysis.output_modes`). Rules follow Spark 4.1's
``UnsupportedOperationChecker``
(``sql/catalyst/.../analysis/UnsupportedOperationChecker.scala``), the checks Spark makes
later when it plans the first micro-batch, and the sinks' supported output modes, as
verified on Spark 4.1.4 (``docs/streaming-rules.md``). ``tests/fixtures/check/`` holds a
program for every rule, each run on Spark by ``tests/analysis/test_check_corpus.py``.

Each finding is an error (Spark refuses the query when it starts or fails it in its first
batch, or runs it with a result other than the SQL's) or a warning (``SS35x``, ``SS36x``:
the query runs, but perhaps not as meant); the codes, their severity and documentation are
registered in :mod:`sqlstream.diagnostics.codes` (``python -m sqlstream.diagnostics.codes
SS301`` prints one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from sqlstream.analysis.arrival_order import arrival_order, nondeterministic
from sqlstream.analysis.operators import JoinInfo, Operators
from sqlstream.analysis.rule_context import WATERMARK_HINT, Context, Finding, stateful, watermarked
from sqlstream.sql.meta import DEDUP_REFUSED, LOOKUP, REWRITTEN_FROM

# ---- operator rules ------------------------------------------------------------------------------


def _limit(c: Context) -> Iterator[Finding]:
    """SS310 — ``SELECT … LIMIT 10 EMIT CHANGES``: Spark refuses LIMIT in update mode (it
    accepts it in append and complete mode). Fix: EMIT FINAL or EMIT COMPLETE, or drop it."""
    if c.ops.limit is not None and c.mode == "update":
        yield Finding(
            "SS310",
            "LIMIT is not supported in update mode",
            "use EMIT COMPLETE (or append mode), or remove the LIMIT",
            c.ops.limit,
        )


def _order(c: Context) -> Iterator[Finding]:
    """SS311 — ``SELECT * FROM s ORDER BY ts``: Spark sorts a stream only when the sorted
    result contains an aggregation and the mode is complete (``SORT BY``, ``CLUSTER BY``
    too). Fix: aggregate and EMIT COMPLETE, or sort where the result is read."""
    if c.ops.order is not None and not (c.ops.order_after_aggregation and c.mode == "complete"):
        yield Finding(
            "SS311",
            "ORDER BY on a stream is supported only after an "
            "aggregation in complete mode (EMIT COMPLETE)",
            "remove the ORDER BY and sort where the result is read, or aggregate and EMIT COMPLETE",
            c.ops.order,
        )


def _window_function(c: Context) -> Iterator[Finding]:
    """SS314 — ``SUM(x) OVER (PARTITION BY k ORDER BY ts)`` on a stream: Spark does not
    support non-time-based windows on streams (a window function on a table is fine).
    SS325 — a ``ROW_NUMBER`` filter that is no keep-first deduplication (``rn <= 3``,
    ``ORDER BY ts DESC``): :mod:`sqlstream.analysis.dedup` rewrites the others."""
    window = c.ops.window_function
    if window is None:
        return
    refused = window.meta.get(DEDUP_REFUSED) if window._meta else None
    if refused:
        yield Finding(
            "SS325",
            f"this ROW_NUMBER pattern is not a deduplication Spark can run: {refused}",
            "keep the first row per key: ROW_NUMBER() OVER (PARTITION "
            "BY <keys> ORDER BY <time column>) = 1 (or DISTINCT ON (<keys>)); for the "
            "last or top rows per key, aggregate (max_by, a time window)",
            window,
        )
        return
    written = window.meta.get(REWRITTEN_FROM) if window._meta else None
    if written:  # Spark SQL has no such syntax: it was rewritten to a window function
        yield Finding(
            "SS314",
            f"{written} is not supported on streams: Spark SQL has "
            f"no {written}; it becomes a window function in a subquery (OVER …), which "
            "Spark refuses on a stream",
            "aggregate with GROUP BY and a time window (TUMBLE, HOP, SESSION) instead",
            window,
        )
        return
    yield Finding(
        "SS314",
        "window functions (OVER …) are not supported on streams",
        "use a GROUP BY with a time window (TUMBLE, HOP, SESSION)",
        window,
    )


def _global_session(c: Context) -> Iterator[Finding]:
    """SS315 — ``GROUP BY window_start, window_end`` of a SESSION and nothing else: Spark
    starts the query and fails its first batch ("Global aggregation with session window")."""
    if c.ops.global_session is not None:
        yield Finding(
            "SS315",
            "a session window cannot be the only grouping key",
            "group by a key too (e.g. GROUP BY user_id, window_start, window_end)",
            c.ops.global_session,
        )


def _offset(c: Context) -> Iterator[Finding]:
    """SS316 — ``LIMIT 10 OFFSET 5``: Spark refuses OFFSET anywhere in a streaming query,
    even on a table joined to the stream."""
    if c.ops.offset is not None:
        yield Finding(
            "SS316",
            "OFFSET is not supported in a streaming query",
            "remove the OFFSET",
            c.ops.offset,
        )


def _distinct_aggregate(c: Context) -> Iterator[Finding]:
    """SS317 — ``COUNT(DISTINCT url)``: Spark refuses distinct aggregate functions on streams."""
    if c.ops.distinct_aggregate is not None:
        yield Finding(
            "SS317",
            "aggregate functions with DISTINCT are not supported on streams",
            "use approx_count_distinct(…), or deduplicate in a view first",
            c.ops.distinct_aggregate,
        )


_SET_OPERATIONS = {
    "union_static": "UNION of a stream with a static relation is not supported",
    "intersect": "INTERSECT is not supported on streams",
    "except_right": "EXCEPT with a stream on the right is not supported",
    "except": "a stream EXCEPT a table is an aggregation for Spark: only update mode "
    "(EMIT CHANGES) runs it (append mode fails in the first batch)",
}


def _set_operations(c: Context) -> Iterator[Finding]:
    """SS318 — set operations Spark refuses on streams: UNION of a stream and a table,
    INTERSECT, EXCEPT with a stream on the right, and a stream EXCEPT a table outside update
    mode. ``UNION ALL`` of two streams is fine."""
    for problem, node in c.ops.set_operations:
        if problem == "except" and c.mode == "update":
            continue
        yield Finding(
            "SS318",
            _SET_OPERATIONS[problem],
            "join the stream with the table instead, or UNION ALL two streams",
            node,
        )


def _watermark_redefined(c: Context) -> Iterator[Finding]:
    """SS319 — ``FROM s WATERMARK ts DELAY OF …`` when ``s`` already has a watermark: Spark
    starts the query and fails its first batch ("Redefining watermark is disallowed")."""
    if c.ops.watermark_redefined is not None:
        yield Finding(
            "SS319",
            "this relation already has a watermark: Spark does not allow a second one on it",
            "keep one watermark: the WATERMARK FOR "
            "of the stream, or this clause on a stream without one",
            c.ops.watermark_redefined,
        )


def _not_map_like(ops: Operators) -> str:
    for what, present in (
        ("an aggregation", ops.aggregations),
        ("a join", ops.joins),
        ("DISTINCT", ops.distinct),
        ("ORDER BY", ops.order),
        ("LIMIT", ops.limit),
        ("OFFSET", ops.offset),
        ("a window function", ops.window_function),
        ("a deduplication", ops.deduplications),
    ):
        if present:
            return what
    return ops.not_map_like[0][0] if ops.not_map_like else "an operation that is not map-like"


def _continuous(c: Context) -> Iterator[Finding]:
    """SS306/SS307/SS308 — ``EMIT CONTINUOUS`` supports only map-like queries (projections
    and filters: no aggregation, join, set operation, generator, watermark or current time)
    over rate or kafka sources, into sinks other than files."""
    if c.trigger_kind != "continuous":
        return
    if not c.ops.map_like:
        yield Finding(
            "SS306",
            "a continuous trigger supports only map-like queries "
            f"(SELECT and WHERE); this one has {_not_map_like(c.ops)}",
            "use EMIT … EVERY INTERVAL … instead",
            at="emit",
        )
    others = sorted(c.not_continuous_sources)
    if others:
        yield Finding(
            "SS307",
            f"a continuous trigger cannot read a {others[0]} source (only "
            f"{' and '.join(c.continuous_sources)})",
            "use EMIT … EVERY INTERVAL … instead",
            at="emit",
        )
    if not c.continuous_sink:
        yield Finding(
            "SS308",
            f"the {c.sink_connector} sink does not support a "
            "continuous trigger (Spark fails the query at once)",
            "write to a memory, console or noop sink, or use EMIT … EVERY INTERVAL …",
            at="emit",
        )


def _empty_once(c: Context) -> Iterator[Finding]:
    """SS360 (warning) — ``EMIT … ONCE`` over a ``rate`` source (:func:`reads_nothing_once`)."""
    if c.trigger_kind == "available_now" and c.empty_available_now_sources:
        yield reads_nothing_once(sorted(c.empty_available_now_sources)[0], "EMIT … ONCE")


def reads_nothing_once(connector: str, spelled: str) -> Finding:
    """SS360 (warning): a source read under ``trigger(availableNow=True)`` that yields no
    rows on a new checkpoint. Spark has no AvailableNow support in its ``rate`` source: it
    reads the rows due when the query starts — none on a new checkpoint — and ends (measured
    on Spark 4.1.4). The one message of the rule, for ``EMIT … ONCE`` (a compile-time rule)
    and for ``exec --available-now`` (the runner, :mod:`sqlstream.runtime.runner`).

    Args:
        connector: the source's connector (``rate``).
        spelled: how the query came to run available-now: ``EMIT … ONCE`` or
            ``--available-now``.

    Returns:
        The :class:`~sqlstream.analysis.rule_context.Finding` (at the ``EMIT`` clause).
    """
    instead = (
        "EMIT … EVERY INTERVAL … with exec --timeout"
        if spelled == "EMIT … ONCE"
        else f"run without {spelled} and stop with --timeout"
    )
    return Finding(
        "SS360",
        f"a {connector} source with {spelled} reads only the rows due when "
        "the query starts: none on a new checkpoint, so the run writes nothing",
        "use connector = 'rate_micro_batch' with rows_per_batch = N (one "
        f"micro-batch of N rows per run), or {instead}",
        at="emit",
    )


_NULLABLE_STREAM = {  # join kind -> which streaming side Spark refuses against a static one
    "left": "right",
    "right": "left",
    "full": "either",
    "semi": "right",
    "anti": "right",
}
_PRESERVED = {"left": ("left",), "right": ("right",), "full": ("left", "right")}


def _stream_stream_problem(join: JoinInfo) -> Finding | None:
    """Spark 4.1's conditions for a join of two streams (besides append mode, SS322)."""
    kind = join.kind
    if kind.endswith("anti"):
        return Finding(
            "SS324",
            "a LEFT ANTI join of two streams is not supported",
            "join a stream with a table instead, or use a LEFT JOIN with "
            "watermarks and a time range and keep the rows whose right side is NULL",
            join.node,
        )
    if not join.equality:
        return Finding(
            "SS323",
            "a join of two streams needs an equality between "
            "them in ON (Spark fails the first batch without one)",
            "add a key condition such as a.user_id = b.user_id",
            join.node,
        )
    if kind not in ("left", "right", "full", "semi"):
        return None
    accepted = (
        join.watermark_in_keys
        or {
            "left": join.bounds_left,
            "semi": join.bounds_left,
            "right": join.bounds_right,
            "full": join.bounds_left or join.bounds_right,
        }[kind]
    )
    name = "LEFT SEMI" if kind == "semi" else kind.upper()
    if not accepted:
        return Finding(
            "SS321",
            f"a stream-stream {name} join needs a watermark on the nullable "
            "side and a time range in ON that bounds the other side by it (or the event "
            "time among the join keys)",
            "add WATERMARK FOR to both streams and a condition such as "
            "b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR (months and years cannot bound it)",
            join.node,
        )
    for side in _PRESERVED.get(kind, ()):
        if not join.state_bounded(side):
            return Finding(
                "SS321",
                f"a stream-stream {name} join writes the unmatched rows of "
                f"its {side} side only when it drops them from its state: the {side} side "
                "needs a watermark and a time range in ON that bounds it (Spark would run "
                "this join but never write them)",
                "add WATERMARK FOR to both streams and a condition such as "
                "b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR",
                join.node,
            )
    return None


def _joins(c: Context) -> Iterator[Finding]:
    """SS320/SS321/SS323/SS324 — Spark's join support matrix: ``static RIGHT JOIN stream``
    is fine but ``stream RIGHT JOIN static`` is not; a join of two streams needs an equality,
    is never LEFT ANTI, and as an outer or semi join needs watermarks and a time range
    (``b.ts BETWEEN a.ts AND a.ts + INTERVAL …``) that let Spark drop old rows."""
    for join in c.ops.joins:
        kind = join.kind
        if join.stream_stream:
            problem = _stream_stream_problem(join)
            if problem is not None:
                yield problem
            continue
        bad = _NULLABLE_STREAM.get(kind)
        if bad and (
            (bad == "right" and join.right_streaming)
            or (bad == "left" and join.left_streaming)
            or (bad == "either" and (join.left_streaming or join.right_streaming))
        ):
            yield Finding("SS320", _SS320_MESSAGES[kind], _SS320_HINTS[kind], join.node)


_SS320_MESSAGES = {  # the stream is on the side Spark cannot pad with NULLs / does not allow
    "left": "a LEFT join is not supported with the stream on the nullable (right) side and a "
    "static relation on the preserved (left) side",
    "right": "a RIGHT join is not supported with the stream on the nullable (left) side and a "
    "static relation on the preserved (right) side",
    "full": "a FULL join of a stream and a static relation is not supported: both sides are "
    "nullable, and the stream may not be",
    "semi": "a LEFT SEMI join is not supported with the stream on the right side and a "
    "static relation on the left",
    "anti": "a LEFT ANTI join is not supported with the stream on the right side and a "
    "static relation on the left",
}
_SS320_HINTS = {
    "left": "swap the sides (stream LEFT JOIN table), or use INNER JOIN",
    "right": "swap the sides (table RIGHT JOIN stream, or stream LEFT JOIN table), or use INNER JOIN",
    "full": "keep the stream's side only (stream LEFT JOIN table), or use INNER JOIN",
    "semi": "put the stream on the left (stream LEFT SEMI JOIN table)",
    "anti": "put the stream on the left (stream LEFT ANTI JOIN table)",
}


def _lookup_joins(c: Context) -> Iterator[Finding]:
    """SS336 — ``s JOIN t FOR SYSTEM_TIME AS OF s.ts`` where ``t`` reads a stream: a lookup
    join is rewritten to a stream-static join (:func:`sqlstream.sql.rewrite.lookup_joins`), which
    only a static relation (``CREATE TABLE``, or a view over tables) can be."""
    for join in c.ops.joins:
        time = join.node.meta.get(LOOKUP) if join.node._meta else None
        if time is not None and join.right_streaming:
            yield Finding(
                "SS336",
                f"a lookup join (FOR SYSTEM_TIME AS OF {time}) needs a static "
                "relation on its right: this one reads a stream",
                "declare the looked-up relation with CREATE TABLE, or drop FOR SYSTEM_TIME "
                "AS OF and join the two streams with watermarks and a time range in ON",
                join.node,
            )


DEDUP_HINT = (
    "add WATERMARK FOR <event time> to the stream: DISTINCT ON and ROW_NUMBER then "
    "drop duplicates within the watermark; SELECT DISTINCT needs the event-time "
    "column among its columns"
)


def _unbounded_state(c: Context) -> Iterator[Finding]:
    """SS350 (warning) — an aggregation, deduplication or stream-stream join without a
    watermark keeps its state forever: memory grows with every new key."""
    if stateful(c.info, c.ops) and not watermarked(c.info, c.ops) and c.mode != "append":
        yield Finding(
            "SS350",
            "the aggregation's state grows without bound: no "
            "watermarked window or event-time key lets Spark drop old groups",
            WATERMARK_HINT,
        )
    for dedup in c.ops.deduplications:
        if not dedup.bounded:
            yield Finding(
                "SS350",
                f"the deduplication ({dedup.spelling}) keeps every key it has "
                "seen: no watermark lets Spark drop old keys",
                DEDUP_HINT,
                dedup.node,
            )
    for join in c.ops.stream_stream_joins:
        if _stream_stream_problem(join) is not None:
            continue
        if not (join.state_bounded("left") and join.state_bounded("right")):
            yield Finding(
                "SS350",
                "the stream-stream join keeps every row of a "
                "stream: no watermark and time range let Spark drop old rows",
                "add WATERMARK FOR to both streams and a time range condition in ON",
                join.node,
            )


def _append_delay(c: Context) -> Iterator[Finding]:
    """SS351 (warning) — an inferred append-mode aggregation writes each window only after
    the watermark passes its end: nothing appears until later data arrives."""
    if stateful(c.info, c.ops) and c.mode == "append" and not c.requested:
        yield Finding(
            "SS351",
            "each window is written only once the watermark passes "
            "its end (append mode was inferred)",
            "say EMIT FINAL to make this explicit, or EMIT CHANGES for early results",
            at="query",
        )


RULES: tuple[Callable[[Context], Iterator[Finding]], ...] = (
    _limit,
    _order,
    _window_function,
    _global_session,
    _offset,
    _distinct_aggregate,
    _set_operations,
    _watermark_redefined,
    _continuous,
    _joins,
    _lookup_joins,
    _unbounded_state,
    _append_delay,
    _empty_once,
    arrival_order,
    nondeterministic,
)


def run_rules(context: Context) -> list[Finding]:
    """Run every rule of :data:`RULES` on one query; findings in rule order."""
    return [finding for rule in RULES for finding in rule(context)]
