"""ksqlDB's ``WINDOW TUMBLING|HOPPING|SESSION (…)`` after a relation in ``FROM``, as the window
TVF it means (sqlstream.sql.ksql_windows), and its refusals. No JVM; the meaning on Spark is
asserted against a batch computation in tests/sql/test_ksql_windows_spark.py."""

from __future__ import annotations

import pytest

from sqlstream.diagnostics.errors import ForeignSpellingError
from sqlstream.sql.ksql_windows import ksql_windows
from sqlstream.sql.parsing import parse_query, to_spark_sql
from sqlstream.sql.rewrite import rewrite

RELATIONS = {"pageviews": ("ts", "10 minutes"), "plain": (None, None), "recent": ("ts", None)}


def _spark(sql: str) -> str:
    tree = ksql_windows(parse_query(sql), RELATIONS.get)
    return to_spark_sql(rewrite(tree, copy=False))


def _refusal(sql: str) -> ForeignSpellingError:
    with pytest.raises(ForeignSpellingError) as info:
        ksql_windows(parse_query(sql), RELATIONS.get)
    return info.value


@pytest.mark.parametrize(
    ("clause", "window"),
    [
        ("TUMBLING (SIZE 1 HOUR)", "window(ts, '1 hour')"),
        (
            "TUMBLING (SIZE 1 HOURS, RETENTION 2 DAYS, GRACE PERIOD 10 MINUTES)",
            "window(ts, '1 hour')",
        ),
        (
            "HOPPING (SIZE 30 SECONDS, ADVANCE BY 10 SECONDS)",
            "window(ts, '30 second', '10 second')",
        ),
        (
            "hopping (advance by 10 seconds, size 30 seconds)",
            "window(ts, '30 second', '10 second')",
        ),
        ("SESSION (5 MINUTES)", "session_window(ts, '5 minute')"),
    ],
)
def test_window_clause_is_the_tvf_grouped_by_the_window(clause, window):
    sql = _spark(f"SELECT pageid, COUNT(*) AS n FROM pageviews WINDOW {clause} GROUP BY pageid")
    assert sql.endswith(f"GROUP BY pageid, {window}")


def test_windowstart_and_windowend_are_the_window_bounds_under_their_names():
    sql = _spark(
        "SELECT WINDOWSTART, p.windowend AS e, COUNT(*) AS n FROM pageviews AS p "
        "WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY p.pageid HAVING WINDOWEND > TIMESTAMP '2024-01-01'"
    )
    assert sql.startswith("SELECT window.start AS WINDOWSTART, window.end AS e, COUNT(*) AS n")
    assert "HAVING window.end > " in sql


def test_an_aggregation_without_group_by_is_per_window():
    sql = _spark("SELECT COUNT(*) AS n FROM pageviews WINDOW TUMBLING (SIZE 1 HOUR)")
    assert sql.endswith("GROUP BY window(ts, '1 hour')")


def test_a_view_with_one_watermarked_column_is_windowed_by_it():
    assert "window(ts, '1 hour')" in _spark(
        "SELECT COUNT(*) AS n FROM recent WINDOW TUMBLING (SIZE 1 HOUR)"
    )


def test_a_relation_without_event_time_is_refused_with_the_tvf():
    error = _refusal("SELECT COUNT(*) AS n FROM plain WINDOW TUMBLING (SIZE 1 HOUR)")
    assert "no event-time column" in error.message
    assert "TUMBLE(plain, ts, INTERVAL '1' HOUR)" in error.hint
    assert error.offset_start == len("SELECT COUNT(*) AS n FROM plain ")


def test_a_grace_period_other_than_the_watermark_delay_is_refused_at_it():
    sql = (
        "SELECT COUNT(*) AS n FROM pageviews WINDOW TUMBLING (SIZE 1 HOUR, GRACE PERIOD 5 MINUTES)"
    )
    error = _refusal(sql)
    assert "the watermark's delay of 'pageviews' is 10 minutes" in error.message
    assert "WATERMARK FOR ts AS ts - INTERVAL '5' MINUTE" in error.hint
    assert sql[error.offset_start : error.offset_end] == "5 MINUTES"


def test_a_grace_period_on_a_view_is_refused():
    error = _refusal(
        "SELECT COUNT(*) AS n FROM recent WINDOW SESSION (5 MINUTES, GRACE PERIOD 1 MINUTE)"
    )
    assert "is a view" in error.message


def test_a_window_without_aggregation_is_refused():
    error = _refusal("SELECT pageid FROM pageviews WINDOW TUMBLING (SIZE 1 HOUR)")
    assert "does not aggregate" in error.message


@pytest.mark.parametrize(
    "clause",
    [
        "TUMBLING (ADVANCE BY 1 HOUR)",
        "SESSION (SIZE 1 HOUR)",
        "HOPPING (SIZE 1 HOUR)",
        "TUMBLING (SIZE 1 HOUR, SIZE 2 HOURS)",
        "TUMBLING (SIZE HOUR)",
    ],
)
def test_a_malformed_window_clause_is_a_syntax_error(clause):
    with pytest.raises(Exception) as info:
        parse_query(f"SELECT COUNT(*) FROM pageviews WINDOW {clause} GROUP BY pageid")
    assert info.value.code in ("SS102", "SS260")


def test_a_window_clause_after_a_join_is_refused_with_the_tvf():
    with pytest.raises(ForeignSpellingError) as info:
        parse_query(
            "SELECT COUNT(*) FROM a JOIN b ON a.k = b.k WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY a.k"
        )
    assert "TUMBLE(s, ts, INTERVAL '1' HOUR)" in info.value.hint


def test_a_syntax_error_elsewhere_is_reported_where_it_is():
    with pytest.raises(Exception) as info:
        parse_query("SELECT COUNT(* FROM pageviews WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY pageid")
    assert not isinstance(info.value, ForeignSpellingError)


def test_named_windows_of_spark_keep_working():
    sql = to_spark_sql(
        parse_query("SELECT k, SUM(v) OVER w AS s FROM t WINDOW w AS (PARTITION BY k ORDER BY v)")
    )
    assert "WINDOW w AS (PARTITION BY k ORDER BY v)" in sql


def test_a_watermark_clause_in_from_gives_the_event_time_and_the_grace():
    sql = _spark(
        "SELECT COUNT(*) AS n FROM plain WATERMARK t2 DELAY OF INTERVAL 5 MINUTES "
        "WINDOW TUMBLING (SIZE 1 HOUR, GRACE PERIOD 5 MINUTES)"
    )
    assert "window(t2, '1 hour')" in sql
    error = _refusal(
        "SELECT COUNT(*) AS n FROM plain WATERMARK t2 DELAY OF INTERVAL 5 MINUTES "
        "WINDOW TUMBLING (SIZE 1 HOUR, GRACE PERIOD 1 MINUTE)"
    )
    assert "is 5 minutes" in error.message
