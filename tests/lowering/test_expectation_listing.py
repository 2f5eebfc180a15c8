"""The expectations of a plan per stream and sink, as the static commands list them: in
the file's order, a sink written by two queries once, secrets in a condition redacted."""

from __future__ import annotations

import sqlstream
from sqlstream.lowering.expectation_listing import ON_VIOLATION, guarded, rule_line
from tests.support.written_constraints import FIXTURE, written, written_in

SECRET = "hunter2-origin"
TWO_QUERIES = """CREATE STREAM s (v BIGINT, origin STRING,
    CONSTRAINT not_secret EXPECT (origin <> '${env:LISTING_TOKEN}') ON VIOLATION FAIL UPDATE
) WITH (connector = 'files', path = '/in/s', format = 'json');
CREATE SINK out (CONSTRAINT positive EXPECT (v > 0) ON VIOLATION DROP ROW)
    WITH (connector = 'console');
INSERT INTO out SELECT v FROM s;
INSERT INTO out SELECT v + 1 AS v FROM s;
"""


def test_rules_in_file_order_per_relation():
    rules = written_in(FIXTURE)
    plan = sqlstream.compile(FIXTURE.read_text(encoding="utf-8"), {"dir": "/data"}).plan
    listed = [
        (g["kind"], g["relation"], rule_line(e)) for g in guarded(plan) for e in g["expectations"]
    ]
    assert listed == [
        (
            r.kind,
            r.relation,
            f"{r.name} EXPECT ({r.condition})" + (f" {r.on_violation}" if r.on_violation else ""),
        )
        for r in rules
    ]


def test_a_sink_of_two_queries_once_and_secrets_redacted(monkeypatch):
    monkeypatch.setenv("LISTING_TOKEN", SECRET)
    plan = sqlstream.compile(TWO_QUERIES).plan
    found = guarded(plan)
    assert [(g["kind"], g["relation"]) for g in found] == [
        ("stream", "s"),
        ("sink", "out"),
    ]
    assert SECRET not in repr(found)
    (rule,) = found[0]["expectations"]
    assert rule["condition"] == "origin <> '***'"
    assert rule["action"] == "fail" and rule["on_violation"] == ON_VIOLATION["fail"]
    assert [r.on_violation for r in written(TWO_QUERIES)] == [
        g["expectations"][0]["on_violation"] for g in found
    ]
