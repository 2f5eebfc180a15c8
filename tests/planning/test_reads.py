"""The relations each view and query of a plan reads (``reads``), found once by the
compiler with their places in the file: what the graph and the language server use instead
of parsing the SQL again."""

from __future__ import annotations

from pathlib import Path

import sqlstream
from sqlstream.ir import plan as p

HEAD = """CREATE STREAM s (k STRING, v STRING, ts TIMESTAMP)
  WITH (connector = 'files', path = 's', format = 'json');
CREATE TABLE t (k STRING, v STRING) WITH (connector = 'files', path = 't', format = 'json');
CREATE SINK out WITH (connector = 'memory');
"""


def _placed(plan: p.Plan, step: p.SqlView | p.Query) -> list[tuple[str, str]]:
    return [(r.name, plan.source.text[r.span.start : r.span.end]) for r in step.reads]


def test_views_and_queries_carry_what_they_read_where_it_is_written():
    plan = sqlstream.compile(
        HEAD
        + "CREATE VIEW v AS SELECT s.k, t.v FROM s JOIN `T` AS t ON s.k = t.k;\n"
        + "INSERT INTO out WITH c AS (SELECT * FROM v) SELECT k FROM c UNION ALL SELECT k FROM s;\n"
    ).plan
    (view,) = [r for r in plan.relations if isinstance(r, p.SqlView)]
    assert _placed(plan, view) == [("s", "s"), ("T", "`T`")]
    assert [r.key for r in view.reads] == ["s", "t"]
    (query,) = plan.queries
    assert _placed(plan, query) == [("v", "v"), ("s", "s")]  # the CTE c is no relation
    assert query.reads[0].span.line == 6 and query.reads[1].span.line == 6


def test_inserts_into_one_sink_read_what_every_body_reads():
    plan = sqlstream.compile(
        HEAD
        + "INSERT INTO out SELECT k FROM s;\nINSERT INTO out SELECT k FROM t JOIN s USING (k);\n"
    ).plan
    (query,) = plan.queries
    assert [(r.name, r.span.line) for r in query.reads] == [("s", 5), ("t", 6), ("s", 6)]


def test_a_dead_letter_query_reads_the_decoded_view_of_its_source():
    path = Path(__file__).parents[1] / "fixtures" / "translate" / "on_error.ssql"
    plan = sqlstream.compile(path.read_text(encoding="utf-8"), {"dir": "/data"}).plan
    decoded = {
        r.decoding.decoded_view: r
        for r in plan.relations
        if isinstance(r, p.SourceRelation) and r.decoding and r.decoding.decoded_view
    }
    dead = [q for q in plan.queries if any(r.name in decoded for r in q.reads)]
    assert dead and all(len(q.reads) == 1 for q in dead)
    for query in dead:
        assert query.reads[0].span == decoded[query.reads[0].name].span
