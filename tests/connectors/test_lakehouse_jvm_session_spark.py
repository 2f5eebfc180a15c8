"""The ``delta`` sink's JVM path in the test run's session: the rule that keeps one row
per key of an upserted micro-batch, and the check of a session the user built
(``Pipeline.start(spark)``).

* ``lakehouse_jvm.last_per_key`` (Spark) keeps the same row per key as the Python path's
  ``lakehouse.last_per_key`` over the batch collected as Arrow, and as a plain loop over
  ``collect()`` (Spark's own order): on a persisted DataFrame of three partitions after a
  shuffle, with many rows per key.
* A pipeline judged for Spark 4.1 (the JVM path) started in a session without Delta's
  package and settings (this run's session on PySpark 4.3) is refused with ``SS545`` at
  the sink, naming the three settings, before anything runs: no checkpoint written (only its lock), no table,
  no query.
  On 4.0-4.2 this run's session has them, and the same check passes.
"""

from __future__ import annotations

import pyspark
import pytest

import sqlstream
from sqlstream.connectors import lakehouse, lakehouse_jvm
from sqlstream.diagnostics.errors import SqlStreamError

pytestmark = pytest.mark.spark

MINOR = ".".join(pyspark.__version__.split(".")[:2])
PIPELINE = """\
CREATE STREAM ticks WITH (connector = 'rate', rowsPerSecond = 5);
CREATE SINK latest WITH (connector = 'delta', path = 'lake/latest',
    mode = 'upsert', key_columns = 'k');
INSERT INTO latest SELECT value % 3 AS k, value FROM ticks;
"""


def test_one_row_per_key_is_the_python_paths_row(spark):
    rows = [(i % 7, i, f"r{i}") for i in range(300)]
    df = spark.createDataFrame(rows, "k INT, v INT, s STRING").repartition(3, "v").persist()
    try:
        assert df.rdd.getNumPartitions() == 3
        jvm = sorted(tuple(r) for r in lakehouse_jvm.last_per_key(df, ("k",)).collect())
        arrow = lakehouse.last_per_key(lakehouse.to_arrow(df), ("k",))
        python = sorted(zip(*arrow.to_pydict().values(), strict=True))
        last: dict[int, tuple] = {}
        for row in df.collect():  # Spark's order: partition by partition
            last[row["k"]] = tuple(row)
        assert jvm == python == sorted(last.values())
        assert len(jvm) == 7
    finally:
        df.unpersist()


@pytest.mark.skipif(
    MINOR in lakehouse_jvm.DELTA_PACKAGES, reason="this run's session has Delta's package"
)
def test_a_session_without_delta_is_refused_before_anything_runs(spark, tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(PIPELINE)
    pipeline = sqlstream.compile(PIPELINE, path=str(path), spark_version="4.1")
    assert lakehouse.is_jvm(pipeline.plan.queries[0].sink)
    with pytest.raises(SqlStreamError) as raised:
        pipeline.start(spark)
    error = raised.value
    assert error.code == "SS545"
    assert error.span is not None and error.span.line == 2
    for setting in ("spark.jars.packages", *lakehouse_jvm.DELTA_SETTINGS):
        assert setting in error.message and setting in (error.hint or "")
    assert "io.delta:delta-spark_4.1_2.13:4.1.0" in (error.hint or "")
    checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "p" / "latest"
    assert not (checkpoint / "metadata").exists() and not (checkpoint / "offsets").exists()
    assert not (tmp_path / "lake").exists()
    assert all(q.name != "latest" for q in spark.streams.active)


@pytest.mark.skipif(
    MINOR not in lakehouse_jvm.DELTA_PACKAGES, reason=f"no Delta package runs on {MINOR}"
)
def test_a_session_with_delta_passes_the_check(spark, tmp_path):
    pipeline = sqlstream.compile(PIPELINE, path=str(tmp_path / "p.ssql"))
    assert lakehouse.is_jvm(pipeline.plan.queries[0].sink)
    lakehouse_jvm.check_session(spark, pipeline.plan)  # raises nothing
