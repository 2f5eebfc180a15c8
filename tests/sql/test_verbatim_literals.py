"""What the user wrote is what runs: string literals reach Spark byte for byte (no Spark).

sqlglot's Spark dialect translates literals while parsing and printing: time formats
(through Python's ``strftime`` form: ``'YYYY'`` → ``'yyyy'``, ``'E'`` → ``'EEE'``), JSON paths
(parsed and printed normalised), escapes (decoded and re-encoded), adjacent strings
(``CONCAT``), ``named_struct`` names (identifiers), a format equal to Spark's default
(dropped), a truncation unit (upper-cased). :class:`~sqlstream.sql.dialect.SqlStream` turns
each off; every case below asserts that the printed Spark SQL holds each literal exactly as
written. Spark's results for the same text: tests/sql/test_verbatim_literals_spark.py.
"""

from __future__ import annotations

import logging
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstream.sql.parsing import parse_expression, parse_query, to_spark_sql

# Spark's datetime pattern letters (docs: sql-ref-datetime-pattern), in runs of 1-5, and
# quoted text; sqlglot's Hive/Spark TIME_MAPPING rewrote many of these.
PATTERN_LETTERS = "GyYuDMLdQqEFaHhKkmsSVzOXxZeWw"
PATTERNS = [
    "YYYY",
    "y",
    "yy",
    "yyy",
    "yyyy",
    "YYYY-ww E",
    "E",
    "EE",
    "EEEE",
    "MMM",
    "MMMM",
    "L",
    "d",
    "D",
    "u",
    "F",
    "a",
    "h",
    "hh",
    "K",
    "k",
    "H",
    "HH",
    "m",
    "mm",
    "s",
    "ss",
    "S",
    "SSS",
    "SSSSSS",
    "z",
    "VV",
    "O",
    "X",
    "XXX",
    "x",
    "Z",
    "ZZZZZ",
    "Q",
    "QQQ",
    "q",
    "w",
    "W",
    "e",
    "yyyy-MM-dd",
    "yyyy-MM-dd HH:mm:ss",
    "yyyy-MM-dd\\'T\\'HH:mm:ss.SSSXXX",
    "dd/MM/yyyy",
    "yyyy''T''HH",
    "\\'literal\\' yyyy",
    "%Y-%m-%d",
    "%",
    "yyyy\\'T\\'HH",
    "MM/dd/yy hh:mm a",
]
# Functions taking a datetime pattern (or a truncation unit) as their second argument,
# as (call with {p} for the quoted pattern).
FORMAT_CALLS = [
    "date_format(ts, {p})",
    "to_date(s, {p})",
    "to_timestamp(s, {p})",
    "try_to_timestamp(s, {p})",
    "to_timestamp_ntz(s, {p})",
    "to_timestamp_ltz(s, {p})",
    "unix_timestamp(s, {p})",
    "to_unix_timestamp(s, {p})",
    "from_unixtime(n, {p})",
    "to_char(ts, {p})",
    "from_json(s, 'a TIMESTAMP', map('timestampFormat', {p}))",
]
JSON_PATHS = [
    "$.a",
    "$.a.b",
    "$[\\'a b\\'].c",
    '$["x"]',
    "$[0].a",
    "$.a[*]",
    "a.b",
    "$",
    "$..a",
    "$.a-b",
    "$.\u00e9t\u00e9",
    '$["it\\\'s"]',
    "$.a b",
    "not a path [",
    "$.${x}",
    "$[?(@.a)]",
]
JSON_CALLS = ["get_json_object(s, {p})", "json_tuple(s, {p}, 'b')"]
STRINGS = [
    "plain",
    "it\\'s",
    "a\\\\b",
    "a\\nb",
    "a\\tb",
    "\\u0041",
    "\\z",
    "%_",
    "\u00e9\u00e8 \u4e2d",
    "''",
    "${x}",
    "\\\\d+",
    "tab\there",
]
UNITS = [
    "YEAR",
    "year",
    "yy",
    "yyyy",
    "MM",
    "mon",
    "month",
    "week",
    "day",
    "dd",
    "hour",
    "minute",
    "second",
    "quarter",
]


def printed(sql: str) -> str:
    return to_spark_sql(parse_query(sql))


def assert_kept(call: str, literal: str) -> None:
    sql = f"SELECT {call} AS r FROM t"
    assert literal in printed(sql), (sql, printed(sql))


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("call", FORMAT_CALLS)
def test_a_datetime_pattern_is_printed_as_written(call, pattern):
    literal = f"'{pattern}'"
    assert_kept(call.format(p=literal), literal)


@pytest.mark.parametrize("unit", UNITS)
def test_a_truncation_unit_is_printed_as_written(unit):
    assert_kept(f"date_trunc('{unit}', ts)", f"'{unit}'")
    assert_kept(f"trunc(ts, '{unit}')", f"'{unit}'")


@pytest.mark.parametrize("path", JSON_PATHS)
@pytest.mark.parametrize("call", JSON_CALLS)
def test_a_json_path_is_printed_as_written_and_not_logged(call, path, caplog):
    literal = f"'{path}'"
    with caplog.at_level(logging.DEBUG):
        assert_kept(call.format(p=literal), literal)
    assert not [r for r in caplog.records if r.name.startswith("sqlglot")]


@pytest.mark.parametrize("text", STRINGS)
def test_a_string_literal_with_escapes_is_printed_as_written(text):
    for literal in (f"'{text}'", f'"{text}"' if '"' not in text else f"'{text}'"):
        assert_kept(f"concat(s, {literal})", literal)
        sql = f"SELECT s FROM t WHERE s <> {literal}"
        assert f"<> {literal}" in printed(sql)


@pytest.mark.parametrize("written", ["'it''s'", "'a' 'b'", "'a'  'b'  'c'"])
def test_adjacent_strings_stay_adjacent(written):
    """Spark joins adjacent strings into one value; sqlglot printed CONCAT('a', 'b')."""
    assert_kept(written, written)


def test_named_struct_keeps_its_name_literals():
    assert_kept("named_struct('a b', 1, 'c', s)", "NAMED_STRUCT('a b', 1, 'c', s)")
    assert_kept("to_char(n, '999.99')", "TO_CHAR(n, '999.99')")


def test_a_format_in_a_computed_column_expression_is_printed_as_written():
    assert (
        to_spark_sql(parse_expression("date_format(ts, 'YYYY E')")) == "DATE_FORMAT(ts, 'YYYY E')"
    )


_PATTERN_TEXT = (
    st.lists(
        st.one_of(
            st.builds(lambda c, n: c * n, st.sampled_from(PATTERN_LETTERS), st.integers(1, 5)),
            st.sampled_from(["-", ":", " ", "/", ".", ",", "''", "\\'T\\'", "\\'"]),
            st.text(alphabet=string.ascii_letters + string.digits + " %$#@!", max_size=4),
        ),
        min_size=1,
        max_size=6,
    )
    .map("".join)
    .filter(lambda text: not text.endswith("\\"))
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(pattern=_PATTERN_TEXT, call=st.sampled_from(FORMAT_CALLS + JSON_CALLS))
def test_any_pattern_text_is_printed_as_written(pattern, call):
    literal = f"'{pattern}'"
    assert_kept(call.format(p=literal), literal)
