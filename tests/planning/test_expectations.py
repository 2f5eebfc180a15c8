"""Expectations without a JVM (docs/dialect.md#expectations): the findings of ``check`` at
the rule, the plan's rules of streams and sinks, and the calls ``translate`` prints."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

STREAM = """CREATE STREAM flights (origin STRING, dep_time INT, dep_delay DOUBLE,
    time_hour TIMESTAMP,
    {rules}
) WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK out WITH (connector = 'console');
INSERT INTO out SELECT origin, dep_delay FROM flights;
"""


def _findings(rules: str) -> list[SqlStreamError]:
    return [f for f in sqlstream.check(STREAM.format(rules=rules)) if f.severity == "error"]


@pytest.mark.parametrize(
    "rule,code,at",
    [
        ("CONSTRAINT a EXPECT (origni = 'EWR')", "SS205", "origni"),
        ("CONSTRAINT a EXPECT (dep_delay + 1)", "SS230", "dep_delay + 1"),
        ("CONSTRAINT a EXPECT (count(*) > 1)", "SS232", "count"),
        ("CONSTRAINT a EXPECT (max(dep_delay) OVER () > 1)", "SS232", "max"),
        ("CONSTRAINT a EXPECT (rand() < 0.5)", "SS233", "rand"),
        ("CONSTRAINT a EXPECT (time_hour < current_timestamp())", "SS233", "current_timestamp"),
    ],
)
def test_a_bad_condition_is_found_at_its_place(rule, code, at):
    (finding,) = _findings(rule)
    assert finding.code == code
    text = STREAM.format(rules=rule)
    assert text[finding.span.start :].startswith(at)
    assert finding.span.line == 3


def test_names_are_unique_in_the_file():
    text = STREAM.format(rules="CONSTRAINT a EXPECT (dep_delay < 10)").replace(
        "CREATE SINK out WITH", "CREATE SINK out (CONSTRAINT a EXPECT (dep_delay > 0)) WITH"
    )
    (finding,) = [f for f in sqlstream.check(text) if f.severity == "error"]
    assert finding.code == "SS231" and finding.span.line == 5
    (finding,) = _findings("CONSTRAINT a EXPECT (dep_delay < 10), CONSTRAINT A EXPECT (true)")
    assert finding.code == "SS231"


def test_a_table_takes_no_rule_and_a_continuous_query_none():
    with pytest.raises(SqlStreamError) as table:
        sqlstream.compile(
            "CREATE TABLE t (x INT, CONSTRAINT p EXPECT (x > 0)) "
            "WITH (connector = 'files', path = 'in', format = 'json');"
        )
    assert table.value.code == "SS110"
    text = """CREATE STREAM r (CONSTRAINT even EXPECT (value % 2 = 0)) WITH (connector = 'rate');
        CREATE SINK out WITH (connector = 'console');
        INSERT INTO out SELECT value FROM r EMIT CONTINUOUS;"""
    assert "SS380" in [f.code for f in sqlstream.check(text)]


def test_the_plan_carries_the_rules_and_translate_shows_their_calls():
    text = STREAM.format(
        rules="CONSTRAINT known EXPECT (origin IN ('EWR', 'JFK')),\n"
        "CONSTRAINT departed EXPECT (dep_time IS NOT NULL) ON VIOLATION DROP ROW,\n"
        "CONSTRAINT sane EXPECT (dep_delay < 2000) ON VIOLATION FAIL UPDATE"
    ).replace(
        "CREATE SINK out WITH", "CREATE SINK out (CONSTRAINT late EXPECT (dep_delay > 0)) WITH"
    )
    pipeline = sqlstream.compile(text)
    (source,) = [r for r in pipeline.plan.relations if r.name == "flights"]
    assert [(e.name, e.condition, e.action) for e in source.expectations] == [
        ("known", "origin IN ('EWR', 'JFK')", "keep"),
        ("departed", "dep_time IS NOT NULL", "drop"),
        ("sane", "dep_delay < 2000", "fail"),
    ]
    assert source.expectations[2].span.line == 5
    (query,) = pipeline.plan.queries
    assert [(e.name, e.action) for e in query.expectations] == [("late", "keep")]
    printed = pipeline.translate()
    assert (
        "df = df.observe('expect:flights', F.expr(\"count_if(NOT (origin IN ('EWR', 'JFK'))) "
        'AS `known`")' in printed
    )
    assert "df = df.where('coalesce(dep_time IS NOT NULL, true)')" in printed
    assert "THEN raise_error(concat('sqlstream expectation sane violated by row '" in printed
    assert ".observe('expect:out', F.expr('count_if(NOT (dep_delay > 0)) AS `late`'))" in printed
    assert "-- expectations: known (counted), departed (dropped), sane (stops the query)" in printed
