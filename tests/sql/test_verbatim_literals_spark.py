"""What the user wrote is what runs, on Spark: a query with a datetime pattern, a JSON path
and strings with escapes gives, run as a sqlstream pipeline, the rows ``spark.sql`` gives for
the same text on a batch view of the same file (sqlglot used to print ``'YYYY'`` as
``'yyyy'`` and ``'E'`` as ``'EEE'``, which Spark formats differently).
Also: Spark's own variable substitution (``spark.sql.variable.substitute``) does not expand a
``${env:…}`` / ``${system:…}`` that reaches ``spark.sql``.
"""

from __future__ import annotations

import json
import re

import pytest

import sqlstream
from tests.conftest import settings_kept

pytestmark = pytest.mark.spark

ROWS = [
    {"t": "2024-12-30T10:00:00Z", "js": '{"a b": 1, "x": {"y": 2}}'},
    {"t": "2021-01-03T23:59:59Z", "js": '{"a b": 3, "x": {"y": 4}}'},
]
QUERY = (
    "SELECT date_format(t, 'YYYY-ww E') AS week, date_format(t, 'y MMM E') AS day, "
    "get_json_object(js, '$[\\'a b\\']') AS ab, get_json_object(js, '$.x.y') AS y, "
    "concat('it''s', ' \\u0041\\t') AS s, to_date(date_format(t, 'yyyy-MM-dd'), 'yyyy-MM-dd') AS d "
    "FROM events"
)


def test_formats_paths_and_escapes_give_what_spark_sql_gives_for_the_same_text(
    spark, tmp_path, monkeypatch
):
    source = tmp_path / "in"
    source.mkdir()
    (source / "rows.json").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    program = f"""
CREATE STREAM events (t TIMESTAMP, js STRING) WITH (
    connector = 'files', format = 'json', path = '{source}');
CREATE SINK out WITH (connector = 'files', format = 'json', path = '{tmp_path / "out"}');
INSERT INTO out {QUERY} EMIT ONCE;
CREATE SINK raw WITH (connector = 'files', format = 'json', path = '{tmp_path / "raw"}');
INSERT INTO raw SELECT '${{v}}' AS v, d FROM (SELECT date_format(t, 'yyyy-MM-dd') AS d FROM events)
EMIT ONCE;
"""
    spark.conf.set("spark.sql.legacy.timeParserPolicy", "LEGACY")  # week-based 'Y', 'w'
    try:
        with sqlstream.Session(spark, state_dir=str(tmp_path / "state")) as session:
            monkeypatch.setenv("SS_PROBE", "expanded-by-spark")
            pipeline = session.compile(program, {"v": "${env:SS_PROBE} ${system:java.version}"})
            runs = pipeline.plan.queries[0].sql
            for literal in re.findall(r"'(?:[^'\\]|\\.)*'", QUERY):
                assert literal in runs, (literal, runs)  # as written
            with settings_kept(spark, pipeline):
                session.run(pipeline, available_now=True)
        got = sorted(
            json.dumps(row.asDict(), sort_keys=True)
            for row in spark.read.json(str(tmp_path / "out")).collect()
        )
        spark.read.schema("t TIMESTAMP, js STRING").json(str(source)).createOrReplaceTempView(
            "events"
        )
        expected = sorted(
            json.dumps(
                {k: (str(v) if k == "d" else v) for k, v in row.asDict().items()}, sort_keys=True
            )
            for row in spark.sql(QUERY).collect()
        )
        raw = {row.v for row in spark.read.json(str(tmp_path / "raw")).collect()}
    finally:
        spark.conf.unset("spark.sql.legacy.timeParserPolicy")
        spark.conf.unset("spark.sql.variable.substitute")
        spark.catalog.dropTempView("events")
    assert got == expected
    assert raw == {"${env:SS_PROBE} ${system:java.version}"}  # Spark expanded neither
    weeks = {json.loads(row)["d"]: json.loads(row)["week"] for row in got}
    assert weeks["2024-12-30"].startswith("2025-01 ")  # week-based year: 'YYYY', not 'yyyy'
