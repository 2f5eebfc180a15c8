"""Which state ``sqlstream state`` reads: the state data source's read options, checked
without Spark.

Spark's state data source (format ``statestore``; Spark guide *State Data Source
Integration Guide*, class ``StateSourceOptions``) takes, besides the operator and store:

* ``batchId``: the state as of an older committed batch (default: the latest);
* ``readChangeFeed`` with ``changeStartBatchId`` / ``changeEndBatchId``: the changes of
  state, one row per put or delete, batch by batch;
* ``snapshotStartBatchId`` with ``snapshotPartitionId``: the state of one partition rebuilt
  from the snapshot the state store wrote at that batch, replaying the later deltas (or
  changelogs) up to ``batchId`` — a way to read state when a later snapshot or an older
  delta is damaged, and to check that a snapshot gives the state the latest files give.

Every option above is in the ``StateSourceOptions`` of Spark 4.0, 4.1, 4.2 and 4.3 (read
from the ``spark-sql`` jars of PySpark 4.0.5, 4.1.4, 4.2.1 and 4.3.0), so no supported Spark
lacks one. ``stateVarName``, ``readRegisteredTimers`` and ``flattenCollectionTypes`` read
the state of ``transformWithState``, which no sqlstream query keeps; 4.2's
``_readAllColumnFamilies`` is internal.

:meth:`ReadOptions.problem` applies Spark's rules for combining them (the checks of
``StateSourceOptions.apply``) before a session starts. :func:`snapshot_batches` lists the
snapshots a local checkpoint keeps, so a snapshot that is not there is named before Spark
fails on it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["ReadOptions", "snapshot_batches"]


@dataclass(frozen=True)
class ReadOptions:
    """Which state to read (Spark's state data source options; guide *State Data Source
    Integration Guide*, class ``StateSourceOptions``). All batch ids are micro-batch ids
    of the query (0, 1, …); each must be 0 or more.

    Attributes:
        batch_id: read the state as of this committed batch (``batchId``), not the latest;
            it must still be in the checkpoint (``minBatchId`` … ``maxBatchId``).
        changes_from, changes_to: read the changes of state of the batches from
            ``changes_from`` to ``changes_to`` (default: the latest committed), both
            included (``readChangeFeed``, ``changeStartBatchId``, ``changeEndBatchId``);
            not with ``batch_id`` nor the snapshot options, nor for a join of two streams
            (Spark reads a join's change feed per internal store only).
        snapshot_batch_id, partition: read only state partition ``partition``
            (``snapshotPartitionId``), rebuilt from the snapshot its state store wrote at
            batch ``snapshot_batch_id`` (``snapshotStartBatchId``) and the deltas after it,
            up to ``batch_id`` (default: the latest committed). Both or neither; not with
            the change feed; ``snapshot_batch_id`` not after ``batch_id``.
    """

    batch_id: int | None = None
    changes_from: int | None = None
    changes_to: int | None = None
    snapshot_batch_id: int | None = None
    partition: int | None = None

    def problem(self) -> str | None:
        """The first combination Spark's state data source refuses, as a sentence naming
        the ``sqlstream state`` options, or ``None`` when the options go together. Needs
        no Spark and no checkpoint (the rules of ``StateSourceOptions.apply``, Spark
        4.0–4.3; a batch that is not committed, a partition the query does not have or a
        snapshot that is not kept are found when the checkpoint is read)."""
        for flag, value in (
            ("--batch-id", self.batch_id),
            ("--changes-from", self.changes_from),
            ("--changes-to", self.changes_to),
            ("--snapshot-batch-id", self.snapshot_batch_id),
            ("--partition", self.partition),
        ):
            if value is not None and value < 0:
                return f"{flag} must be 0 or more, got {value}"
        if self.changes_to is not None and self.changes_from is None:
            return "--changes-to needs --changes-from"
        if self.batch_id is not None and self.changes_from is not None:
            return (
                "--batch-id and --changes-from cannot be used together "
                "(Spark's batchId and readChangeFeed)"
            )
        if (
            self.changes_to is not None
            and self.changes_from is not None
            and self.changes_to < self.changes_from
        ):
            return "--changes-to must not be before --changes-from"
        snapshot = self.snapshot_batch_id is not None or self.partition is not None
        if snapshot and self.changes_from is not None:
            flag = "--snapshot-batch-id" if self.snapshot_batch_id is not None else "--partition"
            return (
                f"{flag} and --changes-from cannot be used together (Spark's "
                "snapshotStartBatchId/snapshotPartitionId and readChangeFeed)"
            )
        if self.snapshot_batch_id is not None and self.partition is None:
            return (
                "--snapshot-batch-id needs --partition: each state partition writes its "
                "own snapshots (Spark's snapshotPartitionId)"
            )
        if self.partition is not None and self.snapshot_batch_id is None:
            return (
                "--partition needs --snapshot-batch-id: Spark reads one partition only "
                "from a snapshot (snapshotStartBatchId)"
            )
        if (
            self.snapshot_batch_id is not None
            and self.batch_id is not None
            and self.snapshot_batch_id > self.batch_id
        ):
            return "--snapshot-batch-id must not be after --batch-id"
        return None

    @property
    def state_batch(self) -> int | None:
        """The batch whose state is read (``changes_to`` for the change feed), ``None``
        for the latest committed."""
        return self.batch_id if self.changes_from is None else self.changes_to

    def spark_options(self) -> dict[str, str]:
        """The ``statestore`` reader's options, as strings."""
        if self.changes_from is not None:
            options = {"readChangeFeed": "true", "changeStartBatchId": str(self.changes_from)}
            if self.changes_to is not None:
                options["changeEndBatchId"] = str(self.changes_to)
            return options
        options = {} if self.batch_id is None else {"batchId": str(self.batch_id)}
        if self.snapshot_batch_id is not None:
            options.update(
                snapshotStartBatchId=str(self.snapshot_batch_id),
                snapshotPartitionId=str(self.partition),
            )
        return options


_SNAPSHOT_FILE = re.compile(r"(\d+)(?:_[^.]*)?\.(?:snapshot|zip)")
"""A snapshot of a state store partition: ``<version>.snapshot`` (HDFS-backed store),
``<version>.zip`` or ``<version>_<id>.zip`` (RocksDB store, checkpoint format 1 or 2)."""


def snapshot_batches(
    location: str, operator_id: int, partition: int, stores: tuple[str, ...] = ("default",)
) -> set[int] | None:
    """The batches whose snapshot a local checkpoint keeps for one state partition.

    Spark writes a state store's files under ``<location>/state/<operator>/<partition>/``
    (a store other than ``default`` in a folder of its name): each batch's delta or
    changelog, and every ``spark.sql.streaming.stateStore.minDeltasForSnapshot`` batches
    (10 by default) a snapshot, in the store's maintenance task (or at every commit, for
    the RocksDB store without changelog checkpointing). Version ``v`` of a store is the
    state after batch ``v - 1`` (Spark's ``snapshotStartBatchId`` is the version minus 1).

    Args:
        location: the query's checkpoint, a local path (no ``scheme://``).
        operator_id, partition: Spark's ``operatorId`` and the state partition.
        stores: the store folders that must all hold the snapshot (a stream-stream join
            side has two: ``<side>-keyToNumValues``, ``<side>-keyWithIndexToValue``).

    Returns:
        The batch ids with a snapshot in every store of ``stores``; ``None`` when a store's
        folder does not exist (nothing to say before Spark reads it).
    """
    found: set[int] | None = None
    for store in stores:
        folder = os.path.join(
            location,
            "state",
            str(operator_id),
            str(partition),
            *(() if store == "default" else (store,)),
        )
        if not os.path.isdir(folder):
            return None
        batches = {
            int(m.group(1)) - 1
            for name in os.listdir(folder)
            if (m := _SNAPSHOT_FILE.fullmatch(name))
        }
        found = batches if found is None else found & batches
    return found
