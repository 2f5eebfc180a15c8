"""``delta`` and ``iceberg`` sources on the Python path (Spark's Python data source, where no
Spark package of the format runs) on real Spark: flights of three days written as three
commits (delta-rs, pyiceberg) and read as a stream with ``EMIT … ONCE`` (availableNow):

* the rows read equal the batch read of the table (delta-rs, pyiceberg), and an
  aggregation over the stream equals the same aggregation computed over those rows;
* a fourth day appended after the first run is read by a second run on the same checkpoints,
  and only it (the files sink's new files hold exactly that day's rows);
* a commit that deletes rows fails the next run with ``SS550`` at the stream's line.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import sqlstream
from sqlstream.connectors import lakehouse_source
from sqlstream.diagnostics.errors import QueryFailedError
from sqlstream.ir import spark_versions

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))
COLUMNS = ("carrier", "flight", "origin", "dep_delay", "time_hour")


def _day(path: Path) -> pa.Table:
    """A day of flights: carrier, flight, origin, dep_delay (BIGINT), time_hour (UTC)."""
    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(null_values=["NA"]))
    schema = pa.schema(
        [
            ("carrier", pa.string()),
            ("flight", pa.int64()),
            ("origin", pa.string()),
            ("dep_delay", pa.int64()),
            ("time_hour", pa.timestamp("us", tz="UTC")),
        ]
    )
    return table.select(list(COLUMNS)).cast(schema)


def _key(row: dict) -> tuple:
    return tuple(row[c] for c in COLUMNS)


def _pipeline(folder: Path, stream: str) -> Path:
    path = folder / "read.ssql"
    path.write_text(
        f"""CREATE STREAM flights (carrier STRING, flight BIGINT, origin STRING,
    dep_delay BIGINT, time_hour TIMESTAMP) WITH ({stream});
CREATE SINK rows WITH (connector = 'files', path = 'out/rows', format = 'parquet');
INSERT INTO rows SELECT * FROM flights EMIT FINAL ONCE;
CREATE SINK per_origin WITH (connector = 'delta', path = 'out/per_origin',
                             mode = 'upsert', key_columns = 'origin');
INSERT INTO per_origin
SELECT origin, count(*) AS flights, sum(dep_delay) AS delay FROM flights GROUP BY origin
EMIT CHANGES ONCE;
"""
    )
    return path


def _run(spark, path: Path) -> None:
    session = sqlstream.Session(spark)
    session.run(session.compile(path.read_text(), path=str(path)), available_now=True)


def _read_rows(folder: Path, files=None) -> Counter:
    """The rows the files sink wrote (all, or those of ``files``), as a multiset."""
    files = files if files is not None else sorted((folder / "out" / "rows").glob("*.parquet"))
    rows: Counter = Counter()
    for file in files:
        table = pq.read_table(file)
        hours = table.column("time_hour").cast(pa.timestamp("us", tz="UTC"))
        table = table.set_column(table.schema.get_field_index("time_hour"), "time_hour", hours)
        rows.update(_key(r) for r in table.to_pylist())
    return rows


def _per_origin(folder: Path) -> dict:
    from deltalake import DeltaTable

    table = DeltaTable(str(folder / "out" / "per_origin")).to_pyarrow_table()
    return {r["origin"]: (r["flights"], r["delay"]) for r in table.to_pylist()}


def _oracle(rows: Counter) -> dict:
    """flights and the sum of dep_delay per origin, computed in Python over ``rows``."""
    found: dict = {}
    for row, n in rows.items():
        flights, delay = found.get(row[2], (0, None))
        if row[3] is not None:
            delay = (delay or 0) + row[3] * n
        found[row[2]] = (flights + n, delay)
    return found


def _check_both_runs(spark, folder: Path, stream: str, append, batch_read, change) -> None:
    """Three days written, read; a fourth appended, read again from the same checkpoints
    (only it); then a change commit fails the next run with SS550 at the stream."""
    path = _pipeline(folder, stream)
    _run(spark, path)
    table = Counter(_key(r) for r in batch_read().to_pylist())
    assert sum(table.values()) == sum(_day(d).num_rows for d in DAYS[:3])
    assert _read_rows(folder) == table
    assert _per_origin(folder) == _oracle(table)

    before = set((folder / "out" / "rows").glob("*.parquet"))
    append(_day(DAYS[3]))
    _run(spark, path)
    new = sorted(set((folder / "out" / "rows").glob("*.parquet")) - before)
    fourth = Counter(_key(r) for r in _day(DAYS[3]).to_pylist())
    assert _read_rows(folder, new) == fourth
    everything = Counter(_key(r) for r in batch_read().to_pylist())
    assert everything == table + fourth
    assert _read_rows(folder) == everything
    assert _per_origin(folder) == _oracle(everything)

    change()
    with pytest.raises(QueryFailedError) as failed:
        _run(spark, path)
    assert failed.value.code == "SS550"
    assert failed.value.span.line == 1
    assert "changes or deletes rows" in failed.value.message


@pytest.mark.skipif(
    lakehouse_source.read_format("delta", "delta", spark_versions.default()) == "delta",
    reason="Delta's own package reads delta sources on this Spark",
)
def test_a_delta_table_read_as_a_stream(spark, tmp_path):
    from deltalake import DeltaTable, write_deltalake

    table = str(tmp_path / "lake" / "flights")
    for day in DAYS[:3]:
        write_deltalake(table, _day(day), mode="append")
    _check_both_runs(
        spark,
        tmp_path,
        "connector = 'delta', path = 'lake/flights'",
        lambda rows: write_deltalake(table, rows, mode="append"),
        lambda: DeltaTable(table).to_pyarrow_table(),
        lambda: DeltaTable(table).delete("origin = 'JFK'"),
    )


def test_an_iceberg_table_read_as_a_stream(spark, tmp_path):
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import EqualTo

    warehouse = tmp_path / ".sqlstream" / "warehouse"
    warehouse.mkdir(parents=True)
    catalog = SqlCatalog(
        "sqlstream", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}"
    )
    catalog.create_namespace("lake")
    table = catalog.create_table(("lake", "flights"), schema=_day(DAYS[0]).schema)
    for day in DAYS[:3]:
        table.append(_day(day))

    def append(rows):
        catalog.load_table(("lake", "flights")).append(rows)

    _check_both_runs(
        spark,
        tmp_path,
        "connector = 'iceberg', table = 'lake.flights'",
        append,
        lambda: catalog.load_table(("lake", "flights")).scan().to_arrow(),
        lambda: catalog.load_table(("lake", "flights")).delete(EqualTo("origin", "JFK")),
    )
