"""The sqlglot work of compiling a view and an aggregation query, without sqlstream: Spark
parse, ``qualify``, type annotation, 40 column walks, printing. Run it under sqlglot's
Python build and under its compiled build (``sqlglotc``) to compare the two; sqlstream
itself cannot run on the compiled build (``SS003``, see ``bench/README.md``).

    .venv/bin/python bench/sqlglot_build.py
    python -m venv /tmp/c && /tmp/c/bin/pip install sqlglot==30.30.0 sqlglotc==30.30.0
    /tmp/c/bin/python bench/sqlglot_build.py
"""

from __future__ import annotations

import time

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

QUERIES = (
    "SELECT a, b, ts FROM s WHERE a > 7",
    "SELECT date_trunc('MINUTE', ts) AS window_start, b, COUNT(*) AS n, MAX(a) AS m "
    "FROM v0 GROUP BY date_trunc('MINUTE', ts), b",
)
COLUMNS = {"a": "INT", "b": "STRING", "ts": "TIMESTAMP"}


def work(schema: MappingSchema) -> None:
    for query in QUERIES:
        tree = sqlglot.parse_one(query, read="spark")
        qualified = qualify(
            tree.copy(),
            schema=schema,
            dialect="spark",
            validate_qualify_columns=False,
            quote_identifiers=False,
            identify=False,
        )
        annotate_types(qualified, schema=schema, dialect="spark")
        for _ in range(40):
            list(tree.find_all(exp.Column))
        tree.sql(dialect="spark")


def main(rounds: int = 300) -> None:
    schema = MappingSchema({"s": COLUMNS, "v0": COLUMNS}, dialect="spark")
    work(schema)
    start = time.process_time()
    for _ in range(rounds):
        work(schema)
    compiled = sqlglot.parser.__file__.endswith(".so")
    print(
        f"sqlglot {sqlglot.__version__} ({'compiled' if compiled else 'Python'} build): "
        f"{(time.process_time() - start) / rounds * 1000:.3f} ms per pair of queries (CPU)"
    )


if __name__ == "__main__":
    main()
