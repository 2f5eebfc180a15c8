"""Running a plan's queries on Spark and reporting what happens as typed events.

:func:`start` and :func:`run` run a compiled pipeline's program
(:class:`~sqlstream.lowering.lowered.Lowered`, with ``binder.start``) and follow its
queries through a :class:`~sqlstream.runtime.query_listener.QueryRun` (Spark's
``StreamingQueryListener``, its events on a queue). The thread that called :func:`run` (or,
for :func:`start`, a sqlstream thread) takes events off the queue, translates them to
:mod:`sqlstream.runtime.events` and gives them to the listeners. :func:`run` learns that a
query ended from its termination event: it blocks in Python (``queue.get`` with a timeout,
so Ctrl-C is delivered), never in a py4j call; a stop signal, a timeout or a failed query
stops every query.

:class:`sqlstream.session.Session` (``sqlstream exec``) and
:meth:`sqlstream.api.Pipeline.start` both run through here.

Source: PySpark 4.1 ``StreamingQueryListener``, ``StreamingQueryManager.addListener`` /
``removeListener``, ``StreamingQuery.stop`` / ``exception``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sqlstream.analysis.checks import reads_nothing_once
from sqlstream.connectors import CONNECTORS
from sqlstream.diagnostics.errors import StreamingError
from sqlstream.ir import plan as p
from sqlstream.lowering.lowered import Lowered
from sqlstream.runtime.checkpoint_lock import Lease, acquire
from sqlstream.runtime.events import (
    ListenerLike,
    Notice,
    QueryTerminated,
    Stopping,
    emitter,
)
from sqlstream.runtime.query_listener import QueryRun, RunInterrupted, RunTimeout
from sqlstream.runtime.signals import StopSignals

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("sqlstream")


def empty_available_now(plan: p.Plan) -> list[StreamingError]:
    """Warnings ``SS360`` for the queries of ``plan`` that read a source yielding no rows
    under ``trigger(availableNow=True)`` on a new checkpoint (``rate``), for runs with
    ``available_now`` (``exec --available-now``); ``EMIT … ONCE`` is checked at compile time."""
    warnings = []
    for query in plan.queries:
        names = sorted(
            {
                s.connector
                for s in (query.state.sources if query.state else ())
                if s.connector in CONNECTORS and CONNECTORS[s.connector].empty_available_now
            }
        )
        if names:
            found = reads_nothing_once(names[0], "--available-now")
            warnings.append(
                StreamingError(
                    f"query '{query.name}': {found.message}",
                    query.span,
                    plan.source,
                    code=found.code,
                    hint=found.hint,
                )
            )
    return warnings


def _reason(name: str) -> str:
    return f"interrupted ({name})" if name == "SIGINT" else f"terminated ({name})"


def start(
    spark: SparkSession,
    pipeline: Lowered,
    available_now: bool = False,
    listeners: Iterable[ListenerLike] = (),
    allow_incompatible_restart: bool = False,
    lease: Lease | None = None,
) -> list[StreamingQuery]:
    """Start every query of ``pipeline`` in ``spark`` and return without waiting.

    Settings, views and queries are bound by ``binder.start``, from the pipeline's program. With listeners, a
    daemon thread of sqlstream delivers the events of these queries (from
    :class:`~sqlstream.runtime.events.QueryStarted` to :class:`~sqlstream.runtime.events.QueryTerminated`
    and, for a failure, :class:`~sqlstream.runtime.events.QueryFailed`) and removes the Spark
    listener when all have terminated. A failing query does not stop the others.

    Args:
        spark: the SparkSession to run in.
        pipeline: the compiled pipeline (its plan and program).
        available_now: run every query with ``trigger(availableNow=True)`` (the program
            of :meth:`~sqlstream.lowering.lowered.Lowered.available_now`).
        listeners: callables or objects with ``on_event(event)``; none: no Spark
            listener is registered.
        allow_incompatible_restart: start queries despite changes Spark does not allow on
            their checkpoints (reported as :class:`~sqlstream.runtime.events.Notice`).
        lease: the run's checkpoint locks (:func:`~sqlstream.runtime.checkpoint_lock.acquire`),
            if taken already (``Session``: before the JVM); released once every query stopped.

    Returns:
        The started ``pyspark.sql.streaming.StreamingQuery`` objects, in file order.

    Raises:
        SqlStreamError: Spark refused a setting (``SS202``), a source or a query
            (``SS501``), positioned at the statement; queries already started are
            stopped first. ``IncompatibleRestartError`` (``SS401``): a query changed in a
            way Spark does not allow on its checkpoint; nothing was started.
            ``CheckpointInUseError`` (``SS502``): another run holds a query's checkpoint.
    """
    listeners = tuple(listeners)
    emit = emitter(listeners)
    pipeline, notices = _settle(pipeline, available_now)
    plan = pipeline.plan
    lease = lease or acquire(
        plan,
        lambda line: (
            emit(Notice(plan.source.redact(line)))
            if listeners
            else log.warning(plan.source.redact(line))
        ),
    )
    try:
        if not listeners:
            from sqlstream.runtime.binder import start as bind

            handles = bind(
                spark,
                pipeline,
                report=lambda _: None,
                allow_incompatible_restart=allow_incompatible_restart,
            )
        else:
            run = QueryRun(spark, pipeline, notices, emit, allow_incompatible_restart)
            handles = run.start()
            threading.Thread(
                target=run.follow, name=f"sqlstream-events-{plan.name}", daemon=True
            ).start()
    except BaseException:
        lease.release()
        raise
    lease.attach(handles)
    lease.release_when_stopped()
    return list(handles)


def run(
    spark: SparkSession,
    pipeline: Lowered,
    available_now: bool = False,
    timeout: float | None = None,
    listeners: Iterable[ListenerLike] = (),
    allow_incompatible_restart: bool = False,
    lease: Lease | None = None,
) -> list[QueryTerminated]:
    """Start every query of ``pipeline``, wait until all have terminated, and return.

    Events are delivered to the listeners on the calling thread. The run ends when
    Spark reports the termination of every query (e.g. ``EMIT … ONCE`` or
    ``available_now`` once the input is processed). SIGINT (Ctrl-C) or SIGTERM, once or
    repeated (:class:`StopSignals`, entered here when called on the main thread unless
    the caller entered one), or ``timeout`` stops every query cleanly
    (``StreamingQuery.stop``: the current micro-batch is abandoned and runs again at the
    next start, its offsets never committed), emits :class:`~sqlstream.runtime.events.Stopping`
    and returns normally; no query is left running when this function returns or raises.

    Args:
        spark: the SparkSession to run in; ``pipeline`` the compiled pipeline (its plan
            and program).
        available_now: run every query with ``trigger(availableNow=True)``.
        timeout: stop the queries after this many seconds (wall time from the start);
            ``None``: wait for as long as they run.
        listeners: callables or objects with ``on_event(event)``.
        allow_incompatible_restart: as for :func:`start`.
        lease: as for :func:`start`; released when this function returns or raises.

    Returns:
        The :class:`~sqlstream.runtime.events.QueryTerminated` event of every query, in file
        order (a query whose termination event did not arrive within
        :data:`~sqlstream.runtime.query_listener.STOP_GRACE_SECONDS` of being stopped is missing).

    Raises:
        QueryFailedError: a query failed (code ``SS501``, positioned at its statement,
            Spark's message in one paragraph); the others are stopped first. Also
            (without a position) when the JVM this process launched exits.
        SqlStreamError: Spark refused a setting, source or query at start, or another
            run holds a query's checkpoint (see :func:`start`).
    """
    signals = StopSignals.current()
    if signals is None:
        with StopSignals():
            return run(
                spark,
                pipeline,
                available_now,
                timeout,
                listeners,
                allow_incompatible_restart,
                lease,
            )
    deadline = None if timeout is None else time.monotonic() + timeout
    pipeline, notices = _settle(pipeline, available_now)
    plan = pipeline.plan
    run_ = QueryRun(spark, pipeline, notices, emitter(tuple(listeners)), allow_incompatible_restart)
    signals._inboxes.append(run_.inbox)  # noqa: SLF001 - the run wakes on a signal
    try:
        lease = lease or acquire(plan, lambda line: run_.emit(Notice(line)))
        if signals.received:  # a signal during start-up (e.g. while the JVM started)
            run_.emit(Stopping(_reason(signals.received[0]) + " during start-up"))
            return []
        return _run_started(run_, deadline, timeout)
    finally:
        if lease is not None:
            lease.release()
        signals._inboxes.remove(run_.inbox)  # noqa: SLF001


def _run_started(
    run: QueryRun, deadline: float | None, timeout: float | None
) -> list[QueryTerminated]:
    """The body of :func:`run` once its signal handling is in place."""
    run.start()
    reason = None
    try:
        failure = run.pump(deadline)
    except RunInterrupted as signalled:
        failure, reason = None, _reason(signalled.args[0])
    except KeyboardInterrupt:
        failure, reason = None, "interrupted"
    except RunTimeout:
        failure, reason = None, f"timeout ({timeout:g} s)"
    except BaseException:  # a listener failed, or the JVM died: leave nothing running
        run.halt()
        run.close()
        raise
    try:
        if failure is not None and run.pending:
            reason = f"query '{failure.name}' failed"
        if failure is not None or reason:
            run.stop(reason)
    finally:
        run.close()
    if failure is not None:
        raise failure.error
    return run.results()


def _settle(pipeline: Lowered, available_now: bool) -> tuple[Lowered, list[str]]:
    """The run options applied to ``pipeline`` once, where a run starts: with
    ``available_now`` every trigger becomes ``availableNow``
    (:meth:`~sqlstream.lowering.lowered.Lowered.available_now`: a new plan, whose program the
    lowering stage lowers) and the ``SS360`` warnings of :func:`empty_available_now` are the
    notices to emit."""
    if not available_now:
        return pipeline, []
    return pipeline.available_now(), [w.render() for w in empty_available_now(pipeline.plan)]
