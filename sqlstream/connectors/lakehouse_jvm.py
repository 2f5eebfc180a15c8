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
    return lakehouse.SPARK if spark_version in _PACKAGES.get(connector, {}) else None


def formats(plan: p.Plan) -> tuple[str, ...]:
    """The formats (``delta``, ``iceberg``) whose Spark package ``plan`` needs: its
    JVM-path sinks, and its ``delta`` and ``iceberg`` sources read by their Spark package
    (read format ``delta`` / ``iceberg``; the Python data source's ``sqlstream_delta`` /
    ``sqlstream_iceberg`` need none), in that order."""
    used = {q.sink.connector for q in plan.queries if lakehouse.is_jvm(q.sink)}
    used |= {
        r.format
        for r in plan.relations
        if isinstance(r, p.SourceRelation) and r.format in _PACKAGES
    }
    return tuple(f for f in ("delta", "iceberg") if f in used)


def uses_jvm(plan: p.Plan) -> bool:
    """Whether ``plan`` has a JVM-path sink or a ``delta`` or ``iceberg`` source."""
    return bool(formats(plan))


def packages(plan: p.Plan) -> tuple[str, ...]:
    """The Spark packages (with versions) the JVM-path sinks and the ``delta`` and
    ``iceberg`` sources of ``plan`` need."""
    return tuple(c for f in formats(plan) for c in _PACKAGES[f].get(plan.spark_version, ()))


SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
"""Delta's setting for the number of partitions of the job that computes a table's
snapshot (its log replayed: Delta's ``DeltaSQLConf``, default 50). Delta runs that job
before each commit of a table it has not read at that version — once per micro-batch
here — and its 50 tasks were most of the JVM path's cost per micro-batch
(``bench/README.md``, "The Python path against the JVM path")."""


def session_settings(plan: p.Plan, cores: int = 2) -> dict[str, str]:
    """The session settings the JVM-path sinks and lakehouse sources of ``plan`` need:
    for Delta :data:`DELTA_SETTINGS` and :data:`SNAPSHOT_PARTITIONS` = ``cores`` (as
    ``spark.sql.shuffle.partitions``: one task per core); for Iceberg its SQL extensions
    and a Spark catalog per Iceberg catalog (:func:`catalog_settings`); ``{}`` for none.
    ``spark.sql.extensions`` lists both formats' extensions when both are used."""
    used = formats(plan)
    settings: dict[str, str] = (
        {**DELTA_SETTINGS, SNAPSHOT_PARTITIONS: str(cores)} if "delta" in used else {}
    )
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
        """Write micro-batch ``batch_id`` (its DataFrame ``df``), unless committed before.

        An upsert reads the micro-batch twice (the last row per key is picked, then Delta's
        ``MERGE`` reads its source), so it is persisted for the call: computed once, in one
        order (:func:`last_per_key`), and unpersisted after the commit."""
        spark = df.sparkSession
        app = lakehouse.app_id(df, f"{type(self).__name__}:{self.target}")
        last = self.committed(app)
        if last is not None and last >= batch_id:
            lakehouse.run_nowhere(df)
            return
        exists = last is not None or _table(self.path) is not None
        if self.mode != "upsert" or self.complete:
            self._save(df, app, batch_id)
            return
        batch = df.persist()
        try:
            rows = last_per_key(batch, self.key_columns)
            if exists:
                self._merge(spark, rows, app, batch_id)
            else:
                self._save(rows, app, batch_id)
        finally:
            batch.unpersist()

    def _save(self, df, app: str, batch_id: int) -> None:
        """Append ``df`` (overwrite in complete mode) with the transaction identifier."""
        (
            df.write.format("delta")
            .mode("overwrite" if self.complete else "append")
            .option("txnAppId", app)
            .option("txnVersion", str(batch_id))
            .option("userMetadata", f"{lakehouse.APP_KEY}={app};{lakehouse.BATCH_KEY}={batch_id}")
            .save(self.path)
        )

    def _merge(self, spark, rows, app: str, batch_id: int) -> None:
        """``MERGE`` ``rows`` (one per key) into the table by key, with the transaction
        identifier: a key matches when its values are equal (``=``, as delta-rs's merge on
        the Python path: a ``NULL`` key matches no row and is inserted)."""
        view = f"sqlstream_merge_{abs(hash((app, self.path)))}_{batch_id}"
        rows.createOrReplaceTempView(view)
        condition = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in self.key_columns)
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


def last_per_key(df, keys: tuple[str, ...]):
    """``df`` with one row per key: the last one in the micro-batch's order — the order
    ``DataFrame.toArrow`` collects it in, partition by partition and each partition's rows
    in turn, which is the Python path's rule (:func:`.lakehouse.last_per_key` of the
    collected batch). That position is ``monotonically_increasing_id()`` (the partition's
    index in the upper 31 bits, the row's position in it below: PySpark's
    ``functions.monotonically_increasing_id``), taken over ``df`` as it is; ``df`` should be
    persisted (as :class:`DeltaSparkWriter` does): a recomputed shuffle may deliver a
    partition's rows in another order, so only a computed-once batch has one order."""
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


# ---- run time: a session given by the user (Pipeline.start) -----------------------------

EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"


def check_session(spark, plan: p.Plan) -> None:
    """Refuse ``spark`` for ``plan`` when ``plan`` writes or reads Delta on the JVM path
    (:func:`formats`) and the session lacks what Delta's writer and reader need: the package's classes
    (:data:`DELTA_PACKAGES`, looked up in the driver's class loader — not over Spark
    Connect, whose server holds them) and the settings :data:`DELTA_SETTINGS` (static:
    they must be given when the session is built). ``exec`` builds its session with all
    three; a session the user builds (``Pipeline.start(spark)``) needs them too.

    Raises:
        SqlStreamError: ``SS545`` at the first ``delta`` sink (or source) on the JVM
            path, naming the settings to add; nothing was run.
    """
    if "delta" not in formats(plan):
        return
    from sqlstream.diagnostics.errors import SqlStreamError

    wanted = {"spark.jars.packages": ",".join(DELTA_PACKAGES.get(plan.spark_version, ()))}
    wanted.update(DELTA_SETTINGS)
    missing = [k for k in wanted if k != "spark.jars.packages" and not _has_setting(spark, k)]
    if not _has_classes(spark):
        missing.insert(0, "spark.jars.packages")
    if not missing:
        return
    spans = [q.sink.span for q in plan.queries if lakehouse.is_jvm(q.sink)]
    spans += [
        r.span for r in plan.relations if isinstance(r, p.SourceRelation) and r.format == "delta"
    ]
    added = ", ".join(f"{k}={wanted[k]}" for k in missing)
    raise SqlStreamError(
        f"a delta table on Spark {plan.spark_version} is written and read by Delta's Spark "
        f"package, and this session lacks {', '.join(missing)}",
        spans[0] if spans else None,
        plan.source,
        hint=f"build the session with {added} (SparkSession.builder.config), or run the "
        "file with sqlstream exec, which adds them",
        code="SS545",
    )


def _has_setting(spark, key: str) -> bool:
    """Whether the session's ``key`` holds :data:`DELTA_SETTINGS`' value (one of the
    comma-separated ``spark.sql.extensions``)."""
    value = spark.conf.get(key, None) or ""
    wanted = DELTA_SETTINGS[key]
    return (
        wanted in (v.strip() for v in value.split(","))
        if "extensions" in key
        else (value == wanted)
    )


def _has_classes(spark) -> bool:
    """Whether Delta's session extension class loads in the driver (``True`` over Spark
    Connect, where the driver is the server's)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return True
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(EXTENSION_CLASS, False, loader)
    except Exception:  # noqa: BLE001 - py4j's Py4JJavaError: ClassNotFoundException
        return False
    return True
