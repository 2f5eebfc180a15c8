"""The Python data sources that read ``delta`` and ``iceberg`` tables as streams where no
Spark package of the format runs (:mod:`sqlstream.connectors.lakehouse_source` plans them):
``DeltaSource`` (``format('sqlstream_delta')``, through delta-rs and the table's log) and
``IcebergSource`` (``format('sqlstream_iceberg')``, through pyiceberg), each a PySpark
``DataSource`` whose ``streamReader`` is a ``DataSourceStreamReader``.

The reader's protocol (PySpark API reference, *Python Data Source*; Spark runs
``initialOffset`` / ``latestOffset`` / ``partitions`` / ``commit`` in a Python process of the
driver, ``read`` in a Python worker per partition, each yielding PyArrow ``RecordBatch``\\ es):

* an offset is ``{"version": v}`` (Delta: every commit up to version ``v`` read, ``-1``
  before the first) or ``{"snapshot_id": id}`` (Iceberg: every snapshot up to ``id`` read,
  ``-1`` when none); with a rate limit a micro-batch can end inside a commit:
  ``{"version": v, "files": n}`` / ``{"snapshot_id": id, "files": n}`` (the first ``n``
  files the commit added read), and ``"snapshot": true`` / ``"scan": true`` when the ``n``
  files are those of the table's first read. Spark keeps offsets in the checkpoint's offset
  log, so a restart reads on from the last committed one; an offset of an older sqlstream
  (no ``files``) is one whole commit, read as before;
* rate limits (PySpark 4.2+ *admission control*: ``latestOffset(start, limit)`` and
  ``getDefaultReadLimit``; ``prepareForTriggerAvailableNow`` so that ``availableNow`` runs
  as many micro-batches as the limits make): Delta's ``maxFilesPerTrigger`` (default 1000,
  as Delta's) and ``maxBytesPerTrigger`` (a soft maximum: the file that crosses it is
  read), Iceberg's ``streaming-max-files-per-micro-batch`` and
  ``streaming-max-rows-per-micro-batch`` (a soft maximum: the next file is always read, a
  further one only within it); a micro-batch stops at the first limit reached, and
  ``ReadAllAvailable`` (``Trigger.Once``) reads everything. PySpark 4.0 and 4.1 call
  ``latestOffset()`` without arguments: everything available (the compiler refuses the
  options there, ``SS288``);
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
or PyArrow ``RecordBatch``), PySpark 4.2's ``DataSourceStreamReader.latestOffset(start,
limit)``, ``getDefaultReadLimit`` and ``pyspark.sql.streaming.datasource`` (``ReadLimit``,
``SupportsTriggerAvailableNow``); Delta Lake guide *Table streaming reads and writes*
(*Limit input rate*); Iceberg's Spark guide *Structured Streaming* (*Limit input rate*);
Delta protocol *Actions* (``add``, ``remove``, ``dataChange``, ``partitionValues``,
``size``, ``commitInfo``), delta-rs ``DeltaTable``; Iceberg spec *Snapshots*
(``operation``), *Manifests* (entry status, ``snapshot_id``, ``record_count``), pyiceberg
``ArrowScan``.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from sqlstream.connectors.lakehouse_offsets import Limits, byte_count
from sqlstream.connectors.lakehouse_source import FORMATS, MARK

try:  # PySpark 4.2+: admission control and availableNow for Python stream readers
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxBytes,
        ReadMaxFiles,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    _MIXINS: tuple[type, ...] = (SupportsTriggerAvailableNow,)
except ImportError:  # PySpark 4.0, 4.1: latestOffset() reads everything available
    ReadAllAvailable = ReadMaxBytes = ReadMaxFiles = ReadMaxRows = None  # type: ignore[misc,assignment]
    _MIXINS = ()

DELTA_DEFAULT_FILES = 1000
"""Delta's ``maxFilesPerTrigger`` when neither it nor ``maxBytesPerTrigger`` is set."""


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


def _read_limit(limits: Limits):
    """The ``ReadLimit`` Spark is told for ``limits`` (one of them; the reader honours
    both of a format's)."""
    if limits.files is not None:
        return ReadMaxFiles(limits.files)
    if limits.size is not None:
        return ReadMaxBytes(limits.size) if limits.crossing else ReadMaxRows(limits.size)
    return ReadAllAvailable()


class _Reader(DataSourceStreamReader, *_MIXINS):  # type: ignore[misc]
    """What both readers share: the options, admission control and reading a partition."""

    limits = Limits(None, None, True)
    target: dict | None = None
    """The end of an ``availableNow`` run (:meth:`prepareForTriggerAvailableNow`)."""

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

    def latest(self) -> dict:
        """The offset of the table's current commit (everything available)."""
        raise NotImplementedError

    def advance(self, start: dict, end: dict) -> dict:
        """The offset after ``start`` that reads at most :attr:`limits`, up to ``end``."""
        raise NotImplementedError

    def changed(self, what: str) -> None:
        """A commit that removes rows: skipped with ``skip_change_commits``, else raised."""
        if not self.skip:
            raise LakehouseSourceError(
                "SS550",
                self.stream,
                f"{what} changes or deletes rows; a streaming source reads appended rows only",
            )

    # PySpark 4.0 and 4.1 call latestOffset() (everything); 4.2 on, with these two
    # parameters, latestOffset(start, limit) (admission control: check_support_func)
    def latestOffset(self, start: dict | None = None, limit=None) -> dict:  # noqa: N802
        """The end of the next micro-batch: everything available (no ``start``, or
        ``ReadAllAvailable``), else as far as :attr:`limits` admit from ``start``; never
        past :attr:`target` in an ``availableNow`` run."""
        end = self.target if self.target is not None else self.latest()
        if start is None or limit is None or isinstance(limit, ReadAllAvailable):
            return end
        return self.advance(start, end)

    def getDefaultReadLimit(self):  # noqa: N802 - PySpark's name
        """The limit of the options (:func:`_read_limit`)."""
        return _read_limit(self.limits)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 - PySpark's name
        """``availableNow``: the table's current commit is the run's last offset."""
        self.target = self.latest()


def _count(options, name: str) -> int | None:
    text = options.get(name)
    return int(text) if text is not None else None


# ---- Delta ---------------------------------------------------------------------------------


class DeltaSource(DataSource):
    """``format('sqlstream_delta')``: the option ``path`` (the table's folder), ``stream``
    (the stream's name, for errors), ``starting_version``, ``skip_change_commits``,
    ``maxFilesPerTrigger``, ``maxBytesPerTrigger``."""

    @classmethod
    def name(cls) -> str:
        return FORMATS["delta"]

    def streamReader(self, schema):  # noqa: N802 - PySpark's name
        return DeltaReader(self.options, schema)


def _local(path: str) -> str:
    return unquote(urlparse(path).path) if path.startswith("file://") else path


def _position(offset: dict) -> tuple[int, int | None, bool]:
    """``(version or snapshot id, files read of it or None for all, first read?)``."""
    key = "version" if "version" in offset else "snapshot_id"
    files = offset.get("files")
    first = bool(offset.get("snapshot") or offset.get("scan"))
    return int(offset[key]), int(files) if files is not None else None, first


class DeltaReader(_Reader):
    """Offsets ``{"version": v}`` (and ``files``, ``snapshot`` inside a commit); a
    partition per added file, or the whole table."""

    def __init__(self, options, schema):
        super().__init__(options, schema)
        self.path = options["path"]
        starting = options.get("starting_version")
        self.starting = int(starting) if starting is not None else None
        files = _count(options, "maxFilesPerTrigger")
        size = options.get("maxBytesPerTrigger")
        size_bytes = byte_count(size) if size is not None else None
        if files is None and size_bytes is None:
            files = DELTA_DEFAULT_FILES
        self.limits = Limits(files, size_bytes, crossing=True)

    def initialOffset(self) -> dict:  # noqa: N802
        return {"version": -1 if self.starting is None else self.starting - 1}

    def latest(self) -> dict:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return {"version": DeltaTable(self.path).version()}
        except TableNotFoundError:
            return {"version": -1}

    def _first_read(self, start: dict) -> bool:
        version, _, first = _position(start)
        return first or (version == -1 and self.starting is None)

    def advance(self, start: dict, end: dict) -> dict:
        version, files, first = _position(start)
        last = int(end["version"])
        if self._first_read(start):
            at = version if first else last
            if at < 0:
                return start
            sizes = [size for _, _, size in self.snapshot_files(at)]
            done = files or 0
            count, _ = self.limits.admitted(sizes[done:], (0, 0))
            if done + count >= len(sizes):
                return {"version": at}
            return {"version": at, "files": done + count, "snapshot": True}
        taken = (0, 0)
        current, skip = (version, files) if files is not None else (version + 1, 0)
        for at in range(current, last + 1):
            sizes = [size for _, _, size in self.commit_files(at, strict=False)]
            count, taken = self.limits.admitted(sizes[skip:], taken)
            if skip + count < len(sizes):
                if skip + count == 0:
                    return {"version": at - 1}
                return {"version": at, "files": skip + count}
            skip = 0
        return {"version": last}

    def partitions(self, start: dict, end: dict):
        if start == end:
            return []
        version, files, first = _position(start)
        end_version, end_files, end_first = _position(end)
        found = []
        if self._first_read(start):
            at = version if first else end_version
            if at < 0:
                return []
            upto = end_files if end_first else None
            if not files and upto is None:
                found.append(InputPartition(("snapshot", at)))
            else:
                chosen = self.snapshot_files(at)[files or 0 : upto]
                found += [InputPartition(("file", path, values)) for path, values, _ in chosen]
            if end_first or end_version <= at:
                return found
            version, files = at, None
        current, skip = (version, files) if files is not None else (version + 1, 0)
        for at in range(current, end_version + 1):
            upto = end_files if at == end_version else None
            chosen = self.commit_files(at)[skip:upto]
            found += [InputPartition(("file", path, values)) for path, values, _ in chosen]
            skip = 0
        return found

    def commit_files(self, version: int, strict: bool = True) -> list[tuple[str, dict, int]]:
        """``(path, partition values, size in bytes)`` of the files commit ``version``
        added, in the log's order; a commit that removes rows has none (``strict=False``,
        when a micro-batch's end is chosen) or raises (when it is read).

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
            if strict:
                info: dict = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
                self.changed(f"version {version} of {self.path} ({info.get('operation', '?')})")
            return []
        return [
            (a["add"]["path"], a["add"].get("partitionValues") or {}, int(a["add"].get("size", 0)))
            for a in actions
            if "add" in a and a["add"].get("dataChange", True)
        ]

    def snapshot_files(self, version: int) -> list[tuple[str, dict, int]]:
        """``(path, partition values as text, size)`` of the files of the table as of
        ``version``, by path."""
        import pyarrow as pa
        from deltalake import DeltaTable

        actions = pa.table(DeltaTable(self.path, version=version).get_add_actions())
        rows = actions.to_pylist()
        found = []
        for row in rows:
            values = {
                k: (None if v is None else str(v)) for k, v in (row.get("partition") or {}).items()
            }
            found.append((row["path"], values, int(row["size_bytes"])))
        return sorted(found, key=lambda f: f[0])

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
    ``stream``, ``skip_change_commits``, ``streaming-max-files-per-micro-batch``,
    ``streaming-max-rows-per-micro-batch``."""

    @classmethod
    def name(cls) -> str:
        return FORMATS["iceberg"]

    def streamReader(self, schema):  # noqa: N802 - PySpark's name
        return IcebergReader(self.options, schema)


class IcebergReader(_Reader):
    """Offsets ``{"snapshot_id": id}`` (and ``files``, ``scan`` inside a snapshot); a
    partition per append snapshot (or part of one), or the whole table."""

    def __init__(self, options, schema):
        super().__init__(options, schema)
        self.table_name = options["table"]
        self.warehouse = options["warehouse"]
        self.catalog_name = options.get("catalog", "sqlstream")
        self.catalog_uri = options["catalog_uri"]
        files = _count(options, "streaming-max-files-per-micro-batch")
        rows = _count(options, "streaming-max-rows-per-micro-batch")
        self.limits = Limits(files, rows, crossing=False)

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

    def latest(self) -> dict:
        table = self.load()
        current = table.current_snapshot() if table is not None else None
        return {"snapshot_id": current.snapshot_id if current is not None else -1}

    def chain(self, table, first: int, last: int) -> list:
        """The snapshots after ``first`` up to ``last``, oldest first.

        Raises:
            LakehouseSourceError: ``SS551`` ``first`` is no ancestor of ``last``.
        """
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
        return list(reversed(chain))

    def _units(self, table, start: dict, last: int) -> list[tuple[Any, int, list]]:
        """``(snapshot or None for the table's first read, id, its files)`` from the
        snapshot of ``start`` (itself when read in part) to ``last``."""
        at, files, first = _position(start)
        if first or at == -1:
            snapshot_id = at if first else last
            units: list[tuple[Any, int, list]] = [
                (None, snapshot_id, self.scan_files(table, snapshot_id))
            ]
            if snapshot_id == last:
                return units
            at, files = snapshot_id, None
        else:
            units = []
        if files is not None:
            partial = table.snapshot_by_id(at)
            units.append((partial, at, self.appended(table, partial)))
        for snapshot in self.chain(table, at, last) if at != last else []:
            units.append((snapshot, snapshot.snapshot_id, self.appended(table, snapshot)))
        return units

    def advance(self, start: dict, end: dict) -> dict:
        last = int(end["snapshot_id"])
        if last == -1 or start == end:
            return start
        table = self.load()
        _, files, _ = _position(start)
        skip, taken, previous = files or 0, (0, 0), start
        for snapshot, snapshot_id, found in self._units(table, start, last):
            counts = [f.record_count for f in found]
            count, taken = self.limits.admitted(counts[skip:], taken)
            if skip + count < len(counts):
                if skip + count == 0:
                    return previous
                offset = {"snapshot_id": snapshot_id, "files": skip + count}
                return {**offset, "scan": True} if snapshot is None else offset
            skip, previous = 0, {"snapshot_id": snapshot_id}
        return {"snapshot_id": last}

    def partitions(self, start: dict, end: dict):
        last, end_files, _ = _position(end)
        if start == end or last == -1:
            return []
        at, files, first = _position(start)
        if at == -1 and end_files is None:
            return [InputPartition(("scan", last, 0, None))]
        table = self.load()
        found = []
        skip = files or 0
        for snapshot, snapshot_id, data in self._units(table, start, last):
            upto = end_files if snapshot_id == last else None
            if snapshot is None:
                found.append(InputPartition(("scan", snapshot_id, skip, upto)))
            else:
                operation = snapshot.summary.operation.value if snapshot.summary else "append"
                if operation == "append" and data[skip:upto]:
                    found.append(InputPartition(("append", snapshot_id, skip, upto)))
                elif operation not in ("append", "replace"):  # replace: the same rows
                    self.changed(f"snapshot {snapshot_id} of {self.table_name} ({operation})")
            skip = 0
        return found

    @staticmethod
    def scan_files(table, snapshot_id: int) -> list:
        """The data files of the table as of ``snapshot_id``, by path."""
        return sorted(
            (task.file for task in table.scan(snapshot_id=snapshot_id).plan_files()),
            key=lambda f: f.file_path,
        )

    @staticmethod
    def appended(table, snapshot) -> list:
        """The data files ``snapshot`` added (none unless it is an append), by path."""
        from pyiceberg.manifest import ManifestContent, ManifestEntryStatus

        operation = snapshot.summary.operation.value if snapshot.summary else "append"
        if operation != "append":
            return []
        snapshot_id = snapshot.snapshot_id
        return sorted(
            (
                entry.data_file
                for manifest in snapshot.manifests(table.io)
                if manifest.content == ManifestContent.DATA
                and manifest.added_snapshot_id == snapshot_id
                for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
                if entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id == snapshot_id
            ),
            key=lambda f: f.file_path,
        )

    def rows(self, value):
        from pyiceberg.expressions import AlwaysTrue
        from pyiceberg.io.pyarrow import ArrowScan
        from pyiceberg.table import FileScanTask

        table = self.load()
        assert table is not None  # it had the snapshot when the batch was planned
        kind, snapshot_id, first, upto = (*value, 0, None)[:4]
        if kind == "scan" and not first and upto is None:
            return table.scan(snapshot_id=snapshot_id).to_arrow()
        if kind == "scan":
            scan = table.scan(snapshot_id=snapshot_id)
            tasks = sorted(scan.plan_files(), key=lambda t: t.file.file_path)[first:upto]
            return ArrowScan(table.metadata, table.io, scan.projection(), AlwaysTrue()).to_table(
                tasks
            )
        snapshot = table.snapshot_by_id(snapshot_id)
        assert snapshot is not None
        tasks = [FileScanTask(f) for f in self.appended(table, snapshot)[first:upto]]
        scan = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue())
        return scan.to_table(tasks)
