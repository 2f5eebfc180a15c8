"""Column lineage (``sqlstream.analysis.lineage``): the state signature's keys and aggregates
by meaning, down to the columns the sources read, with equal spellings folded.

Each case compiles a real pipeline and reads the signature the planner computed.
"""

from __future__ import annotations

import pytest

import sqlstream

STREAMS = """CREATE STREAM raw (origin STRING, dest STRING, carrier STRING, dep_delay DOUBLE,
    time_hour TIMESTAMP, doubled AS dep_delay * 2,
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = 'data', format = 'csv', header = true);
CREATE STREAM plain (k STRING, n BIGINT, at TIMESTAMP_NTZ)
  WITH (connector = 'files', path = 'plain', format = 'json');
CREATE SINK out WITH (connector = 'files', path = 'out', format = 'parquet');
CREATE SINK mem WITH (connector = 'memory', checkpoint_location = 'cp');
"""

HOURLY = """INSERT INTO out SELECT window_start, origin, COUNT(*) AS n, AVG(dep_delay) AS d
FROM TUMBLE({relation}, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin EMIT FINAL;
"""


def _operator(text: str):
    (query,) = sqlstream.compile(STREAMS + text, path="/w/p.ssql").plan.queries
    (operator,) = query.state.operators
    return operator


def test_keys_resolve_to_source_columns():
    operator = _operator(HOURLY.format(relation="raw"))
    assert operator.keys == ("window(time_hour, '1 hour')", "origin")
    assert operator.resolved_keys == (
        "window(raw.time_hour, '0 months 3600000000 microseconds')",
        "raw.origin",
    )
    assert operator.resolved_aggregates == ("COUNT(*)", "AVG(raw.dep_delay)")
    assert operator.zoned  # a TIMESTAMP read from CSV text: the session time zone parses it


@pytest.mark.parametrize(
    "view, key",
    [
        ("CREATE VIEW v AS SELECT dest AS origin, time_hour, dep_delay FROM raw;", "raw.dest"),
        ("CREATE VIEW v AS SELECT * FROM raw;", "raw.origin"),
        (
            "CREATE VIEW w AS SELECT carrier AS origin, time_hour, dep_delay FROM raw;\n"
            "CREATE VIEW v AS SELECT * FROM w;",
            "raw.carrier",
        ),
        (
            "CREATE VIEW v AS WITH c AS (SELECT dest AS origin, time_hour, dep_delay FROM raw) "
            "SELECT s.* FROM (SELECT * FROM c) AS s;",
            "raw.dest",
        ),
    ],
)
def test_a_key_through_views_ctes_and_subqueries(view, key):
    operator = _operator(view + "\n" + HOURLY.format(relation="v"))
    assert operator.keys[1] == "origin"  # the text is unchanged
    assert operator.resolved_keys[1] == key  # the meaning is not


def test_computed_columns_and_ctes_in_the_query():
    operator = _operator(
        "INSERT INTO mem WITH c AS (SELECT origin AS o, doubled FROM raw) "
        "SELECT o, SUM(doubled) FROM c GROUP BY o EMIT CHANGES;"
    )
    assert operator.resolved_keys == ("raw.origin",)
    assert operator.resolved_aggregates == ("SUM(raw.dep_delay * 2)",)
    assert not operator.zoned


@pytest.mark.parametrize(
    "old, new",
    [
        ("INTERVAL '1' HOUR", "INTERVAL '60' MINUTES"),
        ("INTERVAL '1' HOUR", "INTERVAL '3600' SECONDS"),
        ("AVG(dep_delay)", "avg(DEP_DELAY)"),
        ("COUNT(*)", "COUNT(1)"),
        ("COUNT(*)", "count('x')"),
        ("GROUP BY window_start, window_end, origin", "GROUP BY window_start, window_end, ORIGIN"),
    ],
)
def test_equal_spellings_have_one_meaning(old, new):
    text = HOURLY.format(relation="raw")
    assert old in text
    before, after = _operator(text), _operator(text.replace(old, new))
    assert (before.resolved_keys, before.resolved_aggregates) == (
        after.resolved_keys,
        after.resolved_aggregates,
    )


def test_different_meanings_stay_different():
    text = HOURLY.format(relation="raw")
    base = _operator(text)
    for old, new in [
        ("INTERVAL '1' HOUR", "INTERVAL '61' MINUTES"),
        ("COUNT(*)", "COUNT(dep_delay)"),  # counts non-null values only
        ("COUNT(*)", "COUNT(NULL)"),
    ]:
        other = _operator(text.replace(old, new))
        assert (other.resolved_keys, other.resolved_aggregates) != (
            base.resolved_keys,
            base.resolved_aggregates,
        ), new


def test_time_zone_dependence():
    plain = _operator("INSERT INTO mem SELECT k, COUNT(*) FROM plain GROUP BY k EMIT CHANGES;")
    assert not plain.zoned
    ntz = _operator("INSERT INTO mem SELECT at, COUNT(*) FROM plain GROUP BY at EMIT CHANGES;")
    assert not ntz.zoned  # TIMESTAMP_NTZ is a wall-clock time in no zone
    formatted = _operator(
        "INSERT INTO mem SELECT date_format(at, 'yyyy') AS y, COUNT(*) FROM plain "
        "GROUP BY date_format(at, 'yyyy') EMIT CHANGES;"
    )
    assert formatted.zoned


def test_deduplication_keys_through_a_view():
    text = """CREATE VIEW v AS SELECT dest AS origin, carrier, time_hour FROM raw;
INSERT INTO mem SELECT * FROM v
QUALIFY ROW_NUMBER() OVER (PARTITION BY origin, carrier ORDER BY time_hour) = 1;
"""
    (query,) = sqlstream.compile(STREAMS + text, path="/w/p.ssql").plan.queries
    dedups = [o for o in query.state.operators if o.kind.startswith("deduplicate")]
    assert dedups, query.state.operators
    assert dedups[0].resolved_keys == ("raw.dest", "raw.carrier")
