"""Spark's error conditions mapped to sqlstream codes (:mod:`sqlstream.runtime.spark_errors`),
triggered for real: a checkpoint whose ``metadata`` file was deleted by hand is refused at
restart by Spark 4.2 and newer (``STREAMING_CHECKPOINT_MISSING_METADATA_FILE``), which
sqlstream reports as ``SS503`` at the query's statement with a hint."""

from __future__ import annotations

import shutil

import pytest

import sqlstream
from sqlstream.diagnostics.errors import QueryFailedError
from sqlstream.ir import spark_versions
from tests.conftest import ROOT

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(
        not spark_versions.at_least(spark_versions.default(), "4.2"),
        reason="Spark 4.0 and 4.1 have no such condition (4.1 fails with another message)",
    ),
]

PIPELINE = """
CREATE STREAM flights (carrier STRING, flight INT, dep_delay DOUBLE)
WITH (connector = 'files', path = 'data', format = 'csv', header = true, nullValue = 'NA');
CREATE SINK late WITH (connector = 'files', path = 'out/late', format = 'parquet');
INSERT INTO late SELECT carrier, flight, dep_delay FROM flights WHERE dep_delay > 60 EMIT ONCE;
"""


def test_checkpoint_without_its_metadata_file_is_ss503_at_the_statement(spark, tmp_path):
    (tmp_path / "data").mkdir()
    shutil.copy(
        ROOT / "examples" / "flights" / "data" / "flights" / "2013-01-01.csv", tmp_path / "data"
    )
    (tmp_path / "p.ssql").write_text(PIPELINE)
    pipeline = sqlstream.compile_file(str(tmp_path / "p.ssql"))
    (query,) = pipeline.start(spark)
    query.awaitTermination()
    assert query.exception() is None
    (planned,) = pipeline.plan.queries
    checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "p" / "late"
    assert planned.checkpoint_location == str(checkpoint)
    assert (checkpoint / "offsets" / "0").is_file()
    (checkpoint / "metadata").unlink()

    with pytest.raises(QueryFailedError) as caught:
        sqlstream.compile_file(str(tmp_path / "p.ssql")).start(spark)
    error = caught.value
    assert error.code == "SS503"
    assert "STREAMING_CHECKPOINT_MISSING_METADATA_FILE" in error.message
    assert error.span.line == PIPELINE.count("\n", 0, PIPELINE.index("INSERT")) + 1
    assert "new checkpoint location" in error.hint
    assert not any(q.name == "late" for q in spark.streams.active)
