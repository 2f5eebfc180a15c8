"""Facts of one SELECT without a JVM: which calls aggregate, what a grouping key names."""

from __future__ import annotations

import pytest
from sqlglot import exp, parse_one

from sqlstream.analysis.facts import _grouping_keys, grouping_key, is_aggregate
from sqlstream.ir.spark_versions import SUPPORTED


def _select(sql: str) -> exp.Select:
    return parse_one(sql, read="spark")


@pytest.mark.parametrize(
    "call",
    ["try_sum(x)", "histogram_numeric(x, 3)", "every(b)", "try_avg(x)", "count_if(b)", "sum(x)"],
)
def test_spark_aggregates_aggregate(call):
    assert all(is_aggregate(_select(f"SELECT {call} FROM t"), v) for v in SUPPORTED)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT upper(x) FROM t",
        "SELECT row_number() OVER (ORDER BY x) FROM t",
        "SELECT (SELECT max(x) FROM u) FROM t",
    ],
)
def test_other_calls_do_not(sql):
    assert not any(is_aggregate(_select(sql), v) for v in SUPPORTED)


@pytest.mark.parametrize(
    "sql, watermarked",
    [
        ("SELECT window(ts, '1 minute') AS w, k, count(*) FROM t GROUP BY 1, 2", True),
        ("SELECT window(ts, '1 minute') AS w, k, count(*) FROM t GROUP BY w, k", True),
        ("SELECT k, max(ts), count(*) FROM t GROUP BY 1", False),
        ("SELECT window(window_time(w), '5 minutes') AS w5, sum(n) FROM m GROUP BY 1", True),
        ("SELECT window(window_time(v), '5 minutes') AS w5, sum(n) FROM m GROUP BY w5", False),
        ("SELECT ts AS k, count(*) FROM t GROUP BY 9", False),
    ],
)
def test_grouping_keys_follow_ordinals_aliases_and_chains(sql, watermarked):
    assert _grouping_keys(_select(sql), {"ts", "w"})[0] is watermarked


def test_an_input_column_wins_over_an_alias():
    select = _select("SELECT window(ts, '1 minute') AS ts, count(*) FROM t GROUP BY ts")
    assert grouping_key(select, select.args["group"].expressions[0], {"ts"}).sql() == "ts"
