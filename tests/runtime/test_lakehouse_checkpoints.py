"""A checkpoint written by the other reader of a lakehouse format is refused before any
query starts (``SS407``): Delta's Spark reader (the JVM path, Spark 4.0-4.2) and sqlstream's
Python reader (Spark 4.3) write different offsets, and neither reads the other's. The
Delta reader's checkpoint is a real one (``tests/fixtures/checkpoints/delta_reader_4.2``,
written by Spark 4.2 and Delta 4.2.0: its README says how); the Python reader's offsets
are the reader's own (``latestOffset`` of a real table). No JVM: the check reads files."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pytest

import sqlstream
from sqlstream.connectors.lakehouse_offsets import reader_of
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.runtime import restarts
from sqlstream.runtime.lakehouse_reader import DeltaReader, IcebergReader
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "checkpoints" / "delta_reader_4.2"
PIPELINE = """SET 'sqlstream.spark_version' = '{version}';
CREATE STREAM events (id BIGINT) WITH (connector = 'delta', path = 'lake/events');
CREATE SINK out WITH (connector = 'files', path = 'out/events', format = 'parquet');
INSERT INTO out SELECT id FROM events EMIT FINAL ONCE;
"""


def _plan(tmp_path, version: str):
    path = tmp_path / "read.ssql"
    path.write_text(PIPELINE.format(version=version))
    return sqlstream.compile_file(path).plan


def _checkpoint(tmp_path):
    return tmp_path / ".sqlstream" / "checkpoints" / "read" / "out"


def _python_offsets(tmp_path) -> dict:
    """A checkpoint's offset log entry holding the Python reader's offset of a real table."""
    from deltalake import write_deltalake

    table = str(tmp_path / "lake" / "events")
    write_deltalake(table, pa.table({"id": pa.array([1, 2], pa.int64())}))
    offset = DeltaReader({"path": table}, None).latestOffset()
    folder = _checkpoint(tmp_path) / "offsets"
    folder.mkdir(parents=True)
    lines = ["v1", json.dumps({"batchWatermarkMs": 0, "conf": {}}), json.dumps(offset)]
    (folder / "0").write_text("\n".join(lines))
    return offset


def test_a_delta_readers_checkpoint_is_refused_where_the_python_reader_reads(tmp_path):
    shutil.copytree(FIXTURE, _checkpoint(tmp_path), ignore=shutil.ignore_patterns("*.md"))
    plan = _plan(tmp_path, "4.3")
    with pytest.raises(SqlStreamError) as refused:
        restarts.prepare(plan, {}, report=lambda _: None)
    error = refused.value
    assert error.code == "SS407"
    assert error.span.line == 4  # the INSERT of the query
    assert "written by Delta's Spark reader (format 'delta')" in error.message
    assert "on Spark 4.3 the source is read by sqlstream's Python reader of Delta" in error.message
    assert "new checkpoint_location" in error.hint and "Spark minor that wrote" in error.hint
    assert not (_checkpoint(tmp_path) / "sqlstream").exists()  # nothing recorded


def test_the_same_checkpoint_starts_where_delta_reads_it(tmp_path):
    shutil.copytree(FIXTURE, _checkpoint(tmp_path), ignore=shutil.ignore_patterns("*.md"))
    decided = restarts.prepare(_plan(tmp_path, "4.2"), {}, report=lambda _: None)
    assert set(decided) == {"out"}


def test_a_python_readers_checkpoint_is_refused_where_delta_reads(tmp_path):
    offset = _python_offsets(tmp_path)
    assert offset == {"version": 0}
    with pytest.raises(SqlStreamError) as refused:
        restarts.prepare(_plan(tmp_path, "4.2"), {}, report=lambda _: None)
    assert refused.value.code == "SS407"
    assert "written by sqlstream's Python reader of Delta" in refused.value.message
    assert "read by Delta's Spark reader (format 'delta')" in refused.value.message
    restarts.prepare(_plan(tmp_path, "4.3"), {}, report=lambda _: None)  # its own: starts


def test_each_readers_offsets_are_told_apart(tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    delta = json.loads((FIXTURE / "offsets" / "0").read_text().splitlines()[-1])
    assert reader_of(delta) == ("delta", False)
    uri = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog("c", uri=uri, warehouse=f"file://{tmp_path}")
    catalog.create_namespace("n")
    table = pa.table({"id": pa.array([1], pa.int64())})
    catalog.create_table(("n", "t"), schema=table.schema).append(table)
    options = {"table": "n.t", "warehouse": str(tmp_path), "catalog": "c", "catalog_uri": uri}
    python = IcebergReader(options, None).latestOffset()
    assert reader_of(python) == ("iceberg", True)
    # Iceberg's Spark reader (StreamingOffset's JSON fields)
    jvm = {"version": 1, "snapshot_id": python["snapshot_id"], "position": 0, "scan_all_files": 0}
    assert reader_of(jvm) == ("iceberg", False)
    assert reader_of({"logOffset": 3}) is None  # a file source's
