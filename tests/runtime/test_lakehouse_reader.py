"""The stream readers of ``delta`` and ``iceberg`` sources (Python path) on real tables
written by delta-rs and pyiceberg, called as Spark calls them but without a JVM (their
offsets, partitions and rows are plain Python): the first micro-batch reads the table, a
later one only the appended rows, ``starting_version`` starts at a commit, a commit that
deletes rows raises ``SS550`` unless ``skip_change_commits``, and a column the table lacks
``SS551``."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType

from sqlstream.runtime.lakehouse_reader import DeltaReader, IcebergReader, LakehouseSourceError

SCHEMA = StructType([StructField("id", LongType()), StructField("kind", StringType())])


def _rows(ids, kind="a") -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "kind": pa.array([kind] * len(ids), pa.string())}
    )


def _read(reader, start: dict, end: dict) -> list[tuple]:
    """The rows of the micro-batch from ``start`` to ``end``, as Spark asks for them."""
    found = []
    for partition in reader.partitions(start, end):
        for batch in reader.read(partition):
            found += [(r["id"], r["kind"]) for r in batch.to_pylist()]
    return sorted(found)


class _Delta:
    def __init__(self, tmp_path):
        self.path = str(tmp_path / "t")

    def append(self, rows):
        from deltalake import write_deltalake

        write_deltalake(self.path, rows, mode="append")

    def delete(self):
        from deltalake import DeltaTable

        DeltaTable(self.path).delete("id = 1")

    def reader(self, schema=SCHEMA, **options):
        return DeltaReader({"path": self.path, "stream": "s", **options}, schema)


class _Iceberg:
    def __init__(self, tmp_path):
        from pyiceberg.catalog.sql import SqlCatalog

        self.warehouse = str(tmp_path)
        self.uri = f"sqlite:///{tmp_path}/catalog.db"
        self.catalog = SqlCatalog("c", uri=self.uri, warehouse=f"file://{tmp_path}")
        self.catalog.create_namespace("n")
        self.catalog.create_table(("n", "t"), schema=_rows([]).schema)

    def append(self, rows):
        self.catalog.load_table(("n", "t")).append(rows)

    def delete(self):
        from pyiceberg.expressions import EqualTo

        self.catalog.load_table(("n", "t")).delete(EqualTo("id", 1))

    def reader(self, schema=SCHEMA, **options):
        options = {"table": "n.t", "warehouse": self.warehouse, "catalog": "c", **options}
        return IcebergReader({"catalog_uri": self.uri, "stream": "s", **options}, schema)


@pytest.fixture(params=[_Delta, _Iceberg], ids=["delta", "iceberg"])
def table(request, tmp_path):
    return request.param(tmp_path)


def test_the_first_batch_reads_the_table_a_later_one_the_appends(table):
    reader = table.reader()
    start = reader.initialOffset()
    assert reader.latestOffset() == start  # no commit yet: no micro-batch
    table.append(_rows([1, 2]))
    table.append(_rows([3]))
    first = reader.latestOffset()
    assert _read(reader, start, first) == [(1, "a"), (2, "a"), (3, "a")]
    table.append(_rows([4, 5], "b"))
    table.append(_rows([6], "c"))
    second = reader.latestOffset()
    assert _read(reader, first, second) == [(4, "b"), (5, "b"), (6, "c")]
    assert _read(reader, second, second) == []


def test_a_commit_that_deletes_rows_fails_unless_skipped(table):
    table.append(_rows([1, 2]))
    reader = table.reader()
    first = reader.latestOffset()
    table.delete()
    table.append(_rows([3]))
    last = reader.latestOffset()
    with pytest.raises(LakehouseSourceError) as failed:
        reader.partitions(first, last)
    assert str(failed.value).startswith("[SQLSTREAM_SOURCE SS550 s] ")
    assert "changes or deletes rows" in str(failed.value)
    skipping = table.reader(skip_change_commits="true")
    assert _read(skipping, first, last) == [(3, "a")]


def test_a_column_the_table_lacks_fails_the_read(table):
    table.append(_rows([1]))
    schema = StructType([StructField("id", LongType()), StructField("other", StringType())])
    reader = table.reader(schema)
    with pytest.raises(LakehouseSourceError, match=r"SS551 s\] the table has no column 'other'"):
        _read(reader, reader.initialOffset(), reader.latestOffset())


def test_a_delta_stream_can_start_at_a_version(tmp_path):
    table = _Delta(tmp_path)
    for ids in ([1], [2], [3]):
        table.append(_rows(ids))
    reader = table.reader(starting_version="1")
    assert reader.initialOffset() == {"version": 0}
    assert _read(reader, reader.initialOffset(), reader.latestOffset()) == [(2, "a"), (3, "a")]
