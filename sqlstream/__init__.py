"""sqlstream: compile streaming SQL (`.ssql`) pipelines to Spark Structured Streaming.

The API::

    import sqlstream
    pipeline = sqlstream.compile_file("examples/flights/hourly_delays.ssql")
    print(pipeline.translate())          # Spark SQL + readStream/writeStream binding
    script = pipeline.to_pyspark()       # the same calls as a standalone PySpark script
    queries = pipeline.start(spark)      # the started StreamingQuery objects

    with sqlstream.Session(listeners=[sqlstream.TextRenderer()]) as session:
        session.run(pipeline, available_now=True)   # start, wait, stop; typed events

``import sqlstream``, :func:`compile`, :func:`translate` and :meth:`Pipeline.to_pyspark`
never import pyspark nor start a JVM; only :meth:`Pipeline.start` and :class:`Session`
runs do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlstream.diagnostics.errors import (
    CheckpointInUseError,
    IncompatibleRestartError,
    QueryFailedError,
    SqlStreamError,
)

if TYPE_CHECKING:  # pragma: no cover
    from sqlstream.api import (
        Pipeline,
        check,
        check_plan,
        compile,
        compile_file,
        read_file,
        translate,
    )
    from sqlstream.runtime.events import (
        BatchProgress,
        Event,
        Listener,
        ListenerLike,
        Notice,
        QueryEvent,
        QueryFailed,
        QueryIdle,
        QueryStarted,
        QueryTerminated,
        Stopping,
    )
    from sqlstream.runtime.renderers import JsonLinesRenderer, TextRenderer
    from sqlstream.session import Session

# The API is imported on first use (PEP 562): ``import sqlstream`` costs no sqlglot (a tool
# that embeds it pays for the compiler at its first compile), and translate and check,
# which never run anything, do not pay for the run API.
_LAZY = (
    {
        name: "sqlstream.api"
        for name in (
            "Pipeline",
            "check",
            "check_plan",
            "compile",
            "compile_file",
            "read_file",
            "translate",
        )
    }
    | {
        name: "sqlstream.runtime.events"
        for name in (
            "BatchProgress",
            "Event",
            "Listener",
            "ListenerLike",
            "Notice",
            "QueryEvent",
            "QueryFailed",
            "QueryIdle",
            "QueryStarted",
            "QueryTerminated",
            "Stopping",
        )
    }
    | {
        "JsonLinesRenderer": "sqlstream.runtime.renderers",
        "TextRenderer": "sqlstream.runtime.renderers",
        "Session": "sqlstream.session",
    }
)


def __getattr__(name: str) -> Any:
    """``sqlstream.Session``, ``sqlstream.TextRenderer``, … imported on first access.

    Raises:
        AttributeError: ``name`` is not part of the API.
    """
    if name not in _LAZY:
        raise AttributeError(f"module 'sqlstream' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "BatchProgress",
    "CheckpointInUseError",
    "Event",
    "IncompatibleRestartError",
    "JsonLinesRenderer",
    "Listener",
    "ListenerLike",
    "Notice",
    "Pipeline",
    "QueryEvent",
    "QueryFailed",
    "QueryFailedError",
    "QueryIdle",
    "QueryStarted",
    "QueryTerminated",
    "Session",
    "SqlStreamError",
    "Stopping",
    "TextRenderer",
    "check",
    "check_plan",
    "compile",
    "compile_file",
    "read_file",
    "translate",
]
__version__ = "0.1.0"
