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
