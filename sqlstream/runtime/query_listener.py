"""A start of a pipeline's queries followed through Spark's ``StreamingQueryListener``.

:class:`QueryRun` registers a PySpark ``StreamingQueryListener`` with
``spark.streams.addListener`` for the duration of a run, starts every query
(``binder.start``) and turns Spark's events into :mod:`sqlstream.runtime.events`. Spark calls
the listener on its py4j callback thread, where it only puts Spark's event on a queue;
:meth:`QueryRun.pump` takes events off the queue on the thread that follows the run
(:mod:`sqlstream.runtime.runner`), blocking in Python (``queue.get`` with a timeout, so
Ctrl-C is delivered), never in a py4j call. A failed query's error is positioned at its
statement and given the code and hint of what failed it.

Source: PySpark 4.1 ``StreamingQueryListener``, ``StreamingQueryManager.addListener`` /
``removeListener``, ``StreamingQuery.stop`` / ``exception``.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlstream.connectors.lakehouse_source import source_failure
from sqlstream.diagnostics.errors import QueryFailedError
from sqlstream.ir import plan as p
from sqlstream.lowering.lowered import Lowered
from sqlstream.runtime.events import (
    Event,
    Notice,
    QueryFailed,
    QueryIdle,
    QueryStarted,
    QueryTerminated,
    Stopping,
    batch_progress,
    redacted,
)
from sqlstream.runtime.expectation_failures import expectation_failure
from sqlstream.runtime.spark_errors import mapped

log = logging.getLogger("sqlstream")

STOP_GRACE_SECONDS = 10.0
"""How long a run waits for the termination events of queries it stopped (s)."""

# Spark error classes (in a failed query's message or its cause) that a user fixes in the
# .ssql file, and how: the hint of the QueryFailedError. Spark's own advice names its
# reader options ("try setting the option 'mode' as 'PERMISSIVE'"), which on_error replaces.
FAILURE_HINTS = {
    "MALFORMED_RECORD_IN_PARSING": "a record does not decode into the declared columns and "
    "on_error = 'fail' (the default) stops the query: fix the record, or set on_error = "
    "'drop' or 'dead_letter' on the source (in place of Spark's mode option, if set) to "
    "count such records and set them aside",
    "CSV header does not conform to the schema": "a CSV file's header names other columns, or "
    "the same in another order, than the header the source was planned with (declared columns "
    "are bound by name when the pipeline is compiled): compile again to read such files, or "
    "set on_error = 'drop' or 'dead_letter' on the source to set every row of such a file aside",
}

_TICK_SECONDS = 1.0  # longest single wait in queue.get (Ctrl-C interrupts it anyway)


def trigger_text(query: p.Query) -> str:
    """The trigger of ``query`` as :attr:`QueryStarted.trigger` describes it: ``default``,
    ``availableNow``, ``every <interval>``, ``continuous <interval>`` or ``realTime <interval>`` — read from the
    plan's :class:`~sqlstream.ir.plan.Trigger`, which the ``trigger(…)`` call is lowered from."""
    trigger = query.trigger
    if trigger is None:
        return "default"
    if trigger.kind == "available_now":
        return "availableNow"
    if trigger.kind == "continuous":
        return f"continuous {trigger.interval}"
    if trigger.kind == "real_time":
        return f"realTime {trigger.interval}"
    return f"every {trigger.interval}"


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


class RunTimeout(Exception):
    """The deadline of :meth:`QueryRun.pump` passed before every query terminated."""


class RunInterrupted(Exception):
    """A stop signal arrived (SIGINT or SIGTERM); ``args[0]`` is the signal's name."""


def _jvm_process(spark):
    """The JVM's ``Popen`` when this process launched it, else ``None``: polling it is pure
    Python (no py4j call), so a run notices a JVM that died without any event."""
    try:
        return getattr(spark.sparkContext._gateway, "proc", None)
    except Exception:  # noqa: BLE001 - e.g. Spark Connect has no sparkContext
        return None


class QueryRun:
    """One start of a plan's queries: their handles, the Spark listener and its queue."""

    def __init__(
        self,
        spark,
        pipeline: Lowered,
        notices: list[str],
        emit: Callable[[Event], None],
        allow_incompatible_restart: bool = False,
    ) -> None:
        plan = pipeline.plan
        self.spark, self.pipeline, self.plan, self.notices = spark, pipeline, plan, notices
        self.emit = (
            emit
            if not plan.source.secrets
            # no secret reaches a listener
            else (lambda event: emit(redacted(event, plan.source.redact)))
        )
        self.allow_incompatible_restart = allow_incompatible_restart
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.bridge = _bridge_class()(self.inbox)
        self.handles: list = []
        self.by_run: dict[str, tuple[Any, p.Query]] = {}  # run id -> (StreamingQuery, Query)
        self.terminated: dict[str, QueryTerminated] = {}
        self.jvm = _jvm_process(spark)
        self.stopping = False  # stop() began: further signals are only reported

    def start(self) -> list:
        """Register the listener, start every query (``binder.start``), emit QueryStarted."""
        from sqlstream.runtime.binder import start

        for notice in self.notices:
            self.emit(Notice(notice))
        registered = self._register_listener()
        try:
            self.handles = start(
                self.spark,
                self.pipeline,
                report=lambda line: self.emit(Notice(line)),
                allow_incompatible_restart=self.allow_incompatible_restart,
                before_queries=registered,
            )
            queries = {q.name: q for q in self.plan.queries}
            for handle in self.handles:
                query = queries[handle.name]
                self.by_run[str(handle.runId)] = (handle, query)
                self.emit(
                    QueryStarted(
                        name=handle.name,
                        id=str(handle.id),
                        run_id=str(handle.runId),
                        output_mode=query.output_mode,
                        trigger=trigger_text(query),
                        sink=query.sink.connector,
                        path=query.sink.path,
                        checkpoint_location=query.checkpoint_location,
                        span=query.span,
                    )
                )
        except BaseException:
            self.halt()
            self._listener_thread.join()  # then close() removes what it registered
            self.close()
            raise
        return self.handles

    def _register_listener(self) -> Callable[[], None]:
        """Register the listener on another thread; return the function that waits for it.

        The first ``addListener`` of a process starts PySpark's py4j callback server and
        loads the JVM's side of it (about 0.3–0.45 s on 2 cores); meanwhile the settings,
        functions and relations are bound. :func:`binder.start` calls the returned function
        before the restart check and the first query's start, so no query runs without
        the listener and no event is missed. ``addListener``'s error, if any, is raised there.
        """
        errors: list[BaseException] = []

        def register() -> None:
            try:
                self.spark.streams.addListener(self.bridge)
            except BaseException as error:  # noqa: BLE001 - raised by the waiting thread
                errors.append(error)

        thread = threading.Thread(target=register, name="sqlstream-listener", daemon=True)
        thread.start()
        self._listener_thread = thread

        def registered() -> None:
            thread.join()
            if errors:
                raise errors[0]

        return registered

    @property
    def pending(self) -> list[str]:
        """Run ids of the queries whose termination event has not arrived."""
        return [run_id for run_id in self.by_run if run_id not in self.terminated]

    def pump(self, deadline: float | None = None) -> QueryFailed | None:
        """Deliver events until every query terminated; return the first failure, if any.

        Raises:
            RunTimeout: ``deadline`` (``time.monotonic()`` value) passed first.
            QueryFailedError: the JVM this process launched exited.
            RunInterrupted: a stop signal arrived
                (:class:`~sqlstream.runtime.signals.StopSignals`) before :meth:`stop`.
        """
        while self.pending:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise RunTimeout
            try:
                item = self.inbox.get(
                    timeout=_TICK_SECONDS if remaining is None else min(_TICK_SECONDS, remaining)
                )
            except queue.Empty:
                if self.jvm is not None and self.jvm.poll() is not None:
                    raise QueryFailedError(
                        f"the Spark JVM exited (code {self.jvm.returncode}) while the queries "
                        "were running",
                        source=self.plan.source,
                    ) from None
                continue
            if item[0] == "signal":
                if not self.stopping:
                    raise RunInterrupted(item[2])
                self.emit(
                    Notice(
                        f"{item[2]} again: already stopping every query (the run "
                        f"waits up to {STOP_GRACE_SECONDS:g} s for Spark)"
                    )
                )
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
            from sqlstream.runtime.binder import spark_message

            failure = handle.exception()
            message = (
                spark_message(failure)
                if failure is not None
                else event.exception.strip().splitlines()[0]
            )
        terminated = QueryTerminated(
            handle.name,
            str(event.id),
            run_id,
            message,
            getattr(event, "errorClassOnException", None),
        )
        self.terminated[run_id] = terminated
        self.emit(terminated)
        if message is None:
            return None
        trace = f"{message}\n{event.exception or ''}"  # Spark's error with its causes
        hint = next((h for condition, h in FAILURE_HINTS.items() if condition in trace), None)
        known = mapped(trace)  # sqlstream.runtime.spark_errors: a more precise code and hint
        error = QueryFailedError(
            f"query '{handle.name}' failed: {message}",
            query.span,
            self.plan.source,
            hint=hint or (known.hint if known else None),
            code=known.code if known else None,
        )
        error = expectation_failure(trace, self.plan, query) or error  # FAIL UPDATE: SS560
        error = source_failure(trace, self.plan, query) or error  # lakehouse sources: SS550
        failed = QueryFailed(handle.name, str(event.id), run_id, message, error)
        self.emit(failed)
        return failed

    def stop(self, reason: str | None) -> None:
        """Emit :class:`Stopping` (if ``reason``), stop every query, then deliver the
        termination events that arrive within :data:`STOP_GRACE_SECONDS`."""
        self.stopping = True
        if reason:
            self.emit(Stopping(reason))
        self.halt()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        try:
            while self.pending:
                self.pump(deadline)  # a failure while stopping is delivered, not raised
        except RunTimeout:
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
