"""The choice of the ``delta`` sink's write path, made once from the target Spark minor
(``sqlstream.connectors.lakehouse_jvm``): on 4.0-4.2 ``translate`` prints Delta's Spark
writer (``DeltaSparkWriter``) and the session gets Delta's package, extension and
catalog; on 4.3 the Python writer (delta-rs) and none of them. No JVM."""

from __future__ import annotations

import pytest

import sqlstream

TEXT = """SET 'sqlstream.spark_version' = '{version}';
CREATE STREAM events (id BIGINT, kind STRING, ts TIMESTAMP)
WITH (connector = 'files', path = 'events', format = 'json');
CREATE SINK latest WITH (connector = 'delta', path = 'lake/latest', key_columns = 'kind');
INSERT INTO latest SELECT kind, COUNT(*) AS n FROM events GROUP BY kind EMIT CHANGES;
"""
PACKAGE = {
    "4.0": "io.delta:delta-spark_2.13:4.0.1",
    "4.1": "io.delta:delta-spark_4.1_2.13:4.1.0",
    "4.2": "io.delta:delta-spark_2.13:4.2.0",
}


@pytest.mark.parametrize("version", ["4.0", "4.1", "4.2", "4.3"])
def test_the_write_path_and_session_follow_the_target_minor(version, tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(TEXT.format(version=version))
    pipeline = sqlstream.compile_file(path)
    text = pipeline.translate()
    script = pipeline.to_pyspark()
    writer = f"path='{tmp_path}/lake/latest', mode='upsert', key_columns=['kind']))"
    if version in PACKAGE:
        assert (
            "importlib.import_module('sqlstream.connectors.lakehouse_jvm').DeltaSparkWriter("
            + writer
        ) in text
        assert f".config('spark.jars.packages', '{PACKAGE[version]}')" in script
        assert ".config('spark.sql.extensions', 'io.delta.sql.DeltaSparkSessionExtension')" in (
            script
        )
        assert (
            ".config('spark.sql.catalog.spark_catalog', "
            "'org.apache.spark.sql.delta.catalog.DeltaCatalog')" in script
        )
    else:
        assert "importlib.import_module('sqlstream.connectors.delta').DeltaWriter(" + writer in text
        assert "spark.jars.packages" not in script and "spark.sql.extensions" not in script


SOURCE = """SET 'sqlstream.spark_version' = '{version}';
CREATE STREAM events (id BIGINT, kind STRING) WITH (connector = 'delta', path = 'lake/events');
CREATE SINK out WITH (connector = 'console');
INSERT INTO out SELECT id, kind FROM events;
"""


def test_a_delta_source_is_read_by_delta_where_its_package_runs(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(SOURCE.format(version="4.2"))
    pipeline = sqlstream.compile_file(path)
    assert (
        f"spark.readStream\n    .format('delta')\n    .load('{tmp_path}/lake/events'))"
        in pipeline.translate()
    )
    assert f".config('spark.jars.packages', '{PACKAGE['4.2']}')" in pipeline.to_pyspark()


def test_a_delta_source_is_read_by_the_python_data_source_where_no_package_runs(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(SOURCE.format(version="4.3"))
    pipeline = sqlstream.compile_file(path)
    text = pipeline.translate()
    assert ".format('sqlstream_delta')" in text
    assert f".option('path', '{tmp_path}/lake/events')" in text
    script = pipeline.to_pyspark()
    assert "spark.jars.packages" not in script and "spark.sql.extensions" not in script
