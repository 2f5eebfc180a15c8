"""Spark's real-time mode (``EMIT CHANGES REAL TIME``): what the judged Spark version runs.

``DataStreamWriter.trigger(realTime='…')`` starts a query whose long-running tasks read,
process and write each row as it arrives; the interval is how often it checkpoints. Spark
checks the query against an allow-list when it starts (``RealTimeModeAllowlist``, error
``STREAMING_REAL_TIME_MODE.*``); these rules find the same statically, per version:

* PySpark 4.0 and 4.1 have no ``realTime`` argument to ``trigger`` (Spark 4.1's Scala
  API has ``Trigger.RealTime``, PySpark 4.2 is the first to expose it): SS340.
* Output mode ``update`` only (``OUTPUT_MODE_NOT_SUPPORTED``): SS341.
* Sources: ``kafka`` only (``INPUT_STREAM_NOT_SUPPORTED``); sinks: ``kafka``, ``console``
  and ``memory`` (Spark's foreach sink too, which sqlstream has no connector for;
  ``foreachBatch`` is refused: ``SINK_NOT_SUPPORTED``): SS342.
* Operators (``OPERATOR_OR_SINK_NOT_IN_ALLOWLIST``): on 4.2 stateless ones only —
  projections, filters, generators, ``UNION ALL`` of streams, watermarks, stream-static
  joins that Spark broadcasts; 4.3 adds streaming aggregations (time windows included,
  session windows not) and ``dropDuplicates``, but not ``dropDuplicatesWithinWatermark``;
  stream-stream joins, window functions, ``LIMIT`` and sorts are refused on both: SS343.

Source: Spark's guide *Real-time Mode* and the class ``RealTimeModeAllowlist`` of the
``spark-sql`` jars of PySpark 4.2.1 and 4.3.0 (its operator list: 4.3 adds
``StateStoreRestoreExec``, ``StateStoreSaveExec``, ``StreamingDeduplicateExec`` and a
non-range ``ShuffleExchangeExec``).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlstream.analysis.rule_context import Context, Finding
from sqlstream.ir import spark_versions

FIRST_VERSION = "4.2"
"""The first supported Spark minor whose PySpark has ``trigger(realTime=…)``."""
STATEFUL_VERSION = "4.3"
"""The first Spark minor whose real-time mode runs aggregations and deduplication."""

_MICRO_BATCH = "use EMIT … EVERY INTERVAL … (micro-batches) or the default trigger"


def real_time_rules(c: Context) -> Iterator[Finding]:
    """SS340–SS343 for a query with ``EMIT … REAL TIME`` (nothing for other triggers).

    Args:
        c: the query's context; the version judged is ``c.spark_version``.

    Yields:
        :class:`Finding` records (errors), the version's first: on a version without
        real-time mode the other rules are not run.
    """
    if c.trigger_kind != "real_time":
        return
    version = c.spark_version
    if not spark_versions.at_least(version, FIRST_VERSION):
        yield Finding(
            "SS340",
            f"EMIT … REAL TIME needs Spark's real-time mode, which PySpark "
            f"{version} does not have (trigger(realTime=…) is new in PySpark "
            f"{FIRST_VERSION})",
            f"run on Spark {FIRST_VERSION} or newer (SET "
            f"'sqlstream.spark_version' = '{FIRST_VERSION}' to judge for it), or "
            f"{_MICRO_BATCH}",
            at="emit",
        )
        return
    if c.mode != "update":
        yield Finding(
            "SS341",
            f"real-time mode writes in update mode only, not {c.mode} mode",
            "write EMIT CHANGES REAL TIME",
            at="emit",
        )
    others = sorted(c.not_real_time_sources)
    if others:
        yield Finding(
            "SS342",
            f"real-time mode cannot read a {others[0]} source (only kafka)",
            _MICRO_BATCH,
            at="emit",
        )
    if not c.real_time_sink:
        yield Finding(
            "SS342",
            f"real-time mode cannot write the {c.sink_connector} sink "
            "(only kafka, console and memory)",
            f"write to a kafka sink, or {_MICRO_BATCH}",
            at="emit",
        )
    problem = _operator_problem(c, version)
    if problem is not None:
        what, node = problem
        yield Finding(
            "SS343",
            f"real-time mode on Spark {version} does not run {what}",
            _operator_hint(what, version),
            node,
            at="emit",
        )


def _operator_problem(c: Context, version: str):
    """``(what, node)`` of the first operation outside the version's allow-list, or ``None``."""
    ops, info = c.ops, c.info
    stateful = spark_versions.at_least(version, STATEFUL_VERSION)
    if ops.stream_stream_joins:
        return "a join of two streams", ops.stream_stream_joins[0].node
    if ops.window_function is not None:
        return "a window function", ops.window_function
    if ops.order is not None:
        return "ORDER BY (a range shuffle)", ops.order
    if ops.limit is not None:
        return "LIMIT", ops.limit
    if ops.aggregations or ops.distinct is not None:
        if not stateful:
            return "an aggregation", ops.distinct
        if info.session_window:
            return "a session window", None
    for dedup in ops.deduplications:
        if not stateful:
            return f"a deduplication ({dedup.spelling})", dedup.node
        if dedup.within_watermark:
            return (
                f"a deduplication within the watermark ({dedup.spelling}: "
                "dropDuplicatesWithinWatermark)"
            ), dedup.node
    return None


def _operator_hint(what: str, version: str) -> str:
    if not spark_versions.at_least(version, STATEFUL_VERSION) and (
        what.startswith("an aggregation") or what.startswith("a deduplication (")
    ):
        return (
            f"Spark {STATEFUL_VERSION} runs it in real-time mode (SET "
            f"'sqlstream.spark_version' = '{STATEFUL_VERSION}'), or {_MICRO_BATCH}"
        )
    if "within the watermark" in what:
        return (
            "deduplicate on keys that include the watermarked event-time column, or " + _MICRO_BATCH
        )
    return _MICRO_BATCH
