"""Programs written as a Flink SQL user and a ksqlDB user would write them
(``tests/fixtures/compat/``), each checked without a JVM. Each starts with ``-- expect:
runs`` (it compiles with no error) or ``-- expect: CODE fragment`` (it is refused with that
code, and the message or hint holds the fragment: the sqlstream spelling). CUMULATE's meaning
on Spark is asserted in tests/sql/test_cumulate_spark.py, ksqlDB's windows, CREATE TABLE …
AS SELECT and two INSERTs into one sink in tests/sql/test_ksql_windows_spark.py; the other
runnable programs (statement set, PROCTIME, Kafka option names) are checked here only."""

from __future__ import annotations

import re

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError
from tests.conftest import FIXTURES

PROGRAMS = sorted((FIXTURES / "compat").glob("*.ssql"))
EXPECT = re.compile(r"^-- expect: (\S+)(?: (.*))?$", re.M)


def test_there_are_flink_and_ksqldb_programs():
    names = [p.stem for p in PROGRAMS]
    assert (
        sum(n.startswith("flink_") for n in names) >= 4
        and sum(n.startswith("ksql_") for n in names) >= 4
    )


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_compat_program(program):
    text = program.read_text(encoding="utf-8")
    expect, fragment = EXPECT.search(text).groups()
    if expect == "runs":
        pipeline = sqlstream.compile(text, path=str(program))
        assert pipeline.plan.queries
        return
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text, path=str(program))
    assert info.value.code == expect
    assert fragment in f"{info.value.message} {info.value.hint}"
