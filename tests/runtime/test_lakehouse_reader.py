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


# ---- rate limits (PySpark 4.2+ admission control: latestOffset(start, limit)) -------------


def _batches(reader, start: dict) -> list[list[tuple]]:
    """The micro-batches Spark runs from ``start`` with the reader's default read limit,
    until the offset stays put."""
    limit = reader.getDefaultReadLimit()
    found = []
    while (end := reader.latestOffset(start, limit)) != start:
        found.append(_read(reader, start, end))
        start = end
    return found


def _limited(table, files: int | None = None, size: int | None = None):
    names = {
        _Delta: ("maxFilesPerTrigger", "maxBytesPerTrigger"),
        _Iceberg: ("streaming-max-files-per-micro-batch", "streaming-max-rows-per-micro-batch"),
    }[type(table)]
    options = {k: str(v) for k, v in zip(names, (files, size), strict=True) if v is not None}
    return table.reader(**options)


def test_one_file_per_micro_batch_reads_each_commit_alone(table):
    for ids in ([1, 2], [3], [4, 5, 6]):
        table.append(_rows(ids))
    reader = _limited(table, files=1)
    batches = _batches(reader, reader.initialOffset())
    # the first read of a table is its files as of the latest commit, one per micro-batch
    assert sorted(map(tuple, batches)) == sorted(
        [((1, "a"), (2, "a")), ((3, "a"),), ((4, "a"), (5, "a"), (6, "a"))]
    )
    end = reader.latestOffset()
    table.append(_rows([7], "b"))
    table.append(_rows([8], "c"))
    assert _batches(reader, end) == [[(7, "b")], [(8, "c")]]


def test_a_limit_of_two_files_ends_a_micro_batch_inside_a_commit(tmp_path):
    from deltalake import write_deltalake

    table = _Delta(tmp_path)
    write_deltalake(table.path, _rows([0]), partition_by=["kind"])
    reader = table.reader(maxFilesPerTrigger="2")
    start = reader.latestOffset()
    three = pa.concat_tables([_rows([1], "a"), _rows([2], "b"), _rows([3], "c")])
    write_deltalake(table.path, three, mode="append", partition_by=["kind"])  # 3 files
    write_deltalake(table.path, _rows([4], "d"), mode="append", partition_by=["kind"])
    first = reader.latestOffset(start, reader.getDefaultReadLimit())
    assert first == {"version": 1, "files": 2}  # two of version 1's three files
    second = reader.latestOffset(first, reader.getDefaultReadLimit())
    assert second == {"version": 2}
    together = _read(reader, start, first) + _read(reader, first, second)
    assert sorted(together) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert len(_read(reader, start, first)) == 2


def test_read_all_available_ignores_the_limits(table):
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    for ids in ([1], [2], [3]):
        table.append(_rows(ids))
    reader = _limited(table, files=1)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == reader.latestOffset() and _read(reader, start, end) == [
        (1, "a"),
        (2, "a"),
        (3, "a"),
    ]


def test_available_now_stops_at_the_commit_current_when_it_started(table):
    table.append(_rows([1]))
    reader = _limited(table, files=1)
    start = reader.latestOffset()
    table.append(_rows([2]))
    reader.prepareForTriggerAvailableNow()
    table.append(_rows([3]))  # after the run began: not read by it
    assert _batches(reader, start) == [[(2, "a")]]


def test_a_soft_size_limit_reads_at_least_one_file(table):
    for ids in ([1, 2, 3], [4], [5]):
        table.append(_rows(ids))
    reader = _limited(table, size=1)  # one byte (Delta) or one row (Iceberg)
    start = reader.latestOffset()
    table.append(_rows([6, 7]))
    table.append(_rows([8]))
    assert _batches(reader, start) == [[(6, "a"), (7, "a")], [(8, "a")]]


def test_delta_reads_1000_files_per_micro_batch_by_default(tmp_path):
    assert _Delta(tmp_path).reader().getDefaultReadLimit().max_files == 1000


def test_an_offset_of_an_older_reader_is_a_whole_commit(tmp_path):
    table = _Delta(tmp_path)
    for ids in ([1], [2], [3]):
        table.append(_rows(ids))
    reader = table.reader(maxFilesPerTrigger="1")
    assert _batches(reader, {"version": 0}) == [[(2, "a")], [(3, "a")]]


def test_an_iceberg_micro_batch_can_end_inside_an_append_snapshot(tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog("c", uri=uri, warehouse=f"file://{tmp_path}")
    catalog.create_namespace("n")
    schema = catalog.create_table(("n", "probe"), schema=_rows([]).schema).schema()
    kind = schema.find_field("kind").field_id
    spec = PartitionSpec(PartitionField(kind, 1000, IdentityTransform(), "kind"))
    table = catalog.create_table(("n", "t"), schema=schema, partition_spec=spec)
    table.append(_rows([0]))
    options = {"table": "n.t", "warehouse": str(tmp_path), "catalog": "c", "catalog_uri": uri}
    reader = IcebergReader(
        {**options, "stream": "s", "streaming-max-files-per-micro-batch": "2"}, SCHEMA
    )
    start = reader.latestOffset()
    three = pa.concat_tables([_rows([1], "a"), _rows([2], "b"), _rows([3], "c")])
    catalog.load_table(("n", "t")).append(three)  # one snapshot of three files
    catalog.load_table(("n", "t")).append(_rows([4], "d"))
    limit = reader.getDefaultReadLimit()
    first = reader.latestOffset(start, limit)
    assert first["files"] == 2 and "scan" not in first  # two of the snapshot's three files
    second = reader.latestOffset(first, limit)
    assert second == reader.latestOffset()
    assert len(_read(reader, start, first)) == 2
    together = _read(reader, start, first) + _read(reader, first, second)
    assert sorted(together) == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
