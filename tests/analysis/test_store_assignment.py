"""Spark's ANSI store assignment without a JVM (:mod:`sqlstream.analysis.store_assignment`):
which query types a declared column takes. Each verdict is Spark's own: the same pairs are
inserted into real tables in ``tests/analysis/test_store_assignment_spark.py``."""

from __future__ import annotations

import pytest

from sqlstream.analysis.store_assignment import assignable, widening

PAIRS = [
    ("BIGINT", "BIGINT", True),
    ("INT", "BIGINT", True),
    ("BIGINT", "INT", True),  # narrowing: allowed, an overflow fails at run time
    ("INT", "DOUBLE", True),
    ("DOUBLE", "DECIMAL(10, 2)", True),
    ("DECIMAL(10, 2)", "TINYINT", True),
    ("VOID", "DATE", True),
    ("INT", "STRING", True),
    ("BOOLEAN", "STRING", True),
    ("TIMESTAMP", "STRING", True),
    ("BINARY", "STRING", True),
    ("DATE", "TIMESTAMP", True),
    ("TIMESTAMP", "DATE", True),
    ("TIMESTAMP_NTZ", "TIMESTAMP", True),
    ("ARRAY<INT>", "ARRAY<BIGINT>", True),
    ("MAP<STRING, INT>", "MAP<STRING, DOUBLE>", True),
    ("STRUCT<`a`: INT, `b`: STRING>", "STRUCT<`x`: BIGINT, `y`: STRING>", True),
    ("STRING", "BIGINT", False),
    ("STRING", "DATE", False),
    ("STRING", "BOOLEAN", False),
    ("BOOLEAN", "INT", False),
    ("INT", "BOOLEAN", False),
    ("BIGINT", "TIMESTAMP", False),
    ("DATE", "INT", False),
    ("STRING", "BINARY", False),
    ("ARRAY<INT>", "STRING", False),
    ("ARRAY<STRING>", "ARRAY<INT>", False),
    ("STRUCT<`a`: INT>", "STRUCT<`a`: INT, `b`: INT>", False),
]


@pytest.mark.parametrize("source, target, expected", PAIRS)
def test_the_rule_of_spark(source, target, expected):
    assert assignable(source, target) is expected


def test_an_unknown_type_is_not_judged():
    assert assignable("UNKNOWN", "BIGINT") is None
    assert assignable("ARRAY<UNKNOWN>", "ARRAY<INT>") is None


def test_a_key_may_only_widen():
    assert widening("INT", "BIGINT") and widening("STRING", "STRING")
    assert not widening("BIGINT", "INT") and not widening("DOUBLE", "BIGINT")
    assert not widening("INT", "STRING")  # 1 and 01 stay apart, but the key's type changes
