"""Tables written by the ``iceberg`` and ``delta`` sinks (pyiceberg, delta-rs) are read by
Spark's own readers, and tables written by Spark's own writers are read by sqlstream's —
on the PySpark minors whose Iceberg and Delta packages are served and run
(``tests/support/lakehouse_jvm.py``: both formats on 4.0 and 4.1, Delta on 4.2; skipped
on 4.3, where no such package runs).

The example pipeline over three days of flights writes both tables in this run's
session — through the JVM path where the target minor chooses it (Delta's Spark writer on
4.0-4.2, Iceberg's on 4.1: the session has their packages on these minors), read
back by delta-rs and pyiceberg; a Delta table delta-rs writes and an Iceberg table
pyiceberg writes are read by this session's readers; a second Python process with Spark's packages (its own JVM:
Iceberg's ``JdbcCatalog`` on the same SQLite catalog, Delta's ``DeltaCatalog``) reads them
with Spark's batch reader — the same rows as pyiceberg and delta-rs read — and writes a
new table of each format with Spark's writers: a Delta append with ``txnAppId`` /
``txnVersion``, an Iceberg table with sqlstream's snapshot properties. Back here, delta-rs
and pyiceberg read those rows, and sqlstream's writers see the batch id Spark's commit
recorded: a later apply of that batch id by the Python path changes nothing.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pyspark
import pytest

import sqlstream
from sqlstream.connectors.delta import DeltaWriter
from sqlstream.connectors.iceberg import IcebergWriter
from sqlstream.connectors.iceberg_jvm import catalog_conf
from sqlstream.connectors.lakehouse_jvm import ICEBERG_PACKAGES
from tests.support.flights import copy_days
from tests.support.lakehouse_jvm import PACKAGES, run_session

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lakehouse" / "hourly_lakehouse.ssql"
DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))
MINOR = ".".join(pyspark.__version__.split(".")[:2])


def _text(value) -> str:
    return str(value.astimezone(dt.timezone.utc).replace(tzinfo=None))


def _rows(table) -> list[list]:
    return sorted([_text(r["window_start"]), r["origin"], r["flights"]] for r in table.to_pylist())


@pytest.mark.skipif(
    MINOR not in PACKAGES,
    reason=f"no Iceberg or Delta Spark package runs on PySpark {MINOR} (4.0-4.2 only)",
)
def test_tables_are_read_both_ways_and_a_spark_commit_counts_as_committed(spark, tmp_path):
    copy_days(tmp_path, DAYS[:3])
    text = EXAMPLE.read_text().replace("'../flights/data/flights'", "'data/flights'")
    path = tmp_path / "hourly_lakehouse.ssql"
    path.write_text(text)
    for query in sqlstream.compile_file(path).start(spark):
        query.awaitTermination()
        assert query.exception() is None

    warehouse = tmp_path / ".sqlstream" / "warehouse"
    iceberg = IcebergWriter("lake.hourly", str(warehouse))
    delta = DeltaWriter(str(tmp_path / "out" / "hourly_delta"))
    python_read = {
        "iceberg": _rows(iceberg.load().scan().to_arrow()),
        "delta": _rows(delta.table().to_pyarrow_table()),
    }
    assert python_read["iceberg"] and python_read["delta"]
    formats = set(PACKAGES[MINOR])
    if "delta" in formats:  # the Python path's table, read by this session's Delta reader
        python = DeltaWriter(
            str(tmp_path / "out" / "from_python"), "upsert", ("window_start", "origin")
        )
        assert python.apply_changes(delta.table().to_pyarrow_table(), None, "python-app", 3)
        read = spark.read.format("delta").load(python.path).toArrow()
        assert _rows(read) == python_read["delta"]
    if MINOR in ICEBERG_PACKAGES:  # a pyiceberg table, read by this session's Iceberg reader
        python_ice = IcebergWriter(
            "lake.from_python", str(warehouse), mode="upsert", key_columns=("origin",)
        )
        rows = iceberg.load().scan().to_arrow()
        assert python_ice.apply_changes(rows, None, "python-app", 3)
        # the Spark catalog exec gives a session over the same SQLite file (the writer set
        # it in the streaming query's own session, a clone of this one)
        uri = f"sqlite:///{warehouse}/catalog.db"
        for key, value in catalog_conf("sqlstream", str(warehouse), uri).items():
            spark.conf.set(key, value)
        read = spark.read.table("sqlstream.lake.from_python").toArrow()
        assert _rows(read) == sorted(python_read["iceberg"])

    new_rows = [["2013-01-01 05:00:00", "EWR", 3], ["2013-01-01 06:00:00", "JFK", 4]]
    spark_read = run_session(
        sys.executable,
        MINOR,
        warehouse=str(warehouse),
        iceberg_table="lake.hourly",
        delta_path=delta.path,
        new_rows=new_rows,
        new_delta=str(tmp_path / "out" / "from_spark"),
        new_iceberg="lake.from_spark",
        app="spark-app",
        batch=7,
    )
    assert spark_read == {f: python_read[f] for f in formats}

    if "delta" in formats:
        from_spark = DeltaWriter(
            str(tmp_path / "out" / "from_spark"), "upsert", ("window_start", "origin")
        )
        assert _rows(from_spark.table().to_pyarrow_table()) == sorted(new_rows)
        assert from_spark.committed("spark-app") == 7
        # the Python path skips a batch id the JVM path committed
        again = from_spark.table().to_pyarrow_table()
        assert not from_spark.apply_changes(again, None, "spark-app", 7)
        assert _rows(from_spark.table().to_pyarrow_table()) == sorted(new_rows)
    if "iceberg" in formats:
        ice = IcebergWriter(
            "lake.from_spark", str(warehouse), mode="upsert", key_columns=("origin",)
        )
        assert _rows(ice.load().scan().to_arrow()) == sorted(new_rows)
        assert ice.committed("spark-app") == 7
        assert not ice.apply_changes(ice.load().scan().to_arrow(), None, "spark-app", 6)
        assert len(ice.load().snapshots()) == 1
