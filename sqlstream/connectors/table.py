"""``connector = 'table'``: a catalog table, read with ``readStream.table(name)`` (or
``spark.read.table(name)`` for ``CREATE TABLE``) and written with ``toTable(name)``
(PySpark ``DataStreamReader.table``, ``DataStreamWriter.toTable``).

A table sink is written at a known location, ``.option('path', location)``: the ``path``
option, else ``<warehouse>/<table>`` where the warehouse is ``SET
'spark.sql.warehouse.dir'`` if the file sets it, else ``.sqlstream/warehouse`` in the
`.ssql` file's folder (not the working directory, Spark's default; Spark's catalog may
still create an empty ``spark-warehouse`` folder there). ``toTable`` creates
the table there if the catalog does not have it (an external table) and appends to it
otherwise, so a restart on the same checkpoint — in a new session, whose default
in-memory catalog has forgotten the table — appends to the same files. ``format`` (e.g.
``delta``, ``iceberg``) is the format of a new table (``.format(…)`` before ``toTable``;
Spark's default is parquet); a lakehouse format needs its package on the session
(``--packages`` / ``SET 'spark.jars.packages'``).

Spark guide: *Streaming Table APIs*; Spark SQL *CREATE TABLE* (``LOCATION``: an external
table), ``spark.sql.warehouse.dir``.
"""

from __future__ import annotations

import os

from sqlstream.connectors.base import Connector, ResolvedOptions, ResolvePath
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Step

DEFAULT_WAREHOUSE = ".sqlstream/warehouse"


class Table(Connector):
    """A catalog table (``table`` required); append or complete as a sink, durable."""

    name = "table"
    source_format = "<table>"
    sink_format = "<table>"
    required = ("table",)
    sink_modes = frozenset({"append", "complete"})
    durable = True
    bounded_source = True
    file_sink = True

    def source_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, table name)``: no ``format`` call; the name goes to ``table(…)``."""
        return None, resolved.get("table")

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(format or None, table name)``: the name goes to ``toTable(…)``."""
        return resolved.get("format"), resolved.get("table")

    def sink_options(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath, settings: dict[str, str]
    ) -> tuple[tuple[str, str], ...]:
        """``(('path', location),)``: the ``path`` option resolved against the file's
        folder, else ``<warehouse>/<table>`` (``<warehouse>/<db>.db/<t>`` for ``db.t``)."""
        path = resolved.get("path")
        if path is None:
            warehouse = settings.get("spark.sql.warehouse.dir") or DEFAULT_WAREHOUSE
            *database, table = resolved.required("table").replace("`", "").split(".")
            parts = [f"{d}.db" for d in database] + [table]
            path = os.path.join(warehouse.removeprefix("file:"), *parts)
        location = resolve_path(path)
        assert location is not None  # (None only for no path)
        return (("path", location),)

    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """``table(name)`` (``DataStreamReader.table`` / ``DataFrameReader.table``)."""
        return (Step("table", (relation.path,)),)

    def start_step(self, sink: p.Sink) -> Step:
        """``toTable(name)`` (``DataStreamWriter.toTable``)."""
        return Step("toTable", (sink.path,))
