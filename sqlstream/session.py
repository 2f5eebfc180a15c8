"""The run API: compile, check, start and run pipelines on Spark, reporting typed events.

Like SQLMesh's ``Context``, one :class:`Session` object holds what every operation needs —
the SparkSession (given, or created on first use with ``exec``'s defaults), the
listeners and the state directory — and the CLI is a thin layer over it::

    from sqlstream import Session, TextRenderer
    with Session(master="local[2]", listeners=[TextRenderer()]) as session:
        pipeline = session.compile_file("examples/flights/hourly_delays.ssql")
        session.run(pipeline, available_now=True)

Queries are started and followed by :mod:`sqlstream.runtime.runner` (Spark's
``StreamingQueryListener`` → :mod:`sqlstream.runtime.events`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from sqlstream import api
from sqlstream.api import Pipeline
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir import plan as p
from sqlstream.runtime import checkpoint_lock, runner
from sqlstream.runtime.events import ListenerLike, Notice, QueryTerminated, emitter

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("sqlstream")


class Session:
    """Compiles, checks, starts and runs pipelines in one SparkSession, reporting events.

    Args:
        spark: the SparkSession to use; ``None``: get or create one on first start with
            ``runtime.create_session`` (``exec``'s defaults, ``master``, ``conf`` and the
            pipeline's ``SET`` settings), stopped again by :meth:`close` if it was created.
        master: the Spark master URL for a created session (default ``local[*]``;
            ``spark://host:port`` for a standalone cluster); ignored when ``spark`` is given
            or a session is already active.
        remote: instead of ``master``, a Spark Connect server URL (``sc://host:port``):
            the created session is a Spark Connect session (Spark guide *Spark Connect
            Overview*).
        conf: Spark configuration for the session, ``{key: value}`` strings; ignored when
            ``spark`` is given.
        listeners: receive every event (:mod:`sqlstream.runtime.events`): callables or objects with
            ``on_event(event)``.
        state_dir: root of default checkpoint locations for :meth:`compile` /
            :meth:`compile_file` (overrides ``SET 'sqlstream.state_dir'``).
        jvm_output: for a created session, receives each line the JVM writes to stderr
            that is not start-up noise (``runtime.launch_jvm``), on a thread of its own;
            default: ``sys.stderr``.

    Use it as a context manager (``with Session(…) as session:``) to stop a session it
    created.
    """

    def __init__(
        self,
        spark: SparkSession | None = None,
        *,
        master: str | None = None,
        conf: Mapping[str, str] | None = None,
        listeners: Iterable[ListenerLike] = (),
        state_dir: str | None = None,
        remote: str | None = None,
        jvm_output: Callable[[str], None] | None = None,
    ) -> None:
        if master and remote:
            raise ValueError("give master or remote, not both")
        self.spark = spark
        self.jvm_output = jvm_output
        self.master = master
        self.remote = remote
        self.conf = dict(conf or {})
        self.listeners = tuple(listeners)
        self._emit = emitter(self.listeners)
        self.state_dir = state_dir
        self._created = False

    # ------------------------------------------------------------------ compile, check

    def compile(
        self, text: str, variables: Mapping[str, object] | None = None, path: str | None = None
    ) -> Pipeline:
        """Compile `.ssql` text (see :func:`sqlstream.compile`) with this session's
        ``state_dir``, trusted (the session runs the pipeline and its functions).

        Raises:
            SqlStreamError: the first problem in the text (a ``CompileError`` lists all).
        """
        return api.compile(text, variables, path, self.state_dir, trust=True)

    def compile_file(self, path: str, variables: Mapping[str, object] | None = None) -> Pipeline:
        """Read and compile a `.ssql` file (see :func:`sqlstream.compile_file`), trusted.

        Raises:
            SqlStreamError: the file cannot be read (``SS002``), or its first problem.
        """
        return api.compile_file(path, variables, self.state_dir, trust=True)

    def check(
        self, text: str, variables: Mapping[str, object] | None = None, path: str | None = None
    ) -> list[SqlStreamError]:
        """Every finding of ``text`` (errors and warnings) in file order; never raises for
        problems in the text, starts no JVM (see :func:`sqlstream.check`)."""
        return api.check(text, variables, path)

    # ------------------------------------------------------------------ run

    def spark_for(self, plan: p.Plan) -> SparkSession:
        """The SparkSession to run ``plan`` in: the given one, or one got or created with
        ``runtime.create_session`` (each default it applies is reported as a
        :class:`~sqlstream.runtime.events.Notice`)."""
        if self.spark is None:
            from sqlstream.runtime.spark_session import create_session

            self.spark, self._created = create_session(
                plan,
                self.master,
                self.conf,
                lambda line: self._emit(Notice(plan.source.redact(line))),
                self.remote,
                self.jvm_output,
            )
        return self.spark

    def start(
        self,
        pipeline: Pipeline | p.Plan,
        available_now: bool = False,
        allow_incompatible_restart: bool = False,
    ) -> list[StreamingQuery]:
        """Start every query of ``pipeline`` in this session's SparkSession, with this
        session's listeners, and return without waiting: :func:`sqlstream.runtime.runner.start`
        (whose docstring says what is started, what is emitted, and what is raised).

        Args:
            pipeline: a compiled :class:`~sqlstream.Pipeline` (its plan and program), or a
                plan (lowered here, once).
            available_now, allow_incompatible_restart: as for
                :func:`sqlstream.runtime.runner.start`.

        Returns:
            The started ``pyspark.sql.streaming.StreamingQuery`` objects, in file order.

        Raises:
            CheckpointInUseError: (``SS502``) another run holds a query's checkpoint
                location (:mod:`sqlstream.runtime.checkpoint_lock`); checked before the
                SparkSession is created, nothing was started. The other errors are those of
                :func:`sqlstream.runtime.runner.start`.
        """
        pipeline = Pipeline(pipeline) if isinstance(pipeline, p.Plan) else pipeline
        plan = pipeline.plan
        lease = self._lock(plan)
        return runner.start(
            self._spark_or_release(plan, lease),
            pipeline,
            available_now,
            self.listeners,
            allow_incompatible_restart,
            lease,
        )

    def run(
        self,
        pipeline: Pipeline | p.Plan,
        available_now: bool = False,
        timeout: float | None = None,
        allow_incompatible_restart: bool = False,
    ) -> list[QueryTerminated]:
        """Start every query of ``pipeline`` in this session's SparkSession, wait until all
        have terminated, and return — :func:`sqlstream.runtime.runner.run`, with this session's
        listeners (called on the calling thread).

        Args:
            pipeline: a compiled :class:`~sqlstream.Pipeline` (its plan and program), or a
                plan (lowered here, once).
            available_now, timeout, allow_incompatible_restart: as for
                :func:`sqlstream.runtime.runner.run` (``timeout`` in seconds).

        Returns:
            The :class:`~sqlstream.runtime.events.QueryTerminated` event of every query, in file order.

        Raises:
            QueryFailedError: a query failed (``SS501``, at its statement); the others are
                stopped first.
            SqlStreamError: Spark refused a setting, source or query at start, or a
                restart on a checkpoint (``SS401``); another run holds a query's
                checkpoint (``SS502``, before the SparkSession is created).
        """
        pipeline = Pipeline(pipeline) if isinstance(pipeline, p.Plan) else pipeline
        plan = pipeline.plan
        lease = self._lock(plan)
        return runner.run(
            self._spark_or_release(plan, lease),
            pipeline,
            available_now,
            timeout,
            self.listeners,
            allow_incompatible_restart,
            lease,
        )

    def _lock(self, plan: p.Plan) -> checkpoint_lock.Lease:
        """Lock every query's checkpoint before the SparkSession is created (no JVM is
        started for a run that is refused; :func:`sqlstream.runtime.checkpoint_lock.acquire`).

        Raises:
            CheckpointInUseError: (``SS502``) another run holds a query's checkpoint.
        """
        return checkpoint_lock.acquire(
            plan, lambda line: self._emit(Notice(plan.source.redact(line)))
        )

    def _spark_or_release(self, plan: p.Plan, lease: checkpoint_lock.Lease) -> SparkSession:
        """:meth:`spark_for`; ``lease`` is released when no session can be had."""
        try:
            return self.spark_for(plan)
        except BaseException:
            lease.release()
            raise

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Stop the SparkSession if this Session created it (an active one it reused, or one
        given to it, is left running)."""
        if self._created and self.spark is not None:
            self.spark.stop()
            self.spark, self._created = None, False

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - do not hide the error that ended the block
            if exc_type is None:
                raise
            log.debug("could not stop the SparkSession", exc_info=True)
