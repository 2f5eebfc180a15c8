"""The JVM path of the ``iceberg`` sink: on the Spark minors whose Iceberg runtime is served
(4.0 and 4.1, :data:`PACKAGES`), a micro-batch is written by Iceberg's own Spark writer
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

import os
import threading

# ``iceberg`` imports this module (through .lakehouse_jvm): its names are read at call time
from sqlstream.connectors import iceberg, lakehouse
from sqlstream.ir import plan as p

SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
PACKAGES: dict[str, tuple[str, ...]] = {
    "4.0": ("org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:1.10.0", SQLITE_JDBC),
    "4.1": ("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0", SQLITE_JDBC),
}
"""Spark minor → Iceberg's Spark runtime (``group:artifact:version``) that runs on it, and
the SQLite JDBC driver of the catalog. Iceberg publishes no runtime for Spark 4.2 or 4.3
(and the 4.1 runtime fails on Spark 4.3 at the first statement), so there the Python path
writes."""
EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
"""Iceberg's SQL extensions (``spark.sql.extensions``): its ``MERGE INTO`` rewrite."""
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
WRITER = "IcebergSparkWriter"
# two queries of one driver creating one namespace at once: JdbcCatalog's check and insert
# are not one transaction (the second insert fails on the table's key), so they take turns
_CREATE_LOCK = threading.Lock()


def jdbc_uri(catalog_uri: str) -> str | None:
    """The JDBC URL of a SQLite catalog's SQLAlchemy URL (``sqlite:////abs/catalog.db`` →
    ``jdbc:sqlite:/abs/catalog.db``; a relative file made absolute), or ``None`` for another database (the JVM path has
    the SQLite driver only)."""
    prefix = "sqlite:///"
    if not catalog_uri.startswith(prefix):
        return None
    return "jdbc:sqlite:" + os.path.abspath(catalog_uri[len(prefix) :])


def catalog_conf(catalog: str, warehouse: str, catalog_uri: str) -> dict[str, str]:
    """The Spark settings of the Spark catalog ``catalog`` over the SQL catalog at
    ``catalog_uri`` (a SQLite SQLAlchemy URL, see :func:`jdbc_uri`), new tables under
    ``warehouse`` (a folder or URI)."""
    prefix = f"spark.sql.catalog.{catalog}"
    location = "file://" + os.path.abspath(warehouse) if "://" not in warehouse else warehouse
    return {
        prefix: SPARK_CATALOG,
        f"{prefix}.type": "jdbc",
        f"{prefix}.uri": jdbc_uri(catalog_uri) or catalog_uri,
        f"{prefix}.warehouse": location,
        f"{prefix}.jdbc.schema-version": "V1",
        f"{prefix}.cache-enabled": "false",
    }


def catalog_settings(plan: p.Plan) -> dict[str, str]:
    """The settings of a Spark catalog for each Iceberg catalog an ``iceberg`` source of
    ``plan`` reads or a JVM-path ``iceberg`` sink writes (:func:`catalog_conf` of its
    options), sources first."""
    settings: dict[str, str] = {}
    for relation in plan.relations:
        found = dict(getattr(relation, "settings", ()))
        if getattr(relation, "connector", None) == "iceberg" and "catalog_uri" in found:
            settings.update(
                catalog_conf(found["catalog"], found["warehouse"], found["catalog_uri"])
            )
    for query in plan.queries:
        options = dict(query.sink.options)
        if query.sink.connector == "iceberg" and options.get("engine") == "spark":
            settings.update(
                catalog_conf(
                    options.get("catalog", iceberg.DEFAULT_CATALOG),
                    options["warehouse"],
                    options["catalog_uri"],
                )
            )
    return settings


# ---- as a source: Iceberg's streaming reader (appends) -----------------------------------


def check_source(resolved, source, spark_version: str) -> None:
    """An ``iceberg`` source is read by Iceberg's Spark runtime: on the minors of
    :data:`PACKAGES`, from a catalog in a SQLite file.

    Raises:
        OptionError: ``SS284`` Spark ``spark_version`` has no Iceberg runtime; ``SS285`` a
            ``catalog_uri`` that is not a SQLite file (the session has no other driver).
    """
    from sqlstream.diagnostics.errors import OptionError

    where = resolved.compiler.get("connector")
    if spark_version not in PACKAGES:
        served = ", ".join(PACKAGES)
        raise OptionError(
            f"an iceberg source is read by Iceberg's Spark runtime, which is served for "
            f"Spark {served}; not for Spark {spark_version}",
            where.value_span if where is not None else None,
            source,
            code="SS284",
            hint=f"run on Spark {served} (SET 'sqlstream.spark_version' names the target)",
        )
    uri = resolved.compiler.get("catalog_uri")
    if uri is not None and jdbc_uri(uri.text) is None:
        raise OptionError(
            "an iceberg source reads a catalog in a SQLite file only (Spark's session has "
            "the SQLite JDBC driver and no other)",
            uri.value_span,
            source,
            code="SS285",
            hint="catalog_uri = 'sqlite:///…/catalog.db', or leave it out (the warehouse's)",
        )


def planned(relation: p.SourceRelation, catalog: tuple[str, str, str] | None) -> p.SourceRelation:
    """``relation`` with its catalog ``(catalog, warehouse, catalog_uri)`` in its
    ``settings`` (read by :func:`catalog_settings`) and no Spark options."""
    import dataclasses

    if catalog is None:
        return relation
    names = ("catalog", "warehouse", "catalog_uri")
    return dataclasses.replace(
        relation, settings=(*relation.settings, *zip(names, catalog, strict=True))
    )


def read_steps(relation: p.SourceRelation):
    """``format('iceberg')``, ``load('<catalog>.<namespace>.<name>')``: Iceberg's streaming
    reader of the table (each new snapshot's appended rows; its schema is the table's, no
    ``schema`` call). Source: Iceberg docs *Spark Structured Streaming* ("Streaming
    Reads")."""
    from sqlstream.ir.calls import Step

    return (Step("format", ("iceberg",)), Step("load", (relation.path,)))


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
        catalog = catalog or iceberg.DEFAULT_CATALOG
        self.python = iceberg.IcebergWriter(table, warehouse, catalog, catalog_uri)
        self.target = table
        self.conf = catalog_conf(catalog, self.python.warehouse, self.python.catalog_uri)
        self.name = ".".join(_quoted(n) for n in [catalog, *iceberg.table_parts(table)])

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
        from pyspark.sql import functions as F

        from sqlstream.connectors.lakehouse_jvm import _last_per_key

        spark = df.sparkSession
        app = lakehouse.app_id(df, f"{type(self).__name__}:{self.target}")
        last = self.committed(app)
        if last is not None and last >= batch_id:
            lakehouse.run_nowhere(df)
            return
        self.use_catalog(spark)
        props = lakehouse.commit_metadata(app, batch_id)
        if self.mode == "upsert" and not self.complete:
            df = _last_per_key(df, self.key_columns)
        exists = self.python.load() is not None
        if not exists or self.complete or not self.key_columns:
            writer = df.writeTo(self.name)
            for key, value in props.items():
                writer = writer.option(f"snapshot-property.{key}", value)
            if not exists:
                namespace = self.name.rsplit(".", 1)[0]
                with _CREATE_LOCK:
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
