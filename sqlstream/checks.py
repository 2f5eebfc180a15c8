"""Streaming rules (LANGUAGE.md §6): what Spark Structured Streaming refuses, found statically.

Each rule has a stable code and is a function of a :class:`Context` (the query's facts
from :mod:`sqlstream.analysis`, its output mode, sink, trigger and sources) that yields
:class:`Finding` records. Rules follow Spark 4.1's ``UnsupportedOperationChecker``
(``sql/catalyst/.../analysis/UnsupportedOperationChecker.scala``) and the sinks'
supported output modes, as verified on Spark 4.1.4 (``docs/streaming-rules.md``).

Errors (the query would be refused by Spark, or mean something else than the SQL says):

====== ==========================================================================
SS301  append mode on an aggregation without a watermarked grouping key
SS302  complete mode without an aggregation
SS303  update mode with a session window
SS304  an output mode the sink does not support
SS305  no output mode fits (inference)
SS306  continuous trigger on a query that is not map-like
SS307  continuous trigger on a source other than rate (or kafka)
SS310  LIMIT in update mode
SS311  ORDER BY other than on an aggregation in complete mode
SS312  SELECT DISTINCT on a stream (deduplication, LANGUAGE.md §3.3, is not supported yet)
SS313  chained aggregations in update or complete mode
SS314  a window function (OVER) on a stream
SS315  a session window as the only grouping key
SS320  stream-static outer/semi/anti join on the unsupported side
SS321  stream-stream outer or semi join without a watermark and a time range condition
====== ==========================================================================

Warnings (the query runs, but perhaps not as meant):

====== ==========================================================================
SS350  stateful query whose state grows without bound (no watermark)
SS351  append-mode aggregation: rows are written only after the watermark passes
====== ==========================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sqlglot import exp

from sqlstream.analysis import MODES, Operators, QueryInfo

CONTINUOUS_SOURCES = {"rate", "kafka"}


@dataclass(frozen=True)
class Finding:
    """One rule violation.

    Attributes:
        code: the rule's stable code (``SS3xx``).
        severity: ``error`` or ``warning``.
        message: what is wrong, one sentence.
        hint: how to fix it, one sentence.
        node: the sqlglot node to point at, or ``None`` (the query, or ``at``).
        at: ``"emit"`` to point at the EMIT clause, ``"query"`` for the whole query.
    """

    code: str
    severity: str
    message: str
    hint: str
    node: exp.Expression | None = None
    at: str = "query"


@dataclass(frozen=True)
class Context:
    """What the rules see of one query.

    Attributes:
        info, ops: facts from :func:`sqlstream.analysis.analyze` and ``collect_operators``.
        mode: the output mode in force; ``requested``: whether it came from ``EMIT``.
        sink_connector: the sink's connector name; ``sink_modes`` the modes it supports.
        trigger_kind: ``processing_time``, ``available_now``, ``continuous`` or ``None``.
        source_connectors: connector names of the streams the query reads.
    """

    info: QueryInfo
    ops: Operators
    mode: str
    requested: bool
    sink_connector: str
    sink_modes: frozenset[str]
    trigger_kind: str | None
    source_connectors: frozenset[str]


# ---- output modes ------------------------------------------------------------------------------

WATERMARK_HINT = ("add WATERMARK FOR <event time> to the stream and GROUP BY a window on it "
                  "(e.g. TUMBLE), then EMIT FINAL; or use EMIT CHANGES / EMIT COMPLETE")


def mode_problems(info: QueryInfo, ops: Operators, mode: str, sink_connector: str,
                  sink_modes: frozenset[str]) -> list[Finding]:
    """Why Spark refuses ``mode`` for this query and sink (empty: it accepts it)."""
    found = []
    if info.aggregate:
        if mode == "append" and not info.watermarked_key:
            found.append(Finding(
                "SS301", "error", "append mode (EMIT FINAL) needs a watermark on the "
                "aggregation: no grouping key is the watermarked event-time column or a window on it",
                WATERMARK_HINT, at="emit"))
        if mode == "update" and info.session_window:
            found.append(Finding(
                "SS303", "error", "session windows do not support update mode (EMIT CHANGES)",
                "use EMIT FINAL (append, with a watermark) or EMIT COMPLETE", at="emit"))
    elif mode == "complete":
        found.append(Finding(
            "SS302", "error", "complete mode (EMIT COMPLETE) needs an aggregation: it rewrites "
            "the whole result table every trigger",
            "add a GROUP BY, or use EMIT CHANGES / EMIT FINAL, or leave the mode out", at="emit"))
    if mode not in sink_modes:
        found.append(Finding(
            "SS304", "error", f"the {sink_connector} sink does not support {mode} mode "
            f"(it supports {', '.join(m for m in MODES if m in sink_modes)})",
            "write to a sink that supports this mode (memory, console) or change EMIT",
            at="emit"))
    return found


def choose_mode(info: QueryInfo, ops: Operators, requested: str | None, sink_connector: str,
                sink_modes: frozenset[str]) -> tuple[str | None, str, list[Finding]]:
    """Pick the output mode (LANGUAGE.md §3.5): the requested one, or the first of append,
    update, complete that Spark allows for this query and sink.

    Returns:
        ``(mode, reason, findings)``; ``mode`` is ``None`` when none fits (then ``findings``
        holds SS305), else ``findings`` are the problems of the requested mode, if any.
    """
    if requested is not None:
        return requested, "from EMIT", mode_problems(info, ops, requested, sink_connector, sink_modes)
    reasons = {}
    for mode in MODES:
        problems = mode_problems(info, ops, mode, sink_connector, sink_modes)
        if not problems:
            if not info.aggregate:
                why = "no aggregation"
            elif mode == "append":
                why = "aggregation grouped by a window on a watermarked column"
            else:
                why = f"aggregation; append impossible: {reasons['append']}"
            return mode, f"inferred: {why}", []
        reasons[mode] = problems[0].message
    detail = "; ".join(f"{m}: {r}" for m, r in reasons.items())
    return None, "", [Finding(
        "SS305", "error", f"no output mode fits this query and sink ({detail})",
        WATERMARK_HINT if info.aggregate else "write to another sink")]


# ---- operator rules ------------------------------------------------------------------------------

def _limit(c: Context) -> Iterator[Finding]:
    """SS310 — ``SELECT … LIMIT 10 EMIT CHANGES``: Spark refuses LIMIT in update mode.
    Fix: EMIT FINAL or EMIT COMPLETE, or drop the LIMIT."""
    if c.ops.limit is not None and c.mode == "update":
        yield Finding("SS310", "error", "LIMIT is not supported in update mode",
                      "use EMIT COMPLETE (or append mode), or remove the LIMIT", c.ops.limit)


def _order(c: Context) -> Iterator[Finding]:
    """SS311 — ``SELECT * FROM s ORDER BY ts``: Spark sorts a stream only after an aggregation
    in complete mode. Fix: aggregate and EMIT COMPLETE, or sort where the result is read."""
    if c.ops.order is not None and not (c.ops.order_after_aggregation and c.mode == "complete"):
        yield Finding("SS311", "error", "ORDER BY on a stream is supported only after an "
                      "aggregation in complete mode (EMIT COMPLETE)",
                      "remove the ORDER BY and sort where the result is read, or aggregate "
                      "and EMIT COMPLETE", c.ops.order)


def _distinct(c: Context) -> Iterator[Finding]:
    """SS312 — ``SELECT DISTINCT k FROM s``: deduplication (LANGUAGE.md §3.3) is not
    supported yet; Spark would treat it as an unbounded aggregation."""
    if c.ops.distinct is not None:
        yield Finding("SS312", "error", "SELECT DISTINCT on a stream is not supported yet "
                      "(deduplication, LANGUAGE.md §3.3)",
                      "use GROUP BY the columns instead, with a window and a watermark",
                      c.ops.distinct)


def _chained(c: Context) -> Iterator[Finding]:
    """SS313 — an aggregation over another aggregation's result with EMIT CHANGES or EMIT
    COMPLETE: Spark supports several stateful operators only in append mode."""
    if c.ops.aggregations > 1 and c.mode in ("update", "complete"):
        yield Finding("SS313", "error", f"chained aggregations ({c.ops.aggregations}) are "
                      f"supported only in append mode, not {c.mode} mode",
                      "aggregate once, or use windows with watermarks and EMIT FINAL", at="emit")


def _window_function(c: Context) -> Iterator[Finding]:
    """SS314 — ``ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts)`` on a stream: Spark does not
    support non-time-based windows on streams."""
    if c.ops.window_function is not None:
        yield Finding("SS314", "error", "window functions (OVER …) are not supported on streams",
                      "use a GROUP BY with a time window (TUMBLE, HOP, SESSION)",
                      c.ops.window_function)


def _global_session(c: Context) -> Iterator[Finding]:
    """SS315 — ``GROUP BY window_start, window_end`` of a SESSION and nothing else: Spark
    refuses a global aggregation with a session window."""
    if c.ops.global_session is not None:
        yield Finding("SS315", "error", "a session window cannot be the only grouping key",
                      "group by a key too (e.g. GROUP BY user_id, window_start, window_end)",
                      c.ops.global_session)


def _continuous(c: Context) -> Iterator[Finding]:
    """SS306/SS307 — ``EMIT CONTINUOUS`` supports only map-like queries (projections and
    filters) over rate or kafka sources."""
    if c.trigger_kind != "continuous":
        return
    if not c.ops.map_like:
        yield Finding("SS306", "error", "a continuous trigger supports only map-like queries "
                      "(SELECT and WHERE: no aggregation, join, DISTINCT, ORDER BY or LIMIT)",
                      "use EMIT … EVERY INTERVAL … instead", at="emit")
    others = sorted(c.source_connectors - CONTINUOUS_SOURCES)
    if others:
        yield Finding("SS307", "error", f"a continuous trigger cannot read a {others[0]} "
                      "source (only rate and kafka)", "use EMIT … EVERY INTERVAL … instead",
                      at="emit")


_NULLABLE_STREAM = {  # join kind -> which streaming side Spark refuses against a static one
    "left": "right", "right": "left", "full": "either", "semi": "right", "anti": "right",
}


def _joins(c: Context) -> Iterator[Finding]:
    """SS320/SS321 — Spark's join support matrix: ``static RIGHT JOIN stream`` is fine but
    ``stream RIGHT JOIN static`` is not; a stream-stream outer or semi join needs a watermark
    on the nullable side and a time range condition (``b.ts BETWEEN a.ts AND a.ts + INTERVAL …``)."""
    for join in c.ops.joins:
        kind = join.kind
        if join.left_streaming and join.right_streaming:
            if kind in ("left", "right", "full", "semi"):
                needs = {"left": join.right_watermark, "right": join.left_watermark,
                         "semi": join.right_watermark,
                         "full": join.left_watermark and join.right_watermark}[kind]
                if not (needs and join.time_condition):
                    yield Finding(
                        "SS321", "error", f"a stream-stream {kind.upper()} join needs a watermark "
                        "on the nullable side and a time range condition in ON",
                        "add WATERMARK FOR to both streams and a condition such as "
                        "b.ts BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR", join.node)
            continue
        bad = _NULLABLE_STREAM.get(kind)
        if bad and ((bad == "right" and join.right_streaming)
                    or (bad == "left" and join.left_streaming)
                    or (bad == "either" and (join.left_streaming or join.right_streaming))):
            yield Finding(
                "SS320", "error", f"a {kind.upper()} join is not supported with the stream on "
                f"the {'preserved' if kind in ('right', 'left', 'full') else 'right'} side "
                "and a static relation on the other",
                "put the stream on the preserved side (stream LEFT JOIN table), or use INNER JOIN",
                join.node)


def _unbounded_state(c: Context) -> Iterator[Finding]:
    """SS350 (warning) — an aggregation or stream-stream join without a watermark keeps its
    state forever: memory grows with every new key."""
    if c.info.aggregate and not c.info.watermarked_key and c.mode != "append":
        yield Finding("SS350", "warning", "the aggregation's state grows without bound: no "
                      "watermarked window or event-time key lets Spark drop old groups",
                      WATERMARK_HINT)
    for join in c.ops.joins:
        if join.left_streaming and join.right_streaming and not (
                join.left_watermark and join.right_watermark and join.time_condition):
            yield Finding("SS350", "warning", "the stream-stream join keeps every row of both "
                          "streams: no watermarks and time range condition bound its state",
                          "add WATERMARK FOR to both streams and a time range condition in ON",
                          join.node)


def _append_delay(c: Context) -> Iterator[Finding]:
    """SS351 (warning) — an inferred append-mode aggregation writes each window only after
    the watermark passes its end: nothing appears until later data arrives."""
    if c.info.aggregate and c.mode == "append" and not c.requested:
        yield Finding("SS351", "warning", "each window is written only once the watermark passes "
                      "its end (append mode was inferred)",
                      "say EMIT FINAL to make this explicit, or EMIT CHANGES for early results",
                      at="query")


RULES: tuple[Callable[[Context], Iterator[Finding]], ...] = (
    _limit, _order, _distinct, _chained, _window_function, _global_session, _continuous,
    _joins, _unbounded_state, _append_delay,
)


def check_query(context: Context) -> list[Finding]:
    """Run every rule of :data:`RULES` on one query; findings in rule order."""
    return [finding for rule in RULES for finding in rule(context)]
