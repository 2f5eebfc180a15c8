"""``connector = 'noop'``: computes every micro-batch and writes nothing
(``writeStream.format('noop')``), for benchmarks. Spark's ``NoopDataSource``."""

from __future__ import annotations

from sqlstream.connectors.base import Connector


class Noop(Connector):
    """The no-op sink (no options)."""

    name = "noop"
    sink_format = "noop"
