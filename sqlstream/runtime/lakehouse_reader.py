"""The Python data sources that read ``delta`` and ``iceberg`` tables as streams where no
Spark package of the format runs (:mod:`sqlstream.connectors.lakehouse_source` plans them):
``DeltaSource`` (``format('sqlstream_delta')``, through delta-rs and the table's log) and
``IcebergSource`` (``format('sqlstream_iceberg')``, through pyiceberg), each a PySpark
``DataSource`` whose ``streamReader`` is a ``DataSourceStreamReader``.

The reader's protocol (PySpark API reference, *Python Data Source*; Spark runs
``initialOffset`` / ``latestOffset`` / ``partitions`` / ``commit`` in a Python process of the
driver, ``read`` in a Python worker per partition, each yielding PyArrow ``RecordBatch``\\ es):

* an offset is ``{"version": v}`` (Delta: the table's version, ``-1`` before the first) or
  ``{"snapshot_id": id}`` (Iceberg: the current snapshot's id, ``-1`` when none); Spark keeps
  them in the checkpoint's offset log, so a restart reads on from the last committed one;
* the first micro-batch of a new checkpoint reads the whole table as of its end offset (a
  snapshot), unless ``starting_version`` (Delta) starts at that version's commit; each later
  one reads the rows *appended* by the commits after its start up to its end: a Delta
  commit's ``add`` actions with ``dataChange``, an Iceberg ``append`` snapshot's added data
  files;
* a commit that removes rows (a Delta commit with a ``remove`` action with ``dataChange``: a
  MERGE, an overwrite, a DELETE; an Iceberg ``overwrite`` or ``delete`` snapshot) raises
  ``[SQLSTREAM_SOURCE SS550 <stream>] …`` (the query fails; ``exec`` reports it at the
  stream), unless ``skip_change_commits`` skips it — as Spark's Delta source (and its
  ``skipChangeCommits``) and Iceberg's (``streaming-skip-overwrite-snapshots``,
  ``streaming-skip-delete-snapshots``) do. Rewrites that change no data (Delta's
  ``dataChange = false``, Iceberg's ``replace``) are skipped;
* the rows are the declared columns, by name (case-insensitive), cast to the declared
  types; a column the table lacks raises ``SS551``.

Sources: Spark's PySpark API reference *Python Data Source* (``read`` may yield tuples, Rows
or PyArrow ``RecordBatch``); Delta protocol *Actions* (``add``, ``remove``, ``dataChange``,
``partitionValues``, ``commitInfo``), delta-rs ``DeltaTable``; Iceberg spec *Snapshots*
(``operation``), *Manifests* (entry status, ``snapshot_id``), pyiceberg ``ArrowScan``.
"""

from __future__ import annotations

import json
import os
from urllib.parse import unquote, urlparse

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from sqlstream.connectors.lakehouse_source import FORMATS, MARK


class LakehouseSourceError(Exception):
    """A table the stream cannot read on: its message is marked for
    :func:`sqlstream.connectors.lakehouse_source.source_failure` (``SS550``, ``SS551``)."""

    def __init__(self, code: str, stream: str, message: str):
        super().__init__(f"[{MARK} {code} {stream}] {message}")


def _arrow_schema(schema):
    """The Arrow schema of Spark ``schema`` (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # PySpark before 4.1 takes no time zone
        return to_arrow_schema(schema)


def conform(table, schema, stream: str):
    """The record batches of ``table`` (Arrow) with the columns of ``schema`` (Arrow), found
    by name whatever their case and cast to its types.

    Raises:
        LakehouseSourceError: ``SS551`` a column the table does not have.
    """
    import pyarrow as pa

    by_name = {name.lower(): i for i, name in enumerate(table.schema.names)}
    columns = []
    for field in schema:
        index = by_name.get(field.name.lower())
        if index is None:
            raise LakehouseSourceError(
                "SS551",
                stream,
                f"the table has no column '{field.name}' (its columns: "
                f"{', '.join(table.schema.names)})",
            )
        columns.append(table.column(index).cast(field.type))
    return pa.Table.from_arrays(columns, schema=schema).to_batches()


class _Reader(DataSourceStreamReader):
    """What both readers share: the options and the reading of a partition."""

    def __init__(self, options, schema):
        self.stream = options.get("stream", "?")
        self.skip = options.get("skip_change_commits", "false").lower() == "true"
        self.spark_schema = schema

    def commit(self, end: dict) -> None:
        """Nothing to release: the table keeps its files."""

    def read(self, partition):
        """The record batches of ``partition`` (see :meth:`rows`), as declared."""
        yield from conform(
            self.rows(partition.value), _arrow_schema(self.spark_schema), self.stream
        )

    def rows(self, value):
        """The Arrow table of one partition's ``value``."""
        raise NotImplementedError

    def changed(self, what: str) -> None:
        """A commit that removes rows: skipped with ``skip_change_commits``, else raised."""
        if not self.skip:
            raise LakehouseSourceError(
                "SS550",
                self.stream,
                f"{what} changes or deletes rows; a streaming source reads appended rows only",
            )


# ---- Delta ---------------------------------------------------------------------------------


class DeltaSource(DataSource):
    """``format('sqlstream_delta')``: the option ``path`` (the table's folder), ``stream``
    (the stream's name, for errors), ``starting_version``, ``skip_change_commits``."""

    @classmethod
    def name(cls) -> str:
        return FORMATS["delta"]

    def streamReader(self, schema):  # noqa: N802 - PySpark's name
        return DeltaReader(self.options, schema)


def _local(path: str) -> str:
    return unquote(urlparse(path).path) if path.startswith("file://") else path


class DeltaReader(_Reader):
    """Offsets ``{"version": v}``; a partition per added file, or the whole table."""

    def __init__(self, options, schema):
        super().__init__(options, schema)
        self.path = options["path"]
        starting = options.get("starting_version")
        self.starting = int(starting) if starting is not None else None

    def initialOffset(self) -> dict:  # noqa: N802
        return {"version": -1 if self.starting is None else self.starting - 1}

    # the form without arguments that PySpark 4.0 and 4.1 call (and 4.2 on still does)
    def latestOffset(self) -> dict:  # type: ignore[override]  # noqa: N802
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return {"version": DeltaTable(self.path).version()}
        except TableNotFoundError:
            return {"version": -1}

    def partitions(self, start: dict, end: dict):
        first, last = int(start["version"]), int(end["version"])
        if last <= first:
            return []
        if first == -1 and self.starting is None:
            return [InputPartition(("snapshot", last))]
        found = []
        for version in range(first + 1, last + 1):
            found += [InputPartition(("file", *add)) for add in self.appended(version)]
        return found

    def appended(self, version: int) -> list[tuple[str, dict]]:
        """``(path, partition values)`` of the files commit ``version`` added.

        Raises:
            LakehouseSourceError: ``SS550`` the commit removes rows (not skipped);
                ``SS551`` its log entry is gone (the log was cleaned up) or not local.
        """
        log = os.path.join(_local(self.path), "_delta_log", f"{version:020d}.json")
        try:
            with open(log, encoding="utf-8") as lines:
                actions = [json.loads(line) for line in lines if line.strip()]
        except OSError as error:
            raise LakehouseSourceError(
                "SS551", self.stream, f"commit {version} of {self.path} cannot be read: {error}"
            ) from None
        if any(a.get("remove", {}).get("dataChange", True) for a in actions if "remove" in a):
            info: dict = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
            self.changed(f"version {version} of {self.path} ({info.get('operation', '?')})")
            return []
        return [
            (a["add"]["path"], a["add"].get("partitionValues") or {})
            for a in actions
            if "add" in a and a["add"].get("dataChange", True)
        ]

    def rows(self, value):
        from deltalake import DeltaTable

        if value[0] == "snapshot":
            return DeltaTable(self.path, version=value[1]).to_pyarrow_table()
        return _data_file(_local(self.path), value[1], value[2])


def _data_file(root: str, path: str, partition_values: dict):
    """The rows of one data file of a Delta table (``path`` relative to ``root`` or
    absolute, URL-encoded), with its partition columns (their values as strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    location = unquote(path)
    if "://" in location:
        location = _local(location)
    table = pq.read_table(os.path.join(root, location))
    for name, text in partition_values.items():
        if name not in table.schema.names:
            table = table.append_column(name, pa.array([text] * table.num_rows, pa.string()))
    return table


# ---- Iceberg -------------------------------------------------------------------------------


class IcebergSource(DataSource):
    """``format('sqlstream_iceberg')``: the options ``table`` (``namespace.name``),
    ``warehouse``, ``catalog``, ``catalog_uri`` (the SQL catalog, as the sink names it),
    ``stream``, ``skip_change_commits``."""

    @classmethod
    def name(cls) -> str:
        return FORMATS["iceberg"]

    def streamReader(self, schema):  # noqa: N802 - PySpark's name
        return IcebergReader(self.options, schema)


class IcebergReader(_Reader):
    """Offsets ``{"snapshot_id": id}``; a partition per append snapshot, or the whole table."""

    def __init__(self, options, schema):
        super().__init__(options, schema)
        self.table_name = options["table"]
        self.warehouse = options["warehouse"]
        self.catalog_name = options.get("catalog", "sqlstream")
        self.catalog_uri = options["catalog_uri"]

    def load(self):
        """The table, or ``None`` when its catalog or the table does not exist."""
        from pyiceberg.catalog.sql import SqlCatalog
        from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

        uri = self.catalog_uri
        if uri.startswith("sqlite:///") and not os.path.exists(uri[len("sqlite:///") :]):
            return None
        location = "file://" + self.warehouse if "://" not in self.warehouse else self.warehouse
        catalog = SqlCatalog(self.catalog_name, uri=uri, warehouse=location)
        try:
            return catalog.load_table(tuple(p.strip("`") for p in self.table_name.split(".")))
        except (NoSuchTableError, NoSuchNamespaceError):
            return None

    def initialOffset(self) -> dict:  # noqa: N802
        return {"snapshot_id": -1}

    def latestOffset(self) -> dict:  # type: ignore[override]  # noqa: N802
        table = self.load()
        current = table.current_snapshot() if table is not None else None
        return {"snapshot_id": current.snapshot_id if current is not None else -1}

    def partitions(self, start: dict, end: dict):
        first, last = int(start["snapshot_id"]), int(end["snapshot_id"])
        if last == first or last == -1:
            return []
        if first == -1:
            return [InputPartition(("scan", last))]
        table = self.load()
        chain = []
        snapshot = table.snapshot_by_id(last) if table is not None else None
        while snapshot is not None and snapshot.snapshot_id != first:
            chain.append(snapshot)
            parent = snapshot.parent_snapshot_id
            snapshot = table.snapshot_by_id(parent) if parent is not None else None
        if snapshot is None:
            raise LakehouseSourceError(
                "SS551",
                self.stream,
                f"snapshot {first} of {self.table_name} is no ancestor of its current "
                "snapshot (expired, or the table was rolled back or replaced)",
            )
        found = []
        for snapshot in reversed(chain):
            operation = snapshot.summary.operation.value if snapshot.summary else "append"
            if operation == "append":
                found.append(InputPartition(("append", snapshot.snapshot_id)))
            elif operation != "replace":  # a rewrite of the same rows: nothing new
                self.changed(f"snapshot {snapshot.snapshot_id} of {self.table_name} ({operation})")
        return found

    def rows(self, value):
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.manifest import ManifestContent, ManifestEntryStatus
        from pyiceberg.table import FileScanTask

        table = self.load()
        assert table is not None  # it had the snapshot when the batch was planned
        kind, snapshot_id = value
        if kind == "scan":
            return table.scan(snapshot_id=snapshot_id).to_arrow()
        snapshot = table.snapshot_by_id(snapshot_id)
        assert snapshot is not None
        tasks = [
            FileScanTask(entry.data_file)
            for manifest in snapshot.manifests(table.io)
            if manifest.content == ManifestContent.DATA
            and manifest.added_snapshot_id == snapshot_id
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
            if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot_id
        ]
        scan = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
        return scan.to_table(tasks)
