"""The JVM write path of the ``delta`` sink: on the Spark minors whose Delta package is
served and runs, a micro-batch is written by Delta's own Spark writer from
``foreachBatch`` (the package added to ``spark.jars.packages``, Delta's session extension
and catalog set in the session's configuration); elsewhere the Python path
(:mod:`.delta`, delta-rs) writes.

The choice is made once, when the sink is planned, from the target Spark minor
(``CompileContext.spark_version``): :func:`engine`. ``translate`` prints the writer the
program calls::

    .foreachBatch(importlib.import_module('sqlstream.connectors.lakehouse_jvm')
        .DeltaSparkWriter(path='/abs/out/hourly_delta', mode='upsert', key_columns=[…]))

The packages per minor (:data:`DELTA_PACKAGES`) were each run in a real session here
(``tests/support/lakehouse_jvm.py``); Delta publishes none that runs on Spark 4.3
(``delta-spark_2.13:4.3.0`` is built against Spark 4.1 and fails at the first read).
The ``iceberg`` sink's JVM path (Iceberg's Spark runtime, :data:`ICEBERG_PACKAGES`, on
4.0 and 4.1) is :mod:`.iceberg_jvm`; this module chooses it and gives the session its
package and settings (:func:`packages`, :func:`session_settings`).

Exactly once, as on the Python path: each commit carries Delta's *transaction
identifier* ``(txnAppId, txnVersion)`` = (the query's id, the batch id) — the write
options ``txnAppId`` / ``txnVersion`` of an append or overwrite, the SQL settings
``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` around a ``MERGE`` — and before
the commit the table's log is read for that application's last version (delta-rs): a replayed
micro-batch runs into Spark's ``noop`` sink and changes nothing.

Sources: Delta Lake guide *Table streaming reads and writes* ("Idempotent table writes in
foreachBatch": ``txnAppId``, ``txnVersion``), *Table deletes, updates, and merges*
(``MERGE INTO delta.`path```), *Quickstart* (``spark.sql.extensions``,
``spark.sql.catalog.spark_catalog``); Delta protocol *Transaction Identifiers*.
"""

from __future__ import annotations

import os

from sqlstream.connectors import lakehouse
from sqlstream.ir import plan as p

ENGINE = "engine"
"""The sink option (in :attr:`~sqlstream.ir.plan.Sink.options`) that names the writer:
``spark`` for the JVM path; absent for the Python path."""
SPARK = "spark"
DELTA_PACKAGES: dict[str, tuple[str, ...]] = {
    "4.0": ("io.delta:delta-spark_2.13:4.0.1",),
    "4.1": ("io.delta:delta-spark_4.1_2.13:4.1.0",),
    "4.2": ("io.delta:delta-spark_2.13:4.2.0",),
}
"""Spark minor → Delta's Spark package (``group:artifact:version``) that runs on it."""
DELTA_SETTINGS = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
"""The session settings Delta's writer and ``MERGE`` need (Delta *Quickstart*)."""
SQLITE_JDBC = "org.xerial:sqlite-jdbc:3.46.1.3"
ICEBERG_PACKAGES: dict[str, tuple[str, ...]] = {
    "4.1": ("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.11.0", SQLITE_JDBC),
}
"""Spark minor → Iceberg's Spark runtime (``group:artifact:version``) that runs on it, and
the SQLite JDBC driver of the catalog. Iceberg publishes no runtime for Spark 4.2 or 4.3
(and the 4.1 runtime fails on Spark 4.3 at the first statement). On Spark 4.0 the served
runtime (``iceberg-spark-runtime-4.0_2.13:1.10.0``) creates a table over the SQLite catalog
and then fails the next commit of a streaming query (measured: ``JdbcTableOperations``
"Unknown failure", not explained yet), so 4.0 stays on the Python path too."""
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
"""Iceberg's SQL extensions (``spark.sql.extensions``): its ``MERGE INTO`` rewrite."""
SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
WRITER = "DeltaSparkWriter"
_PACKAGES = {"delta": DELTA_PACKAGES, "iceberg": ICEBERG_PACKAGES}


def engine(connector: str, spark_version: str) -> str | None:
    """``'spark'`` when a sink of ``connector`` (``delta`` or ``iceberg``) is written by
    Spark's own package on Spark ``spark_version`` (a major.minor), else ``None`` (the
    Python path)."""
    return SPARK if spark_version in _PACKAGES.get(connector, {}) else None


def is_jvm(sink: p.Sink) -> bool:
    """Whether ``sink`` was planned onto the JVM path (its :data:`ENGINE` option)."""
    return dict(sink.options).get(ENGINE) == SPARK


def formats(plan: p.Plan) -> tuple[str, ...]:
    """The formats (``delta``, ``iceberg``) whose Spark package ``plan`` needs: its
    JVM-path sinks, and its ``delta`` sources and ``iceberg`` sources (read by their Spark
    package only), in that order."""
    used = {q.sink.connector for q in plan.queries if is_jvm(q.sink)}
    used |= {
        r.connector
        for r in plan.relations
        if isinstance(r, p.SourceRelation) and r.connector in _PACKAGES
    }
    return tuple(f for f in ("delta", "iceberg") if f in used)


def uses_jvm(plan: p.Plan) -> bool:
    """Whether ``plan`` has a JVM-path sink or a ``delta`` or ``iceberg`` source."""
    return bool(formats(plan))


def packages(plan: p.Plan) -> tuple[str, ...]:
    """The Spark packages (with versions) the JVM-path sinks and the ``delta`` and
    ``iceberg`` sources of ``plan`` need."""
    return tuple(c for f in formats(plan) for c in _PACKAGES[f].get(plan.spark_version, ()))


def session_settings(plan: p.Plan) -> dict[str, str]:
    """The session settings the JVM-path sinks and lakehouse sources of ``plan`` need:
    :data:`DELTA_SETTINGS` for Delta; for Iceberg its SQL extensions and a Spark catalog
    per Iceberg catalog (:func:`catalog_settings`); ``{}`` for none.
    ``spark.sql.extensions`` lists both formats' extensions when both are used."""
    used = formats(plan)
    settings: dict[str, str] = dict(DELTA_SETTINGS) if "delta" in used else {}
    if "iceberg" in used:
        extensions = [settings.get("spark.sql.extensions"), ICEBERG_EXTENSIONS]
        settings["spark.sql.extensions"] = ",".join(e for e in extensions if e)
        settings.update(catalog_settings(plan))
    return settings


# ---- Iceberg's Spark catalog over the SQL catalog (the iceberg sink's JVM path, sources)


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
                    options.get("catalog", "sqlstream"),  # always there: the sink's options
                    options["warehouse"],
                    options["catalog_uri"],
                )
            )
    return settings


# ---- run time: the foreachBatch writer (runs in the query's session) -------------------


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class DeltaSparkWriter(lakehouse.LakehouseWriter):
    """The ``foreachBatch`` function of a ``delta`` sink on the JVM path: one Delta commit
    per micro-batch by Delta's Spark writer, with the transaction identifier
    ``(query id, batch id)``.

    Args:
        path: the table's folder or URI (created by the first micro-batch).
        mode, key_columns, complete: see :class:`.lakehouse.LakehouseWriter`.

    Calling it (``writer(df, batch_id)``) raises what Delta raises (Spark then fails the
    query; the batch is retried on restart).
    """

    def __init__(self, path: str, mode: str = "append", key_columns=(), complete: bool = False):
        super().__init__(mode, key_columns, complete)
        self.path = self.target = path

    def __repr__(self) -> str:
        return f"DeltaSparkWriter(path={self.path!r}, mode={self.mode!r})"

    def committed(self, app: str) -> int | None:
        """The last transaction version ``app`` committed to the table (its log's ``txn``
        actions, read with delta-rs's ``transaction_version``), or ``None`` (no table, or
        none)."""
        table = _table(self.path)
        return None if table is None else table.transaction_version(app)

    def __call__(self, df, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (its DataFrame ``df``), unless committed before."""
        spark = df.sparkSession
        app = lakehouse.app_id(df, f"{type(self).__name__}:{self.target}")
        last = self.committed(app)
        if last is not None and last >= batch_id:
            lakehouse.run_nowhere(df)
            return
        exists = last is not None or _table(self.path) is not None
        if self.complete or not self.key_columns or not exists:
            if self.mode == "upsert" and not self.complete:
                df = _last_per_key(df, self.key_columns)
            (
                df.write.format("delta")
                .mode("overwrite" if self.complete else "append")
                .option("txnAppId", app)
                .option("txnVersion", str(batch_id))
                .option(
                    "userMetadata", f"{lakehouse.APP_KEY}={app};{lakehouse.BATCH_KEY}={batch_id}"
                )
                .save(self.path)
            )
            return
        view = f"sqlstream_merge_{abs(hash((app, self.path)))}_{batch_id}"
        _last_per_key(df, self.key_columns).createOrReplaceTempView(view)
        condition = " AND ".join(f"t.{_quoted(k)} <=> s.{_quoted(k)}" for k in self.key_columns)
        table = "delta." + _quoted(self.path)
        keys = ("spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion")
        spark.conf.set(keys[0], app)
        spark.conf.set(keys[1], str(batch_id))
        try:
            spark.sql(
                f"MERGE INTO {table} AS t USING {view} AS s ON {condition} "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
        finally:
            for key in keys:
                spark.conf.unset(key)
            spark.catalog.dropTempView(view)


def _table(path: str):
    """The ``deltalake.DeltaTable`` at ``path``, or ``None`` when there is none."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(path)
    except TableNotFoundError:
        return None


def _last_per_key(df, keys: tuple[str, ...]):
    """``df`` with one row per key: the last one in the micro-batch's order."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order, rank = "__sqlstream_order", "__sqlstream_rank"
    window = Window.partitionBy(*[F.col(_quoted(k)) for k in keys]).orderBy(F.col(order).desc())
    return (
        df.withColumn(order, F.monotonically_increasing_id())
        .withColumn(rank, F.row_number().over(window))
        .where(F.col(rank) == 1)
        .drop(order, rank)
    )
