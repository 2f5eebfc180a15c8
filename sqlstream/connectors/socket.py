"""``connector = 'socket'``: UTF-8 lines read from a TCP server, one ``value STRING``
column (``readStream.format('socket').option('host', …).option('port', …)``); for
testing, not fault tolerant. Spark guide: *Input Sources* (Socket source)."""

from __future__ import annotations

from sqlstream.connectors.base import Connector


class Socket(Connector):
    """The socket source (``host`` and ``port`` required)."""

    name = "socket"
    source_format = "socket"
    required = ("host", "port")
    spark_options = ("host", "port", "includeTimestamp")
    number_options = {"port": (32, 0)}
    fixed_schema = (("value", "STRING"),)
