"""Crash recovery, kept proven (issue 12 item 7; harness in ``tests/support/crash_harness.py``).

``sqlstream exec`` runs the flights stream (10 days, one day file per micro-batch) into
four sinks — a stateless filter and an hourly windowed aggregation as parquet files
sinks, the same filter into a ``table`` sink (``toTable``) and a ``kafka`` topic on a
real broker — and is killed with SIGKILL (the driver and its JVM) at 3 seeded random points
of the stream (once every query has committed a drawn number of micro-batches, 0–8, each
once, then up to 2 s into the next), restarted after each kill, then left to finish: one
``exec`` process per run, every sink a query of it. Against the batch oracle computed in
plain Python over the input files:

* files sinks, read as a Spark user reads them (``spark.read.parquet(folder)`` in batch,
  which reads only the files its ``_spark_metadata`` log lists, and pyarrow over the files
  that log lists): equal, nothing lost, nothing written twice;
* the table, registered in this session's catalog at its location and read with
  ``spark.read.table``: equal (a parquet table keeps the files sink's log);
* the topic, read back with confluent-kafka: at least once — every oracle row is there,
  every record is an oracle row; duplicates only of rows of micro-batches that a kill
  interrupted (at most one more copy per replay), and one record per key after
  deduplicating by key equals the oracle.

The ``postgres`` sink is not in this run: ``tests/connectors/test_postgres.py`` already kills
``sqlstream exec`` mid-stream and makes Spark replay a micro-batch the table had
committed, and ends with exactly the batch result; a third stateful query here would cost
CI time for the same proof. ``bench/crash_recovery.py`` runs the same harness longer
(more days, more kills) and with the PostgreSQL upsert as a fifth query.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support.crash_harness import (
    HOURLY_READ,
    LATE_READ,
    committed_files,
    expected_hourly,
    expected_late,
    kafka_report,
    prepare,
    run_until_done,
    table_rows,
    topic_records,
)
from tests.support.kafka_broker import spark_jars

DAYS, KILLS, SEED = 10, 3, 12


@pytest.mark.spark
def test_sigkill_at_random_points_loses_and_duplicates_nothing(spark, kafka_broker, tmp_path):
    topic = kafka_broker.create_topic(f"crash-late-{uuid.uuid4().hex[:8]}")
    files = prepare(tmp_path, DAYS, extra=("table", "kafka"))
    report = run_until_done(
        tmp_path,
        kills=KILLS,
        seed=SEED,
        args=(
            "--var",
            f"servers={kafka_broker.bootstrap_servers}",
            "--var",
            f"topic={topic}",
            "--conf",
            "spark.jars=" + ",".join(spark_jars()),
        ),
    )
    assert len(report.kills) == KILLS, report
    late_expected = expected_late(files)
    hourly_expected = sorted(expected_hourly(files), key=repr)

    late = spark.read.parquet(str(tmp_path / "out" / "late")).selectExpr(*LATE_READ).collect()
    assert sorted(map(tuple, late)) == late_expected
    hourly = spark.read.parquet(str(tmp_path / "out" / "hourly")).selectExpr(*HOURLY_READ).collect()
    assert sorted(map(tuple, hourly), key=repr) == hourly_expected

    # Another reader (pyarrow here; DuckDB, pandas alike) reads the files the log lists:
    # docs/guarantees.md#reading-a-files-sink; a plain *.parquet glob would add the files of killed batches.
    import pyarrow.parquet as pq

    for sink, expected in (("late", late_expected), ("hourly", hourly_expected)):
        paths = committed_files(tmp_path / "out" / sink)
        assert all(p.parent == tmp_path / "out" / sink for p in paths)
        assert pq.ParquetDataset([str(p) for p in paths]).read().num_rows == len(expected)

    # The table sink, found at its location as another session finds it.
    location = tmp_path / ".sqlstream" / "warehouse" / "late_flights"
    assert (location / "_spark_metadata").is_dir()
    rows, read = table_rows(spark, location)
    assert rows == late_expected
    assert read == committed_files(location)  # through the log, as for a files sink

    # The Kafka sink: at least once.
    assert len(set(late_expected)) == len(late_expected)
    kafka = kafka_report(
        tmp_path,
        topic_records(kafka_broker.bootstrap_servers, topic),
        late_expected,
        report.replayed.get("late_kafka", []),
    )
    assert kafka["records"] == len(late_expected) + kafka["duplicates"]
    assert (kafka["missing"], kafka["wrong"], kafka["outside_replays"]) == (0, 0, 0), kafka
    assert kafka["dedup_by_key"], kafka
    print(f"kafka: {kafka}; kills {report.kills}; replayed {report.replayed}")
