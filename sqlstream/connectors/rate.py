"""``connector = 'rate'``: Spark's rate source, ``rowsPerSecond`` rows of
``(timestamp, value)`` a second (``readStream.format('rate')``); the one built-in source
continuous processing reads. Spark guide: *Input Sources* (Rate source)."""

from __future__ import annotations

from sqlstream.connectors.base import Connector


class Rate(Connector):
    """The rate source (no options required)."""

    name = "rate"
    source_format = "rate"
    spark_options = ("rowsPerSecond", "rampUpTime", "numPartitions")
    number_options = {"rowsPerSecond": (64, 1), "numPartitions": (32, 1)}
    fixed_schema = (("timestamp", "TIMESTAMP"), ("value", "BIGINT"))
    continuous_source = True
    empty_available_now = (
        True  # Spark's RateStreamMicroBatchStream lacks SupportsTriggerAvailableNow
    )
