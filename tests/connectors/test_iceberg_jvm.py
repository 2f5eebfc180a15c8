"""The choice of the ``iceberg`` sink's write path, made once from the target Spark minor
(``sqlstream.connectors.iceberg_jvm``): on 4.1 ``translate`` prints Iceberg's Spark
writer (``IcebergSparkWriter``) and the session gets Iceberg's runtime, the SQLite JDBC
driver, Iceberg's extensions and a Spark catalog over the same SQLite catalog; on 4.0, 4.2
and 4.3, or with a catalog in another database, the Python writer (pyiceberg) and none of
them. No JVM."""

from __future__ import annotations

import pytest

import sqlstream

TEXT = """SET 'sqlstream.spark_version' = '{version}';
CREATE STREAM events (id BIGINT, kind STRING, ts TIMESTAMP)
WITH (connector = 'files', path = 'events', format = 'json');
CREATE SINK latest WITH (connector = 'iceberg', table = 'lake.latest', key_columns = 'kind'{extra});
INSERT INTO latest SELECT kind, COUNT(*) AS n FROM events GROUP BY kind EMIT CHANGES;
"""
RUNTIME = {"4.1": "org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0"}


@pytest.mark.parametrize("version", ["4.0", "4.1", "4.2", "4.3"])
def test_the_write_path_and_session_follow_the_target_minor(version, tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(TEXT.format(version=version, extra=""))
    pipeline = sqlstream.compile_file(path)
    text, script = pipeline.translate(), pipeline.to_pyspark()
    warehouse = tmp_path / ".sqlstream" / "warehouse"
    arguments = (
        f"(table='lake.latest', warehouse='{warehouse}', catalog='sqlstream', "
        f"catalog_uri='sqlite:///{warehouse}/catalog.db', mode='upsert', key_columns=['kind']))"
    )
    if version in RUNTIME:
        module = "importlib.import_module('sqlstream.connectors.iceberg_jvm').IcebergSparkWriter"
        assert module + arguments in text
        packages = f"{RUNTIME[version]},org.xerial:sqlite-jdbc:3.46.1.3"
        assert f".config('spark.jars.packages', '{packages}')" in script
        extension = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
        for key, value in (
            ("spark.sql.extensions", extension),
            ("spark.sql.catalog.sqlstream", "org.apache.iceberg.spark.SparkCatalog"),
            ("spark.sql.catalog.sqlstream.type", "jdbc"),
            ("spark.sql.catalog.sqlstream.uri", f"jdbc:sqlite:{warehouse}/catalog.db"),
            ("spark.sql.catalog.sqlstream.warehouse", f"file://{warehouse}"),
            ("spark.sql.catalog.sqlstream.jdbc.schema-version", "V1"),
        ):
            assert f".config('{key}', '{value}')" in script
    else:
        assert (
            "importlib.import_module('sqlstream.connectors.iceberg').IcebergWriter" + (arguments)
            in text
        )
        assert "spark.jars.packages" not in script and "spark.sql.extensions" not in script


def test_a_catalog_in_another_database_stays_on_the_python_path(tmp_path):
    path = tmp_path / "p.ssql"
    extra = ", catalog_uri = 'postgresql+psycopg://u@localhost/iceberg'"
    path.write_text(TEXT.format(version="4.1", extra=extra))
    pipeline = sqlstream.compile_file(path)
    assert "sqlstream.connectors.iceberg').IcebergWriter(" in pipeline.translate()
    assert "spark.jars.packages" not in pipeline.to_pyspark()


def test_both_formats_share_the_session_extensions(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(
        TEXT.format(version="4.1", extra="")
        + "CREATE SINK copy WITH (connector = 'delta', path = 'lake/copy');\n"
        + "INSERT INTO copy SELECT id, kind FROM events;\n"
    )
    script = sqlstream.compile_file(path).to_pyspark()
    assert (
        ".config('spark.sql.extensions', 'io.delta.sql.DeltaSparkSessionExtension,"
        "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions')" in script
    )
    assert (
        ".config('spark.jars.packages', 'io.delta:delta-spark_4.1_2.13:4.1.0,"
        f"{RUNTIME['4.1']},org.xerial:sqlite-jdbc:3.46.1.3')" in script
    )


SOURCE = """SET 'sqlstream.spark_version' = '{version}';
CREATE STREAM events (id BIGINT, kind STRING)
WITH (connector = 'iceberg', table = 'lake.events'{extra});
CREATE SINK out WITH (connector = 'console');
INSERT INTO out SELECT id, kind FROM events;
"""


def test_an_iceberg_source_is_read_by_iceberg_through_the_same_catalog(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(SOURCE.format(version="4.1", extra=""))
    pipeline = sqlstream.compile_file(path)
    assert (
        "spark.readStream\n    .format('iceberg')\n    .load('sqlstream.lake.events'))"
        in pipeline.translate()
    )
    script = pipeline.to_pyspark()
    assert f".config('spark.jars.packages', '{RUNTIME['4.1']},org.xerial:sqlite-jdbc" in script
    warehouse = tmp_path / ".sqlstream" / "warehouse"
    uri = f"jdbc:sqlite:{warehouse}/catalog.db"
    assert f".config('spark.sql.catalog.sqlstream.uri', '{uri}')" in script


def test_an_iceberg_source_is_read_by_the_python_data_source_where_no_runtime_is_served():
    text = SOURCE.format(version="4.3", extra="")
    assert sqlstream.check(text) == []
    assert ".format('sqlstream_iceberg')" in sqlstream.compile(text).translate()


def test_an_iceberg_source_in_another_database_is_refused():
    uri = "'postgresql+psycopg://u@localhost/iceberg'"
    text = SOURCE.format(version="4.1", extra=f", catalog_uri = {uri}")
    (finding,) = sqlstream.check(text)
    assert finding.code == "SS285"
    assert text[finding.span.start : finding.span.end] == uri
