"""``sqlstream explain``: what each query of a plan does on Spark, read from the plan alone.

Per query: its output mode and trigger with the reason for each, its stateful operators
with their state keys, the watermarks and their delays, the streaming sources it reads
(through views) and its sink, with their options. :func:`describe` gives a JSON-ready
dict per query, :func:`render` the text; both redact secrets (``${env:…}`` values become
``***``). No Spark and no pyspark import: ``explain --physical`` adds Spark's own plan in
the CLI. (Not :mod:`sqlstream.lowering.printer`, which prints the binding calls for ``translate``.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlstream.ir import plan as p
from sqlstream.lowering.expectation_listing import describe_expectation, rule_line
from sqlstream.lowering.lower import trigger_step
from sqlstream.lowering.printer import render_step
from sqlstream.planning.settings import state_store, watermark_policy


def trigger_of(trigger: p.Trigger | None) -> dict:
    """The trigger a query runs with, and why (:func:`~sqlstream.ir.plan.describe_trigger`),
    with its lowered call.

    Returns:
        ``{"kind", "interval", "call", "reason"}``: ``kind`` is ``default`` (no
        ``trigger`` call), ``available_now``, ``processing_time``, ``continuous`` or
        ``real_time``;
        ``interval`` a duration string or ``None``; ``call`` the ``trigger(…)`` call as
        PySpark text (``None`` for the default); ``reason`` one sentence.
    """
    step = trigger_step(trigger)
    call = None if step is None else render_step(step).lstrip(".")  # as translate prints it
    described = p.describe_trigger(trigger)
    return {
        "kind": described["kind"],
        "interval": described["interval"],
        "call": call,
        "reason": described["reason"],
    }


def _source(relation: p.SourceRelation | None, identity: p.SourceIdentity) -> dict:
    """One streaming source a query reads: ``{"relation", "connector", "format", "path",
    "options", "watermark", "expectations"}`` (``options`` a dict, ``watermark``
    ``{"column", "delay"}`` or ``None``, ``expectations`` the stream's rules as
    :func:`~sqlstream.lowering.expectation_listing.describe_expectation`); only the
    identity's fields when the relation is not in the plan."""
    if relation is None:
        return {
            "relation": identity.relation,
            "connector": identity.connector,
            "format": None,
            "path": identity.target,
            "options": {},
            "watermark": None,
            "expectations": [],
        }
    watermark = relation.watermark
    return {
        "relation": relation.name,
        "connector": relation.connector,
        "format": relation.format,
        "path": relation.path,
        "options": dict(relation.options),
        "watermark": None
        if watermark is None
        else {"column": watermark.column, "delay": watermark.delay},
        "expectations": [describe_expectation(e) for e in relation.expectations],
    }


def describe_query(plan: p.Plan, query: p.Query) -> dict:
    """What ``query`` of ``plan`` does on Spark (secrets redacted).

    Returns:
        ``{"name", "line", "sql", "output_mode", "output_mode_reason", "trigger",
        "stateful", "operators", "watermarks", "sources", "state_store", "global_watermark",
        "sink"}``: ``trigger`` as
        :func:`trigger_of`; ``operators`` a list of ``{"kind", "keys", "aggregates",
        "join_type", "relation"}`` (:class:`~sqlstream.ir.plan.StatefulOperator`; ``relation``
        the view it is in, ``None`` for the query); ``watermarks`` a list of
        ``{"relation", "column", "delay"}``; ``sources`` a list as :func:`_source` (the
        streams read, through views; tables are not listed); ``state_store`` for a stateful
        query the provider its ``SET`` chooses (:func:`sqlstream.planning.settings.state_store`;
        ``None``: Spark's default or not stateful); ``global_watermark`` ``{"policy",
        "from"}`` when it reads more than one watermark, else ``None``; ``sink`` ``{"name",
        "connector", "format", "path", "options", "partition_by", "checkpoint_location"}``.
    """
    state = query.state
    by_name = {r.name.lower(): r for r in plan.relations if isinstance(r, p.SourceRelation)}
    sink = query.sink
    described = {
        "name": query.name,
        "line": query.span.line,
        "sql": query.sql,
        "output_mode": query.output_mode,
        "output_mode_reason": query.output_mode_reason,
        "trigger": trigger_of(query.trigger),
        "stateful": bool(state and state.stateful),
        "operators": [dataclasses.asdict(o) for o in state.operators] if state else [],
        "watermarks": [dataclasses.asdict(w) for w in state.watermarks] if state else [],
        "sources": [_source(by_name.get(s.relation), s) for s in state.sources] if state else [],
        "state_store": state_store(plan.settings) if state and state.stateful else None,
        "global_watermark": _global_watermark(plan, state),
        "sink": {
            "name": sink.name,
            "connector": sink.connector,
            "format": sink.format,
            "path": sink.path,
            "options": dict(sink.options),
            "partition_by": list(sink.partition_by),
            "checkpoint_location": query.checkpoint_location,
            "expectations": [describe_expectation(e) for e in query.expectations],
        },
    }
    return plan.source.redact_value(described)


def _global_watermark(plan: p.Plan, state: p.StateSignature | None) -> dict | None:
    """``{"policy", "from"}`` for a query over more than one watermark (Spark guide, *Policy
    for handling multiple watermarks*), else ``None``."""
    if state is None or len(state.watermarks) < 2:
        return None
    policy, origin = watermark_policy(plan.settings)
    return {"policy": policy, "from": origin}


def describe(plan: p.Plan) -> list[dict]:
    """:func:`describe_query` of every query of ``plan``, in file order."""
    return [describe_query(plan, query) for query in plan.queries]


def _options(options: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in options.items()) or "(none)"


def _target(described: dict) -> str:
    """``connector format path`` without the parts that are ``None``."""
    return " ".join(str(described[k]) for k in ("connector", "format", "path") if described[k])


def _operator_lines(operator: dict) -> list[str]:
    where = f" (in view {operator['relation']})" if operator["relation"] else ""
    join = f" {operator['join_type']}" if operator["join_type"] else ""
    lines = [
        f"    {operator['kind']}{join}{where}",
        f"      state keys: {', '.join(operator['keys']) or '(none)'}",
    ]
    if operator["aggregates"]:
        lines.append(f"      aggregates: {', '.join(operator['aggregates'])}")
    return lines


def _expectation_lines(rules: list[dict], indent: str, where: str) -> list[str]:
    """``expectations (on …):`` and one line per rule, at ``indent``; none without rules."""
    if not rules:
        return []
    return [f"{indent}expectations (on {where}):"] + [
        f"{indent}  {rule_line(rule)}" for rule in rules
    ]


def render_query(described: dict, physical: str | None = None) -> str:
    """The text of one :func:`describe_query` dict; ``physical``: Spark's formatted plan,
    appended indented."""
    trigger = described["trigger"]
    lines = [
        f"query {described['name']} (line {described['line']})",
        f"  output mode: {described['output_mode']} ({described['output_mode_reason']})",
        f"  trigger: {trigger['call'] or 'default (no trigger call)'}",
        f"    why: {trigger['reason']}",
    ]
    if described["operators"]:
        lines.append(f"  stateful operators: {len(described['operators'])}")
        for operator in described["operators"]:
            lines += _operator_lines(operator)
    else:
        lines.append("  stateful operators: none (no state kept across micro-batches)")
    lines.append(
        "  watermarks: "
        + (
            "; ".join(
                f"{w['relation']}.{w['column']} delay {w['delay']}" for w in described["watermarks"]
            )
            or "none"
        )
    )
    if described["global_watermark"]:
        policy = described["global_watermark"]
        lines.append(
            f"    global watermark: the {policy['policy']} of them "
            f"(spark.sql.streaming.multipleWatermarkPolicy, {policy['from']})"
        )
    if described["operators"]:
        lines.append(
            "  state store: "
            + (described["state_store"] or "Spark's default (HDFS-backed, in memory)")
        )
    lines.append("  sources:")
    for source in described["sources"]:
        lines.append(f"    {source['relation']}: {_target(source)}")
        lines.append(f"      options: {_options(source['options'])}")
        lines += _expectation_lines(source["expectations"], "      ", "each row read")
    sink = described["sink"]
    lines.append(f"  sink {sink['name']}: {_target(sink)}")
    lines.append(f"    options: {_options(sink['options'])}")
    if sink["partition_by"]:
        lines.append(f"    partition by: {', '.join(sink['partition_by'])}")
    lines.append(f"    checkpoint: {sink['checkpoint_location'] or '(temporary)'}")
    lines += _expectation_lines(sink["expectations"], "    ", "each row written")
    lines.append(f"  sql: {described['sql']}")
    if physical is not None:
        lines.append("  physical plan:")
        lines += [f"    {line}".rstrip() for line in physical.strip("\n").splitlines()]
    return "\n".join(lines) + "\n"


def render(described: list[dict], physical: Sequence[str | None] | None = None) -> str:
    """The text of :func:`describe`'s list, a blank line between queries; ``physical``:
    one formatted Spark plan per query, in the same order."""
    physical = physical or [None] * len(described)
    return "\n".join(render_query(d, plan) for d, plan in zip(described, physical, strict=True))
