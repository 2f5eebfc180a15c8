"""Lowering: :class:`~sqlstream.ir.plan.Plan` → :class:`~sqlstream.ir.calls.Program`.

The one place that decides which PySpark calls a plan makes; :mod:`sqlstream.runtime.binder`
runs the result and :mod:`sqlstream.lowering.printer` prints it. The common sequence of a read or
a write is the connector base's (:class:`sqlstream.connectors.base.Connector`), the
parts that differ are the connector modules'; the trigger is lowered here only
(:func:`trigger_step`). Reads only the plan: no Spark, no pyspark import.
"""

from __future__ import annotations

from sqlstream.analysis.spark_types import UNKNOWN
from sqlstream.connectors import connector
from sqlstream.connectors.foreach_batch import function_chain
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Block, Chain, ChainOrigin, Program, Step
from sqlstream.ir.user_functions import UserFunction
from sqlstream.lowering import expectation_calls
from sqlstream.lowering.decoding import decoding_chains
from sqlstream.planning.settings import STATE_STORES, is_static, watermark_policy

SETTING_HINT = (
    "a setting Spark reads only at start (spark.serializer, …) is given when the "
    "session is created: sqlstream exec --conf KEY=VALUE, or the session builder"
)


def trigger_step(trigger: p.Trigger | None) -> Step | None:
    """The ``DataStreamWriter.trigger`` call of ``trigger`` (``None``: Spark's default,
    no call): ``trigger(availableNow=True)``, ``trigger(continuous='5 seconds')``,
    ``trigger(realTime='5 minutes')`` (PySpark 4.2+; Spark guide, *Real-time Mode*) or
    ``trigger(processingTime='1 minute')``. Spark guide: *Triggers*."""
    if trigger is None:
        return None
    if trigger.kind == "available_now":
        return Step("trigger", kwargs=(("availableNow", True),))
    if trigger.kind == "continuous":
        return Step("trigger", kwargs=(("continuous", trigger.interval),))
    if trigger.kind == "real_time":
        return Step("trigger", kwargs=(("realTime", trigger.interval),))
    return Step("trigger", kwargs=(("processingTime", trigger.interval),))


def columns_comment(columns: tuple[tuple[str, str], ...] | None) -> tuple[str, ...]:
    """``("columns: a STRING, b BIGINT",)`` (``?`` for a type not known statically), or
    ``()`` when the columns are known only at run time."""
    if columns is None:
        return ()
    return ("columns: " + ", ".join(f"{n} {'?' if t == UNKNOWN else t}" for n, t in columns),)


# Spark expands ${var}, ${env:NAME}, ${system:name} in the text of spark.sql, selectExpr and
# filter (VariableSubstitution, on by default): a --var value or a literal holding
# "${env:…}" would read the environment at run time, outside sqlstream's secret tracking and
# redaction. Turned off on every session before any relation or query is defined.
NO_SPARK_SUBSTITUTION = ("spark.sql.variable.substitute", "false")


def settings_block(plan: p.Plan) -> Block:
    """``spark.conf.set(key, value)`` for every ``SET`` whose key is not ``sqlstream.*``
    nor static (:data:`sqlstream.planning.settings.STATIC_SETTINGS`: given to the session builder
    only, shown as comments), then :data:`NO_SPARK_SUBSTITUTION` (always). PySpark
    ``RuntimeConfig.set``."""
    items: list[str | Chain] = ["SETTINGS"]
    for key, value in plan.settings:
        if is_static(key):
            items.append(f"{key} = {value} (static: given to the session builder)")
        elif not key.lower().startswith("sqlstream."):
            items.append(
                Chain(
                    "spark",
                    (Step("conf", call=False), Step("set", (key, value))),
                    label=f"Spark refused SET '{key}'",
                    span=plan.span_of_setting(key),
                    hint=SETTING_HINT,
                )
            )
    for key, value in plan.settings:
        if key.lower() == "sqlstream.state_store" and value.strip().lower() in STATE_STORES:
            spark_keys = ", ".join(k for k, _ in STATE_STORES[value.strip().lower()])
            items.append(f"{key} = {value}: {spark_keys} (set above)")
        elif key.lower() == "sqlstream.state_store":
            items.append(f"{key} = {value}: the provider class (set above)")
        elif key.lower().startswith("sqlstream."):
            items.append(f"{key} = {value}")
    items += [
        "Spark's own ${…} substitution off: the text runs as printed",
        Chain(
            "spark",
            (Step("conf", call=False), Step("set", NO_SPARK_SUBSTITUTION)),
            label="Spark refused turning off spark.sql.variable.substitute",
        ),
    ]
    return Block("settings", tuple(items))


def function_block(function: UserFunction) -> Block:
    """The calls that register one user-defined function in the session:

    * a SQL function: ``spark.sql('CREATE OR REPLACE TEMPORARY FUNCTION f(x T) RETURNS T
      RETURN …')`` (Spark's SQL functions, 4.0 and later);
    * a Python function: its module pickled by value
      (``pyspark.cloudpickle.register_pickle_by_value``: Spark's Python workers need not
      find the module on their ``sys.path``), then ``spark.udf.register(name, f,
      returnType)``; a pandas function wrapped first, ``F.pandas_udf(f, returnType)``; a
      callable the module already wrapped (``udf``/``pandas_udf``) registered as it is.

    PySpark ``UDFRegistration.register``, ``pandas_udf``; Spark SQL reference *CREATE
    FUNCTION (SQL)*."""
    what: ChainOrigin = dict(label=f"Spark refused function '{function.name}'", span=function.span)
    head = (
        f"FUNCTION {function.name} ({function.kind}, line {function.span.line}): "
        f"({', '.join(t for _, t in function.parameters)}) -> {function.returns}",
    )
    if function.kind == "sql":
        params = ", ".join(f"{n} {t}" for n, t in function.parameters)
        ddl = (
            f"CREATE OR REPLACE TEMPORARY FUNCTION {function.name}({params}) "
            f"RETURNS {function.returns} RETURN {function.body}"
        )
        return Block(
            "function", (*head, Chain("spark", (Step("sql", (ddl,)),), **what)), function.name
        )
    module = Chain("importlib", (Step("import_module", (function.module,)),))
    by_value = Chain(
        "importlib",
        (
            Step("import_module", ("pyspark.cloudpickle",)),
            Step("register_pickle_by_value", (module,)),
        ),
        **what,
    )
    assert function.module is not None  # a Python function's module
    callable_ = function_chain(function.module, function.attrs)
    args: tuple[str | Chain, ...]
    if function.wrapped:
        args = (function.name, callable_)
    elif function.kind == "pandas":
        args = (function.name, Chain("F", (Step("pandas_udf", (callable_, function.returns)),)))
    else:
        args = (function.name, callable_, function.returns)
    register = Chain("spark", (Step("udf", call=False), Step("register", args)), **what)
    return Block("function", (*head, by_value, register), function.name)


def global_watermark_comment(plan: p.Plan, query: p.Query) -> tuple[str, ...]:
    """For a query over more than one watermark: ``("global watermark: max of …
    (spark.sql.streaming.multipleWatermarkPolicy = max, SET)",)``; else ``()``. Spark
    guide, *Policy for handling multiple watermarks*."""
    marks = query.state.watermarks if query.state else ()
    if len(marks) < 2:
        return ()
    policy, origin = watermark_policy(plan.settings)
    listed = ", ".join(f"{w.relation}.{w.column} - {w.delay}" for w in marks)
    return (
        f"global watermark: {policy} of {listed} "
        f"(spark.sql.streaming.multipleWatermarkPolicy = {policy}, {origin})",
    )


def relation_block(relation: p.Relation) -> Block:
    """The calls that define one temporary view (each ends with
    ``createOrReplaceTempView(name)``):

    * a source: the connector's :meth:`~sqlstream.connectors.base.Connector.read_chains`,
      or, with ``on_error = 'drop'`` / ``'dead_letter'``, the decoding chains of
      :func:`sqlstream.lowering.decoding.decoding_chains`;
    * a view: ``spark.sql(sql).createOrReplaceTempView(name)``;
    * a deduplication: ``spark.table(input).dropDuplicates([keys])`` (or
      ``dropDuplicatesWithinWatermark``) ``.createOrReplaceTempView(name)``.
    """
    where = f"(line {relation.span.line})"
    view = Step("createOrReplaceTempView", (relation.name,))
    what: ChainOrigin = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
    if isinstance(relation, p.SourceRelation):
        kind = "TABLE" if relation.bounded else "STREAM"
        head = (f"{kind} {relation.name} {where}", *columns_comment(relation.columns))
        chains = (
            decoding_chains(relation)
            if relation.decoding is not None
            else connector(relation.connector).read_chains(relation)
        )
        chains = expectation_calls.with_source_rules(relation, chains)
        head += expectation_calls.comment(relation.expectations)
    elif isinstance(relation, p.SqlView):
        head = (f"VIEW {relation.name} {where}", *columns_comment(relation.columns))
        chains = (Chain("spark", (Step("sql", (relation.sql,)), view), **what),)
    else:
        method = "dropDuplicatesWithinWatermark" if relation.within_watermark else "dropDuplicates"
        head = (f"DEDUPLICATE {relation.name} {where}", *columns_comment(relation.columns))
        keys = (relation.keys,) if relation.keys else ()
        chains = (
            Chain("spark", (Step("table", (relation.input,)), Step(method, keys), view), **what),
        )
    return Block("relation", (*head, *chains), relation.name)


def query_block(query: p.Query, notes: tuple[str, ...] = ()) -> Block:
    """The chain that starts one query, headed by its sink, output mode (and why),
    ``notes`` (e.g. :func:`global_watermark_comment`) and columns."""
    sink = query.sink
    trigger = query.trigger
    head = (
        f"QUERY {query.name} -> {sink.connector} sink {sink.name} (line {query.span.line})",
        f"output mode: {query.output_mode} ({query.output_mode_reason})",
        *notes,
        *columns_comment(query.columns),
        *expectation_calls.comment(query.expectations),
    )
    chain = connector(sink.connector).write_chain(query, trigger_step(trigger))
    chain = expectation_calls.with_query_rules(query, chain)
    return Block("query", (*head, chain), query.name)


def lower(plan: p.Plan) -> Program:
    """Lower ``plan`` to its binding calls.

    Args:
        plan: the compiled pipeline (with ``available_now`` applied, where a run asks for
            it: :meth:`~sqlstream.ir.plan.Plan.available_now`).

    Returns:
        A :class:`~sqlstream.ir.calls.Program`: a ``warnings`` block (comments only), the
        ``settings`` block, one ``function`` block per user-defined function, one
        ``relation`` block per relation and one ``query`` block
        per query, in plan order. Secrets are not redacted (the printers redact).
    """
    blocks: list[Block] = []
    if plan.warnings:
        blocks.append(
            Block(
                "warnings",
                tuple(f"warning {w.code} (line {w.span.line}): {w.message}" for w in plan.warnings),
            )
        )
    blocks.append(settings_block(plan))
    blocks += [function_block(f) for f in plan.functions]
    blocks += [relation_block(r) for r in plan.relations]
    blocks += [query_block(q, global_watermark_comment(plan, q)) for q in plan.queries]
    return Program(tuple(blocks))
