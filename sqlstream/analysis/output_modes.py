"""Output modes (docs/dialect.md#output-mode-inference): which of append, update and
complete Spark allows for a query and its sink (:func:`mode_problems`, codes ``SS301`` to
``SS305``, ``SS312``, ``SS313``, ``SS322``), and the one chosen when ``EMIT`` names none
(:func:`choose_mode`: the first that fits, with the reason ``translate`` prints). Spark's
rules: its guide, *Output Modes*, and ``UnsupportedOperationChecker``, as
:mod:`sqlstream.analysis.checks` follows them.
"""

from __future__ import annotations

from sqlglot import exp

from sqlstream.analysis.facts import MODES, QueryInfo
from sqlstream.analysis.operators import Operators
from sqlstream.analysis.rule_context import WATERMARK_HINT, Finding, stateful
from sqlstream.ir import spark_versions


def mode_problems(
    info: QueryInfo,
    ops: Operators,
    mode: str,
    sink_connector: str,
    sink_modes: frozenset[str],
    spark_version: str,
) -> list[Finding]:
    """Why Spark ``spark_version`` (a major.minor) refuses ``mode`` for this query and sink,
    or would give another result (empty: it runs as the SQL says)."""
    found = []
    if info.aggregate:
        if mode == "append" and not info.watermarked_key:
            found.append(
                Finding(
                    "SS301",
                    "append mode (EMIT FINAL) needs a watermark on every "
                    "aggregation: a grouping key must be the watermarked event-time column or a "
                    "window on it",
                    WATERMARK_HINT,
                    at="emit",
                )
            )
        if mode == "update" and info.session_window:
            found.append(
                Finding(
                    "SS303",
                    "session windows do not support update mode (EMIT CHANGES)",
                    "use EMIT FINAL (append, with a watermark) or EMIT COMPLETE",
                    at="emit",
                )
            )
    elif ops.distinct is not None:
        if mode == "append" and not info.watermarks:
            found.append(
                Finding(
                    "SS301",
                    "this DISTINCT is an aggregation for Spark: append mode "
                    "(EMIT FINAL) needs the watermarked event-time column among its columns",
                    "select the event-time column too, or use EMIT COMPLETE",
                    ops.distinct,
                )
            )
        if mode == "update" and ops.aggregations <= 1:
            found.append(
                Finding(
                    "SS312",
                    f"{'UNION' if isinstance(ops.distinct, exp.Union) else 'SELECT DISTINCT'}"
                    " (an aggregation for Spark here) in update mode (EMIT CHANGES) writes a row "
                    "again when a duplicate of it arrives in a later trigger",
                    "use EMIT COMPLETE (the whole distinct set every trigger), or GROUP BY the "
                    "columns",
                    ops.distinct,
                )
            )
    elif mode == "complete":
        found.append(
            Finding(
                "SS302",
                "complete mode (EMIT COMPLETE) needs an aggregation: it rewrites "
                "the whole result table every trigger",
                "add a GROUP BY, or use EMIT CHANGES / EMIT FINAL, or leave the mode out",
                at="emit",
            )
        )
    if ops.aggregations > 1 and mode in ("update", "complete"):
        found.append(
            Finding(
                "SS313",
                f"chained aggregations ({ops.aggregations}) are supported only in "
                f"append mode, not {mode} mode: Spark cannot tell which rows of the inner "
                "aggregation are final",
                "aggregate once, or use windows with watermarks and EMIT FINAL",
                at="emit",
            )
        )
    if mode != "append":
        for join in ops.stream_stream_joins:
            if (
                mode == "update"
                and join.kind == "inner"
                and spark_versions.at_least(spark_version, "4.2")
            ):
                continue  # Spark 4.2+ runs an inner join of two streams in update mode (measured)
            found.append(
                Finding(
                    "SS322",
                    f"a join of two streams is supported only in append mode, not {mode} mode",
                    "use EMIT FINAL (with windows on watermarked columns "
                    "for an aggregation after the join)",
                    join.node,
                )
            )
            break
    if mode not in sink_modes:
        found.append(
            Finding(
                "SS304",
                f"the {sink_connector} sink does not support {mode} mode "
                f"(it supports {', '.join(m for m in MODES if m in sink_modes)})",
                "write to a sink that supports this mode (memory, console) or change EMIT",
                at="emit",
            )
        )
    return found


def choose_mode(
    info: QueryInfo,
    ops: Operators,
    requested: str | None,
    sink_connector: str,
    sink_modes: frozenset[str],
    spark_version: str,
) -> tuple[str | None, str, list[Finding]]:
    """Pick the output mode (docs/dialect.md#output-mode-inference): the requested one, or
    the first of append, update, complete that Spark ``spark_version`` (a major.minor) allows
    for this query and sink.

    Returns:
        ``(mode, reason, findings)``; ``mode`` is ``None`` when none fits (then ``findings``
        holds SS305), else ``findings`` are the problems of the requested mode, if any.
    """
    if requested is not None:
        return (
            requested,
            "from EMIT",
            mode_problems(info, ops, requested, sink_connector, sink_modes, spark_version),
        )
    reasons: dict[str, str] = {}
    for mode in MODES:
        problems = mode_problems(info, ops, mode, sink_connector, sink_modes, spark_version)
        if not problems:
            if not stateful(info, ops):
                why = "deduplication, no aggregation" if ops.deduplications else "no aggregation"
            elif mode == "append":
                why = (
                    "aggregation grouped by a window on a watermarked column"
                    if info.aggregate
                    else "SELECT DISTINCT with the watermarked column"
                )
            else:
                why = f"aggregation; append impossible: {reasons['append']}"
            return mode, f"inferred: {why}", []
        reasons[mode] = problems[0].message
    detail = "; ".join(f"{m}: {r}" for m, r in reasons.items())
    return (
        None,
        "",
        [
            Finding(
                "SS305",
                f"no output mode fits this query and sink ({detail})",
                WATERMARK_HINT if stateful(info, ops) else "write to another sink",
            )
        ],
    )
