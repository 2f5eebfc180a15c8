"""The sinks of a pipeline under test: ``foreachBatch`` captures of each micro-batch's rows.

A test swaps every sink of the queries it runs for the ``foreach_batch`` connector
(:mod:`sqlstream.connectors.foreach_batch`) on the plan
(:meth:`sqlstream.testing.pipeline.PipelineUnderTest.under_test`). That connector names
its function by a path, ``function = 'module:attr.attr'``, which the program imports when
the query starts (``importlib.import_module(module).attr.attr``). A :class:`Capture` is
such a function, and :data:`CAPTURES` is where the harness puts each one while its test
runs, under a name of its own (:func:`register`), so that the path
``sqlstream.testing.capture:CAPTURES.<name>`` finds it. No pyspark import.
"""

from __future__ import annotations

import itertools
import types

from sqlstream.testing import values

CAPTURES = types.SimpleNamespace()
"""The captures of the tests running, by name (:func:`register`, :func:`unregister`)."""

_NAMES = itertools.count(1)


class Capture:
    """A ``foreachBatch`` function: the rows of each micro-batch, by batch id, as
    :func:`values.normal` tuples, and the columns with their types.

    Attributes:
        zone: the session time zone timestamps are normalized in.
        batches: batch id -> its rows (a batch written again after a restart replaces
            the first writing).
        order: the batch ids, in the order they first arrived.
        columns: ``(name, type)`` of the query's columns (:func:`values.parse_type`).
    """

    def __init__(self, zone: str):
        self.zone = zone
        self.batches: dict[int, list[tuple]] = {}
        self.order: list[int] = []
        self.columns: list[tuple[str, values.Type]] = []

    def __call__(self, frame, batch_id: int) -> None:
        columns = [
            (f.name, values.parse_type(f.dataType.simpleString())) for f in frame.schema.fields
        ]
        rows = [
            tuple(values.normal(v, t, self.zone) for v, (_, t) in zip(row, columns, strict=True))
            for row in frame.collect()
        ]
        self.columns = columns
        if batch_id not in self.batches:
            self.order.append(batch_id)
        self.batches[batch_id] = rows


def register(capture: Capture) -> str:
    """Put ``capture`` in :data:`CAPTURES` under a new name.

    Returns:
        The ``foreach_batch`` function path that names it
        (``'sqlstream.testing.capture:CAPTURES.c7'``), for :func:`unregister` too.
    """
    name = f"c{next(_NAMES)}"
    setattr(CAPTURES, name, capture)
    return f"{__name__}:CAPTURES.{name}"


def unregister(path: str) -> None:
    """Take the capture that ``path`` (from :func:`register`) names out of :data:`CAPTURES`."""
    name = path.rsplit(".", 1)[1]
    if hasattr(CAPTURES, name):
        delattr(CAPTURES, name)
