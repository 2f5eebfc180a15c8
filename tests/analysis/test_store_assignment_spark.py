"""Spark's ANSI store assignment, asked of Spark: for pairs of types, an ``INSERT INTO`` a
table whose column is declared with the target type, from a query column of the source
type, is planned or refused (``EXPLAIN``'s answer; a refusal is
``INCOMPATIBLE_DATA_FOR_TABLE``) as :func:`sqlstream.analysis.store_assignment.assignable`
says with no JVM. The pairs: every source with the targets where the rule turns."""

from __future__ import annotations

import pytest

from sqlstream.analysis.spark_types import spark_type
from sqlstream.analysis.store_assignment import assignable

pytestmark = pytest.mark.spark

VALUES = {  # a value of each source type, as Spark SQL
    "BIGINT": "CAST(1 AS BIGINT)",
    "INT": "1",
    "DOUBLE": "CAST(1.5 AS DOUBLE)",
    "DECIMAL(10, 2)": "CAST(1.25 AS DECIMAL(10, 2))",
    "VOID": "NULL",
    "BOOLEAN": "true",
    "STRING": "'1'",
    "DATE": "DATE'2024-01-02'",
    "TIMESTAMP": "TIMESTAMP'2024-01-02 03:04:05'",
    "TIMESTAMP_NTZ": "TIMESTAMP_NTZ'2024-01-02 03:04:05'",
    "BINARY": "X'01'",
    "ARRAY<INT>": "array(1)",
    "ARRAY<STRING>": "array('1')",
    "MAP<STRING, INT>": "map('a', 1)",
    "STRUCT<`a`: INT, `b`: STRING>": "named_struct('a', 1, 'b', 'x')",
}
TARGETS = {  # each target type with the sources tried
    "BIGINT": ["INT", "DOUBLE", "DECIMAL(10, 2)", "STRING", "BOOLEAN", "TIMESTAMP", "VOID"],
    "TINYINT": ["BIGINT"],
    "STRING": ["INT", "BOOLEAN", "DATE", "BINARY", "ARRAY<INT>"],
    "BOOLEAN": ["INT", "STRING"],
    "DATE": ["TIMESTAMP", "STRING"],
    "TIMESTAMP": ["DATE", "TIMESTAMP_NTZ", "BIGINT"],
    "BINARY": ["STRING"],
    "ARRAY<BIGINT>": ["ARRAY<INT>", "ARRAY<STRING>"],
    "MAP<STRING, DOUBLE>": ["MAP<STRING, INT>"],
    "STRUCT<`x`: BIGINT, `y`: STRING>": ["STRUCT<`a`: INT, `b`: STRING>"],
}


def test_spark_assigns_what_the_rule_says(spark, tmp_path):
    disagree, verdicts = [], []
    for number, (target, sources) in enumerate(TARGETS.items()):
        table = f"store_assignment_{number}"
        spark.sql(f"CREATE TABLE {table} (c {target}) USING parquet LOCATION '{tmp_path / table}'")
        try:
            for source in sources:
                value = VALUES[source]
                kind = spark.sql(f"SELECT {value} AS c").schema[0].dataType.simpleString()
                assert spark_type(kind) == source
                # analysed and planned, not run (EXPLAIN): Spark's verdict without a job
                plan = spark.sql(f"EXPLAIN INSERT INTO {table} SELECT {value} AS c").first()[0]
                accepted = "Error occurred during query planning" not in plan
                if not accepted and False not in verdicts:  # the first refusal: which one
                    with pytest.raises(Exception, match="INCOMPATIBLE_DATA_FOR_TABLE"):
                        spark.sql(f"INSERT INTO {table} SELECT {value} AS c")
                verdicts.append(accepted)
                if assignable(source, target) is not accepted:
                    disagree.append((source, target, accepted))
        finally:
            spark.sql(f"DROP TABLE {table}")
    assert not disagree and set(verdicts) == {True, False}
