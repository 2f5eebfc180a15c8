"""``connector = 'rate_micro_batch'``: Spark's rate-per-micro-batch source,
``rowsPerBatch`` rows of ``(timestamp, value)`` each micro-batch
(``readStream.format('rate-micro-batch')``). Spark guide: *Input Sources* (Rate Per
Micro-Batch source)."""

from __future__ import annotations

from sqlstream.connectors.base import Connector


class RateMicroBatch(Connector):
    """The rate-per-micro-batch source (``rows_per_batch`` required)."""

    name = "rate_micro_batch"
    source_format = "rate-micro-batch"
    required = ("rowsPerBatch",)
    spark_options = ("rowsPerBatch", "numPartitions", "startTimestamp", "advanceMillisPerBatch")
    number_options = {
        "rowsPerBatch": (64, 1),
        "numPartitions": (32, 1),
        "startTimestamp": (64, 0),
        "advanceMillisPerBatch": (64, 0),
    }
    fixed_schema = (("timestamp", "TIMESTAMP"), ("value", "BIGINT"))
