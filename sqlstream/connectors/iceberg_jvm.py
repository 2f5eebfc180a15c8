"""The JVM path of the ``iceberg`` sink: on the Spark minors whose Iceberg runtime is served
(4.1, :data:`PACKAGES`; 4.0's runtime fails a streaming query's second commit), a micro-batch is written by Iceberg's own Spark writer
from ``foreachBatch``, into the same SQL catalog the Python path (:mod:`.iceberg`,
pyiceberg) writes; elsewhere the Python path writes.

The choice is made once, when the sink is planned, from the target Spark minor
(``CompileContext.spark_version``, :func:`.lakehouse_jvm.engine`), and only for a catalog
in a SQLite file (the default; ``catalog_uri = 'sqlite:///…'``): the session has the
SQLite JDBC driver and no other. ``translate`` prints the writer the program calls::

    .foreachBatch(importlib.import_module('sqlstream.connectors.iceberg_jvm')
        .IcebergSparkWriter(table='lake.hourly', warehouse='/abs/.sqlstream/warehouse',
            catalog='sqlstream', catalog_uri='sqlite:////abs/.sqlstream/warehouse/catalog.db',
            mode='append'))

One catalog, one table, both paths: the session gets Iceberg's runtime and
``org.xerial:sqlite-jdbc`` (:data:`PACKAGES`), Iceberg's SQL extensions
(:data:`EXTENSIONS`) and a Spark catalog named as the sink's ``catalog``
(:func:`catalog_conf`): ``spark.sql.catalog.<catalog>`` = ``SparkCatalog`` with
``type = jdbc`` (Iceberg's ``JdbcCatalog``), ``uri = jdbc:sqlite:<the same file>``,
``warehouse``, ``jdbc.schema-version = V1`` (the tables' layout pyiceberg's ``SqlCatalog``
reads and writes) and ``cache-enabled = false`` (pyiceberg commits to the same tables).
The Spark catalog's name must be the pyiceberg catalog's: ``JdbcCatalog`` and ``SqlCatalog``
both keep it in the ``catalog_name`` column of ``iceberg_tables``.

Exactly once, as on the Python path: each commit's snapshot summary holds
:data:`.lakehouse.APP_KEY` (the query's id) and :data:`.lakehouse.BATCH_KEY` (the batch id);
before a commit the table's current snapshot and its ancestors are searched for the query's
last batch id (pyiceberg, :meth:`.iceberg.IcebergWriter.committed`), and a replayed
micro-batch runs into Spark's ``noop`` sink (:func:`.lakehouse.run_nowhere`). How the
properties get into the snapshot:

* append, complete mode (an overwrite of every row) and the first micro-batch (the table
  created): ``DataFrameWriterV2`` with the write options ``snapshot-property.<key>``
  (Iceberg's ``SparkWriteConf.extraSnapshotMetadata``: "snapshot-property.*" write options
  become snapshot summary properties; Iceberg docs *Spark Configuration*, "Write options");
* upsert (``mode = 'upsert'``): SQL ``MERGE INTO`` takes no write options, and Iceberg reads
  no session setting for summary properties (``SparkSQLProperties`` has none); the MERGE
  runs inside ``org.apache.iceberg.spark.CommitMetadata.withCommitProperties(properties,
  callable, exceptionClass)``, whose properties (a thread-local map) ``SparkWrite`` adds to
  the snapshot it commits (Iceberg Javadoc ``CommitMetadata``; docs *Spark Configuration*:
  "if you run SQL statements, you could use org.apache.iceberg.spark.CommitMetadata to add
  entries with custom-keys"). The callable is a Python object implementing
  ``java.util.concurrent.Callable`` through Py4J; PySpark's pinned-thread mode runs it, and
  the ``MERGE`` it issues, on the Java thread that called ``withCommitProperties``.

Sources: Iceberg docs *Spark Writes* (``writeTo``, ``MERGE INTO``), *Spark Configuration*
(catalogs, ``type = jdbc``, write options), *JDBC catalog*; Iceberg Javadoc
``CommitMetadata``.
"""

from __future__ import annotations

import threading

from sqlstream.connectors import lakehouse
from sqlstream.connectors.iceberg import DEFAULT_CATALOG, IcebergWriter, table_parts
from sqlstream.connectors.lakehouse_jvm import ICEBERG_EXTENSIONS as EXTENSIONS
from sqlstream.connectors.lakehouse_jvm import ICEBERG_PACKAGES as PACKAGES
from sqlstream.connectors.lakehouse_jvm import catalog_conf, last_per_key

__all__ = ["EXTENSIONS", "PACKAGES", "IcebergSparkWriter", "catalog_conf"]

WRITER = "IcebergSparkWriter"
# the queries of one driver write their Iceberg tables in turns: two writing the one SQLite
# catalog at once fail (measured: creating one namespace at once, JdbcCatalog's check and
# insert are not one transaction; on Iceberg 1.10 two table creations at once fail with
# JdbcTableOperations' "Unknown failure", SQLite's lock of the file)
_WRITE_LOCK = threading.Lock()


# ---- run time: the foreachBatch writer (runs in the query's session) -------------------


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class _Call:
    """A Python callable as a ``java.util.concurrent.Callable`` (Py4J); what it raises is
    kept in :attr:`error` and raised again by the caller."""

    def __init__(self, function):
        self.function, self.error = function, None

    def call(self):
        try:
            self.function()
        except BaseException as error:  # raised again on the Python side
            self.error = error
        return None

    class Java:
        implements = ["java.util.concurrent.Callable"]


class IcebergSparkWriter(lakehouse.LakehouseWriter):
    """The ``foreachBatch`` function of an ``iceberg`` sink on the JVM path: one Iceberg
    commit per micro-batch by Iceberg's Spark writer, its snapshot's summary holding
    ``(query id, batch id)``.

    Args:
        table: ``namespace.name`` (created with the first micro-batch, its namespace too).
        warehouse, catalog, catalog_uri: as :class:`.iceberg.IcebergWriter` (``catalog_uri``
            a SQLite URL).
        mode, key_columns, complete: see :class:`.lakehouse.LakehouseWriter`.

    Calling it (``writer(df, batch_id)``) raises what Spark and Iceberg raise (Spark then
    fails the query; the batch is retried on restart).
    """

    def __init__(
        self,
        table: str,
        warehouse: str,
        catalog: str | None = None,
        catalog_uri: str | None = None,
        mode: str = "append",
        key_columns=(),
        complete: bool = False,
    ):
        super().__init__(mode, key_columns, complete)
        catalog = catalog or DEFAULT_CATALOG
        self.python = IcebergWriter(table, warehouse, catalog, catalog_uri)
        self.target = table
        self.conf = catalog_conf(catalog, self.python.warehouse, self.python.catalog_uri)
        self.name = ".".join(_quoted(n) for n in [catalog, *table_parts(table)])

    def __repr__(self) -> str:
        return f"IcebergSparkWriter(table={self.target!r}, mode={self.mode!r})"

    def committed(self, app: str) -> int | None:
        """The last batch id ``app`` committed (the table's snapshots, read with pyiceberg:
        :meth:`.iceberg.IcebergWriter.committed`), or ``None``."""
        return self.python.committed(app)

    def use_catalog(self, spark) -> None:
        """Give ``spark`` (the micro-batch's session: the streaming query's clone of the
        session it was started in) this sink's Spark catalog (:func:`catalog_conf`) when its
        settings name another database or none — a session ``exec`` did not start (the run
        API): a catalog Spark loaded before with other settings is dropped from Spark's
        catalog manager (``CatalogManager.reset``), so it is loaded again with these."""
        uri_key = next(k for k in self.conf if k.endswith(".uri"))
        if spark.conf.get(uri_key, None) == self.conf[uri_key]:
            return
        for key, value in self.conf.items():
            spark.conf.set(key, value)
        spark._jsparkSession.sessionState().catalogManager().reset()

    def __call__(self, df, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (its DataFrame ``df``), unless committed before."""
        spark = df.sparkSession
        app = lakehouse.app_id(df, f"{type(self).__name__}:{self.target}")
        with _WRITE_LOCK:  # pyiceberg's reads of the catalog too
            last = self.committed(app)
            if last is not None and last >= batch_id:
                lakehouse.run_nowhere(df)
                return
            self.use_catalog(spark)
            props = lakehouse.commit_metadata(app, batch_id)
            if self.mode != "upsert" or self.complete:
                self._write(spark, df, props, batch_id)
                return
            batch = df.persist()  # one order of the rows (see last_per_key)
            try:
                self._write(spark, last_per_key(batch, self.key_columns), props, batch_id)
            finally:
                batch.unpersist()

    def _write(self, spark, df, props: dict, batch_id: int) -> None:
        """One commit of ``df``: the table created, overwritten, appended to or merged into."""
        from pyspark.sql import functions as F

        exists = self.python.load() is not None
        if not exists or self.complete or not self.key_columns:
            writer = df.writeTo(self.name)
            for key, value in props.items():
                writer = writer.option(f"snapshot-property.{key}", value)
            if not exists:
                namespace = self.name.rsplit(".", 1)[0]
                spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
                writer.create()
            elif self.complete:
                writer.overwrite(F.lit(True))
            else:
                writer.append()
            return
        self._merge(spark, df, props, batch_id)

    def _merge(self, spark, df, props: dict, batch_id: int) -> None:
        """``MERGE INTO`` the table by :attr:`key_columns` (null-safe equality) from ``df``,
        inside ``CommitMetadata.withCommitProperties(props, …)``."""
        view = f"sqlstream_iceberg_merge_{abs(hash((self.name, id(self))))}_{batch_id}"
        # the MERGE's source must be deterministic (Spark's INVALID_NON_DETERMINISTIC_
        # EXPRESSIONS: the last row per key is ranked by monotonically_increasing_id)
        df.localCheckpoint(eager=True).createOrReplaceTempView(view)
        condition = " AND ".join(f"t.{_quoted(k)} <=> s.{_quoted(k)}" for k in self.key_columns)
        statement = (
            f"MERGE INTO {self.name} AS t USING {view} AS s ON {condition} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        jvm = spark._jvm
        properties = jvm.java.util.HashMap()
        for key, value in props.items():
            properties.put(key, str(value))
        call = _Call(lambda: spark.sql(statement))
        try:
            jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
                properties, call, jvm.java.lang.RuntimeException._java_lang_class
            )
        finally:
            spark.catalog.dropTempView(view)
        if call.error is not None:
            raise call.error
