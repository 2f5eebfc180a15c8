"""Binder: runs a plan's binding calls (:class:`~sqlstream.ir.calls.Program`) on a SparkSession.

It evaluates the chains of a compiled pipeline's program
(:attr:`sqlstream.lowering.lowered.Lowered.program`, lowered once, never here) — the same ones
``sqlstream translate`` prints — with ``getattr`` and calls, from the root names
``spark`` (the session), ``df`` (the last DataFrame assigned) and ``importlib`` (a
``foreachBatch`` function, imported by its module path): ``SET`` settings, source
reads and temporary views in plan order, then each query's ``writeStream … start()``.
Spark's errors become :class:`~sqlstream.diagnostics.errors.QueryFailedError` (an
:class:`~sqlstream.diagnostics.errors.OptionError` for a refused ``SET``) pointing at the statement
that caused them.

Source: PySpark API ``RuntimeConfig``, ``DataStreamReader``, ``DataStreamWriter``,
``DataFrame.withWatermark`` / ``selectExpr`` / ``createOrReplaceTempView`` (Spark 4.1).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession, functions
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

from sqlstream.connectors import lakehouse_jvm
from sqlstream.connectors.user_code import make_importable
from sqlstream.diagnostics.errors import OptionError, QueryFailedError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.ir import plan as p
from sqlstream.ir.calls import SQL_TEXT_STEPS, Block, Chain
from sqlstream.lowering.lowered import Lowered
from sqlstream.runtime import restarts
from sqlstream.runtime.spark_errors import mapped
from sqlstream.runtime.spark_session import is_connect, refuse_on_connect

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
    while (cause := getattr(node, "_cause", None)) is not None:
        node = cause
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


def _fail(plan: p.Plan, block: Block, chain: Chain, exc: BaseException) -> SqlStreamError:
    """The error of ``chain`` failing with ``exc``: ``"<label>: <Spark's message>"`` at the
    statement; an :class:`OptionError` with the chain's hint for a refused setting; the
    code and hint of :mod:`sqlstream.runtime.spark_errors` for a condition it maps."""
    message = f"{chain.label}: {spark_message(exc)}"
    if block.kind == "settings":
        return OptionError(message, chain.span, plan.source, hint=chain.hint)
    known = mapped(f"{exc}\n{message}")  # a condition sqlstream has a code and hint for
    if known is not None:
        return QueryFailedError(message, chain.span, plan.source, hint=known.hint, code=known.code)
    return QueryFailedError(message, chain.span, plan.source)


def _value(arg, env: dict, report: Report, source: Source | None, sql: bool):
    if isinstance(arg, Chain):
        value = evaluate(arg, env, report, source=source)
        if arg.note:
            shown = value.simpleString() if isinstance(value, StructType) else str(value)
            report(f"{arg.note}: {shown}")
        return value
    if isinstance(arg, tuple):
        return [_value(a, env, report, source, sql) for a in arg]
    if isinstance(arg, str) and source is not None:
        return source.unseal(arg, sql)
    return arg


def evaluate(
    chain: Chain,
    env: dict,
    report: Report = print,
    steps: int | None = None,
    source: Source | None = None,
):
    """Evaluate ``chain`` from ``env[chain.root]``: ``getattr`` each step, call it with its
    arguments (nested chains evaluated first, tuples passed as lists) unless it is a
    property; assign the value to ``env[chain.assign]``.

    This is where the value of a secret enters what runs: each string argument goes to
    PySpark with ``source``'s secret tokens replaced by their values
    (:meth:`~sqlstream.diagnostics.source_text.Source.unseal`; escaped in the SQL text of
    :data:`SQL_TEXT_STEPS`). The chain itself, which ``translate`` prints, holds tokens.

    Args:
        chain: the chain.
        env: root names to objects (``spark``, ``df``); updated by the assignment.
        report: receives the notes of nested chains (an inferred schema).
        steps: evaluate only the first ``steps`` steps (all when ``None``).
        source: the pipeline's source, whose secrets the arguments' tokens stand for
            (``None``: arguments as they are).

    Returns:
        The value of the last step evaluated.

    Raises:
        Whatever PySpark raises (``PySparkException``, ``Py4JJavaError``).
    """
    value = env[chain.root]
    for step in chain.steps[:steps]:
        value = getattr(value, step.name)
        if step.call:
            sql = step.name in SQL_TEXT_STEPS
            args = [_value(a, env, report, source, sql) for a in step.args]
            value = value(*args, **{k: _value(v, env, report, source, sql) for k, v in step.kwargs})
    if chain.assign and steps is None:
        env[chain.assign] = value
    return value


def environment(spark: SparkSession, sql_functions=functions) -> dict:
    """The root names of a program's chains (the ``env`` of :func:`evaluate` and
    :func:`run_block`): the session, ``F`` (``sql_functions``, ``pyspark.sql.functions``
    unless a test records the calls) and ``importlib``."""
    return {"spark": spark, "F": sql_functions, "importlib": importlib}


def run_block(
    spark: SparkSession, plan: p.Plan, block: Block, report: Report = print, env: dict | None = None
) -> list:
    """Evaluate every chain of ``block`` in order.

    Returns:
        The value of each chain (a started ``StreamingQuery`` for a query block).

    Raises:
        OptionError: Spark refused a setting.
        QueryFailedError: Spark rejected a source or view, or refused to start a query;
            positioned at the statement, with Spark's message.
    """
    env = environment(spark) if env is None else env
    make_importable(plan.source.path)  # a module beside the file, however it was compiled
    values = []
    for chain in block.chains:
        try:
            values.append(evaluate(chain, env, report, source=plan.source))
        except (PySparkException, Py4JJavaError) as exc:
            raise _fail(plan, block, chain, exc) from None
        except TypeError as exc:
            if "realTime" not in str(exc):
                raise
            # PySpark 4.0 and 4.1: DataStreamWriter.trigger has no realTime argument
            raise QueryFailedError(
                f"{chain.label}: this PySpark has no real-time mode (trigger(realTime=…) is "
                "new in PySpark 4.2)",
                chain.span,
                plan.source,
                hint="run on Spark 4.2 or newer, or use EMIT … EVERY INTERVAL …",
            ) from None
    return values


def define_relations(spark: SparkSession, pipeline: Lowered, report: Report = print) -> None:
    """Register the user-defined functions of ``pipeline`` in the session, then every
    relation as a temporary view, in plan order: the ``function`` and ``relation`` blocks of
    its program.

    Raises:
        QueryFailedError: Spark rejected a function or a source (missing path, bad option,
            bad SQL).
    """
    for block in pipeline.program.blocks:
        if block.kind in ("function", "relation"):
            run_block(spark, pipeline.plan, block, report)


def spark_settings(spark: SparkSession) -> dict[str, str | None]:
    """The values in force of the settings a restart compares
    (:data:`sqlstream.runtime.restarts.SPARK_SETTINGS`): Spark's default when not set, ``None``
    when Spark has none."""
    values = {}
    for key, name in restarts.SPARK_SETTINGS.items():
        try:
            values[key] = spark.conf.get(name)
        except (PySparkException, Py4JJavaError):
            values[key] = None
    return values


def start(
    spark: SparkSession,
    pipeline: Lowered,
    report: Report = print,
    allow_incompatible_restart: bool = False,
    check_restarts: bool = True,
    sql_functions=functions,
    before_queries: Callable[[], None] | None = None,
) -> list[StreamingQuery]:
    """Run the program of ``pipeline`` (:attr:`~sqlstream.lowering.lowered.Lowered.program`):
    apply settings, define relations and start every query.

    Before the first query starts, every query's state signature is compared with the one
    recorded in its checkpoint (:func:`sqlstream.runtime.restarts.prepare`); each query's record
    is written once it started. That check reads two settings (``spark.conf.get``) and the
    checkpoint: it makes no binding call.

    Args:
        spark: the session to run in.
        pipeline: the compiled pipeline, its plan and program (run options applied:
            :meth:`~sqlstream.lowering.lowered.Lowered.available_now`).
        report: receives one-line notes (e.g. an inferred schema, an allowed change).
        allow_incompatible_restart: start despite changes Spark does not allow between
            restarts (each reported), and record the new signatures.
        check_restarts: ``False`` skips the check and the records (for tests that compare
            the calls made with the printed ones).
        sql_functions: what the root name ``F`` of a chain is (``pyspark.sql.functions``;
            ``F.expr`` builds the metric of ``DataFrame.observe``, :mod:`sqlstream.lowering.decoding`).
        before_queries: called once after the settings, functions and relations are bound
            and before the restart check and the first query's start (``exec`` waits there
            for its listener, registered meanwhile on another thread); what it raises is
            raised here.

    Returns:
        The started queries, in plan order. If one fails to start, those already started
        are stopped before the error is raised.

    Raises:
        OptionError, QueryFailedError: see :func:`run_block`.
        IncompatibleRestartError: (``SS401``) a query changed in a way Spark does not allow
            on its checkpoint; no query was started.
        SqlStreamError: (``SS405``) through Spark Connect, a call it cannot run
            (:func:`sqlstream.runtime.spark_session.refuse_on_connect`); (``SS271``) a
            Python function the pipeline was compiled without reading (an untrusted
            compile, ``SS274``): running needs ``compile(…, trust=True)``, as ``exec`` and
            ``sqlstream test`` compile; (``SS545``) a ``delta`` table on Delta's JVM path
            and a session without Delta's package or settings
            (:func:`sqlstream.connectors.lakehouse_jvm.check_session`).
    """
    plan = pipeline.plan
    for function in plan.functions:
        if not function.checked:
            raise SqlStreamError(
                f"function '{function.name}' was compiled without its module being read "
                "(an untrusted compile, SS274): a run needs its types",
                function.span,
                plan.source,
                hint="compile with trust=True (exec and sqlstream test do) to run the pipeline",
                code="SS271",
            )
    lakehouse_jvm.check_session(spark, plan)
    if is_connect(spark):
        refuse_on_connect(pipeline, report)
    env = environment(spark, sql_functions)
    started: list[StreamingQuery] = []
    checked: dict[str, restarts.Restart] | None = None
    try:
        for block in pipeline.program.blocks:
            if block.kind == "query" and checked is None:
                if before_queries is not None:
                    before_queries()
                checked = (
                    restarts.prepare(
                        plan, spark_settings(spark), allow_incompatible_restart, report
                    )
                    if check_restarts
                    else {}
                )
            values = run_block(spark, plan, block, report, env)
            if block.kind == "query":
                started += values
                if checked is not None and block.name is not None and block.name in checked:
                    checked[block.name].commit()
    except BaseException:
        for running in started:
            running.stop()
        raise
    return started
