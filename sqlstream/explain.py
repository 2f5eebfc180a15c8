"""Render a :class:`~sqlstream.plan.Plan` as text: the Spark SQL and the PySpark binding.

This is what ``sqlstream translate`` prints and :func:`sqlstream.translate` returns. It
reads only the plan (no Spark, no pyspark import) and redacts secrets (values of
``${env:…}``) from everything it prints. The binding is written as the PySpark calls the
binder makes, so it can be read as (and pasted into) a hand-written job.
"""

from __future__ import annotations

from sqlstream import plan as p
from sqlstream.spark_types import UNKNOWN


def _q(value: str) -> str:
    return repr(value)


def _where(span) -> str:
    return f"line {span.line}"


def _columns(columns: tuple[tuple[str, str], ...] | None) -> list[str]:
    """``-- columns: a STRING, b BIGINT`` (``?`` for a type not known statically), or nothing."""
    if columns is None:
        return []
    return ["-- columns: " + ", ".join(f"{n} {'?' if t == UNKNOWN else t}" for n, t in columns)]


def _source(relation: p.SourceRelation) -> list[str]:
    kind = "TABLE" if relation.bounded else "STREAM"
    lines = [f"-- {kind} {relation.name} ({_where(relation.span)})", *_columns(relation.columns)]
    reader = "spark.read" if relation.bounded else "spark.readStream"
    call = [f"df = ({reader}"]
    if relation.connector == "table":
        call.append(f"    .table({_q(relation.path)})")
        call[-1] += ")"
    else:
        call.append(f"    .format({_q(relation.format)})")
        if relation.schema:
            call.append(f"    .schema({_q(relation.schema)})")
        elif relation.infer_schema:
            call.append("    .schema(<inferred from the files present when the pipeline starts>)")
        for key, value in relation.options:
            call.append(f"    .option({_q(key)}, {_q(value)})")
        call.append(f"    .load({_q(relation.path)})" if relation.path else "    .load()")
        call[-1] += ")"
    lines += call
    steps = []
    if relation.projection:
        steps.append("df = df.selectExpr(" + ", ".join(_q(e) for e in relation.projection) + ")")
    if relation.watermark:
        w = relation.watermark
        watermark = f"df = df.withWatermark({_q(w.column)}, {_q(w.delay)})"
        steps.insert(0 if relation.watermark_first else len(steps), watermark)
    lines += steps
    lines.append(f"df.createOrReplaceTempView({_q(relation.name)})")
    return lines


def _view(relation: p.SqlView) -> list[str]:
    return [
        f"-- VIEW {relation.name} ({_where(relation.span)})",
        *_columns(relation.columns),
        f"spark.sql({_q(relation.sql)}).createOrReplaceTempView({_q(relation.name)})",
    ]


def _deduplicate(relation: p.Deduplicate) -> list[str]:
    method = "dropDuplicatesWithinWatermark" if relation.within_watermark else "dropDuplicates"
    keys = "[" + ", ".join(_q(k) for k in relation.keys) + "]" if relation.keys else ""
    return [
        f"-- DEDUPLICATE {relation.name} ({_where(relation.span)})",
        f"spark.table({_q(relation.input)}).{method}({keys})"
        f".createOrReplaceTempView({_q(relation.name)})",
    ]


def _trigger(trigger: p.Trigger | None) -> str | None:
    if trigger is None:
        return None
    if trigger.kind == "available_now":
        return ".trigger(availableNow=True)"
    if trigger.kind == "continuous":
        return f".trigger(continuous={_q(trigger.interval)})"
    return f".trigger(processingTime={_q(trigger.interval)})"


def _query(query: p.Query) -> list[str]:
    sink = query.sink
    lines = [
        f"-- QUERY {query.name} -> {sink.connector} sink {sink.name} ({_where(query.span)})",
        f"-- output mode: {query.output_mode} ({query.output_mode_reason})",
        *_columns(query.columns),
        f"(spark.sql({_q(query.sql)})",
        "    .writeStream",
    ]
    if sink.format:
        lines.append(f"    .format({_q(sink.format)})")
    lines.append(f"    .outputMode({_q(query.output_mode)})")
    trigger = _trigger(query.trigger)
    if trigger:
        lines.append("    " + trigger)
    for key, value in sink.options:
        lines.append(f"    .option({_q(key)}, {_q(value)})")
    if sink.partition_by:
        lines.append("    .partitionBy(" + ", ".join(_q(c) for c in sink.partition_by) + ")")
    if query.checkpoint_location:
        lines.append(f"    .option('checkpointLocation', {_q(query.checkpoint_location)})")
    lines.append(f"    .queryName({_q(query.name)})")
    if sink.connector == "table":
        lines.append(f"    .toTable({_q(sink.path)})")
    else:
        lines.append(f"    .start({_q(sink.path)})" if sink.path else "    .start()")
    lines[-1] += ")"
    return lines


_RENDER = {p.SourceRelation: _source, p.SqlView: _view, p.Deduplicate: _deduplicate}


def render(plan: p.Plan) -> str:
    """Return the translation of ``plan`` as text (one block per step, secrets redacted).

    The blocks are, in order: warnings (as comments), session settings (``SET``), relations (reads and temporary
    views) and queries, each headed by a ``--`` comment naming the statement's line.
    """
    blocks: list[list[str]] = []
    if plan.warnings:
        blocks.append([f"-- warning {w.code} (line {w.span.line}): {w.message}"
                       for w in plan.warnings])
    if plan.settings:
        blocks.append(["-- SETTINGS"] + [
            f"spark.conf.set({_q(k)}, {_q(v)})" for k, v in plan.settings
            if not k.lower().startswith("sqlstream.")
        ] + [f"-- {k} = {v}" for k, v in plan.settings if k.lower().startswith("sqlstream.")])
    for relation in plan.relations:
        blocks.append(_RENDER[type(relation)](relation))
    for query in plan.queries:
        blocks.append(_query(query))
    text = "\n\n".join("\n".join(block) for block in blocks) + "\n"
    return plan.source.redact(text)
