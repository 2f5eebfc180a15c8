"""``delta`` and ``iceberg`` sources planned without a JVM: the Python path where no Spark
package of the format runs (the data source registered and read, as ``translate`` prints
it), the declared columns checked against an existing table (``SS295``, ``SS296``), the
source and sink options (``SS283``), and a reader's failure positioned at its stream
(``SS550``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sqlstream
from sqlstream.connectors.lakehouse_source import MARK, source_failure

DELTA = "CREATE STREAM events ({columns}) WITH (connector = 'delta', path = 'lake/events'{more});"
ICEBERG = (
    "CREATE STREAM events ({columns}) WITH (connector = 'iceberg', table = 'lake.events'{more});"
)
QUERY = """
CREATE SINK out WITH (connector = 'console');
INSERT INTO out SELECT * FROM events;
"""
TABLE = pa.table(
    {
        "id": pa.array([1, 2], pa.int64()),
        "at": pa.array([0, 3_600_000_000], pa.timestamp("us", tz="UTC")),
    }
)


def _file(tmp_path, template: str, columns: str, version: str = "4.3", more: str = ""):
    path = tmp_path / "p.ssql"
    text = f"SET 'sqlstream.spark_version' = '{version}';\n"
    path.write_text(text + template.format(columns=columns, more=more) + QUERY)
    return path


def _findings(path):
    return sqlstream.check(path.read_text(), path=str(path))


def _delta_table(tmp_path):
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "lake" / "events"), TABLE)


def _iceberg_table(tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = tmp_path / ".sqlstream" / "warehouse"
    warehouse.mkdir(parents=True)
    catalog = SqlCatalog(
        "sqlstream", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}"
    )
    catalog.create_namespace("lake")
    catalog.create_table(("lake", "events"), schema=TABLE.schema).append(TABLE)


@pytest.mark.parametrize("template", [DELTA, ICEBERG], ids=["delta", "iceberg"])
def test_the_python_data_source_is_registered_and_read(tmp_path, template):
    path = _file(tmp_path, template, "id BIGINT, at TIMESTAMP", more=", skip_change_commits = true")
    text = sqlstream.compile_file(path).translate()
    name = "Delta" if template is DELTA else "Iceberg"
    register = (
        "spark.dataSource.register(importlib.import_module("
        f"'sqlstream.runtime.lakehouse_reader').{name}Source)"
    )
    read = text[text.index(register) :]
    fmt = "sqlstream_" + name.lower()
    assert read.startswith(register + f"\ndf = (spark.readStream\n    .format('{fmt}')\n")
    assert "    .schema('`id` BIGINT, `at` TIMESTAMP')\n    .option('stream', 'events')\n" in read
    assert "    .option('skip_change_commits', 'true')\n    .load())" in read
    if template is ICEBERG:
        warehouse = tmp_path / ".sqlstream" / "warehouse"
        assert f".option('catalog_uri', 'sqlite:///{warehouse}/catalog.db')" in read
    else:
        assert f".option('path', '{tmp_path}/lake/events')" in read
    assert "spark.jars.packages" not in sqlstream.compile_file(path).to_pyspark()


def test_a_delta_source_where_delta_runs_passes_its_options_to_delta(tmp_path):
    more = ", starting_version = 3, skip_change_commits = true"
    path = _file(tmp_path, DELTA, "id BIGINT", version="4.2", more=more)
    text = sqlstream.compile_file(path).translate()
    assert (
        ".format('delta')\n    .option('startingVersion', '3')\n"
        "    .option('skipChangeCommits', 'true')\n"
        f"    .load('{tmp_path}/lake/events'))"
    ) in text


@pytest.mark.parametrize(
    ("template", "make"),
    [(DELTA, _delta_table), (ICEBERG, _iceberg_table)],
    ids=["delta", "iceberg"],
)
def test_declared_columns_are_checked_against_the_table(tmp_path, template, make):
    make(tmp_path)
    assert _findings(_file(tmp_path, template, "id BIGINT, at TIMESTAMP")) == []
    path = _file(tmp_path, template, "id BIGINT, kind STRING")
    (missing,) = _findings(path)
    assert missing.code == "SS295"
    assert "has no column 'kind' (its columns: id BIGINT, at TIMESTAMP)" in missing.message
    assert missing.span.line == 2
    assert path.read_text()[missing.span.start : missing.span.end] == "kind"
    path = _file(tmp_path, template, "id INT, at TIMESTAMP")
    (other,) = _findings(path)
    assert other.code == "SS296"
    assert "column 'id' is BIGINT in the" in other.message and "declared INT" in other.message
    assert path.read_text()[other.span.start : other.span.end] == "id"


def test_no_table_no_check(tmp_path):
    assert _findings(_file(tmp_path, DELTA, "anything STRING")) == []
    assert _findings(_file(tmp_path, ICEBERG, "anything STRING")) == []


@pytest.mark.parametrize(
    ("text", "message", "where"),
    [
        (
            DELTA.format(columns="id BIGINT", more=", mode = 'append'"),
            "'mode' is an option of a delta sink, not of a source",
            "mode = 'append'",
        ),
        (
            ICEBERG.format(columns="id BIGINT", more=", starting_version = 2"),
            "starting_version is an option of a delta source",
            "starting_version = 2",
        ),
        (
            DELTA.format(columns="id BIGINT", more=", starting_version = 'two'"),
            "starting_version 'two' is not a table version",
            "'two'",
        ),
        (
            "CREATE STREAM events WITH (connector = 'rate');\n"
            "CREATE SINK out WITH (connector = 'delta', path = 'x', skip_change_commits = true);\n"
            "INSERT INTO out SELECT value FROM events;",
            "'skip_change_commits' is an option of a delta source, not of a sink",
            "skip_change_commits = true",
        ),
    ],
)
def test_source_and_sink_options_stay_in_their_role(text, message, where):
    if "INSERT" not in text:
        text += QUERY
    findings = [f for f in sqlstream.check(text) if f.code == "SS283"]
    assert len(findings) == 1 and message in findings[0].message
    assert text[findings[0].span.start : findings[0].span.end] == where


def test_a_readers_failure_is_reported_at_its_stream(tmp_path):
    path = _file(tmp_path, DELTA, "id BIGINT", more="")
    pipeline = sqlstream.compile_file(path)
    plan = pipeline.plan
    trace = (
        "[STREAM_FAILED] … PythonException: … LakehouseSourceError: "
        f"[{MARK} SS550 events] version 3 of /x (MERGE) changes or deletes rows; "
        "a streaming source reads appended rows only\n\tat org.apache…"
    )
    error = source_failure(trace, plan, plan.queries[0])
    assert error is not None and error.code == "SS550"
    assert error.span.line == 2
    assert error.message == (
        "query 'out' failed: stream 'events': version 3 of /x (MERGE) changes or deletes "
        "rows; a streaming source reads appended rows only"
    )
    assert source_failure("[STREAM_FAILED] other", plan, plan.queries[0]) is None


# ---- rate limits: the format's own option names, on both paths ------------------------------


def test_rate_limits_reach_the_python_reader_and_the_spark_readers(tmp_path):
    delta = ", maxFilesPerTrigger = 1, maxBytesPerTrigger = '64m'"
    text = sqlstream.compile_file(_file(tmp_path, DELTA, "id BIGINT", more=delta)).translate()
    assert (
        "    .option('maxFilesPerTrigger', '1')\n    .option('maxBytesPerTrigger', '64m')\n" in text
    )
    assert ".format('sqlstream_delta')" in text
    path = _file(tmp_path, DELTA, "id BIGINT", version="4.2", more=delta)
    text = sqlstream.compile_file(path).translate()
    assert (
        ".format('delta')\n    .option('maxFilesPerTrigger', '1')\n"
        "    .option('maxBytesPerTrigger', '64m')\n"
        f"    .load('{tmp_path}/lake/events'))"
    ) in text
    iceberg = ", 'streaming-max-rows-per-micro-batch' = 500"
    text = sqlstream.compile_file(_file(tmp_path, ICEBERG, "id BIGINT", more=iceberg)).translate()
    assert ".option('streaming-max-rows-per-micro-batch', '500')" in text
    path = _file(tmp_path, ICEBERG, "id BIGINT", version="4.1", more=iceberg)
    text = sqlstream.compile_file(path).translate()
    assert (
        ".format('iceberg')\n    .option('streaming-max-rows-per-micro-batch', '500')\n"
        "    .load('sqlstream.lake.events'))"
    ) in text


@pytest.mark.parametrize(
    ("template", "version", "more", "code", "message", "where"),
    [
        (
            ICEBERG,
            "4.3",
            ", maxFilesPerTrigger = 1",
            "SS286",
            "'maxFilesPerTrigger' is an option of delta's reader, not of an iceberg source",
            "maxFilesPerTrigger",
        ),
        (
            DELTA,
            "4.3",
            ", 'streaming-max-rows-per-micro-batch' = 5",
            "SS286",
            "is an option of iceberg's reader, not of a delta source",
            "'streaming-max-rows-per-micro-batch'",
        ),
        (DELTA, "4.3", ", maxFilesPerTrigger = 0", "SS287", "is not a positive whole", "0"),
        (
            DELTA,
            "4.2",
            ", maxBytesPerTrigger = 'lots'",
            "SS287",
            "or a byte size such as 64m",
            "'lots'",
        ),
        (
            ICEBERG,
            "4.3",
            ", 'streaming-max-files-per-micro-batch' = -2",
            "SS287",
            "is not a positive whole number",
            "-2",
        ),
        (
            ICEBERG,
            "4.0",
            ", 'streaming-max-files-per-micro-batch' = 2",
            "SS288",
            "PySpark before 4.2 gives a Python stream reader no read limit",
            "'streaming-max-files-per-micro-batch'",
        ),
    ],
)
def test_a_bad_rate_limit_is_a_positioned_error(
    tmp_path, template, version, more, code, message, where
):
    path = _file(tmp_path, template, "id BIGINT", version=version, more=more)
    text = path.read_text()
    (found,) = [f for f in _findings(path) if f.code == code]
    assert message in found.message
    assert text[found.span.start : found.span.end] == where


def test_a_rate_limit_on_a_sink_is_refused():
    text = (
        "CREATE STREAM events WITH (connector = 'rate');\n"
        "CREATE SINK out WITH (connector = 'delta', path = 'x', maxFilesPerTrigger = 1);\n"
        "INSERT INTO out SELECT value FROM events;"
    )
    (found,) = [f for f in sqlstream.check(text) if f.code == "SS283"]
    assert "'maxFilesPerTrigger' is a rate limit of a delta source, not of a sink" in found.message
    assert text[found.span.start : found.span.end] == "maxFilesPerTrigger = 1"
