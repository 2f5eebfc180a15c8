"""Binder: executes a :class:`~sqlstream.plan.Plan` with PySpark.

The only module that imports pyspark. It applies ``SET`` settings, reads every source
(``spark.readStream`` / ``spark.read``), defines the temporary views in plan order, and
starts each query with ``writeStream`` (format, output mode, trigger, checkpoint
location, query name). Spark's errors become :class:`~sqlstream.errors.QueryFailedError`
pointing at the statement that caused them.

Source: PySpark API ``DataStreamReader``, ``DataStreamWriter``, ``DataFrame.withWatermark``,
``DataFrame.dropDuplicates`` / ``dropDuplicatesWithinWatermark`` (Spark 4.1).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from py4j.protocol import Py4JJavaError

from sqlstream import plan as p
from sqlstream.errors import OptionError, QueryFailedError

Report = Callable[[str], None]


def _first_paragraph(text: str) -> str:
    kept = []
    for line in text.strip().splitlines():
        stripped = line.strip()
        if stripped.startswith(("at ", "JVM stacktrace:", "== ", "=== ", "Caused by:")):
            break
        kept.append(stripped)
    return " ".join(part for part in kept if part).strip()


def _root_cause(exc: BaseException) -> str | None:
    """The message of the innermost cause of a PySpark or Py4J error, if any.

    PySpark keeps causes as ``_cause`` (converted exceptions) and the JVM exception as
    ``_origin`` (``java_exception`` for Py4J errors); both chains are followed.
    """
    node, found = exc, None
    while getattr(node, "_cause", None) is not None:
        node = node._cause
        found = getattr(node, "_desc", None) or str(node)
    java = getattr(node, "_origin", None) or getattr(node, "java_exception", None)
    try:
        while java is not None and java.getCause() is not None:
            java = java.getCause()
            found = f"{java.getClass().getSimpleName()}: {java.getMessage()}"
    except Exception:  # noqa: BLE001 - the JVM may be gone; the main message still stands
        pass
    return found


def spark_message(exc: BaseException, limit: int = 600) -> str:
    """One paragraph for a Spark/Py4J error: its first paragraph (no stack frames, no plan
    dump) and, when there is one, the innermost cause (e.g. the bad value in the input)."""
    if isinstance(exc, Py4JJavaError):
        text = str(exc.java_exception.getMessage() or exc.java_exception.toString())
    elif isinstance(exc, PySparkException) and hasattr(exc, "getMessage"):
        text = exc.getMessage() or str(exc)
    else:
        text = str(exc)
    message = _first_paragraph(text)
    cause = _root_cause(exc)
    if cause and cause.split(": ", 1)[-1] not in message:
        message += f" Cause: {_first_paragraph(cause)}"
    return message if len(message) <= limit else message[: limit - 1] + "…"


def _fail(plan: p.Plan, what: str, exc: BaseException, span) -> QueryFailedError:
    return QueryFailedError(f"{what}: {spark_message(exc)}", span, plan.source)


def apply_settings(spark: SparkSession, plan: p.Plan) -> None:
    """``spark.conf.set`` every ``SET`` whose key is not ``sqlstream.*``.

    Raises:
        OptionError: Spark refused the setting (e.g. a static configuration).
    """
    for key, value in plan.settings:
        if key.lower().startswith("sqlstream."):
            continue
        try:
            spark.conf.set(key, value)
        except (PySparkException, Py4JJavaError) as exc:
            raise OptionError(
                f"Spark refused SET '{key}': {spark_message(exc)}", plan.span_of_setting(key),
                plan.source,
                hint="static settings (spark.jars.packages, spark.sql.extensions, …) must be "
                "given when the session is created: use sqlstream exec, or configure the session",
            ) from None


def _read(spark: SparkSession, relation: p.SourceRelation, report: Report) -> DataFrame:
    reader = spark.read if relation.bounded else spark.readStream
    if relation.connector == "table":
        return reader.table(relation.path)
    options = dict(relation.options)
    reader = reader.format(relation.format).options(**options)
    if relation.schema:
        reader = reader.schema(relation.schema)
    elif relation.infer_schema:
        probe = spark.read.format(relation.format).options(**options)
        if relation.format == "csv":
            probe = probe.option("inferSchema", "true")
        schema = probe.load(relation.path).schema
        report(f"{relation.name}: schema inferred from {relation.path}: {schema.simpleString()}")
        reader = reader.schema(schema)
    return reader.load(relation.path) if relation.path else reader.load()


def bind_relation(spark: SparkSession, relation: p.Relation, report: Report) -> DataFrame:
    """Build the DataFrame of one plan step (not yet registered as a view)."""
    if isinstance(relation, p.SqlView):
        return spark.sql(relation.sql)
    if isinstance(relation, p.Deduplicate):
        df = spark.table(relation.input)
        keys = list(relation.keys) or None
        if relation.within_watermark:
            return df.dropDuplicatesWithinWatermark(keys)
        return df.dropDuplicates(keys)
    df = _read(spark, relation, report)
    watermark = relation.watermark
    if watermark is not None and relation.watermark_first:
        df = df.withWatermark(watermark.column, watermark.delay)
    if relation.projection:
        df = df.selectExpr(*relation.projection)
    if watermark is not None and not relation.watermark_first:
        df = df.withWatermark(watermark.column, watermark.delay)
    return df


def define_relations(spark: SparkSession, plan: p.Plan, report: Report = print) -> None:
    """Register every relation of ``plan`` as a temporary view, in plan order.

    Raises:
        QueryFailedError: Spark rejected a source (missing path, bad option, bad SQL).
    """
    for relation in plan.relations:
        try:
            bind_relation(spark, relation, report).createOrReplaceTempView(relation.name)
        except (PySparkException, Py4JJavaError) as exc:
            raise _fail(plan, f"Spark rejected '{relation.name}'", exc, relation.span) from None


def start_query(spark: SparkSession, plan: p.Plan, query: p.Query, available_now: bool = False) -> StreamingQuery:
    """Start one query; ``available_now`` overrides its trigger with ``availableNow=True``.

    Returns:
        The started :class:`pyspark.sql.streaming.StreamingQuery`.

    Raises:
        QueryFailedError: Spark refused to start it.
    """
    try:
        writer = spark.sql(query.sql).writeStream
        sink = query.sink
        if sink.format:
            writer = writer.format(sink.format)
        writer = writer.outputMode(query.output_mode)
        trigger = p.Trigger("available_now", None) if available_now else query.trigger
        if trigger is not None:
            if trigger.kind == "available_now":
                writer = writer.trigger(availableNow=True)
            elif trigger.kind == "continuous":
                writer = writer.trigger(continuous=trigger.interval)
            else:
                writer = writer.trigger(processingTime=trigger.interval)
        writer = writer.options(**dict(sink.options))
        if sink.partition_by:
            writer = writer.partitionBy(*sink.partition_by)
        if query.checkpoint_location:
            writer = writer.option("checkpointLocation", query.checkpoint_location)
        writer = writer.queryName(query.name)
        if sink.connector == "table":
            return writer.toTable(sink.path)
        return writer.start(sink.path) if sink.path else writer.start()
    except (PySparkException, Py4JJavaError) as exc:
        raise _fail(plan, f"Spark refused to start query '{query.name}'", exc, query.span) from None


def start(spark: SparkSession, plan: p.Plan, available_now: bool = False,
          report: Report = print) -> list[StreamingQuery]:
    """Apply settings, define relations and start every query of ``plan``.

    Args:
        spark: the session to run in.
        plan: the compiled pipeline.
        available_now: run every query with ``trigger(availableNow=True)``.
        report: receives one-line notes (e.g. an inferred schema).

    Returns:
        The started queries, in plan order. If one fails to start, those already started
        are stopped before the error is raised.

    Raises:
        OptionError, QueryFailedError: see :func:`apply_settings`, :func:`start_query`.
    """
    apply_settings(spark, plan)
    define_relations(spark, plan, report)
    started: list[StreamingQuery] = []
    try:
        for query in plan.queries:
            started.append(start_query(spark, plan, query, available_now))
    except BaseException:
        for running in started:
            running.stop()
        raise
    return started
