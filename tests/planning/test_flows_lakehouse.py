"""``CREATE FLOW … AS AUTO CDC`` into ``iceberg`` and ``delta`` sinks without a JVM: ``check``
accepts them (and still refuses append-only sinks and a sink's own ``mode``), and the
applier ``translate`` prints names the lakehouse target (the runs are
``tests/connectors/test_auto_cdc_lakehouse_spark.py``)."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

STREAM = """
CREATE STREAM changes (
    id BIGINT, name STRING, op STRING METADATA FROM 'op', seq BIGINT METADATA FROM 'source.lsn'
) WITH (connector = 'files', path = 'changes', format = 'debezium-json');
CREATE SINK d WITH (connector = 'delta', path = 'lake/d');
CREATE SINK i WITH (connector = 'iceberg', table = 'crm.i', warehouse = '/wh');
CREATE SINK d_upsert WITH (connector = 'delta', path = 'lake/u', key_columns = 'id');
CREATE SINK k WITH (connector = 'kafka', bootstrap_servers = 'b:9092', topic = 't');
CREATE SINK f WITH (connector = 'files', path = 'o', format = 'json');
"""

FLOW = "CREATE FLOW g AS AUTO CDC INTO {} FROM STREAM(changes) KEYS (id) " + (
    "APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq) "
    "STORED AS SCD TYPE {};"
)


@pytest.mark.parametrize(
    "sink, table",
    [
        ("d", "DeltaCdcTable(path='/tmp/lake/d')"),
        ("i", "IcebergCdcTable(table='crm.i', warehouse='/wh', catalog='sqlstream', "),
    ],
)
@pytest.mark.parametrize("scd", [1, 2])
def test_a_lakehouse_sink_is_a_target_whose_applier_names_it(sink, table, scd):
    pipeline = sqlstream.compile(STREAM + FLOW.format(sink, scd), path="/tmp/p.ssql")
    (query,) = pipeline.plan.queries
    assert query.output_mode == "append"
    program = pipeline.translate()
    assert f"importlib.import_module('sqlstream.connectors.cdc.lakehouse_cdc').{table}" in program
    assert f"keys=['id'], columns=['id', 'name'], scd_type={scd}" in program
    assert "Writer(" not in program  # the sink's own writer is not called


@pytest.mark.parametrize("sink, at", [("k", "k FROM"), ("f", "f FROM"), ("d_upsert", "key_")])
def test_append_only_sinks_and_a_sinks_own_keys_are_refused(sink, at):
    text = STREAM + FLOW.format(sink, 1)
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text, path="/tmp/p.ssql")
    assert info.value.code == "SS292", info.value.render()
    assert info.value.span is not None
    assert text[info.value.span.start :].startswith(at), info.value.render()
