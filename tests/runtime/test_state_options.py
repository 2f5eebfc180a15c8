"""The state data source's read options of ``sqlstream state`` (``ReadOptions``), no JVM:
Spark's rules for combining them (``StateSourceOptions.apply``, Spark 4.0–4.3) applied
before a session starts, the options passed to Spark, and the snapshots a local
checkpoint keeps. ``tests/runtime/test_state_reader.py`` reads them on Spark."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.runtime import state_reader
from sqlstream.runtime.state_options import ReadOptions, snapshot_batches
from tests.conftest import ROOT

REFUSED = [
    (ReadOptions(changes_to=3), "--changes-to needs --changes-from"),
    (
        ReadOptions(batch_id=1, changes_from=1),
        "--batch-id and --changes-from cannot be used "
        "together (Spark's batchId and readChangeFeed)",
    ),
    (ReadOptions(changes_from=4, changes_to=3), "--changes-to must not be before --changes-from"),
    (
        ReadOptions(snapshot_batch_id=2),
        "--snapshot-batch-id needs --partition: each state "
        "partition writes its own snapshots (Spark's snapshotPartitionId)",
    ),
    (
        ReadOptions(partition=0),
        "--partition needs --snapshot-batch-id: Spark reads one "
        "partition only from a snapshot (snapshotStartBatchId)",
    ),
    (
        ReadOptions(changes_from=0, snapshot_batch_id=0, partition=0),
        "--snapshot-batch-id and "
        "--changes-from cannot be used together (Spark's snapshotStartBatchId/"
        "snapshotPartitionId and readChangeFeed)",
    ),
    (
        ReadOptions(changes_from=0, partition=0),
        "--partition and --changes-from cannot be "
        "used together (Spark's snapshotStartBatchId/snapshotPartitionId and readChangeFeed)",
    ),
    (
        ReadOptions(batch_id=3, snapshot_batch_id=4, partition=1),
        "--snapshot-batch-id must not be after --batch-id",
    ),
    (
        ReadOptions(snapshot_batch_id=-1, partition=0),
        "--snapshot-batch-id must be 0 or more, got -1",
    ),
]


@pytest.mark.parametrize(("options", "message"), REFUSED)
def test_combinations_spark_refuses_are_named(options, message):
    assert options.problem() == message


def test_accepted_combinations_become_spark_options():
    assert ReadOptions().problem() is None and ReadOptions().spark_options() == {}
    assert ReadOptions(batch_id=5).spark_options() == {"batchId": "5"}
    assert ReadOptions(changes_from=2).spark_options() == {
        "readChangeFeed": "true",
        "changeStartBatchId": "2",
    }
    assert ReadOptions(changes_from=2, changes_to=4).spark_options() == {
        "readChangeFeed": "true",
        "changeStartBatchId": "2",
        "changeEndBatchId": "4",
    }
    snapshot = ReadOptions(snapshot_batch_id=3, partition=1)
    assert snapshot.problem() is None and snapshot.state_batch is None
    assert snapshot.spark_options() == {"snapshotStartBatchId": "3", "snapshotPartitionId": "1"}
    at = ReadOptions(batch_id=3, snapshot_batch_id=3, partition=0)
    assert at.problem() is None and at.state_batch == 3
    assert at.spark_options() == {
        "batchId": "3",
        "snapshotStartBatchId": "3",
        "snapshotPartitionId": "0",
    }
    assert ReadOptions(changes_from=1, changes_to=6).state_batch == 6


def test_the_command_refuses_them_before_reading_the_file_or_starting_spark(tmp_path):
    missing = str(tmp_path / "never_written.ssql")  # the usage error comes first
    runner = CliRunner()
    for args, message in [
        (["--partition", "1"], "--partition needs --snapshot-batch-id"),
        (["--snapshot-batch-id", "1"], "--snapshot-batch-id needs --partition"),
        (
            ["--snapshot-batch-id", "1", "--partition", "0", "--changes-from", "0"],
            "--snapshot-batch-id and --changes-from cannot be used together",
        ),
        (
            ["--batch-id", "1", "--snapshot-batch-id", "2", "--partition", "0"],
            "--snapshot-batch-id must not be after --batch-id",
        ),
        (["--changes-to", "1"], "--changes-to needs --changes-from"),
    ]:
        result = runner.invoke(main, ["state", missing, *args])
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    result = runner.invoke(main, ["state", missing, "--partition", "-1"])
    assert result.exit_code == 2 and "--partition" in result.output


def test_the_api_refuses_them_at_the_query_before_using_the_session():
    plan = sqlstream.compile_file(str(ROOT / "examples" / "flights" / "hourly_delays.ssql")).plan
    (query,) = [q for q in plan.queries if q.name == "hourly"]
    with pytest.raises(SqlStreamError) as caught:
        state_reader.read_query(None, plan, query, options=ReadOptions(partition=0))
    assert caught.value.code == "SS406"
    assert caught.value.span == query.span
    assert "--partition needs --snapshot-batch-id" in caught.value.render()


def test_snapshot_batches_of_a_local_checkpoint(tmp_path):
    partition = tmp_path / "state" / "0" / "1"
    partition.mkdir(parents=True)
    # HDFS-backed store: <version>.delta and <version>.snapshot; RocksDB: <version>.zip,
    # <version>_<id>.zip (checkpoint format 2) and <version>.changelog; version = batch + 1
    for name in [
        "1.delta",
        "2.delta",
        "2.snapshot",
        "3.changelog",
        "5.zip",
        "7_0a1b-2c.zip",
        ".2.snapshot.crc",
        "_metadata",
    ]:
        (partition / name).write_text("")
    assert snapshot_batches(str(tmp_path), 0, 1) == {1, 4, 6}
    assert snapshot_batches(str(tmp_path), 0, 0) is None  # no such partition folder
    assert snapshot_batches(str(tmp_path), 1, 1) is None

    # a stream-stream join side: both of its stores must keep the snapshot
    join = tmp_path / "state" / "2" / "0"
    for store, names in [
        ("left-keyToNumValues", ["3.zip", "5.zip"]),
        ("left-keyWithIndexToValue", ["5.zip", "6.zip"]),
    ]:
        (join / store).mkdir(parents=True)
        for name in names:
            (join / store / name).write_text("")
    sides = ("left-keyToNumValues", "left-keyWithIndexToValue")
    assert snapshot_batches(str(tmp_path), 2, 0, sides) == {4}
    assert snapshot_batches(str(tmp_path), 2, 0, ("left-keyToNumValues", "right-x")) is None
