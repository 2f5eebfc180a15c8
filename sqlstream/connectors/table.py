"""``connector = 'table'``: a catalog table, read with ``readStream.table(name)`` (or
``spark.read.table(name)`` for ``CREATE TABLE``) and written with ``toTable(name)``
(PySpark ``DataStreamReader.table``, ``DataStreamWriter.toTable``). Spark guide:
*Streaming Table APIs*."""

from __future__ import annotations

from sqlstream import plan as p
from sqlstream.calls import Step
from sqlstream.connectors.base import Connector, ResolvedOptions, ResolvePath


class Table(Connector):
    """A catalog table (``table`` required); append or complete as a sink, durable."""

    name = "table"
    source_format = "<table>"
    sink_format = "<table>"
    required = ("table",)
    sink_modes = frozenset({"append", "complete"})
    durable = True
    bounded_source = True

    def source_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, table name)``: no ``format`` call; the name goes to ``table(…)``."""
        return None, resolved.get("table")

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, table name)``: no ``format`` call; the name goes to ``toTable(…)``."""
        return None, resolved.get("table")

    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """``table(name)`` (``DataStreamReader.table`` / ``DataFrameReader.table``)."""
        return (Step("table", (relation.path,)),)

    def start_step(self, sink: p.Sink) -> Step:
        """``toTable(name)`` (``DataStreamWriter.toTable``)."""
        return Step("toTable", (sink.path,))
