"""The lakehouse ``AUTO CDC`` targets (:mod:`sqlstream.connectors.cdc.lakehouse_cdc`) on real
Delta and Iceberg tables, without Spark: the seeded change log of ``tests/support/cdc_log.py``
cut into batches and applied by the applier's own step (``CdcApplier.apply_batch``) equals
the plain-Python oracle — and a crash between the changes table's commit and the target's
(the process stopped there, by an exception in the target's commit) leaves the two tables
torn, which the replay of the same batch repairs."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
)

from sqlstream.connectors.cdc.cdc_apply import END_AT, START_AT, CdcApplier
from sqlstream.connectors.cdc.lakehouse_cdc import CHANGES_SUFFIX, DeltaCdcTable, IcebergCdcTable
from tests.support.cdc_log import change_log, oracle

COLUMNS = ["id", "carrier", "flight", "dep_delay"]
FIELDS = [
    StructField("id", LongType()),
    StructField("carrier", StringType()),
    StructField("flight", IntegerType()),
    StructField("dep_delay", DoubleType()),
    StructField("__sqlstream_sequence", LongType()),
    StructField("__sqlstream_delete", BooleanType()),
]
NAMES = [f.name for f in FIELDS]


class Crash(Exception):
    """The process stopped between the two commits."""


def _crashing(base, crash_at: int):
    """A target of ``base``'s class whose first commit of the target table (not of its
    changes table) for batch ``crash_at`` stops the process before it commits."""

    class Crashing(base):
        crashes = 1

        def replace(self, writer, rows, keys, app, batch_id):
            name = getattr(writer, "path", None) or writer.table_name
            if not name.endswith(CHANGES_SUFFIX) and batch_id == crash_at and self.crashes:
                self.crashes -= 1
                raise Crash
            super().replace(writer, rows, keys, app, batch_id)

    return Crashing


def _target(kind: str, folder, crash_at: int):
    if kind == "delta":
        return _crashing(DeltaCdcTable, crash_at)(str(folder / "t"))
    return _crashing(IcebergCdcTable, crash_at)("cdc.t", str(folder / "wh"))


def _rows_of(table, scd: int) -> set:
    writer = table.writer(False, ("id",))
    read = writer.table().to_pyarrow_table() if hasattr(writer, "path") else None
    if read is None:
        read = writer.load().scan().to_arrow()
    names = COLUMNS + ([START_AT, END_AT] if scd == 2 else [])
    return set(zip(*[read.column(n).to_pylist() for n in names], strict=True))


def _batches(events, size: int) -> list[list[tuple]]:
    rows = []
    for e in events:
        image = e["before"] if e["op"] == "d" else e["after"]
        rows.append((*(image[c] for c in COLUMNS), e["source"]["lsn"], e["op"] == "d"))
    return [rows[i : i + size] for i in range(0, len(rows), size)]


def _apply(table, applier: CdcApplier, batch_id: int, batch: list[tuple]) -> bool:
    """One micro-batch as the applier runs it; ``False`` when committed before."""
    with table.transaction("q1", batch_id, FIELDS, applier.flow()) as tx:
        if tx is None:
            return False
        applier.apply_batch(tx, batch, NAMES)
        return True


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
@pytest.mark.parametrize("scd", [1, 2])
def test_a_crash_between_the_two_commits_is_repaired_by_the_replay(kind, scd, tmp_path):
    import random

    events = change_log(seed=3321, count=15)
    random.Random(5).shuffle(events)  # out of order within and across batches
    batches = _batches(events, 12)
    tracked = ["carrier", "flight"] if scd == 2 else []
    applier = CdcApplier(None, ("id",), COLUMNS, scd, tracked)  # type: ignore[arg-type]
    crash_at = len(batches) // 2
    table = _target(kind, tmp_path, crash_at)
    for batch_id, batch in enumerate(batches):
        if batch_id == crash_at:
            with pytest.raises(Crash):
                _apply(table, applier, batch_id, batch)
            changes = table.writer(True, ("id",))
            assert changes.committed("q1") == batch_id  # torn: the changes table is ahead
            assert table.writer(False, ("id",)).committed("q1") == batch_id - 1
        assert _apply(table, applier, batch_id, batch)  # the replay (or the batch) commits
        assert not _apply(table, applier, batch_id, batch)  # a second replay: nothing
    expected = oracle(events)[scd - 1]
    assert len(expected) > 5
    assert _rows_of(table, scd) == expected
