"""Reading the state a query keeps in its checkpoint (``sqlstream state``), read-only.

Spark's state data source (Spark ≥ 4.0, guide *State Data Source Integration Guide*) reads
a checkpoint with batch queries that change nothing in it:

* ``spark.read.format("state-metadata").load(checkpoint)``: one row per state store of
  each stateful operator — ``operatorId``, ``operatorName`` (``stateStoreSave`` for an
  aggregation, ``dedupe``, ``symmetricHashJoin``, …), ``stateStoreName``,
  ``numPartitions``, ``minBatchId`` / ``maxBatchId`` (the batches whose state is kept);
* ``spark.read.format("statestore").option("operatorId", …).option("storeName", …)
  .load(checkpoint)`` (``joinSide`` = ``left`` / ``right`` for a stream-stream join):
  the rows of state of the latest committed batch, as ``key`` and ``value`` structs and a
  ``partition_id``.

The latest committed batch and its watermark come from the checkpoint's ``commits`` and
``offsets`` logs (``batchWatermarkMs``), read as text files by the same session. A
window of an append-mode aggregation is written when the watermark passes its end, so
the state rows are the windows still open, with their partial aggregation buffers.

Works on a stopped pipeline; on a running one it reads the latest batch committed when it
is called. Nothing here writes to the checkpoint.

:class:`ReadOptions` (:mod:`sqlstream.runtime.state_options`) passes the state data
source's read options: ``batchId`` (the state as of an older committed batch, for
``state-metadata`` too), the change feed (``readChangeFeed`` with ``changeStartBatchId`` /
``changeEndBatchId``: one row per put or delete of state, with ``batch_id`` and
``change_type``) and the state of one partition rebuilt from an older snapshot
(``snapshotStartBatchId`` with ``snapshotPartitionId``). Spark 4.0 has them all, and 4.1–4.3
add no user option (their ``StateSourceOptions``; 4.2's ``_readAllColumnFamilies`` is
internal); ``stateVarName``, ``readRegisteredTimers`` and ``flattenCollectionTypes`` read
``transformWithState``'s state, which no sqlstream query keeps.

What was read is printed by :func:`sqlstream.runtime.state_text.render`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from sqlstream.diagnostics.errors import SqlStreamError, did_you_mean
from sqlstream.ir import plan as p
from sqlstream.runtime.binder import spark_message
from sqlstream.runtime.state_options import ReadOptions, snapshot_batches

__all__ = ["QueryState", "ReadOptions", "StoreState", "select", "read", "read_query"]


@dataclass(frozen=True)
class StoreState:
    """The state of one state store of a stateful operator at the latest committed batch.

    Attributes:
        operator_id: Spark's ``operatorId`` (0, 1, … in the physical plan's order).
        operator: Spark's ``operatorName`` (``stateStoreSave``, ``dedupe``,
            ``symmetricHashJoin``, ``sessionWindowStateStoreSaveExec``, …).
        store: Spark's ``stateStoreName`` (``default``), or the join side (``left``,
            ``right``) whose stores the state data source reads as one.
        partitions: number of state partitions (``spark.sql.shuffle.partitions`` of the
            first run).
        min_batch_id, max_batch_id: the oldest and newest batch whose state is kept.
        rows: rows of state in all partitions.
        rows_per_partition: ``(partition_id, rows)`` for every partition, in order (for
            the one partition read from a snapshot only).
        first_rows: up to ``rows`` requested rows, ordered by key (by batch, then key, for
            the change feed, whose rows also have ``batch_id`` and ``change_type``:
            ``update`` or ``delete``, whose ``value`` is null): dicts with
            ``partition`` (int), ``key`` and ``value`` (JSON objects as Spark's ``to_json``
            writes them: timestamps ISO-8601 in the session time zone; a field name that
            repeats, e.g. the ``count`` of ``COUNT(*)`` and of ``AVG``'s buffer, gets
            ``#2``, ``#3``).
    """

    operator_id: int
    operator: str
    store: str
    partitions: int
    min_batch_id: int
    max_batch_id: int
    rows: int
    rows_per_partition: tuple[tuple[int, int], ...]
    first_rows: tuple[dict, ...] = ()


@dataclass(frozen=True)
class QueryState:
    """What ``sqlstream state`` shows of one query.

    Attributes:
        name: the query name; ``line``: its statement's line in the file.
        checkpoint_location: the checkpoint read.
        output_mode: the query's output mode (``append``: windows are written once the
            watermark passes their end).
        latest_batch_id: the latest committed micro-batch (``commits`` log), or ``None``.
        watermark: the event-time watermark of that batch, ISO-8601 UTC
            (``batchWatermarkMs`` of its ``offsets`` entry), or ``None``.
        operators: the plan's stateful operators (kind, keys, aggregates), as
            :func:`dataclasses.asdict` dicts — what the keys and values are made of.
        stores: Spark's state stores, in operator order.
        snapshot_batch_id, partition: when the state was rebuilt from a snapshot
            (:class:`ReadOptions`), the snapshot's batch and the one state partition read
            (each store's rows are then that partition's); else ``None``.
    """

    name: str
    line: int
    checkpoint_location: str
    output_mode: str
    latest_batch_id: int | None
    watermark: str | None
    operators: tuple[dict, ...]
    stores: tuple[StoreState, ...]
    snapshot_batch_id: int | None = None
    partition: int | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict of every field (``stores`` as dicts, pairs as lists)."""
        return json.loads(json.dumps(asdict(self)))


def _local(location: str) -> str | None:
    if location.startswith("file:"):
        location = location[len("file:") :]
    return None if "://" in location or ":/" in location[:10] else location


def select(plan: p.Plan, name: str | None = None) -> list[p.Query]:
    """The queries ``sqlstream state`` reads: ``name``'s, or every stateful query of
    ``plan``. Reads only the plan and (for a local checkpoint) whether it exists; no Spark.

    Raises:
        SqlStreamError: ``SS404`` no query is called ``name`` (with "did you mean");
            ``SS403`` the query (or, without ``name``, every query) keeps no state;
            ``SS402`` the query has no checkpoint location, or a local one that does not
            exist yet.
    """
    if name is not None:
        by_name = {q.name.lower(): q for q in plan.queries}
        if name.lower() not in by_name:
            names = [q.name for q in plan.queries]
            raise SqlStreamError(
                f"no query named '{name}' in {plan.source.path or plan.name}"
                f"{did_you_mean(name, names)}",
                source=plan.source,
                code="SS404",
                hint="queries of this file: " + (", ".join(names) or "(none)"),
            )
        queries = [by_name[name.lower()]]
    else:
        queries = [q for q in plan.queries if _stateful(q)] or list(plan.queries[:1])
    if not queries:
        raise SqlStreamError("the file has no query", source=plan.source, code="SS403")
    for query in queries:
        if not _stateful(query):
            raise SqlStreamError(
                f"query '{query.name}' keeps no state: it has no aggregation, deduplication, "
                "DISTINCT or stream-stream join",
                query.span,
                plan.source,
                code="SS403",
                hint="sqlstream explain lists each query's stateful operators",
            )
        if query.checkpoint_location is None:
            raise SqlStreamError(
                f"query '{query.name}' has no checkpoint location (its {query.sink.connector} "
                "sink runs on a temporary checkpoint, deleted on exit)",
                query.span,
                plan.source,
                code="SS402",
                hint="give the sink a checkpoint_location option to keep and read its state",
            )
        local = _local(query.checkpoint_location)
        if local is not None and not os.path.isdir(os.path.join(local, "commits")):
            raise _no_checkpoint(plan, query)
    return queries


def _stateful(query: p.Query) -> bool:
    return query.state is not None and bool(query.state.operators)


def _no_checkpoint(plan: p.Plan, query: p.Query) -> SqlStreamError:
    return SqlStreamError(
        f"query '{query.name}' has no committed batch in checkpoint {query.checkpoint_location}",
        query.span,
        plan.source,
        code="SS402",
        hint="run it first (sqlstream exec), with the --state-dir and --var values of that run",
    )


def _spark_errors() -> tuple[type[BaseException], ...]:
    from pyspark.errors import PySparkException

    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # pragma: no cover - py4j is a pyspark dependency
        return (PySparkException,)
    return (PySparkException, Py4JJavaError)


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object's pairs as a dict; a repeated name gets ``#2``, ``#3`` …"""
    result: dict = {}
    for key, value in pairs:
        name, n = key, 1
        while name in result:
            n += 1
            name = f"{key}#{n}"
        result[name] = value
    return result


def _json(text: str | None):
    return None if text is None else json.loads(text, object_pairs_hook=_pairs)


def _latest(spark, location: str, batch: int | None = None) -> tuple[int | None, str | None]:
    """``(batch id, watermark)`` of the latest committed batch of the checkpoint, or of
    ``batch`` when given and committed (``(None, None)`` when it is not)."""
    commits = spark.read.text(f"{location}/commits").selectExpr("_metadata.file_name AS f")
    ids = [int(r.f) for r in commits.distinct().collect() if r.f.isdigit()]
    if not ids or (batch is not None and batch not in ids):
        return None, None
    batch = max(ids) if batch is None else batch
    lines = [r.value for r in spark.read.text(f"{location}/offsets/{batch}").collect()]
    for line in lines:
        if line.startswith("{") and "batchWatermarkMs" in line:
            millis = json.loads(line)["batchWatermarkMs"]
            if not millis:  # Spark's initial value: no watermark yet
                return batch, None
            stamp = datetime.fromtimestamp(millis / 1000, tz=timezone.utc)
            return batch, stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"
    return batch, None


def _store(spark, location: str, meta, store: str, options: dict, rows: int) -> StoreState:
    reader = spark.read.format("statestore").option("operatorId", meta.operatorId)
    for key, value in options.items():
        reader = reader.option(key, value)
    df = reader.load(location)
    counts = {r.partition_id: r["count"] for r in df.groupBy("partition_id").count().collect()}
    first = []
    changes = "readChangeFeed" in options
    if rows:
        order = ["batch_id", "key", "partition_id"] if changes else ["key", "partition_id"]
        extra = ["batch_id", "change_type"] if changes else []
        for r in (
            df.orderBy(*order)
            .limit(rows)
            .selectExpr("partition_id", "to_json(key) AS key", "to_json(value) AS value", *extra)
            .collect()
        ):
            row = {"partition": r.partition_id, "key": _json(r.key), "value": _json(r.value)}
            if changes:
                row.update(batch_id=int(r.batch_id), change_type=r.change_type)
            first.append(row)
    partitions = max([meta.numPartitions or 0, *(i + 1 for i in counts)])
    read = (
        range(partitions)
        if "snapshotPartitionId" not in options
        else [int(options["snapshotPartitionId"])]
    )
    return StoreState(
        operator_id=int(meta.operatorId),
        operator=meta.operatorName,
        store=store,
        partitions=partitions,
        min_batch_id=int(meta.minBatchId),
        max_batch_id=int(meta.maxBatchId),
        rows=sum(counts.values()),
        rows_per_partition=tuple((i, counts.get(i, 0)) for i in read),
        first_rows=tuple(first),
    )


def read_query(
    spark, plan: p.Plan, query: p.Query, rows: int = 0, options: ReadOptions = ReadOptions()
) -> QueryState:
    """Read the state of ``query`` from its checkpoint with ``spark`` (a classic or Spark
    Connect session whose file system sees the checkpoint). Read-only.

    Args:
        spark: the SparkSession (Spark ≥ 4.0).
        plan: the compiled pipeline; ``query`` one of its queries (see :func:`select`).
        rows: how many rows of state to return per store (``0``: none), ordered by key.
        options: an older batch, the change feed, or one partition from a snapshot
            (:class:`ReadOptions`; default: the state of the latest committed batch).

    Returns:
        A :class:`QueryState`; ``latest_batch_id`` and ``watermark`` are those of
        ``options.batch_id`` when given (of ``changes_to`` for the change feed).

    Raises:
        SqlStreamError: ``SS406`` options that do not go together
            (:meth:`ReadOptions.problem`), or a ``partition`` the query does not have;
            ``SS402`` no committed batch in the checkpoint, a batch asked for that is not
            committed, or (a local checkpoint) no snapshot of ``snapshot_batch_id`` for
            that partition; ``SS532`` Spark's state data source failed (Spark's message).
    """
    location = query.checkpoint_location
    assert location is not None and query.state is not None  # (select: stateful queries)
    problem = options.problem()
    if problem:
        raise SqlStreamError(
            problem,
            query.span,
            plan.source,
            code="SS406",
            hint="sqlstream state --help lists the options and what each reads",
        )
    try:
        # the state store reports to a StateStoreCoordinator that Spark creates with the
        # session's StreamingQueryManager: without it, a fresh session fails the read with
        # CANNOT_LOAD_STATE_STORE (RpcEndpointNotFoundException, Spark 4.1.4)
        spark.streams.active  # noqa: B018 - creates the coordinator
        batch, watermark = _latest(spark, location, options.state_batch)
        meta_reader = spark.read.format("state-metadata")
        if options.batch_id is not None and options.changes_from is None:
            meta_reader = meta_reader.option("batchId", str(options.batch_id))
        metadata = meta_reader.load(location).collect()
    except _spark_errors() as error:
        if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
            raise _no_checkpoint(plan, query) from None
        raise _unreadable(plan, query, error, options) from None
    wanted = options.state_batch
    if batch is None and wanted is not None:
        raise SqlStreamError(
            f"batch {wanted} is not a committed batch of query '{query.name}' in {location}",
            query.span,
            plan.source,
            code="SS402",
            hint="sqlstream state without --batch-id shows the latest committed batch and the "
            "range whose state the checkpoint keeps (batches)",
        )
    if batch is None or not metadata:
        raise _no_checkpoint(plan, query)
    if options.snapshot_batch_id is not None:
        _check_snapshot(plan, query, options, batch, metadata)
    stores = []
    extra = options.spark_options()
    try:
        for meta in sorted(metadata, key=lambda m: (m.operatorId, m.stateStoreName)):
            if "join" in meta.operatorName.lower() and options.changes_from is not None:
                raise SqlStreamError(
                    f"query '{query.name}' joins two streams: Spark reads the change feed of "
                    "such a join's internal stores only, not per side",
                    query.span,
                    plan.source,
                    code="SS532",
                    hint="read its state as of a batch (--batch-id) instead of its changes",
                )
            if "join" in meta.operatorName.lower():
                # the four stores of a stream-stream join are read per side (joinSide)
                side = _join_side(meta.stateStoreName)
                if side is not None:
                    stores.append(
                        _store(spark, location, meta, side, {"joinSide": side, **extra}, rows)
                    )
                continue
            stores.append(
                _store(
                    spark,
                    location,
                    meta,
                    meta.stateStoreName,
                    {"storeName": meta.stateStoreName, **extra},
                    rows,
                )
            )
    except _spark_errors() as error:
        raise _unreadable(plan, query, error, options) from None
    return QueryState(
        name=query.name,
        line=query.span.line,
        checkpoint_location=location,
        output_mode=query.output_mode,
        latest_batch_id=batch,
        watermark=watermark,
        operators=tuple(asdict(o) for o in query.state.operators),
        stores=tuple(stores),
        snapshot_batch_id=options.snapshot_batch_id,
        partition=options.partition,
    )


_SNAPSHOT_HINT = (
    "a state store writes a snapshot every "
    "spark.sql.streaming.stateStore.minDeltasForSnapshot batches (10 by "
    "default), in its background maintenance; without --snapshot-batch-id, "
    "sqlstream state reads the latest files of every partition"
)


def _join_side(store_name: str) -> str | None:
    """``left``/``right`` for the store a stream-stream join side is read by, else ``None``."""
    if store_name.startswith(("left-keyToNumValues", "right-keyToNumValues")):
        return store_name.split("-", 1)[0]
    return None


def _check_snapshot(
    plan: p.Plan, query: p.Query, options: ReadOptions, batch: int, metadata
) -> None:
    """Before Spark reads a snapshot: the partition exists in every operator, the
    snapshot's batch is not after the batch read, and (a local checkpoint) each store read
    keeps a snapshot of that batch for the partition (:func:`snapshot_batches`)."""
    location, part, start = query.checkpoint_location, options.partition, options.snapshot_batch_id
    assert location is not None and part is not None and start is not None  # (given together)
    for meta in metadata:
        if meta.numPartitions is not None and part >= meta.numPartitions:
            raise SqlStreamError(
                f"query '{query.name}' has {meta.numPartitions} state partitions (0 to "
                f"{meta.numPartitions - 1}), not partition {part}",
                query.span,
                plan.source,
                code="SS406",
                hint="sqlstream state without --partition shows the rows of state per partition",
            )
    if start > batch:
        raise SqlStreamError(
            f"batch {start} of --snapshot-batch-id is after the batch read ({batch}) of query "
            f"'{query.name}' in {location}",
            query.span,
            plan.source,
            code="SS402",
            hint="give a snapshot batch at or before the latest committed batch (or --batch-id)",
        )
    local = _local(location)
    if local is None:
        return
    for meta in metadata:
        joined = "join" in meta.operatorName.lower()
        side = _join_side(meta.stateStoreName)
        if joined and side is None:
            continue
        folders = (
            (f"{side}-keyToNumValues", f"{side}-keyWithIndexToValue")
            if joined
            else (meta.stateStoreName,)
        )
        kept = snapshot_batches(local, int(meta.operatorId), part, folders)
        if kept is not None and start not in kept:
            store = side or meta.stateStoreName
            listed = ", ".join(map(str, sorted(kept))) or "none"
            raise SqlStreamError(
                f"no snapshot of batch {start} in state partition {part} of operator "
                f"{meta.operatorId} ({meta.operatorName}, {store}) of query '{query.name}' in "
                f"{location}; snapshots kept there: batches {listed}",
                query.span,
                plan.source,
                code="SS402",
                hint=_SNAPSHOT_HINT,
            )


def _unreadable(
    plan: p.Plan, query: p.Query, error: BaseException, options: ReadOptions = ReadOptions()
) -> SqlStreamError:
    hint = (
        "the state data source needs Spark 4.0 or later, on the checkpoint of a query "
        "that committed a batch"
    )
    if options.snapshot_batch_id is not None:
        hint = (
            "rebuilding from a snapshot needs the snapshot of that batch and every delta "
            "(or changelog) after it up to the batch read; " + _SNAPSHOT_HINT
        )
    return SqlStreamError(
        f"Spark could not read the state of query '{query.name}' in "
        f"{query.checkpoint_location}: {spark_message(error)}",
        query.span,
        plan.source,
        code="SS532",
        hint=hint,
    )


def read(
    spark,
    plan: p.Plan,
    queries: Sequence[p.Query],
    rows: int = 0,
    options: ReadOptions = ReadOptions(),
) -> list[QueryState]:
    """:func:`read_query` for each of ``queries`` (from :func:`select`), in order."""
    return [read_query(spark, plan, query, rows, options) for query in queries]
