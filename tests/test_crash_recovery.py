"""Crash recovery, kept proven (issue 12 item 7; harness in ``tests/crash_harness.py``).

``sqlstream exec`` runs the flights stream (10 days, one day file per micro-batch) into two
parquet sinks — a stateless filter and an hourly windowed aggregation — and is killed with
SIGKILL (the driver and its JVM) at 6 seeded random points of the stream (after 0–2 more
committed micro-batches, then up to 2 s into the next),
restarted after each kill, then left to finish. Each sink, read as a Spark user reads it
(``spark.read.parquet(folder)`` in batch, which reads only the files its
``_spark_metadata`` log lists), equals the batch oracle computed in plain Python over
the input files: nothing lost, nothing written twice. ``bench/crash_recovery.py`` runs
the same harness longer (more days, more kills).
"""

from __future__ import annotations

import pytest

from tests.crash_harness import (
    committed_files, expected_hourly, expected_late, prepare, run_until_done,
)

DAYS, KILLS, SEED = 10, 6, 12


@pytest.mark.spark
def test_sigkill_at_random_points_loses_and_duplicates_nothing(spark, tmp_path):
    files = prepare(tmp_path, DAYS)
    report = run_until_done(tmp_path, kills=KILLS, seed=SEED)
    assert len(report.kills) == KILLS

    late = spark.read.parquet(str(tmp_path / "out" / "late")).selectExpr(
        "year", "month", "day", "flight", "carrier", "origin", "dep_delay",
        "date_format(time_hour, 'yyyy-MM-dd HH:mm:ss')").collect()
    assert sorted(map(tuple, late)) == expected_late(files)

    hourly = spark.read.parquet(str(tmp_path / "out" / "hourly")).selectExpr(
        "date_format(window_start, 'yyyy-MM-dd HH:mm:ss')", "origin", "flights",
        "round(total_delay, 6)").collect()
    assert sorted(map(tuple, hourly), key=repr) == sorted(expected_hourly(files), key=repr)

    # Another reader (pyarrow here; DuckDB, pandas alike) reads the files the log lists:
    # the README's recipe; a plain *.parquet glob would add the files of killed batches.
    import pyarrow.parquet as pq

    for sink, expected in (("late", expected_late(files)), ("hourly", expected_hourly(files))):
        paths = committed_files(tmp_path / "out" / sink)
        assert all(p.parent == tmp_path / "out" / sink for p in paths)
        assert pq.ParquetDataset([str(p) for p in paths]).read().num_rows == len(expected)
