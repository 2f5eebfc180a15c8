"""``connector = 'memory'``: the output kept in the driver as an in-memory table named
after the query (``writeStream.format('memory')``; read it with ``spark.table(name)``).
Spark guide: *Output Sinks* (Memory sink)."""

from __future__ import annotations

from sqlstream.connectors.base import Connector


class Memory(Connector):
    """The memory sink (no options)."""

    name = "memory"
    sink_format = "memory"
    real_time_sink = True
