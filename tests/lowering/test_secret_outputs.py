"""Secrets in the printed outputs (no Spark): ``translate --to pyspark`` reads each from
the environment variable the substitution recorded."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.lowering.printer import to_pyspark


def test_translate_to_pyspark_names_each_secret_from_its_record(monkeypatch):
    """The script reads ``os.environ[NAME]`` for the name the substitution recorded, not
    for a name found by scanning the text against the current environment (which may have
    changed, or be unset, by the time the plan is printed)."""
    monkeypatch.setenv("SS_TOKEN", "s3cr3t-value")
    pipeline = sqlstream.compile("SET 'spark.hadoop.fs.s3a.secret.key' = '${env:SS_TOKEN}';\n")
    monkeypatch.delenv("SS_TOKEN")
    script = to_pyspark(pipeline)
    assert "'spark.hadoop.fs.s3a.secret.key', os.environ['SS_TOKEN']" in script, script
    assert "s3cr3t" not in script


PROGRAM = """\
SET 'spark.hadoop.fs.s3a.secret.key' = '${env:SS_A}';
CREATE STREAM s (k STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
  WITH (connector = 'files', format = 'json', path = '/in/${env:SS_B}', password = '${env:SS_A}');
CREATE SINK o WITH (connector = 'postgres', url = '${env:SS_URL}', table = 't',
                    password = '${env:SS_A}', port = '5432');
INSERT INTO o
SELECT k, date_format(ts, 'y E ${env:SS_B}') AS f, get_json_object(k, '$.${env:SS_B}') AS j,
       regexp_extract(k, '${env:SS_A}', 0) AS r
FROM s WHERE k <> '${env:SS_A}' AND k RLIKE '${env:SS_B}';
"""
VALUES = {"SS_A": "Pl'ugh\\Xyzzy42", "SS_B": "Quux7Frob", "SS_URL": "jdbc:postgresql://h:5/db"}


def test_the_compiler_never_holds_a_secret_value(monkeypatch, caplog):
    """The value-independent guarantee: the substitution hands the compiler a token, so the
    plan, the binding program and every printed form are free of the values whatever a
    rewrite does to their text (sqlglot's format-pattern and JSON-path handling included),
    and nothing logged while compiling holds one either."""
    for key, value in VALUES.items():
        monkeypatch.setenv(key, value)
    import logging
    import pickle

    from sqlstream.lowering import explain
    from sqlstream.lowering.lower import lower
    from sqlstream.lowering.printer import render

    caplog.set_level(logging.DEBUG)
    pipeline = sqlstream.compile(PROGRAM)
    plan = pipeline.plan
    dumps = [
        repr(plan),
        repr(lower(plan)),
        pickle.dumps(lower(plan)).decode("latin-1"),
        render(pipeline),
        to_pyspark(pipeline),
        explain.render(explain.describe(plan)),
        caplog.text,
    ]
    for text in dumps:
        for value in VALUES.values():
            assert value not in text and value.replace("'", "\\'") not in text
            assert "Xyzzy42" not in text and "Quux7Frob" not in text and "h:5" not in text
    # the tokens are where the values go; unseal is the only way back
    query = plan.queries[0].sql
    assert "Quux7Frob" in plan.source.unseal(query, sql=True)
    assert "Pl\\'ugh\\\\Xyzzy42" in plan.source.unseal(query, sql=True)


def test_a_postgres_url_that_is_a_secret_is_judged_by_its_value(monkeypatch):
    """``url = '${env:…}'``: check reads the value (a jdbc:postgresql URL is accepted), the
    writer receives it as written and makes it libpq's."""
    for key, value in VALUES.items():
        monkeypatch.setenv(key, value)
    from sqlstream.connectors.postgres import PostgresWriter

    plan = sqlstream.compile(PROGRAM).plan
    (sink,) = {q.sink.name: q.sink for q in plan.queries}.values()
    options = dict(sink.options)
    assert "h:5" not in options["url"]
    writer = PostgresWriter(table="t", url=plan.source.unseal(options["url"]))
    assert writer._url == "postgresql://h:5/db"  # noqa: SLF001 - what psycopg connects to


_STREAM = """\
CREATE STREAM s (k STRING, v INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE,
                 tagged AS concat(k, '${env:SS_A}'))
  WITH (connector = 'files', format = 'json', path = '/in');
CREATE STREAM t (k STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
  WITH (connector = 'files', format = 'json', path = '/in2');
CREATE SINK o WITH (connector = 'noop');
"""
POSITIONS = {  # every expression position a string can take in a query that Spark runs
    "select_item": "SELECT concat(k, '${env:SS_A}') AS c FROM s",
    "where": "SELECT k FROM s WHERE k = '${env:SS_A}'",
    "in_list": "SELECT k FROM s WHERE k IN ('a', '${env:SS_A}')",
    "like": "SELECT k FROM s WHERE k LIKE '%${env:SS_A}%'",
    "rlike": "SELECT k FROM s WHERE k RLIKE '${env:SS_A}'",
    "case": "SELECT CASE WHEN k = '${env:SS_A}' THEN 1 ELSE 0 END AS c FROM s",
    "computed_column": "SELECT tagged FROM s",
    "format_pattern": "SELECT date_format(ts, '${env:SS_A} yyyy') AS d FROM s",
    "json_path": "SELECT get_json_object(k, '$.${env:SS_A}') AS j FROM s",
    "regexp": "SELECT regexp_replace(k, '${env:SS_A}', 'x') AS r FROM s",
    "aggregate_argument": (
        "SELECT window.start AS w, count_if(k = '${env:SS_A}') AS n FROM s "
        "GROUP BY window(ts, '1 minute') EMIT FINAL"
    ),
    "grouping_key": (
        "SELECT window.start AS w, k = '${env:SS_A}' AS hit, count(*) AS n FROM s "
        "GROUP BY window(ts, '1 minute'), k = '${env:SS_A}' EMIT FINAL"
    ),
    "having": (
        "SELECT window.start AS w, count(*) AS n FROM s GROUP BY window(ts, '1 minute') "
        "HAVING max(k) <> '${env:SS_A}' EMIT FINAL"
    ),
    "join_condition": (
        "SELECT s.k FROM s JOIN t ON s.k = t.k AND t.k <> '${env:SS_A}' "
        "AND t.ts BETWEEN s.ts AND s.ts + INTERVAL 1 MINUTE"
    ),
    "subquery": "SELECT k FROM (SELECT k FROM s WHERE k <> '${env:SS_A}') AS q",
    "cast_of_string": "SELECT CAST(concat('1', '${env:SS_A}') AS STRING) AS c FROM s",
}


@pytest.mark.parametrize("position", sorted(POSITIONS))
def test_every_string_position_compiles_to_a_token_and_runs_the_value(position, monkeypatch):
    """A secret in each expression position a string can take: compiled (not refused),
    the plan and every printed form free of the value, and the SQL Spark receives (the
    binder's unsealed text) holds the value escaped as the literal needs."""
    monkeypatch.setenv("SS_A", "Pl'ugh\\Xyzzy42")
    from sqlstream.lowering import explain
    from sqlstream.lowering.lower import lower
    from sqlstream.lowering.printer import render

    pipeline = sqlstream.compile(_STREAM + "INSERT INTO o " + POSITIONS[position] + ";\n")
    plan = pipeline.plan
    for text in (
        repr(plan),
        repr(lower(plan)),
        render(pipeline),
        to_pyspark(pipeline),
        explain.render(explain.describe(plan)),
    ):
        assert "Xyzzy42" not in text
    texts = [
        plan.queries[0].sql,
        *(t for r in plan.relations for t in getattr(r, "projection", ())),
    ]
    assert any("Pl\\'ugh\\\\Xyzzy42" in plan.source.unseal(t, sql=True) for t in texts)
