"""The job ratio's checks and report: both jobs' rows compared, the ratio table.

Each round's sqlstream output is read back beside the same round's hand-written output
(count and ``exceptAll`` both ways); the table gives the median wall and CPU seconds and
their ratios against :data:`RATIO_GOAL`.
"""

from __future__ import annotations

import statistics

from flights_job import Mode
from timing import fmt, say

RATIO_GOAL = 1.05


def compare_outputs(spark, mode: Mode) -> list[str]:
    """Each round's sqlstream output against the same round's hand-written output."""
    from pyspark.sql import functions as F

    warnings = []
    for rnd in sorted({r.round for r in mode.runs}):
        pair = {r.impl: r for r in mode.runs if r.round == rnd}
        if set(pair) != {"sqlstream", "handwritten"}:
            continue
        ours = spark.read.parquet(str(pair["sqlstream"].output))
        theirs = spark.read.parquet(str(pair["handwritten"].output))
        if ours.columns != theirs.columns:
            warnings.append(
                f"WARNING: {mode.name} round {rnd}: columns differ: {ours.columns} vs {theirs.columns}"
            )
            continue
        if ours.schema != theirs.schema:
            warnings.append(
                f"WARNING: {mode.name} round {rnd}: schemas differ: "
                f"{ours.schema.simpleString()} vs {theirs.schema.simpleString()}"
            )
        n_ours, n_theirs = ours.count(), theirs.count()
        missing, extra = theirs.exceptAll(ours).count(), ours.exceptAll(theirs).count()
        line = (
            f"{mode.name} round {rnd}: sqlstream {n_ours} rows, handwritten {n_theirs} rows, "
            f"{extra} only in sqlstream, {missing} only in handwritten"
        )
        if n_ours != n_theirs or missing or extra:
            rounded = [
                df.withColumn("avg_dep_delay", F.round("avg_dep_delay", 9)) for df in (ours, theirs)
            ]
            still = (
                rounded[0].exceptAll(rounded[1]).count() + rounded[1].exceptAll(rounded[0]).count()
            )
            warnings.append(
                f"WARNING: {line} ({still} rows differ with avg_dep_delay rounded to 9 digits)"
            )
        else:
            say(f"  ok: {line}")
        if n_ours == 0:
            warnings.append(f"WARNING: {mode.name} round {rnd}: no output rows")
    for warning in warnings:
        say(f"  {warning}")
    return warnings


def ratio_table(modes: list[Mode]) -> list[str]:
    lines = [
        "| measurement | sqlstream median wall (s) | handwritten median wall (s) | **ratio** (medians) "
        "| median of per-round ratios | min wall sqlstream / handwritten (s) "
        "| median CPU sqlstream / handwritten (s) | CPU ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode in modes:
        ours, theirs = mode.median("sqlstream"), mode.median("handwritten")
        if ours is None or theirs is None:
            continue
        ratio = ours / theirs
        flag = "" if ratio <= RATIO_GOAL else " (over goal)"
        paired = statistics.median(mode.paired_ratios())
        cpu_ours, cpu_theirs = mode.cpu_median("sqlstream"), mode.cpu_median("handwritten")
        cpu_ratio = f"{cpu_ours / cpu_theirs:.3f}" if cpu_ours and cpu_theirs else "?"
        lines.append(
            f"| {mode.name} | {ours:.2f} | {theirs:.2f} | **{ratio:.3f}**{flag} | {paired:.3f} "
            f"| {min(mode.times('sqlstream')):.2f} / {min(mode.times('handwritten')):.2f} "
            f"| {fmt(cpu_ours)} / {fmt(cpu_theirs)} | {cpu_ratio} |"
        )
    lines.append("")
    lines.append(
        "all runs, in order (wall s, sqlstream / handwritten per round, load1 before each):"
    )
    for mode in modes:
        for rnd in sorted({r.round for r in mode.runs}):
            pair = {r.impl: r for r in mode.runs if r.round == rnd}
            lines.append(
                f"  {mode.name} round {rnd}: "
                + " / ".join(
                    f"{pair[i].seconds:.2f} (load {pair[i].load_before:.1f})"
                    for i in ("sqlstream", "handwritten")
                    if i in pair
                )
            )
    return lines
