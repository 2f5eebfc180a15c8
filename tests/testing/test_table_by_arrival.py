"""``table:`` in a pipeline test of Flink's changelog spelling without a log position
(docs/cdc.md#flink-spelling): the harness numbers the captured changes by arrival as the
applier does, so the table stated after each step is the log applied in order: the later
change of a key wins, a delete then a create re-creates the row."""

from __future__ import annotations

import sqlstream
from sqlstream.testing import values
from sqlstream.testing.capture import Capture
from sqlstream.testing.tables import current_table

PIPELINE = """
CREATE STREAM changes (id BIGINT, name STRING, op STRING METADATA FROM 'op')
  WITH (connector = 'files', path = 'changes', format = 'debezium-json');
CREATE SINK customers (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH (connector = 'delta', path = 'lake/customers');
INSERT INTO customers SELECT id, name FROM changes;
"""


def test_the_table_is_the_log_applied_in_arrival_order():
    (query,) = sqlstream.compile(PIPELINE, path="/tmp/p.ssql").plan.queries
    capture = Capture("UTC")
    capture.columns = [(n, values.parse_type(t.lower())) for n, t in query.columns]
    # (id, name, sequence as selected: the applier's numbering replaces it, delete)
    for batch_id, rows in enumerate(
        [
            [(1, "a", 0, False), (2, "b", 0, False), (1, "a2", 0, False)],
            [(2, "b", 0, True), (1, "a3", 0, False), (3, "c", 0, False)],
            [(2, "b2", 0, False), (3, "c", 0, True)],
        ]
    ):
        capture.order.append(batch_id)
        capture.batches[batch_id] = rows
    rows, columns = current_table(query, capture)
    assert [n for n, _ in columns] == ["id", "name"]
    assert sorted(rows) == [(1, "a3"), (2, "b2")]
