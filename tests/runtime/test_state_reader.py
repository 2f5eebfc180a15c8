"""``sqlstream state``: a real checkpoint, written by the flights example on three days, read
back with Spark's state data source and compared with what a plain-Python computation over
the same CSV files says is still open (windows ending after the final watermark); and the
errors (unknown query, stateless query, no checkpoint yet) without a JVM.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.runtime import state_reader
from sqlstream.runtime.state_options import snapshot_batches
from tests.support.flights import (
    DAYS,
    EXAMPLE,
    copy_days,
    hourly_windows,
    parse_watermark,
    run_to_end,
)

STATELESS = """
CREATE STREAM flights (year INT, month INT, day INT, dep_time INT, sched_dep_time INT,
    dep_delay DOUBLE, arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING,
    origin STRING, dest STRING, distance DOUBLE, time_hour TIMESTAMP)
WITH (connector = 'files', path = 'data/flights', format = 'csv', header = true);
CREATE SINK late WITH (connector = 'files', path = 'out/late', format = 'parquet');
INSERT INTO late SELECT carrier, flight, dep_delay FROM flights WHERE dep_delay > 60;
"""


def _open_windows(files, watermark: str) -> dict:
    """The windows that end after ``watermark``: append mode keeps exactly those in state."""
    limit = parse_watermark(watermark)
    return {k: v for k, v in hourly_windows(files).items() if k[0] + timedelta(hours=1) > limit}


@pytest.mark.spark
def test_state_of_a_real_checkpoint_is_the_open_windows(spark, tmp_path):
    work = tmp_path / "flights"
    copy_days(work, DAYS[:3])
    shutil.copy(EXAMPLE / "hourly_delays.ssql", work)
    pipeline_file = work / "hourly_delays.ssql"
    watermark, _ = run_to_end(spark, pipeline_file)
    plan = sqlstream.compile_file(str(pipeline_file)).plan

    (state,) = state_reader.read(spark, plan, state_reader.select(plan), rows=1000)
    assert state.name == "hourly" and state.output_mode == "append"
    assert state.watermark == watermark  # the last batch's, as the query reported it
    assert not any(q.name == "hourly" for q in spark.streams.active)  # read while stopped
    (store,) = state.stores
    assert (store.operator_id, store.operator, store.store) == (0, "stateStoreSave", "default")
    assert store.partitions == 2 and store.max_batch_id == state.latest_batch_id
    assert sum(n for _, n in store.rows_per_partition) == store.rows == len(store.first_rows)

    expected = _open_windows(DAYS[:3], watermark)
    assert expected, "the watermark trails the last event by an hour: some windows are open"
    actual = _windows_of(store)
    assert actual.keys() == expected.keys()
    for window, (flights, total, counted, delayed) in expected.items():
        got = actual[window]
        assert (got[0], got[2], got[3]) == (flights, counted, delayed)
        assert got[1] == pytest.approx(total)

    # The command: the same state as JSON, and the text with the rows asked for (in this
    # process: it reuses the shared session, whose shuffle partitions it must keep)
    runner = CliRunner()
    keep = ["--conf", "spark.sql.shuffle.partitions=2"]
    result = runner.invoke(
        main, ["state", str(pipeline_file), "hourly", "--format", "json", "--rows", "1", *keep]
    )
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)
    assert doc["watermark"] == watermark and doc["stores"][0]["rows"] == store.rows
    assert len(doc["stores"][0]["first_rows"]) == 1
    result = runner.invoke(main, ["state", str(pipeline_file), "--rows", "2", *keep])
    assert result.exit_code == 0, result.output
    assert f"watermark: {watermark}" in result.stdout
    assert "stateStoreSave" in result.stdout and "origin=" in result.stdout
    assert "the rows of state are the windows still open" in result.stdout


def test_errors_are_positioned_findings(tmp_path):
    work = tmp_path / "flights"
    (work / "data" / "flights").mkdir(parents=True)
    shutil.copy(EXAMPLE / "hourly_delays.ssql", work)
    (work / "stateless.ssql").write_text(STATELESS)
    runner = CliRunner()

    result = runner.invoke(main, ["state", str(work / "hourly_delays.ssql"), "hourli"])
    assert result.exit_code == 1
    assert "SS404 no query named 'hourli'" in result.output
    assert "did you mean 'hourly'?" in result.output

    result = runner.invoke(main, ["state", str(work / "hourly_delays.ssql")])
    assert result.exit_code == 1  # never run: nothing committed, and no JVM was needed
    assert ":44:1: SS402 query 'hourly' has no committed batch in checkpoint" in result.output
    assert "INSERT INTO hourly" in result.output and "Traceback" not in result.output

    result = runner.invoke(main, ["state", str(work / "stateless.ssql"), "late"])
    assert result.exit_code == 1
    assert ":7:1: SS403 query 'late' keeps no state" in result.output

    plan = sqlstream.compile(STATELESS).plan  # no QUERY, and no stateful query
    with pytest.raises(SqlStreamError) as caught:
        state_reader.select(plan)
    assert caught.value.code == "SS403"


def _files_by_batch(checkpoint) -> dict[int, list]:
    """The day files the file source took in each batch, from its log in the checkpoint
    (``sources/0/<batch>``: one JSON line per file)."""
    from pathlib import Path

    batches = {}
    for log in (Path(checkpoint) / "sources" / "0").iterdir():
        if log.name.isdigit():
            lines = log.read_text().splitlines()[1:]
            batches[int(log.name)] = [
                Path(json.loads(line)["path"].replace("file://", ""))
                for line in lines
                if line.startswith("{")
            ]
    return batches


def _windows_of(store) -> dict:
    """``first_rows`` of the hourly aggregation as ``{(window start, origin): (flights,
    sum, counted, delayed)}``: COUNT(*), AVG's buffer (sum, count), SUM(…), by Spark's
    buffer names (repeats numbered)."""
    actual = {}
    for row in store.first_rows:
        key, value = row["key"], row["value"]
        start = datetime.strptime(key["window"]["start"], "%Y-%m-%dT%H:%M:%S.%fZ")
        actual[(start, key["origin"])] = (
            value["count"],
            value["sum"] or 0.0,
            value["count#2"],
            value["sum#2"],
        )
    return actual


def _agree(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for window, (flights, total, counted, delayed) in expected.items():
        got = actual[window]
        assert (got[0], got[2], got[3]) == (flights, counted, delayed)
        assert got[1] == pytest.approx(total)


@pytest.mark.spark
def test_state_as_of_an_older_batch_and_the_change_feed(spark, tmp_path):
    """``--batch-id`` (Spark's ``batchId``) and ``--changes-from``/``--changes-to``
    (``readChangeFeed``) on a real checkpoint, against plain Python over the day files each
    batch read (the file source's log says which)."""
    work = tmp_path / "flights"
    copy_days(work, DAYS[:3])
    shutil.copy(EXAMPLE / "hourly_delays.ssql", work)
    pipeline_file = work / "hourly_delays.ssql"
    run_to_end(spark, pipeline_file)
    plan = sqlstream.compile_file(str(pipeline_file)).plan
    (query,) = state_reader.select(plan)
    by_batch = _files_by_batch(query.checkpoint_location)
    (latest,) = state_reader.read(spark, plan, [query])
    assert latest.latest_batch_id >= 1 and 0 in by_batch
    read_by = {
        b: [f for batch in sorted(by_batch) if batch <= b for f in by_batch[batch]]
        for b in range(latest.latest_batch_id + 1)
    }

    # the state as of each batch but the latest: the windows of the files read so far that
    # are still open at that batch's watermark (all of them before there is one)
    for batch in range(latest.latest_batch_id):
        older = state_reader.ReadOptions(batch_id=batch)
        (state,) = state_reader.read(spark, plan, [query], rows=10_000, options=older)
        assert state.latest_batch_id == batch
        (store,) = state.stores
        assert store.min_batch_id <= batch <= store.max_batch_id
        assert store.rows == len(store.first_rows)
        expected = (
            hourly_windows(read_by[batch])
            if state.watermark is None
            else _open_windows(read_by[batch], state.watermark)
        )
        _agree(_windows_of(store), expected)

    # the changes of batch 0: every window of the first day, put (no watermark yet)
    changes = state_reader.ReadOptions(changes_from=0, changes_to=0)
    (state,) = state_reader.read(spark, plan, [query], rows=10_000, options=changes)
    (store,) = state.stores
    assert {r["change_type"] for r in store.first_rows} == {"update"}
    assert {r["batch_id"] for r in store.first_rows} == {0}
    _agree(_windows_of(store), hourly_windows(by_batch[0]))

    # the command: options passed through, refused combinations, an uncommitted batch
    runner = CliRunner()
    keep = ["--conf", "spark.sql.shuffle.partitions=2"]
    result = runner.invoke(
        main,
        [
            "state",
            str(pipeline_file),
            "--changes-from",
            "0",
            "--changes-to",
            "0",
            "--rows",
            "3",
            "--format",
            "json",
            *keep,
        ],
    )
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)
    assert [(r["batch_id"], r["change_type"]) for r in doc["stores"][0]["first_rows"]] == [
        (0, "update")
    ] * 3
    result = runner.invoke(
        main, ["state", str(pipeline_file), "--changes-from", "0", "--rows", "1", *keep]
    )
    assert result.exit_code == 0, result.output
    assert "change" in result.stdout and "update" in result.stdout
    result = runner.invoke(
        main, ["state", str(pipeline_file), "--batch-id", "1", "--changes-from", "1"]
    )
    assert result.exit_code == 2 and "cannot be used together" in result.output
    result = runner.invoke(main, ["state", str(pipeline_file), "--batch-id", "999", *keep])
    assert result.exit_code == 1 and "SS402 batch 999 is not a committed batch" in result.output


ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _rocksdb_pipeline(path, changelog: bool) -> None:
    """The example, one day file per batch, on the RocksDB state store with changelog
    checkpointing on or off (off: every commit writes a snapshot, ``<version>.zip``; on:
    a changelog, and a snapshot only in the store's background maintenance)."""
    text = (EXAMPLE / "hourly_delays.ssql").read_text(encoding="utf-8")
    text = text.replace("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 1")
    path.write_text(
        f"SET 'spark.sql.streaming.stateStore.providerClass' = '{ROCKSDB}';\n"
        "SET 'spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled' = "
        f"'{str(changelog).lower()}';\n" + text,
        encoding="utf-8",
    )


@pytest.mark.spark
def test_state_of_a_partition_rebuilt_from_a_snapshot(spark, tmp_path):
    """``--snapshot-batch-id``/``--partition`` (Spark's ``snapshotStartBatchId`` and
    ``snapshotPartitionId``) on a checkpoint whose first batches were committed without
    changelog checkpointing (a snapshot per batch) and the later ones with it (changelogs
    only), so reading the latest batch from the last snapshot replays changelogs. Each
    partition so rebuilt equals Spark's plain read of that batch, and all partitions
    together equal the windows plain Python computes from the day files read so far."""
    from tests.conftest import settings_kept

    work = tmp_path / "flights"
    copy_days(work, DAYS[:2])
    pipeline_file = work / "hourly_delays.ssql"
    _rocksdb_pipeline(pipeline_file, changelog=False)
    with settings_kept(spark, sqlstream.compile_file(str(pipeline_file))):
        run_to_end(spark, pipeline_file)
        copy_days(work, DAYS[2:3])
        _rocksdb_pipeline(pipeline_file, changelog=True)
        run_to_end(spark, pipeline_file)
    plan = sqlstream.compile_file(str(pipeline_file)).plan
    (query,) = state_reader.select(plan)
    location = query.checkpoint_location
    (plain,) = state_reader.read(spark, plan, [query], rows=10_000)
    latest = plain.latest_batch_id
    (store,) = plain.stores

    kept = snapshot_batches(location, 0, 0)
    start = max(kept)  # the first run's last batch: the changelogs after it are replayed
    assert kept and start < latest and kept == snapshot_batches(location, 0, 1)
    rebuilt = {}
    for partition in range(store.partitions):
        options = state_reader.ReadOptions(snapshot_batch_id=start, partition=partition)
        (state,) = state_reader.read(spark, plan, [query], rows=10_000, options=options)
        assert (state.latest_batch_id, state.snapshot_batch_id) == (latest, start)
        (one,) = state.stores
        assert one.rows_per_partition == ((partition, one.rows),) and one.rows
        assert list(one.first_rows) == [r for r in store.first_rows if r["partition"] == partition]
        rebuilt.update(_windows_of(one))
    by_batch = _files_by_batch(location)
    files = [f for batch in sorted(by_batch) for f in by_batch[batch]]
    _agree(rebuilt, _open_windows(files, plain.watermark))

    # the command: the rows as JSON and text; a snapshot that is not kept (SS402, before
    # Spark reads), a partition the query does not have (SS406), options that do not go
    # together (a usage error), and Spark's refusal when a changelog to replay is missing
    # (an older snapshot: the batches after it wrote snapshots only) as SS532
    runner = CliRunner()
    keep = ["--conf", "spark.sql.shuffle.partitions=2"]
    snap = ["--snapshot-batch-id", str(start), "--partition", "1"]
    with settings_kept(spark, sqlstream.compile_file(str(pipeline_file))):
        result = runner.invoke(
            main, ["state", str(pipeline_file), *snap, "--rows", "10000", "--format", "json", *keep]
        )
        assert result.exit_code == 0, result.output
        (doc,) = json.loads(result.stdout)
        assert (doc["snapshot_batch_id"], doc["partition"]) == (start, 1)
        assert doc["stores"][0]["first_rows"] == [
            r for r in store.first_rows if r["partition"] == 1
        ]
        result = runner.invoke(main, ["state", str(pipeline_file), *snap, *keep])
        assert result.exit_code == 0, result.output
        assert (
            f"partition 1 only, rebuilt from its snapshot of batch {start} and the deltas "
            f"up to batch {latest}"
        ) in result.stdout
        result = runner.invoke(
            main,
            [
                "state",
                str(pipeline_file),
                "--snapshot-batch-id",
                str(latest),
                "--partition",
                "0",
                *keep,
            ],
        )
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert (
            f"SS402 no snapshot of batch {latest} in state partition 0 of operator 0"
            in result.output
        ), result.output
        assert "snapshots kept there: batches " + ", ".join(map(str, sorted(kept))) in result.output
        result = runner.invoke(
            main,
            [
                "state",
                str(pipeline_file),
                "--snapshot-batch-id",
                str(start),
                "--partition",
                "2",
                *keep,
            ],
        )
        assert result.exit_code == 1
        assert (
            "SS406 query 'hourly' has 2 state partitions (0 to 1), not partition 2" in result.output
        )
        result = runner.invoke(main, ["state", str(pipeline_file), "--partition", "0"])
        assert result.exit_code == 2 and "--partition needs --snapshot-batch-id" in result.output
        result = runner.invoke(
            main,
            [
                "state",
                str(pipeline_file),
                "--snapshot-batch-id",
                str(start - 1),
                "--partition",
                "0",
                *keep,
            ],
        )
        assert result.exit_code == 1 and "Traceback" not in result.output
        assert "SS532 Spark could not read the state of query 'hourly'" in result.output
        assert "CANNOT_LOAD_STATE_STORE" in result.output and "changelog" in result.output


JOIN = """
CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = 'clicks', format = 'json', maxFilesPerTrigger = 1);
CREATE STREAM views (user_id STRING, page STRING, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = 'views', format = 'json', maxFilesPerTrigger = 1);
CREATE SINK out WITH (connector = 'files', path = 'out', format = 'json');
INSERT INTO out
SELECT c.user_id, c.url, c.ts, v.page, v.ts AS view_ts
FROM clicks AS c LEFT JOIN views AS v
  ON c.user_id = v.user_id AND v.ts BETWEEN c.ts AND c.ts + INTERVAL '1' MINUTE;
"""


@pytest.mark.spark
def test_join_sides_rebuilt_from_a_snapshot(spark, tmp_path):
    """A stream-stream join's sides (``joinSide``) from a snapshot: both stores of a side
    must keep it (``<side>-keyToNumValues``, ``<side>-keyWithIndexToValue``); each side of
    each partition rebuilt from the first run's last snapshot equals Spark's plain read of
    the latest batch, and a batch without a snapshot is named before Spark reads."""
    from tests.conftest import settings_kept
    from tests.support.check_corpus import CLICKS, VIEWS, json_files

    json_files(tmp_path / "clicks", CLICKS, ("user_id", "url", "ts"))
    json_files(tmp_path / "views", VIEWS, ("user_id", "page", "ts"))
    later = [tmp_path / "clicks" / "part-2.json", tmp_path / "views" / "part-1.json"]
    held = {path: path.read_text() for path in later}
    for path in later:  # the second run's files
        path.unlink()
    pipeline_file = tmp_path / "join.ssql"
    settings = (
        f"SET 'spark.sql.streaming.stateStore.providerClass' = '{ROCKSDB}';\n"
        "SET 'spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled' = "
    )
    with settings_kept(spark, sqlstream.compile(settings + "'false';\n" + JOIN)):
        for changelog in ("false", "true"):
            pipeline_file.write_text(settings + f"'{changelog}';\n" + JOIN, encoding="utf-8")
            (query,) = sqlstream.compile_file(str(pipeline_file)).start(spark)
            query.processAllAvailable()
            query.stop()
            for path, text in held.items():
                if not path.exists():
                    path.write_text(text)  # newer than the others: read by the second run
    plan = sqlstream.compile_file(str(pipeline_file)).plan
    (query,) = state_reader.select(plan)
    (plain,) = state_reader.read(spark, plan, [query], rows=1000)
    assert [s.store for s in plain.stores] == ["left", "right"]
    assert sum(s.rows for s in plain.stores) > 0
    sides = ("left-keyToNumValues", "left-keyWithIndexToValue")
    kept = snapshot_batches(query.checkpoint_location, 0, 0, sides)
    start = max(kept)
    assert start < plain.latest_batch_id
    for partition in range(plain.stores[0].partitions):
        options = state_reader.ReadOptions(snapshot_batch_id=start, partition=partition)
        (state,) = state_reader.read(spark, plan, [query], rows=1000, options=options)
        for side, whole in zip(state.stores, plain.stores, strict=True):
            assert side.store == whole.store
            assert list(side.first_rows) == [
                r for r in whole.first_rows if r["partition"] == partition
            ]
    late = state_reader.ReadOptions(snapshot_batch_id=plain.latest_batch_id, partition=0)
    with pytest.raises(SqlStreamError) as caught:
        state_reader.read(spark, plan, [query], options=late)
    assert caught.value.code == "SS402"
    assert (
        f"no snapshot of batch {plain.latest_batch_id} in state partition 0 of operator 0 "
        "(symmetricHashJoin, left)"
    ) in caught.value.message
