"""Changes applied to a table, per micro-batch: what an ``AUTO CDC`` flow
(docs/cdc.md#auto-cdc, :mod:`sqlstream.planning.flows`) runs in ``foreachBatch``.

Meaning (Spark 4.3 declarative pipelines' ``AUTO CDC``; Databricks' ``APPLY CHANGES``):

* **SCD type 1**: per key, the change with the highest sequence wins, whatever the order in
  which changes arrive (across and within micro-batches). A delete wins over an update of
  the same sequence. A winning delete removes the row and leaves a *tombstone* (the delete
  and its sequence), so an older update arriving later does not bring the row back; a
  change with a higher sequence re-creates it.
* **SCD type 2**: per key, every version: a change whose tracked columns differ from the
  version before it (or that follows a delete, or is the first) opens a version, with
  ``__START_AT`` its sequence; the next version's opening change or a delete closes it
  (``__END_AT``, ``NULL`` while current). A change to untracked columns only updates the
  current version in place. A change arriving late is put at its place in history.

How: the applier keeps the changes of each key in a *changes table* beside the target
(SCD 1: the winning change of each key, tombstones included; SCD 2: every change, one per
sequence value), with the micro-batch's columns. For each micro-batch it collects the
changes (on the driver), reads the changes table's rows of the keys they touch, merges
them (:func:`merge`) and replaces those keys' rows, in the target and in the changes
table, in one transaction that also records the batch id — so a batch Spark replays after
a crash changes nothing. The target's rows of a key are a function of its changes alone,
so the result does not depend on how the log was cut into micro-batches.

The target-specific part is one operation, :class:`CdcTable` (``postgres``:
:class:`sqlstream.connectors.cdc.postgres_cdc.PostgresCdcTable`): "in one transaction, once per
(query id, batch id): give the changes kept for these keys; replace the rows and changes of
these keys with these". A lakehouse table plugs in by implementing it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

START_AT, END_AT = "__START_AT", "__END_AT"


class CdcTransaction(Protocol):
    """One micro-batch's transaction on a target (see :class:`CdcTable`)."""

    def changes(self, keys: list[tuple]) -> list[tuple]:
        """The changes kept for ``keys`` (rows of the micro-batch's columns)."""
        ...

    def replace(self, keys: list[tuple], rows: list[tuple], changes: list[tuple]) -> None:
        """Delete the target rows and kept changes of ``keys``; insert ``rows`` (the target's
        columns) and ``changes`` (the micro-batch's columns)."""
        ...


class CdcTable(Protocol):
    """A target that takes row-level changes."""

    def transaction(
        self, query_id: str, batch_id: int, fields: list, flow: dict[str, Any]
    ) -> AbstractContextManager[CdcTransaction | None]:
        """A transaction for micro-batch ``batch_id`` of query ``query_id``, committed when
        the block ends without error (the batch id recorded with it); ``None`` when that
        batch (or a later one) was committed before. ``fields``: the micro-batch's Spark
        fields (the target is created from them when missing); ``flow``: the applier's
        settings (keys, columns, SCD type)."""
        ...


def merge(
    changes: list[tuple],
    key_at: list[int],
    seq_at: int,
    delete_at: int,
    scd_type: int,
    value_at: list[int],
    tracked_at: list[int],
) -> tuple[list[tuple], list[tuple]]:
    """``(changes to keep, target rows)`` of the changes of some keys, ``changes`` in the
    order they were known (kept ones first, then the micro-batch's in its order: of two
    changes of a key with the same sequence and kind, the later wins).

    Args:
        changes: rows of the micro-batch's columns.
        key_at, seq_at, delete_at: positions of the keys, the sequence, the delete flag.
        scd_type: 1 or 2.
        value_at: positions of the target's columns, in its order.
        tracked_at: SCD 2: positions of the tracked columns.

    Returns:
        SCD 1: the winning change of each key, and a row (the target's columns) for each
        key whose winner is not a delete. SCD 2: one change per key and sequence, and the
        versions: the target's columns, ``__START_AT``, ``__END_AT``.
    """
    by_key: dict[tuple, dict[Any, tuple]] = {}
    for change in changes:
        key = tuple(change[i] for i in key_at)
        kept = by_key.setdefault(key, {})
        seq = change[seq_at]
        if scd_type == 1:
            best = kept.get(None)
            if best is None or (seq, bool(change[delete_at])) >= (
                best[seq_at],
                bool(best[delete_at]),
            ):
                kept[None] = change
        else:
            other = kept.get(seq)
            if other is None or bool(change[delete_at]) >= bool(other[delete_at]):
                kept[seq] = change
    keep: list[tuple] = []
    rows: list[tuple] = []
    for kept in by_key.values():
        if scd_type == 1:
            (winner,) = kept.values()
            keep.append(winner)
            if not winner[delete_at]:
                rows.append(tuple(winner[i] for i in value_at))
            continue
        ordered = sorted(kept.values(), key=lambda c: c[seq_at])
        keep += ordered
        rows += _versions(ordered, seq_at, delete_at, value_at, tracked_at)
    return keep, rows


def _versions(
    ordered: list[tuple], seq_at: int, delete_at: int, value_at: list[int], tracked_at: list[int]
) -> Iterator[tuple]:
    """The SCD 2 versions of one key's changes in sequence order (:func:`merge`)."""
    current: tuple | None = None  # the open version's latest change
    start = None
    for change in ordered:
        if change[delete_at]:
            if current is not None:
                yield (*(current[i] for i in value_at), start, change[seq_at])
            current = None
            continue
        if current is not None and all(current[i] == change[i] for i in tracked_at):
            current = change  # untracked columns only: the version changes in place
            continue
        if current is not None:
            yield (*(current[i] for i in value_at), start, change[seq_at])
        current, start = change, change[seq_at]
    if current is not None:
        yield (*(current[i] for i in value_at), start, None)


ARRIVAL_SHIFT = 32
"""A micro-batch's changes are numbered below ``2 ** ARRIVAL_SHIFT`` (the batch id above):
``BIGINT`` holds batch ids below ``2 ** 31``."""


def arrival_sequence(batch_id: int, position: int) -> int:
    """The sequence of the change at ``position`` (0-based) of micro-batch ``batch_id``: a
    ``BIGINT`` that orders changes by batch, then by place in the batch.

    Raises:
        ValueError: a micro-batch of ``2 ** 32`` changes or more.
    """
    if position >> ARRIVAL_SHIFT:
        raise ValueError(f"micro-batch {batch_id} holds more than 2**32 changes")
    return (batch_id << ARRIVAL_SHIFT) | position


def arrival_order(
    batch: list[tuple],
    seq_at: int,
    batch_id: int,
    kept: Sequence[tuple] = (),
) -> list[tuple]:
    """``batch`` with each row's sequence (at ``seq_at``) replaced by its arrival number:
    :func:`arrival_sequence` of ``batch_id`` and its place, raised above every sequence of
    ``kept`` (the changes kept for the batch's keys) where one is higher — a run on a new
    checkpoint numbers its batches from 0 again, and its changes still come after the
    ones applied before. A replay of a batch numbers its rows as the first run did, or
    (over kept changes that already hold the batch) all above them: the same winners.

    Raises:
        ValueError: a micro-batch of ``2 ** 32`` changes or more.
    """
    arrival_sequence(batch_id, max(len(batch) - 1, 0))  # (raises for a batch too large)
    highest = max((c[seq_at] for c in kept), default=-1)
    first = max(arrival_sequence(batch_id, 0), highest + 1)
    return [(*row[:seq_at], first + i, *row[seq_at + 1 :]) for i, row in enumerate(batch)]


class CdcApplier:
    """The ``foreachBatch`` function of an ``AUTO CDC`` flow.

    Args:
        target: the :class:`CdcTable` the changes are applied to.
        keys: the key columns; ``columns``: the target's columns (keys included), in order.
        scd_type: 1 or 2; ``tracked``: SCD 2, the columns whose change opens a version.
        sequence, delete: the micro-batch's columns holding the sequence and whether the
            change is a delete.
        arrival: order the changes by their arrival, as Flink applies a changelog to a
            table with a primary key (docs/cdc.md#flink-spelling): the sequence column's
            value is replaced by :func:`arrival_order`'s number, from the batch id and the
            change's place in the micro-batch (the order Spark gives its rows: per source
            partition, in order).

    Calling it (``applier(df, batch_id)``) collects the micro-batch on the driver and
    raises what the target raises (Spark then fails the query; the batch is retried on
    restart).
    """

    def __init__(
        self,
        target: CdcTable,
        keys=(),
        columns=(),
        scd_type: int = 1,
        tracked=(),
        sequence: str = "__sqlstream_sequence",
        delete: str = "__sqlstream_delete",
        arrival: bool = False,
    ):
        self.target, self.keys, self.columns = target, tuple(keys), tuple(columns)
        self.scd_type, self.tracked = scd_type, tuple(tracked)
        self.sequence, self.delete, self.arrival = sequence, delete, arrival

    def __repr__(self) -> str:
        return f"CdcApplier({self.target!r}, keys={list(self.keys)!r}, scd_type={self.scd_type})"

    def flow(self) -> dict[str, Any]:
        """The settings a :meth:`CdcTable.transaction` is given: keys, columns, SCD type,
        the sequence's and the delete flag's column names."""
        return {
            "keys": self.keys,
            "columns": self.columns,
            "scd_type": self.scd_type,
            "sequence": self.sequence,
            "delete": self.delete,
        }

    def __call__(self, df, batch_id: int) -> None:
        """Apply micro-batch ``batch_id`` (its DataFrame ``df``), unless committed before."""
        from sqlstream.connectors.postgres import _read_expression

        context = df.sparkSession.sparkContext
        query_id = context.getLocalProperty("sql.streaming.queryId") or "auto-cdc"
        fields = df.schema.fields
        names = [f.name for f in fields]
        with self.target.transaction(query_id, batch_id, list(fields), self.flow()) as tx:
            if tx is None:  # committed before: run the batch, writing nowhere (see postgres)
                df.write.format("noop").mode("overwrite").save()
                return
            reads = [_read_expression(f.name, f.dataType) for f in fields]
            batch = [
                tuple(
                    v if c is None or v is None else c(v)
                    for v, (_, c) in zip(r, reads, strict=True)
                )
                for r in df.selectExpr(*[e for e, _ in reads]).toLocalIterator(
                    prefetchPartitions=True
                )
            ]
            self.apply_batch(tx, batch, names, batch_id)

    def apply_batch(
        self, tx: CdcTransaction, batch: list[tuple], names: list[str], batch_id: int = 0
    ) -> None:
        """Merge ``batch`` (rows of the micro-batch's columns ``names``; ``batch_id`` its
        id, which numbers the changes when they are ordered by arrival) with the kept
        changes of its keys and replace those keys' rows and changes in ``tx``."""
        at = {n: i for i, n in enumerate(names)}
        key_at = [at[k] for k in self.keys]
        keys = list(dict.fromkeys(tuple(r[i] for i in key_at) for r in batch))
        if not keys:
            tx.replace([], [], [])
            return
        changes = tx.changes(keys)
        if self.arrival:
            batch = arrival_order(batch, at[self.sequence], batch_id, changes)
        kept, rows = merge(
            changes + batch,
            key_at,
            at[self.sequence],
            at[self.delete],
            self.scd_type,
            [at[c] for c in self.columns],
            [at[c] for c in self.tracked],
        )
        tx.replace(keys, rows, kept)
