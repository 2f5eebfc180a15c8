"""The run API: compile, check, start and run pipelines on Spark, reporting typed events.

Like SQLMesh's ``Context``, one :class:`Session` object holds what every operation needs —
the SparkSession (given, or created on first use with ``exec``'s defaults), the
listeners and the state directory — and the CLI is a thin layer over it::

    from sqlstream import Session, TextRenderer
    with Session(master="local[2]", listeners=[TextRenderer()]) as session:
        pipeline = session.compile_file("examples/flights/hourly_delays.ssql")
        session.run(pipeline, available_now=True)

Progress and termination come from a PySpark ``StreamingQueryListener`` registered with
``spark.streams.addListener`` for the duration of a run. Spark calls it on its py4j
callback thread; the listener only puts Spark's event on a queue. The thread that called
:meth:`Session.run` (or, for :meth:`Session.start`, a sqlstream thread) takes events off
the queue, translates them to :mod:`sqlstream.events` and gives them to the listeners.
:meth:`Session.run` learns that a query ended from its termination event: it blocks in
Python (``queue.get`` with a timeout, so Ctrl-C is delivered), never in a py4j call.

Source: PySpark 4.1 ``StreamingQueryListener``, ``StreamingQueryManager.addListener`` /
``removeListener``, ``StreamingQuery.stop`` / ``exception``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from sqlstream import plan as p
from sqlstream.errors import QueryFailedError, SqlStreamError
from sqlstream.program import trigger_step
from sqlstream.events import (
    Event, ListenerLike, Notice, QueryFailed, QueryIdle, QueryStarted, QueryTerminated,
    Stopping, batch_progress, deliver,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from sqlstream import Pipeline

log = logging.getLogger("sqlstream")

STOP_GRACE_SECONDS = 10.0
"""How long a run waits for the termination events of queries it stopped (s)."""

_TICK_SECONDS = 1.0  # longest single wait in queue.get (Ctrl-C interrupts it anyway)


def trigger_text(query: p.Query, available_now: bool = False) -> str:
    """The trigger of ``query`` as :attr:`QueryStarted.trigger` describes it: ``default``,
    ``availableNow``, ``every <interval>`` or ``continuous <interval>`` — read from the
    ``trigger(…)`` call the query runs with (:func:`sqlstream.program.trigger_step`)."""
    step = trigger_step(p.Trigger("available_now", None) if available_now else query.trigger)
    if step is None:
        return "default"
    ((keyword, value),) = step.kwargs
    return {"availableNow": "availableNow", "continuous": f"continuous {value}",
            "processingTime": f"every {value}"}[keyword]


def _bridge_class():
    """The ``StreamingQueryListener`` subclass (defined on first use: it imports pyspark)."""
    from pyspark.sql.streaming import StreamingQueryListener

    class Bridge(StreamingQueryListener):
        """Puts Spark's events on a queue; runs on py4j's callback thread, so does nothing else."""

        def __init__(self, inbox: queue.SimpleQueue) -> None:
            self.inbox = inbox

        def onQueryStarted(self, event) -> None:  # noqa: N802 - Spark's name
            pass  # QueryStarted is built from the plan once start() returns

        def onQueryProgress(self, event) -> None:  # noqa: N802
            self.inbox.put(("progress", event.progress.runId, event))

        def onQueryIdle(self, event) -> None:  # noqa: N802
            self.inbox.put(("idle", event.runId, event))

        def onQueryTerminated(self, event) -> None:  # noqa: N802
            self.inbox.put(("terminated", event.runId, event))

    return Bridge


class _Timeout(Exception):
    pass


def _jvm_process(spark):
    """The JVM's ``Popen`` when this process launched it, else ``None``: polling it is pure
    Python (no py4j call), so a run notices a JVM that died without any event."""
    try:
        return getattr(spark.sparkContext._gateway, "proc", None)
    except Exception:  # noqa: BLE001 - e.g. Spark Connect has no sparkContext
        return None


class _Run:
    """One start of a plan's queries: their handles, the Spark listener and its queue."""

    def __init__(self, spark, plan: p.Plan, available_now: bool, emit: Callable[[Event], None]) -> None:
        self.spark, self.plan, self.available_now, self.emit = spark, plan, available_now, emit
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.bridge = _bridge_class()(self.inbox)
        self.handles: list = []
        self.by_run: dict[str, tuple[Any, p.Query]] = {}  # run id -> (StreamingQuery, Query)
        self.terminated: dict[str, QueryTerminated] = {}
        self.jvm = _jvm_process(spark)

    def start(self) -> list:
        """Register the listener, start every query (``binder.start``), emit QueryStarted."""
        from sqlstream.binder import start

        self.spark.streams.addListener(self.bridge)
        try:
            self.handles = start(self.spark, self.plan, self.available_now,
                                 report=lambda line: self.emit(Notice(line)))
            queries = {q.name: q for q in self.plan.queries}
            for handle in self.handles:
                query = queries[handle.name]
                self.by_run[str(handle.runId)] = (handle, query)
                self.emit(QueryStarted(
                    name=handle.name, id=str(handle.id), run_id=str(handle.runId),
                    output_mode=query.output_mode, trigger=trigger_text(query, self.available_now),
                    sink=query.sink.connector, path=query.sink.path,
                    checkpoint_location=query.checkpoint_location, span=query.span))
        except BaseException:
            self.halt()
            self.close()
            raise
        return self.handles

    @property
    def pending(self) -> list[str]:
        """Run ids of the queries whose termination event has not arrived."""
        return [run_id for run_id in self.by_run if run_id not in self.terminated]

    def pump(self, deadline: float | None = None) -> QueryFailed | None:
        """Deliver events until every query terminated; return the first failure, if any.

        Raises:
            _Timeout: ``deadline`` (``time.monotonic()`` value) passed first.
            QueryFailedError: the JVM this process launched exited.
        """
        while self.pending:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise _Timeout
            try:
                item = self.inbox.get(timeout=_TICK_SECONDS if remaining is None
                                      else min(_TICK_SECONDS, remaining))
            except queue.Empty:
                if self.jvm is not None and self.jvm.poll() is not None:
                    raise QueryFailedError(
                        f"the Spark JVM exited (code {self.jvm.returncode}) while the queries "
                        "were running", source=self.plan.source) from None
                continue
            failure = self.handle(item)
            if failure is not None:
                return failure
        return None

    def handle(self, item: tuple) -> QueryFailed | None:
        """Translate one of Spark's events (``(kind, run id, event)`` from the bridge) and
        deliver it; return the failure it reports."""
        kind, run_id, event = item[0], str(item[1]), item[2]
        if run_id not in self.by_run or run_id in self.terminated:
            return None  # another query of the same SparkSession
        handle, query = self.by_run[run_id]
        if kind == "progress":
            self.emit(batch_progress(event.progress))
            return None
        if kind == "idle":
            self.emit(QueryIdle(handle.name, str(event.id), run_id, event.timestamp))
            return None
        message = None
        if event.exception is not None:
            from sqlstream.binder import spark_message

            failure = handle.exception()
            message = (spark_message(failure) if failure is not None
                       else event.exception.strip().splitlines()[0])
        terminated = QueryTerminated(handle.name, str(event.id), run_id, message,
                                     getattr(event, "errorClassOnException", None))
        self.terminated[run_id] = terminated
        self.emit(terminated)
        if message is None:
            return None
        error = QueryFailedError(f"query '{handle.name}' failed: {message}", query.span,
                                 self.plan.source)
        failed = QueryFailed(handle.name, str(event.id), run_id, message, error)
        self.emit(failed)
        return failed

    def stop(self, reason: str | None) -> None:
        """Emit :class:`Stopping` (if ``reason``), stop every query, then deliver the
        termination events that arrive within :data:`STOP_GRACE_SECONDS`."""
        if reason:
            self.emit(Stopping(reason))
        self.halt()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        try:
            while self.pending:
                self.pump(deadline)  # a failure while stopping is delivered, not raised
        except _Timeout:
            log.warning("no termination event from Spark for %s", ", ".join(self.pending))

    def halt(self) -> None:
        """``StreamingQuery.stop()`` every query; errors (a JVM already gone) are logged."""
        for handle in self.handles:
            try:
                handle.stop()
            except Exception:  # noqa: BLE001 - keep stopping the others
                log.debug("could not stop query %s", handle, exc_info=True)

    def close(self) -> None:
        """Remove the Spark listener (events still queued are dropped)."""
        try:
            self.spark.streams.removeListener(self.bridge)
        except Exception:  # noqa: BLE001 - the session may already be stopped
            log.debug("could not remove the streaming listener", exc_info=True)

    def results(self) -> list[QueryTerminated]:
        """The termination events received, in plan order."""
        return [self.terminated[run_id] for run_id in self.by_run if run_id in self.terminated]

    def follow(self) -> None:
        """Deliver events until every query terminated, then remove the listener (the body of
        :meth:`Session.start`'s thread). Listener errors are logged, not raised."""
        try:
            while self.pending:
                try:
                    self.pump()
                except Exception:  # noqa: BLE001 - a listener failed; keep the others informed
                    log.exception("a sqlstream listener failed")
        finally:
            self.close()


class Session:
    """Compiles, checks, starts and runs pipelines in one SparkSession, reporting events.

    Args:
        spark: the SparkSession to use; ``None``: get or create one on first start with
            ``runtime.create_session`` (``exec``'s defaults, ``master``, ``conf`` and the
            pipeline's ``SET`` settings), stopped again by :meth:`close` if it was created.
        master: the Spark master URL for a created session (default ``local[*]``); ignored
            when ``spark`` is given or a session is already active.
        conf: Spark configuration for the session, ``{key: value}`` strings; ignored when
            ``spark`` is given.
        listeners: receive every event (:mod:`sqlstream.events`): callables or objects with
            ``on_event(event)``.
        state_dir: root of default checkpoint locations for :meth:`compile` /
            :meth:`compile_file` (overrides ``SET 'sqlstream.state_dir'``).

    Use it as a context manager (``with Session(…) as session:``) to stop a session it
    created.
    """

    def __init__(self, spark: SparkSession | None = None, *, master: str | None = None,
                 conf: Mapping[str, str] | None = None, listeners: Iterable[ListenerLike] = (),
                 state_dir: str | None = None) -> None:
        self.spark = spark
        self.master = master
        self.conf = dict(conf or {})
        self.listeners = tuple(listeners)
        self.state_dir = state_dir
        self._created = False

    # ------------------------------------------------------------------ compile, check

    def compile(self, text: str, variables: Mapping[str, object] | None = None,
                path: str | None = None) -> Pipeline:
        """Compile `.ssql` text (see :func:`sqlstream.compile`) with this session's
        ``state_dir``.

        Raises:
            SqlStreamError: the first problem in the text (a ``CompileError`` lists all).
        """
        import sqlstream

        return sqlstream.compile(text, variables, path, self.state_dir)

    def compile_file(self, path: str, variables: Mapping[str, object] | None = None) -> Pipeline:
        """Read and compile a `.ssql` file (see :func:`sqlstream.compile_file`).

        Raises:
            SqlStreamError: the file cannot be read (``SS002``), or its first problem.
        """
        import sqlstream

        return sqlstream.compile_file(path, variables, self.state_dir)

    def check(self, text: str, variables: Mapping[str, object] | None = None,
              path: str | None = None) -> list[SqlStreamError]:
        """Every finding of ``text`` (errors and warnings) in file order; never raises for
        problems in the text, starts no JVM (see :func:`sqlstream.check`)."""
        import sqlstream

        return sqlstream.check(text, variables, path)

    # ------------------------------------------------------------------ run

    def spark_for(self, plan: p.Plan) -> SparkSession:
        """The SparkSession to run ``plan`` in: the given one, or one got or created with
        ``runtime.create_session`` (each default it applies is reported as a
        :class:`~sqlstream.events.Notice`)."""
        if self.spark is None:
            from sqlstream.runtime import create_session

            self.spark, self._created = create_session(
                plan, self.master, self.conf, lambda line: self._emit(Notice(line)))
        return self.spark

    def _emit(self, event: Event) -> None:
        for listener in self.listeners:
            deliver(listener, event)

    def _launch(self, pipeline: Pipeline | p.Plan, available_now: bool) -> _Run:
        plan = pipeline if isinstance(pipeline, p.Plan) else pipeline.plan
        run = _Run(self.spark_for(plan), plan, available_now, self._emit)
        run.start()
        return run

    def start(self, pipeline: Pipeline | p.Plan, available_now: bool = False) -> list[StreamingQuery]:
        """Start every query of ``pipeline`` and return without waiting.

        Settings, views and queries are bound by ``binder.start``. With listeners, a
        daemon thread of sqlstream delivers the events of these queries (from
        :class:`~sqlstream.events.QueryStarted` to :class:`~sqlstream.events.QueryTerminated`
        and, for a failure, :class:`~sqlstream.events.QueryFailed`) and removes the Spark
        listener when all have terminated. A failing query does not stop the others.

        Args:
            pipeline: a compiled :class:`~sqlstream.Pipeline` (or its plan).
            available_now: run every query with ``trigger(availableNow=True)``.

        Returns:
            The started ``pyspark.sql.streaming.StreamingQuery`` objects, in file order.

        Raises:
            SqlStreamError: Spark refused a setting (``SS202``), a source or a query
                (``SS501``), positioned at the statement; queries already started are
                stopped first.
        """
        plan = pipeline if isinstance(pipeline, p.Plan) else pipeline.plan
        if not self.listeners:
            from sqlstream.binder import start

            return start(self.spark_for(plan), plan, available_now, report=lambda _: None)
        run = self._launch(plan, available_now)
        threading.Thread(target=run.follow, name=f"sqlstream-events-{plan.name}", daemon=True).start()
        return list(run.handles)

    def run(self, pipeline: Pipeline | p.Plan, available_now: bool = False,
            timeout: float | None = None) -> list[QueryTerminated]:
        """Start every query of ``pipeline``, wait until all have terminated, and return.

        Events are delivered to the listeners on the calling thread. The run ends when
        Spark reports the termination of every query (e.g. ``EMIT … ONCE`` or
        ``available_now`` once the input is processed). Ctrl-C (``KeyboardInterrupt``)
        or ``timeout`` stops every query cleanly (``StreamingQuery.stop``), emits
        :class:`~sqlstream.events.Stopping` and returns normally; no query is left
        running when this method returns or raises.

        Args:
            pipeline: a compiled :class:`~sqlstream.Pipeline` (or its plan).
            available_now: run every query with ``trigger(availableNow=True)``.
            timeout: stop the queries after this many seconds (wall time from the start);
                ``None``: wait for as long as they run.

        Returns:
            The :class:`~sqlstream.events.QueryTerminated` event of every query, in file
            order (a query whose termination event did not arrive within
            :data:`STOP_GRACE_SECONDS` of being stopped is missing).

        Raises:
            QueryFailedError: a query failed (code ``SS501``, positioned at its statement,
                Spark's message in one paragraph); the others are stopped first. Also
                (without a position) when the JVM this process launched exits.
            SqlStreamError: Spark refused a setting, source or query at start (see
                :meth:`start`).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        run = self._launch(pipeline, available_now)
        reason = None
        try:
            failure = run.pump(deadline)
        except KeyboardInterrupt:
            failure, reason = None, "interrupted"
        except _Timeout:
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

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Stop the SparkSession if this Session created it (an active one it reused, or one
        given to it, is left running)."""
        if self._created and self.spark is not None:
            self.spark.stop()
            self.spark, self._created = None, False

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - do not hide the error that ended the block
            if exc_type is None:
                raise
            log.debug("could not stop the SparkSession", exc_info=True)
