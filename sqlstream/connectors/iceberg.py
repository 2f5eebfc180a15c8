"""``connector = 'iceberg'``: each micro-batch committed once into an Iceberg table,
appended, merged by key or overwritten, through ``pyiceberg`` from ``foreachBatch`` — no
Spark package — on Spark 4.0, 4.2 and 4.3; on 4.1, whose Iceberg runtime is served and runs,
through Iceberg's own Spark writer into the same catalog (:mod:`.iceberg_jvm`, the JVM
path; a catalog in another database than a SQLite file stays on pyiceberg).

The call ``translate`` prints::

    (spark.sql(sql).writeStream
        .foreachBatch(importlib.import_module('sqlstream.connectors.iceberg').IcebergWriter(
            table='analytics.hourly', warehouse='/abs/.sqlstream/warehouse',
            catalog='sqlstream', catalog_uri='sqlite:////abs/.sqlstream/warehouse/catalog.db',
            mode='append'))
        .outputMode('append') … .queryName(name).start())

The catalog: an Iceberg *SQL catalog* (pyiceberg ``SqlCatalog``) whose database is the
SQLite file ``catalog.db`` in the warehouse folder, ``.sqlstream/warehouse`` beside the
``.ssql`` file unless ``warehouse`` names another; ``catalog_uri`` names another database
(a SQLAlchemy URL, e.g. ``postgresql+psycopg://…``), ``catalog`` the catalog's name. Why a
SQL catalog and not the Hadoop catalog: pyiceberg has no Hadoop catalog (it reads no
``version-hint.text`` tables and writes none), and a SQL catalog is the one kind both
pyiceberg and Spark's Iceberg runtime can read *and* write with no server
(``org.apache.iceberg.jdbc.JdbcCatalog`` on the same database, the same table layout:
``iceberg_tables``, ``iceberg_namespace_properties``).

Each commit carries the snapshot summary properties ``sqlstream.app_id`` (the query's id,
kept in its checkpoint) and ``sqlstream.batch_id``; before a commit the table's snapshots
(the current one and its ancestors) are searched for the query's last batch id, and a
replayed micro-batch is skipped (:mod:`.lakehouse`). The catalog's commit is optimistic: a
table changed between that check and the commit fails the commit, and the batch is retried.
``mode = 'upsert'``: one ``Transaction.overwrite`` with a filter on the batch's keys (the
rows of those keys deleted and the batch appended, in one catalog commit); complete output
mode: an overwrite of every row. The namespace and table are created from the first
micro-batch's columns if missing.

Sources: Iceberg spec *Snapshots* (summary properties), *JDBC catalog*; pyiceberg
``SqlCatalog``, ``Transaction.overwrite`` / ``append``, ``snapshot_properties``.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings

from sqlstream.connectors import lakehouse, lakehouse_jvm, lakehouse_offsets, lakehouse_source
from sqlstream.connectors.base import ResolvedOptions, ResolvePath
from sqlstream.connectors.table import DEFAULT_WAREHOUSE
from sqlstream.diagnostics.errors import OptionError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir import spark_versions
from sqlstream.ir.calls import Chain, Step

_WRITER = "IcebergWriter"
DEFAULT_CATALOG = "sqlstream"
CATALOG_FILE = "catalog.db"
# pyiceberg creates the SQL catalog's tables when it opens one, not safely against another
# thread doing it at once (two queries of one driver): they take turns
_CATALOG_LOCK = threading.Lock()


def table_parts(text: str) -> list[str]:
    """``'analytics.hourly'`` → ``['analytics', 'hourly']`` (backticks dropped)."""
    return [part.strip().strip("`") for part in text.split(".")]


def catalog_of(resolved: ResolvedOptions, resolve_path: ResolvePath) -> tuple[str, str, str]:
    """``(catalog, warehouse, catalog_uri)`` of an ``iceberg`` sink or source: the catalog's
    name (default ``sqlstream``), the warehouse folder resolved against the file's folder
    (default ``.sqlstream/warehouse``) and the catalog's database (default the SQLite file
    ``catalog.db`` in the warehouse)."""
    warehouse = resolve_path(resolved.get("warehouse") or DEFAULT_WAREHOUSE)
    assert warehouse is not None
    uri = resolved.get("catalog_uri") or "sqlite:///" + os.path.join(warehouse, CATALOG_FILE)
    return resolved.get("catalog") or DEFAULT_CATALOG, warehouse, uri


class Iceberg(lakehouse.LakehouseSink):
    """An Iceberg table ``namespace.name`` (``table`` required) in a SQL catalog; every
    output mode (update with upsert only); durable."""

    name = "iceberg"
    python_writer = (__name__, _WRITER)
    jvm_writer = ("sqlstream.connectors.iceberg_jvm", "IcebergSparkWriter")
    cdc_table = "IcebergCdcTable"
    source_format = "iceberg"
    required = ("table",)
    own_options: tuple[str, ...] = (
        "table",
        "warehouse",
        "catalog",
        "catalog_uri",
        *lakehouse.OWN_OPTIONS,
    )
    jvm_source_minors = tuple(lakehouse_jvm.ICEBERG_PACKAGES)
    catalog_options: tuple[tuple[str, str], ...] = ()

    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Raises:
        OptionError: ``SS280`` a table name that is not ``namespace.name``; ``SS281``
            the mode (see :func:`.lakehouse.check_mode`).
        """
        table = compiler["table"]
        parts = table_parts(table.text)
        if len(parts) < 2 or not all(parts):
            raise OptionError(
                f"'{table.text}' is not an Iceberg table name (namespace.name)",
                table.value_span,
                source,
                code="SS280",
                hint="table = 'analytics.hourly': a namespace and a name",
            )
        lakehouse.check_mode(compiler, source, self.name)

    # ---- as a source: Iceberg's streaming reader where its runtime is served (Spark 4.1),
    # sqlstream's Python data source elsewhere (:mod:`.lakehouse_source`)
    catalog: tuple[str, str, str] | None = None

    def check_source(self, resolved: ResolvedOptions, source: Source, spark_version: str) -> None:
        """Raises:
        OptionError: what :meth:`.lakehouse.LakehouseSink.check_source` raises (``SS283``,
            ``SS286``-``SS288``); ``SS285`` on a minor whose Iceberg runtime reads it, a
            catalog that is not a SQLite file (:func:`_check_source`).
        """
        super().check_source(resolved, source, spark_version)
        if spark_version in lakehouse_jvm.ICEBERG_PACKAGES:
            _check_source(resolved, source)

    def declared(self, statement, resolved, resolve_path, project=None, trusted=False):
        """A copy holding the catalog options of the read (:attr:`catalog_options`:
        ``table``, ``warehouse``, ``catalog``, ``catalog_uri``, resolved as the sink's), once
        the declared columns are checked against the table's schema when its catalog and
        table exist in ``project`` (or ``trusted``), read with pyiceberg
        (:func:`.lakehouse_source.check_columns`: ``SS295``, ``SS296``)."""
        options = self.sink_options(resolved, resolve_path, {})
        kept = tuple((k, v) for k, v in options if k not in ("mode", "key_columns"))
        found = dict(kept)
        if statement.columns and lakehouse_source.readable(found["warehouse"], project, trusted):
            schema = lakehouse_source.iceberg_schema(
                found["table"], found["warehouse"], found["catalog"], found["catalog_uri"]
            )
            lakehouse_source.check_columns(statement, schema, f"the iceberg table {found['table']}")
        found_source = type(self)()
        found_source.catalog_options = kept
        found_source.catalog = catalog_of(resolved, resolve_path)
        return found_source

    def planned(self, relation: p.SourceRelation, statement) -> p.SourceRelation:
        """On the JVM path, the catalog in the relation's settings (the session's Spark
        catalog is made from them: :func:`.lakehouse_jvm.catalog_settings`)."""
        if lakehouse_source.is_python(relation):
            return relation
        return _planned(relation, self.catalog)

    def source_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``('iceberg', table)``: the table's name (``namespace.name``)."""
        return self.source_format, ".".join(table_parts(resolved.required("table")))

    def bind_columns(self, resolved, columns, path, report, project=None, trusted=False):
        """The declared columns as declared; the options of the read: the catalog's
        (:meth:`declared`), ``skip_change_commits``."""
        read = tuple((c.name.value, c.type) for c in columns)
        return read, {}, (*self.catalog_options, *lakehouse_source.reader_options(resolved))

    def read_chains(self, relation: p.SourceRelation) -> tuple[Chain, ...]:
        """The common chains; on the Python path the data source registered first
        (:func:`.lakehouse_source.register_chain`)."""
        chains = super().read_chains(relation)
        if lakehouse_source.is_python(relation):
            return (lakehouse_source.register_chain(relation), *chains)
        return chains

    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """The Python reader's steps (:func:`.lakehouse_source.read_steps`), or Iceberg's
        streaming reader's on the JVM path (:func:`_read_steps`)."""
        if lakehouse_source.is_python(relation):
            return lakehouse_source.read_steps(relation)
        return _read_steps(relation)

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, table)``: no ``format`` call; the table's name."""
        return None, resolved.get("table")

    def sink_options(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath, settings: dict[str, str]
    ) -> tuple[tuple[str, str], ...]:
        """The writer's arguments as ``(name, text)``: ``table``, ``warehouse`` (resolved
        against the file's folder; default ``.sqlstream/warehouse``), ``catalog``,
        ``catalog_uri`` (default the SQLite file ``catalog.db`` in the warehouse),
        ``mode``, ``key_columns`` (``a,b``); then ``engine = 'spark'`` when the target
        Spark minor (``settings``' ``sqlstream.spark_version``) has Iceberg's runtime and
        the catalog is a SQLite file (the JVM path, :mod:`.iceberg_jvm`)."""
        catalog, warehouse, uri = catalog_of(resolved, resolve_path)
        keys = lakehouse.key_names(resolved.get("key_columns"))
        pairs = [
            ("table", ".".join(table_parts(resolved.required("table")))),
            ("warehouse", warehouse),
            ("catalog", catalog),
            ("catalog_uri", uri),
            ("mode", "upsert" if lakehouse.is_upsert(resolved) else "append"),
            ("key_columns", ",".join(keys) or None),
        ]
        jvm = lakehouse_jvm.engine(self.name, settings.get(spark_versions.SETTING, ""))
        if jvm is not None and uri.startswith("sqlite:///"):
            pairs.append((lakehouse.ENGINE, jvm))
        return tuple((k, v) for k, v in pairs if v is not None)


# ---- run time: the foreachBatch writer (imports pyiceberg when called) -----------------


class IcebergWriter(lakehouse.LakehouseWriter):
    """The ``foreachBatch`` function of an ``iceberg`` sink: one catalog commit per
    micro-batch, its snapshots' summaries holding ``(query id, batch id)``.

    Args:
        table: ``namespace.name`` (created with the first micro-batch, its namespace too).
        warehouse: the folder (or URI) of new tables' data and metadata.
        catalog: the SQL catalog's name; catalog_uri: its SQLAlchemy database URL.
        mode, key_columns, complete: see :class:`.lakehouse.LakehouseWriter`.

    Calling it (``writer(df, batch_id)``) raises what pyiceberg raises (Spark then fails
    the query; the batch is retried on restart).
    """

    def __init__(
        self,
        table: str,
        warehouse: str,
        catalog: str = DEFAULT_CATALOG,
        catalog_uri: str | None = None,
        mode: str = "append",
        key_columns=(),
        complete: bool = False,
    ):
        super().__init__(mode, key_columns, complete)
        self.table_name = self.target = table
        local = "://" not in warehouse
        self.warehouse = os.path.abspath(warehouse) if local else warehouse
        self.catalog_name = catalog
        self.catalog_uri = catalog_uri or "sqlite:///" + os.path.join(warehouse, CATALOG_FILE)

    def __repr__(self) -> str:
        return f"IcebergWriter(table={self.table_name!r}, mode={self.mode!r})"

    def catalog(self):
        """The pyiceberg ``SqlCatalog`` (its tables created in the database if missing)."""
        from pyiceberg.catalog.sql import SqlCatalog

        local = "://" not in self.warehouse
        if local:
            os.makedirs(self.warehouse, exist_ok=True)
        location = "file://" + self.warehouse if local else self.warehouse
        with _CATALOG_LOCK:
            return SqlCatalog(self.catalog_name, uri=self.catalog_uri, warehouse=location)

    def load(self, schema=None):
        """The table, or ``None`` when missing; created from Arrow ``schema`` if given."""
        from pyiceberg.exceptions import NoSuchTableError

        catalog = self.catalog()
        identifier = tuple(table_parts(self.table_name))
        try:
            return catalog.load_table(identifier)
        except NoSuchTableError:
            if schema is None:
                return None
        # two queries of one pipeline may create the namespace at once; pyiceberg's
        # ``*_if_not_exists`` check then insert, so the second insert breaks the
        # catalog database's unique key: create under the lock, and after a failure
        # (another process won the race) look again before giving up
        with _CATALOG_LOCK:
            try:
                catalog.create_namespace_if_not_exists(identifier[:-1])
            except Exception:
                if not catalog.namespace_exists(identifier[:-1]):
                    raise
            try:
                return catalog.create_table_if_not_exists(identifier, schema=schema)
            except Exception:
                if not catalog.table_exists(identifier):
                    raise
                return catalog.load_table(identifier)

    @staticmethod
    def last_batch(table, app: str) -> int | None:
        """The batch id of the newest snapshot of ``table`` committed by ``app`` (the
        current snapshot and its ancestors), or ``None``."""
        snapshot = table.current_snapshot()
        while snapshot is not None:
            summary = snapshot.summary
            if summary is not None and summary.get(lakehouse.APP_KEY) == app:
                return int(summary[lakehouse.BATCH_KEY])
            parent = snapshot.parent_snapshot_id
            snapshot = table.snapshot_by_id(parent) if parent is not None else None
        return None

    def committed(self, app: str) -> int | None:
        """The last batch id ``app`` committed (:meth:`last_batch`), or ``None``."""
        table = self.load()
        return None if table is None else self.last_batch(table, app)

    def commit(self, rows, delete_keys, app: str, batch_id: int, overwrite: bool) -> None:
        """One catalog commit (``append``, ``overwrite``, or ``overwrite`` with a filter
        on the keys), its snapshots' summaries holding ``(app, batch_id)``; checked again
        on the loaded table (skipped if committed meanwhile)."""
        table = self.load(rows.schema)
        last = self.last_batch(table, app)
        if last is not None and last >= batch_id:
            return
        props = lakehouse.commit_metadata(app, batch_id)
        with table.transaction() as tx, warnings.catch_warnings():
            # an overwrite whose filter matches no row yet is no news to the user
            warnings.filterwarnings("ignore", "Delete operation did not match any records")
            if overwrite:
                tx.overwrite(rows, snapshot_properties=props)
            elif self.key_columns:
                keys = _key_filter(rows, delete_keys, self.key_columns)
                if keys is None:
                    tx.append(rows, snapshot_properties=props)
                else:
                    tx.overwrite(rows, overwrite_filter=keys, snapshot_properties=props)
            else:
                tx.append(rows, snapshot_properties=props)


def _key_filter(rows, delete_keys, keys: tuple[str, ...]):
    """The pyiceberg row filter that matches the keys of ``rows`` and ``delete_keys``
    (``In`` for one key column, an ``Or`` of ``And``\\ s of ``EqualTo`` for several; a null
    key part ``IsNull``), or ``None`` when there is no key."""
    from pyiceberg.expressions import And, EqualTo, In, IsNull, Or, Reference

    tuples: set[tuple] = set()
    for table in (rows, delete_keys):
        if table is not None and table.num_rows:
            columns = [table.column(k).to_pylist() for k in keys]
            tuples.update(zip(*columns, strict=True))
    if not tuples:
        return None
    if len(keys) == 1 and None not in {t[0] for t in tuples}:
        return In(term=Reference(name=keys[0]), values={t[0] for t in tuples})
    terms = []
    for values in sorted(tuples, key=repr):
        parts = [
            IsNull(term=Reference(name=k))
            if v is None
            else EqualTo(term=Reference(name=k), value=v)
            for k, v in zip(keys, values, strict=True)
        ]
        terms.append(parts[0] if len(parts) == 1 else And(*parts))
    return terms[0] if len(terms) == 1 else Or(*terms)


# ---- as a source: Iceberg's streaming reader (appends), on Spark 4.1


def _check_source(resolved, source) -> None:
    """An ``iceberg`` source read by Iceberg's Spark runtime (the minors of
    :data:`.lakehouse_jvm.ICEBERG_PACKAGES`) reads a catalog in a SQLite file.

    Raises:
        OptionError: ``SS285`` a ``catalog_uri`` that is not a SQLite file (the session
            has no other driver).
    """
    uri = resolved.compiler.get("catalog_uri")
    if uri is not None and lakehouse_jvm.jdbc_uri(uri.text) is None:
        raise OptionError(
            "on this Spark version an iceberg source is read by Iceberg's Spark runtime, "
            "which reads a catalog in a SQLite file only (Spark's session has the SQLite "
            "JDBC driver and no other)",
            uri.value_span,
            source,
            code="SS285",
            hint="catalog_uri = 'sqlite:///…/catalog.db', or leave it out (the warehouse's)",
        )


def _planned(relation: p.SourceRelation, catalog: tuple[str, str, str] | None) -> p.SourceRelation:
    """``relation`` with its catalog ``(catalog, warehouse, catalog_uri)`` in its
    ``settings`` (read by :func:`catalog_settings`) and no Spark options."""
    if catalog is None:
        return relation
    names = ("catalog", "warehouse", "catalog_uri")
    return dataclasses.replace(
        relation, settings=(*relation.settings, *zip(names, catalog, strict=True))
    )


def _read_steps(relation: p.SourceRelation):
    """``format('iceberg')``, the rate limits given (``option('streaming-max-files-per-
    micro-batch', n)``, …), ``load('<catalog>.<namespace>.<name>')``: Iceberg's streaming
    reader of the table (each new snapshot's appended rows; its schema is the table's, no
    ``schema`` call). Source: Iceberg docs *Spark Structured Streaming* ("Streaming
    Reads", "Limit input rate")."""
    catalog = dict(relation.options).get("catalog", "sqlstream")
    rates = lakehouse_offsets.RATE_OPTIONS["iceberg"]
    options = [Step("option", (k, v)) for k, v in relation.options if k in rates]
    load = Step("load", (f"{catalog}.{relation.path}",))
    return (Step("format", ("iceberg",)), *options, load)
