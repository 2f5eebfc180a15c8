"""Crash recovery, kept proven (issue 12 item 7; harness in ``tests/crash_harness.py``).

``sqlstream exec`` runs the flights stream (10 days, one day file per micro-batch) into
five sinks — a stateless filter and an hourly windowed aggregation as parquet files
sinks, the same filter into a ``table`` sink (``toTable``) and a ``kafka`` topic on a
real broker, the aggregation upserted by key into a real PostgreSQL table (``EMIT
CHANGES``) — and is killed with SIGKILL (the driver and its JVM) at 6 seeded random points
of the stream (once the filter has committed a drawn number of micro-batches, 0–8, then up
to 2 s into the next), restarted after each kill, then left to finish: one ``exec``
process per run, every sink a query of it. Against the batch oracle computed in plain
Python over the input files:

* files sinks, read as a Spark user reads them (``spark.read.parquet(folder)`` in batch,
  which reads only the files its ``_spark_metadata`` log lists, and pyarrow over the files
  that log lists): equal, nothing lost, nothing written twice;
* the table, registered in this session's catalog at its location and read with
  ``spark.read.table``: equal (a parquet table keeps the files sink's log);
* the topic, read back with confluent-kafka: at least once — every oracle row is there,
  every record is an oracle row; duplicates only of rows of micro-batches that a kill
  interrupted (at most one more copy per replay), and one record per key after
  deduplicating by key equals the oracle;
* the PostgreSQL table: equal (each micro-batch's upsert and its batch id commit in one
  transaction; a replayed batch id is skipped).

``bench/crash_recovery.py`` runs the same harness longer (more days, more kills).
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from tests.crash_harness import (
    batch_files, committed_files, expected_hourly, expected_late, late_row, prepare,
    run_until_done, topic_records,
)
from tests.kafka_broker import spark_jars

DAYS, KILLS, SEED = 10, 6, 12


@pytest.mark.spark
def test_sigkill_at_random_points_loses_and_duplicates_nothing(spark, kafka_broker, request,
                                                                 tmp_path):
    try:
        postgres = request.getfixturevalue("postgres")
    except pytest.skip.Exception:  # no PostgreSQL here (CI installs it): the other sinks
        postgres = None
    topic = kafka_broker.create_topic(f"crash-late-{uuid.uuid4().hex[:8]}")
    args = ["--var", f"servers={kafka_broker.bootstrap_servers}", "--var", f"topic={topic}",
            "--conf", "spark.jars=" + ",".join(spark_jars())]
    env = {}
    if postgres is not None:
        args += ["--var", f"pg_url={postgres.url}", "--var", "pg_table=crash_hourly"]
        env["PG_PASSWORD"] = postgres.password
    files = prepare(tmp_path, DAYS, extra=("table", "kafka") + (("postgres",) if postgres else ()))
    report = run_until_done(tmp_path, kills=KILLS, seed=SEED, args=tuple(args), env=env)
    assert len(report.kills) == KILLS, report
    late_expected, hourly_expected = expected_late(files), expected_hourly(files)

    late = spark.read.parquet(str(tmp_path / "out" / "late")).selectExpr(
        "year", "month", "day", "flight", "carrier", "origin", "dep_delay",
        "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss')").collect()
    assert sorted(map(tuple, late)) == late_expected

    hourly = spark.read.parquet(str(tmp_path / "out" / "hourly")).selectExpr(
        "date_format(window_start, 'yyyy-MM-dd HH:mm:ss')", "origin", "flights",
        "round(total_delay, 6)").collect()
    assert sorted(map(tuple, hourly), key=repr) == sorted(hourly_expected, key=repr)

    # Another reader (pyarrow here; DuckDB, pandas alike) reads the files the log lists:
    # the README's recipe; a plain *.parquet glob would add the files of killed batches.
    import pyarrow.parquet as pq

    for sink, expected in (("late", late_expected), ("hourly", hourly_expected)):
        paths = committed_files(tmp_path / "out" / sink)
        assert all(p.parent == tmp_path / "out" / sink for p in paths)
        assert pq.ParquetDataset([str(p) for p in paths]).read().num_rows == len(expected)

    # The table sink: registered at its location, as another session finds it.
    location = tmp_path / ".sqlstream" / "warehouse" / "late_flights"
    assert (location / "_spark_metadata").is_dir()
    spark.sql(f"CREATE TABLE crash_late_flights USING parquet LOCATION '{location}'")
    try:
        table = spark.read.table("crash_late_flights").selectExpr(
            "year", "month", "day", "flight", "carrier", "origin", "dep_delay",
            "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss')").collect()
    finally:
        spark.sql("DROP TABLE crash_late_flights")  # external: the files stay
    assert sorted(map(tuple, table)) == late_expected

    # The Kafka sink: at least once.
    records = topic_records(kafka_broker.bootstrap_servers, topic)
    copies = Counter(late_row(value) for _, value in records)
    assert len(set(late_expected)) == len(late_expected)
    assert set(copies) == set(late_expected)  # nothing lost, nothing that is not a result
    replays = Counter(name for batch in report.replayed.get("late_kafka", [])
                      for name in batch_files(tmp_path, "late_kafka", batch))
    for (year, month, day, *_), n in copies.items():  # a row's day is its input file's
        assert n - 1 <= replays[f"{year}-{month:02}-{day:02}.csv"], (year, month, day, n)
    by_key = {key: late_row(value) for key, value in records}
    assert sorted(by_key.values()) == late_expected  # the reader's deduplication
    print(f"kafka: {len(records)} records, {len(records) - len(late_expected)} duplicates; "
          f"kills {report.kills}; replayed {report.replayed}")

    if postgres is not None:
        rows = postgres.rows("SELECT to_char(window_start AT TIME ZONE 'UTC', "
                             "'YYYY-MM-DD HH24:MI:SS'), origin, flights, total_delay "
                             "FROM crash_hourly")
        got = sorted(((s, o, n, None if t is None else round(t, 6)) for s, o, n, t in rows),
                     key=repr)
        assert got == sorted(expected_hourly(files, final=False), key=repr)
