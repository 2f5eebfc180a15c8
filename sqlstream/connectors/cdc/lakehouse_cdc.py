"""An ``iceberg`` or ``delta`` sink as the target of an ``AUTO CDC`` flow: the
:class:`~sqlstream.connectors.cdc.cdc_apply.CdcTable` operation on two lakehouse tables of
the same format — the target and, beside it, its *changes table* (the kept changes:
tombstones, history) — and the ``foreachBatch`` call ``translate`` prints for it::

    .foreachBatch(importlib.import_module('sqlstream.connectors.cdc.cdc_apply').CdcApplier(
        target=importlib.import_module('sqlstream.connectors.cdc.lakehouse_cdc').DeltaCdcTable(
            path='/abs/lake/customers'),
        keys=['id'], columns=['id', 'name', 'city'], scd_type=1, tracked=[]))

The changes table: Iceberg ``<namespace>.<name>__sqlstream_changes``, Delta the folder
``<path>__sqlstream_changes`` beside the target's. Both are written as the sinks write
(:class:`~sqlstream.connectors.iceberg.IcebergWriter`,
:class:`~sqlstream.connectors.delta.DeltaWriter`): each commit records ``(query id, batch
id)`` (Iceberg snapshot summary, Delta app transaction), and a batch id committed before
is not committed again.

**Two tables, two commits** — a lakehouse format commits one table at a time, so a crash
can fall between the two commits. The order makes a replay repair it:

1. the target committed ``batch_id`` (or later)? then the batch is done: nothing is
   written (Spark's replay of it runs into ``noop``);
2. the keys' kept changes are read from the changes table and merged with the batch
   (:func:`~sqlstream.connectors.cdc.cdc_apply.merge`);
3. the changes table is committed, once per ``(query id, batch id)``;
4. the target is committed, once per ``(query id, batch id)``: its rows of the keys are
   replaced by those computed from the merged changes alone.

A crash between 3 and 4 leaves the changes table one batch ahead; Spark replays the batch
(its offsets were not committed), step 2 reads changes that already hold it and merges
the same batch again — the merge is idempotent (a change merged with itself is itself:
one winner per key, one change per key and sequence), so step 3 finds the batch
committed and writes nothing, and step 4 writes the rows the first run would have. The
other order would lose a batch's changes: a target committed first makes step 1 skip the
replay. Readers of the target see it committed whole each time (one commit per batch);
between 3 and 4 the changes table is ahead of the target, which no reader depends on.

The rows of a key are replaced by a delete of the key's rows and an insert of its new
ones in ONE commit: Iceberg ``Transaction.overwrite`` with a filter on the keys; Delta one
``MERGE`` whose source holds one delete marker per key (each target row of a key matches
exactly its marker: deleted) and the new rows (matching nothing: inserted) — an SCD 2 key
has several rows, which a plain ``MERGE`` on the keys could not match.

Sources: Iceberg spec *Snapshots*; pyiceberg ``Table.scan``, ``Transaction.overwrite``;
Delta protocol *Transaction Identifiers*; delta-rs ``DeltaTable.merge``
(``when_matched_delete``, ``when_not_matched_insert``), ``DeltaTable.to_pyarrow_table``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlstream.connectors.cdc.cdc_apply import END_AT, START_AT
from sqlstream.connectors.delta import DeltaWriter, _quoted
from sqlstream.connectors.iceberg import IcebergWriter, _key_filter
from sqlstream.connectors.lakehouse import LakehouseWriter

CHANGES_SUFFIX = "__sqlstream_changes"
_UTC = dt.timezone.utc


def arrow_type(data_type):
    """The Arrow type of a Spark type as the applier collects it (``_read_expression`` of
    :mod:`sqlstream.connectors.postgres`): timestamps UTC instants (``us``), nested values
    and intervals their text."""
    import pyarrow as pa

    kind = type(data_type).__name__
    simple = {
        "LongType": pa.int64(),
        "IntegerType": pa.int32(),
        "ShortType": pa.int16(),
        "ByteType": pa.int8(),
        "DoubleType": pa.float64(),
        "FloatType": pa.float32(),
        "BooleanType": pa.bool_(),
        "DateType": pa.date32(),
        "BinaryType": pa.binary(),
        "TimestampType": pa.timestamp("us", tz="UTC"),
        "TimestampNTZType": pa.timestamp("us"),
    }
    if kind in simple:
        return simple[kind]
    if kind == "DecimalType":
        return pa.decimal128(data_type.precision, data_type.scale)
    return pa.string()


def _arrow(rows: list[tuple], names: list[str], types: list) -> Any:
    """``rows`` as a ``pyarrow.Table`` of the columns ``names`` (all nullable)."""
    import pyarrow as pa

    schema = pa.schema([pa.field(n, t, True) for n, t in zip(names, types, strict=True)])
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    arrays = [pa.array(list(c), t) for c, t in zip(columns, types, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def _tuples(table, names: list[str]) -> list[tuple]:
    """The rows of Arrow ``table`` in the columns ``names``, as the applier's values
    (timestamps with a zone in UTC)."""
    columns = [table.column(n).to_pylist() for n in names]
    rows = list(zip(*columns, strict=True)) if names else []
    return [
        tuple(v.astimezone(_UTC) if isinstance(v, dt.datetime) and v.tzinfo else v for v in r)
        for r in rows
    ]


def _of_keys(table, keys: list[str], wanted: list[tuple]):
    """The rows of Arrow ``table`` whose ``keys`` are among ``wanted`` (a semi join)."""
    if table is None or table.num_rows == 0:
        return table
    key_table = _arrow(wanted, keys, [table.schema.field(k).type for k in keys])
    return table.join(key_table, keys, join_type="left semi")


class LakehouseCdcTable:
    """A :class:`~sqlstream.connectors.cdc.cdc_apply.CdcTable` on two lakehouse tables
    (base of :class:`IcebergCdcTable` and :class:`DeltaCdcTable`; the order of the two
    commits is in the module's text).

    A subclass implements :meth:`writer` (a writer of the target or of its changes table,
    replacing rows by ``keys``), :meth:`read` (the rows of some keys) and :meth:`replace`
    (one commit: the rows of some keys replaced).
    """

    def writer(self, changes: bool, keys: tuple[str, ...]) -> LakehouseWriter:
        """The writer of the target (``changes=False``) or of its changes table."""
        raise NotImplementedError

    def read(self, writer: LakehouseWriter, keys: list[str], wanted: list[tuple]):
        """The rows (Arrow) of ``wanted`` keys of the writer's table, or ``None``."""
        raise NotImplementedError

    def replace(self, writer, rows, keys, app: str, batch_id: int) -> None:
        """One commit recording ``(app, batch_id)``: the rows of the ``keys`` (Arrow)
        deleted, ``rows`` (Arrow) inserted; nothing when committed before."""
        raise NotImplementedError

    @contextmanager
    def transaction(
        self, query_id: str, batch_id: int, fields: list, flow: dict[str, Any]
    ) -> Iterator[_Transaction | None]:
        """The micro-batch's two commits
        (:meth:`~sqlstream.connectors.cdc.cdc_apply.CdcTable.transaction`): ``None`` when the
        target committed the batch (or a later one) before; else a transaction whose
        ``replace`` commits the changes table, then the target."""
        keys = tuple(flow["keys"])
        last = self.writer(False, keys).committed(query_id)
        if last is not None and last >= batch_id:
            yield None
            return
        types = {f.name: arrow_type(f.dataType) for f in fields}
        columns = [(c, types[c]) for c in flow["columns"]]
        if flow["scd_type"] == 2:
            columns += [(START_AT, types[flow["sequence"]]), (END_AT, types[flow["sequence"]])]
        yield _Transaction(self, query_id, batch_id, list(keys), fields, types, columns)


class _Transaction:
    """:class:`~sqlstream.connectors.cdc.cdc_apply.CdcTransaction` of a lakehouse target."""

    def __init__(self, table: LakehouseCdcTable, app, batch_id, keys, fields, types, columns):
        self.table, self.app, self.batch_id, self.keys = table, app, batch_id, keys
        self.names = [f.name for f in fields]
        self.types = [types[n] for n in self.names]
        self.columns = columns
        self.key_types = [types[k] for k in keys]

    def changes(self, keys: list[tuple]) -> list[tuple]:
        """The kept changes of ``keys`` (the changes table's rows of them)."""
        writer = self.table.writer(True, tuple(self.keys))
        found = self.table.read(writer, self.keys, keys)
        return [] if found is None else _tuples(found, self.names)

    def replace(self, keys: list[tuple], rows: list[tuple], changes: list[tuple]) -> None:
        """Commit the changes table, then the target (the order a replay repairs)."""
        if not keys:
            return  # an empty batch changes nothing; its replay neither
        key_table = _arrow(keys, self.keys, self.key_types)
        names, types = [n for n, _ in self.columns], [t for _, t in self.columns]
        for is_changes, values in (
            (True, _arrow(changes, self.names, self.types)),
            (False, _arrow(rows, names, types)),
        ):
            writer = self.table.writer(is_changes, tuple(self.keys))
            self.table.replace(writer, values, key_table, self.app, self.batch_id)


class IcebergCdcTable(LakehouseCdcTable):
    """An Iceberg target and its changes table ``<table>__sqlstream_changes`` in the same
    catalog.

    Args:
        table, warehouse, catalog, catalog_uri: as :class:`~sqlstream.connectors.iceberg.IcebergWriter`.
    """

    def __init__(self, table: str, warehouse: str, catalog: str = "sqlstream", catalog_uri=None):
        self.table, self.warehouse = table, warehouse
        self.catalog, self.catalog_uri = catalog, catalog_uri

    def __repr__(self) -> str:
        return f"IcebergCdcTable(table={self.table!r})"

    def writer(self, changes: bool, keys: tuple[str, ...]) -> IcebergWriter:
        """An :class:`~sqlstream.connectors.iceberg.IcebergWriter` replacing rows by ``keys``."""
        name = self.table + (CHANGES_SUFFIX if changes else "")
        return IcebergWriter(name, self.warehouse, self.catalog, self.catalog_uri, "upsert", keys)

    def read(self, writer, keys, wanted):
        """A scan filtered on the keys (pyiceberg ``Table.scan(row_filter=…)``)."""
        table = writer.load()
        if table is None:
            return None
        found = table.scan(row_filter=_row_filter(wanted, keys)).to_arrow()
        return _of_keys(found, keys, wanted)

    def replace(self, writer, rows, keys, app, batch_id) -> None:
        """``IcebergWriter.apply_changes``: one ``overwrite`` filtered on the keys."""
        writer.apply_changes(rows, keys, app, batch_id)


def _row_filter(wanted: list[tuple], keys: list[str]):
    """The pyiceberg filter matching the ``wanted`` keys."""
    import pyarrow as pa

    columns = {k: pa.array([w[i] for w in wanted]) for i, k in enumerate(keys)}
    return _key_filter(pa.table(columns), None, tuple(keys))


class DeltaCdcTable(LakehouseCdcTable):
    """A Delta target at ``path`` and its changes table at ``<path>__sqlstream_changes``.

    Args:
        path: the target's folder or URI (as :class:`~sqlstream.connectors.delta.DeltaWriter`).
    """

    def __init__(self, path: str):
        self.path = path

    def __repr__(self) -> str:
        return f"DeltaCdcTable(path={self.path!r})"

    def writer(self, changes: bool, keys: tuple[str, ...]) -> DeltaWriter:
        """A :class:`~sqlstream.connectors.delta.DeltaWriter` of the target or changes table."""
        path = self.path.rstrip("/") + (CHANGES_SUFFIX if changes else "")
        return DeltaWriter(path, "upsert", keys)

    def read(self, writer, keys, wanted):
        """The table read (``to_pyarrow_table``) and semi-joined with the keys."""
        table = writer.table()
        return None if table is None else _of_keys(table.to_pyarrow_table(), keys, wanted)

    def replace(self, writer, rows, keys, app, batch_id) -> None:
        """One delta-rs commit with the app transaction ``(app, batch_id)``: created by an
        append when missing, else a ``MERGE`` of one delete marker per key and the rows."""
        import pyarrow as pa
        from deltalake import CommitProperties, Transaction, write_deltalake

        from sqlstream.connectors import lakehouse

        last = writer.committed(app)
        if last is not None and last >= batch_id:
            return
        props = CommitProperties(
            custom_metadata=lakehouse.commit_metadata(app, batch_id),
            app_transactions=[Transaction(app_id=app, version=batch_id)],
        )
        table = writer.table()
        if table is None:
            write_deltalake(writer.path, rows, mode="append", commit_properties=props)
            return
        marker = "__sqlstream_marker"
        names = list(keys.schema.names)
        markers = [
            keys.column(f.name) if f.name in names else pa.nulls(keys.num_rows, f.type)
            for f in rows.schema
        ]
        source = pa.concat_tables(
            [
                rows.append_column(marker, pa.array([False] * rows.num_rows, pa.bool_())),
                pa.Table.from_arrays(
                    [*markers, pa.array([True] * keys.num_rows, pa.bool_())],
                    schema=rows.schema.append(pa.field(marker, pa.bool_())),
                ),
            ]
        )
        on = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in names)
        values = {_quoted(n): f"s.{_quoted(n)}" for n in rows.schema.names}
        (
            table.merge(
                source,
                f"{on} AND s.{marker}",
                source_alias="s",
                target_alias="t",
                commit_properties=props,
            )
            .when_matched_delete()
            .when_not_matched_insert(values, predicate=f"NOT s.{marker}")
            .execute()
        )
