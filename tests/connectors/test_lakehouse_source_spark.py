"""``delta`` and ``iceberg`` sources on the Python path (Spark's Python data source, where no
Spark package of the format runs) on real Spark: flights of three days written as three
commits into a Delta table (delta-rs) and an Iceberg table (pyiceberg), both read as streams
by one pipeline with ``EMIT … ONCE`` (availableNow):

* the rows read equal the batch read of the table (delta-rs, pyiceberg), and an
  aggregation over the stream equals the same aggregation computed over those rows;
* a fourth day appended after the first run is read by a second run on the same checkpoints,
  and only it (the files sink's new files hold exactly that day's rows);
* a commit that deletes rows fails the next run with ``SS550`` at the stream's line (the
  Iceberg reader's refusal is tested without a JVM: tests/runtime/test_lakehouse_reader.py).
"""

from __future__ import annotations

import json
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


def _pipeline(folder: Path) -> Path:
    """Both sources in one pipeline (one Spark start per run): their rows, tagged, into a
    files sink; flights and delay per format and origin upserted into a Delta table."""
    columns = "carrier STRING, flight BIGINT, origin STRING, dep_delay BIGINT, time_hour TIMESTAMP"
    path = folder / "read.ssql"
    path.write_text(
        f"""CREATE STREAM d ({columns}) WITH (connector = 'delta', path = 'lake/flights');
CREATE STREAM i ({columns}) WITH (connector = 'iceberg', table = 'lake.flights');
CREATE VIEW both AS SELECT 'delta' AS format, * FROM d UNION ALL SELECT 'iceberg', * FROM i;
CREATE SINK rows WITH (connector = 'files', path = 'out/rows', format = 'parquet');
INSERT INTO rows SELECT * FROM both EMIT FINAL ONCE;
CREATE SINK per_origin WITH (connector = 'delta', path = 'out/per_origin',
                             mode = 'upsert', key_columns = 'format, origin');
INSERT INTO per_origin
SELECT format, origin, count(*) AS flights, sum(dep_delay) AS delay FROM both
GROUP BY format, origin EMIT CHANGES ONCE;
"""
    )
    return path


def _run(spark, path: Path) -> None:
    session = sqlstream.Session(spark)
    session.run(session.compile(path.read_text(), path=str(path)), available_now=True)


def _read_rows(folder: Path, files=None) -> Counter:
    """The rows the files sink wrote (all, or those of ``files``): ``(format, *row)``."""
    files = files if files is not None else sorted((folder / "out" / "rows").glob("*.parquet"))
    rows: Counter = Counter()
    for file in files:
        table = pq.read_table(file)
        hours = table.column("time_hour").cast(pa.timestamp("us", tz="UTC"))
        table = table.set_column(table.schema.get_field_index("time_hour"), "time_hour", hours)
        rows.update((r["format"], *_key(r)) for r in table.to_pylist())
    return rows


def _per_origin(folder: Path) -> dict:
    from deltalake import DeltaTable

    table = DeltaTable(str(folder / "out" / "per_origin")).to_pyarrow_table()
    return {(r["format"], r["origin"]): (r["flights"], r["delay"]) for r in table.to_pylist()}


def _oracle(rows: Counter) -> dict:
    """flights and the sum of dep_delay per format and origin, computed over ``rows``."""
    found: dict = {}
    for (fmt, *row), n in rows.items():
        flights, delay = found.get((fmt, row[2]), (0, None))
        if row[3] is not None:
            delay = (delay or 0) + row[3] * n
        found[(fmt, row[2])] = (flights + n, delay)
    return found


class Tables:
    """The Delta table ``lake/flights`` (delta-rs) and the Iceberg table ``lake.flights``
    in the default catalog (pyiceberg) of ``folder``."""

    def __init__(self, folder: Path):
        from pyiceberg.catalog.sql import SqlCatalog

        self.delta = str(folder / "lake" / "flights")
        warehouse = folder / ".sqlstream" / "warehouse"
        warehouse.mkdir(parents=True)
        self.catalog = SqlCatalog(
            "sqlstream", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}"
        )
        self.catalog.create_namespace("lake")
        self.catalog.create_table(("lake", "flights"), schema=_day(DAYS[0]).schema)

    def append(self, rows: pa.Table) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.delta, rows, mode="append")
        self.catalog.load_table(("lake", "flights")).append(rows)

    def batch(self) -> Counter:
        """Both tables read as a batch (delta-rs, pyiceberg): ``(format, *row)``."""
        from deltalake import DeltaTable

        delta = DeltaTable(self.delta).to_pyarrow_table().to_pylist()
        iceberg = self.catalog.load_table(("lake", "flights")).scan().to_arrow().to_pylist()
        return Counter(
            [("delta", *_key(r)) for r in delta] + [("iceberg", *_key(r)) for r in iceberg]
        )


@pytest.mark.skipif(
    lakehouse_source.read_format("delta", "delta", spark_versions.default()) == "delta",
    reason="Delta's own package reads delta sources on this Spark",
)
def test_tables_written_in_commits_read_as_streams_then_their_appends(spark, tmp_path):
    tables = Tables(tmp_path)
    for day in DAYS[:3]:
        tables.append(_day(day))
    path = _pipeline(tmp_path)
    _run(spark, path)
    table = tables.batch()
    assert sum(table.values()) == 2 * sum(_day(d).num_rows for d in DAYS[:3])
    assert _read_rows(tmp_path) == table
    assert _per_origin(tmp_path) == _oracle(table)

    # a fourth day appended: the second run on the same checkpoints reads it, and only it
    before = set((tmp_path / "out" / "rows").glob("*.parquet"))
    tables.append(_day(DAYS[3]))
    _run(spark, path)
    new = sorted(set((tmp_path / "out" / "rows").glob("*.parquet")) - before)
    day = [_key(r) for r in _day(DAYS[3]).to_pylist()]
    fourth = Counter([("delta", *r) for r in day] + [("iceberg", *r) for r in day])
    assert _read_rows(tmp_path, new) == fourth
    everything = tables.batch()
    assert everything == table + fourth
    assert _read_rows(tmp_path) == everything
    assert _per_origin(tmp_path) == _oracle(everything)

    # rows deleted from the Delta table: the next run fails at its stream
    from deltalake import DeltaTable

    DeltaTable(tables.delta).delete("origin = 'JFK'")
    with pytest.raises(QueryFailedError) as failed:
        _run(spark, path)
    assert failed.value.code == "SS550"
    assert failed.value.span.line == 1
    assert "stream 'd': version 4 of" in failed.value.message
    assert "(DELETE) changes or deletes rows" in failed.value.message


def _batch_rows(folder: Path) -> list[Counter]:
    """The rows the files sink wrote per micro-batch (its ``_spark_metadata`` log: the
    files of each batch id), ``(format, *row)``."""
    log = folder / "out" / "rows" / "_spark_metadata"
    batches = sorted(int(p.name) for p in log.iterdir() if p.name.isdigit())
    found = []
    for batch in batches:
        lines = (log / str(batch)).read_text().splitlines()[1:]
        files = [Path(json.loads(line)["path"].removeprefix("file://")) for line in lines]
        found.append(_read_rows(folder, files))
    return found


@pytest.mark.skipif(
    lakehouse_source.read_format("delta", "delta", spark_versions.default()) == "delta",
    reason="Delta's own package reads delta sources on this Spark",
)
def test_one_file_per_trigger_reads_each_commit_in_a_micro_batch_of_its_own(spark, tmp_path):
    tables = Tables(tmp_path)
    for day in DAYS[:3]:
        tables.append(_day(day))  # one commit (one file) per day, in each format
    columns = "carrier STRING, flight BIGINT, origin STRING, dep_delay BIGINT, time_hour TIMESTAMP"
    path = tmp_path / "limited.ssql"
    path.write_text(
        f"""CREATE STREAM d ({columns}) WITH (connector = 'delta', path = 'lake/flights',
                               starting_version = 0, maxFilesPerTrigger = 1);
CREATE STREAM i ({columns}) WITH (connector = 'iceberg', table = 'lake.flights',
                               'streaming-max-files-per-micro-batch' = 1);
CREATE SINK rows WITH (connector = 'files', path = 'out/rows', format = 'parquet');
INSERT INTO rows SELECT 'delta' AS format, * FROM d UNION ALL SELECT 'iceberg', * FROM i
EMIT FINAL ONCE;
"""
    )
    _run(spark, path)
    batches = _batch_rows(tmp_path)
    assert len(batches) == 3
    days = [[_key(r) for r in _day(day).to_pylist()] for day in DAYS[:3]]
    # Delta from version 0: each micro-batch one commit, in order; Iceberg's first read is
    # its table's files (by path): one day's file per micro-batch, each day once
    for batch, day in zip(batches, days, strict=True):
        assert Counter({k[1:]: n for k, n in batch.items() if k[0] == "delta"}) == Counter(day)
    iceberg = [Counter({k[1:]: n for k, n in b.items() if k[0] == "iceberg"}) for b in batches]
    assert sorted(map(sorted, iceberg)) == sorted(sorted(Counter(d)) for d in days)
    assert sum(batches, Counter()) == tables.batch()  # together: the batch read of both
