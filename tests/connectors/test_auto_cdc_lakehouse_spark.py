"""``CREATE FLOW … AS AUTO CDC`` into Iceberg and Delta tables (written through pyiceberg
and deltalake) on real Spark: the seeded out-of-order Debezium change log of the
``postgres`` test (``tests/support/cdc_log.py``), applied as SCD 1 and SCD 2 into both
formats, read back with pyiceberg and deltalake, equals the plain-Python oracle. The
SIGKILL test of all three targets is ``test_auto_cdc_crash_spark.py``.
"""

from __future__ import annotations

import json

import pytest

from sqlstream import Session
from tests.support.cdc_log import (
    CHANGES,
    change_log,
    delta_tables,
    flows,
    iceberg_tables,
    oracle,
    write_files,
)

pytestmark = pytest.mark.spark

PIPELINE = (
    CHANGES
    + """
CREATE SINK d_latest WITH (connector = 'delta', path = 'lake/latest');
CREATE SINK d_history WITH (connector = 'delta', path = 'lake/history');
CREATE SINK i_latest WITH (connector = 'iceberg', table = 'cdc.latest', warehouse = 'wh');
CREATE SINK i_history WITH (connector = 'iceberg', table = 'cdc.history', warehouse = 'wh');
"""
    + flows("d", "i")
)


def test_out_of_order_changes_into_iceberg_and_delta_equal_the_oracle(spark, tmp_path):
    events = change_log(seed=3311, count=40)
    write_files(tmp_path / "changes", events, seed=13, files=4)
    path = tmp_path / "cdc.ssql"
    path.write_text(PIPELINE)
    session = Session(spark)
    session.run(session.compile_file(str(path)), available_now=True)
    expected = oracle(events)
    assert len(expected[0]) > 10 and len(expected[1]) > len(expected[0])
    assert sum(e["op"] == "d" for e in events) > 3
    assert delta_tables(tmp_path) == expected
    assert iceberg_tables(tmp_path) == expected
    # changes older than every applied one, in a later file: tombstones and history
    # (the changes tables) keep them in their place
    stale = [
        dict(e, op="u", after=e["before"], before=None, source={"lsn": e["source"]["lsn"] - 1})
        for e in events
        if e["op"] == "d"
    ]
    (tmp_path / "changes" / "part-99.json").write_text(
        "\n".join(json.dumps(e) for e in stale) + "\n"
    )
    session.run(session.compile_file(str(path)), available_now=True)
    again = oracle(events + stale)
    assert again[0] == expected[0]  # an older update never brings a deleted row back
    assert delta_tables(tmp_path) == again
    assert iceberg_tables(tmp_path) == again
