"""``connector = 'console'``: each micro-batch printed on stdout
(``writeStream.format('console')``); also the sink of a bare ``SELECT``. Spark guide:
*Output Sinks* (Console sink)."""

from __future__ import annotations

from sqlstream.connectors.base import Connector


class Console(Connector):
    """The console sink (``numRows``, ``truncate``)."""

    name = "console"
    sink_format = "console"
    spark_options = ("numRows", "truncate")
    number_options = {"numRows": (32, 0)}
    prints_rows = True
    real_time_sink = True
