"""Spark's error conditions that a user can act on, mapped to sqlstream codes and hints.

When Spark refuses a query at start (:func:`sqlstream.runtime.binder.run_block`) or fails a
running one (:mod:`sqlstream.runtime.runner`), the error is a ``QueryFailedError``
(``SS501``) with Spark's message. For the conditions below — error classes of Spark's
``common/utils/src/main/resources/error/error-conditions.json``, many new in Spark 4.2 and
4.3 — it gets a more precise code (the static rule's, when ``check`` has one that Spark
enforces at start) and a hint in sqlstream's terms. A condition is found in the text of the
error and its causes (``[CONDITION.SUBCLASS] message``), so a subclass entry wins over its
class's entry only by being listed first.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mapped:
    """What a Spark condition means for the user.

    Attributes:
        condition: Spark's error class (``STREAMING_REAL_TIME_MODE.SINK_NOT_SUPPORTED``).
        code: the sqlstream code to report (``SS501`` when no more precise one exists).
        hint: how to fix it, one sentence.
        since: the first Spark minor that has the condition (``"4.0"``: all supported).
    """

    condition: str
    code: str
    hint: str
    since: str = "4.0"


_CHECKPOINT_HINT = (
    "the checkpoint was changed or partly deleted outside Spark: restore the "
    "missing files from a backup, or start the query on a new checkpoint "
    "location (a files sink also with a new path) and accept that it reads "
    "its sources again"
)

CONDITIONS: tuple[Mapped, ...] = (
    # checkpoints (Spark 4.2)
    Mapped("STREAMING_CHECKPOINT_MISSING_METADATA_FILE", "SS503", _CHECKPOINT_HINT, "4.2"),
    Mapped("STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY", "SS503", _CHECKPOINT_HINT, "4.2"),
    Mapped(
        "STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED",
        "SS503",
        "a row of state is corrupt on disk: restore the checkpoint's state/ folder from a "
        "backup, or start on a new checkpoint location",
        "4.2",
    ),
    Mapped(
        "STREAMING_CHECKPOINT_LOG_WRITE_FAILURE",
        "SS501",
        "Spark could not write the checkpoint's offset or commit log: make the checkpoint "
        "location writable (permissions, free space, the file system reachable) and run "
        "again; the query resumes from its last committed batch",
        "4.3",
    ),
    # real-time mode (Spark 4.2; 4.3 added the configuration and checkpoint conditions)
    Mapped(
        "STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED",
        "SS341",
        "write EMIT CHANGES REAL TIME (update mode)",
        "4.2",
    ),
    Mapped(
        "STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED",
        "SS342",
        "real-time mode reads only kafka sources: use EMIT … EVERY INTERVAL …",
        "4.2",
    ),
    Mapped(
        "STREAMING_REAL_TIME_MODE.SINK_NOT_SUPPORTED",
        "SS342",
        "real-time mode writes only kafka, console and memory sinks",
        "4.2",
    ),
    Mapped(
        "STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST",
        "SS343",
        "the query has an operator this Spark's real-time mode does not run (see "
        "docs/dialect.md, Real-time mode): use EMIT … EVERY INTERVAL …",
        "4.2",
    ),
    Mapped(
        "STREAMING_REAL_TIME_MODE.STATEFUL_OPERATORS_BEFORE_UNION_NOT_SUPPORTED",
        "SS343",
        "aggregate or deduplicate after the UNION ALL, not in its inputs",
        "4.3",
    ),
    Mapped(
        "STREAMING_REAL_TIME_MODE.CHECKPOINT_FORMAT_V1_NOT_SUPPORTED",
        "SS501",
        "a stateful real-time query needs a checkpoint written in format v2: give the sink "
        "a new checkpoint_location (a micro-batch query's checkpoint is v1)",
        "4.3",
    ),
    Mapped(
        "STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED",
        "SS501",
        "remove the SET or --conf the message names (real-time mode needs the RocksDB "
        "state store, checkpoint format 2 and spark.sql.execution.sortBeforeRepartition "
        "off)",
        "4.3",
    ),
    Mapped(
        "INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL",
        "SS501",
        "CHECKPOINT EVERY at least spark.sql.streaming.realTimeMode.minBatchDuration "
        "(5 seconds unless set)",
        "4.2",
    ),
    Mapped(
        "CONCURRENT_SCHEDULER_INSUFFICIENT_SLOT",
        "SS501",
        "a real-time aggregation or deduplication runs its source tasks (one per Kafka "
        "partition) and its stateful tasks (spark.sql.shuffle.partitions) at once: give "
        "Spark that many free cores (--master local[N], more executors), or SET "
        "'spark.sql.shuffle.partitions' lower on a new checkpoint",
        "4.3",
    ),
    Mapped(
        "STREAMING_SHUFFLE_WRITER_CONNECTION_TIMEOUT",
        "SS501",
        "a real-time aggregation runs its source and aggregation tasks at once: give Spark "
        "at least (Kafka partitions + spark.sql.shuffle.partitions) cores",
        "4.3",
    ),
    # packages (Spark 4.3)
    Mapped(
        "KAFKA_DATA_SOURCE_NOT_ENABLED",
        "SS510",
        "Spark's Kafka connector is not on the classpath: let exec add it (do not set "
        "spark.jars.packages yourself), or add org.apache.spark:spark-sql-kafka-0-10_2.13",
        "4.3",
    ),
    Mapped(
        "AVRO_DATA_SOURCE_NOT_ENABLED",
        "SS510",
        "Spark's Avro package is not on the classpath: let exec add it, or add "
        "org.apache.spark:spark-avro_2.13",
        "4.3",
    ),
)


def mapped(text: str) -> Mapped | None:
    """The first of :data:`CONDITIONS` whose condition is named in ``text`` (Spark's
    message with its causes, as ``[CONDITION]`` or ``[CONDITION.SUBCLASS]``), else ``None``."""
    for entry in CONDITIONS:
        if f"[{entry.condition}]" in text or f"[{entry.condition}." in text:
            return entry
    return None
