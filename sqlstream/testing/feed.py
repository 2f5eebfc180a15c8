"""The test feed: a real Spark streaming source that delivers one micro-batch per step.

It is a Python data source (PySpark's ``pyspark.sql.datasource.DataSource`` with a
``DataSourceStreamReader``, Spark 4.0+) reading a folder that the harness writes:

* ``step-000001.pickle``, ``step-000002.pickle``, …: the rows of one ``input`` step, as
  ``[(tag, row tuple), …]`` in the feed's schema (``tag`` names the stream);
* ``committed``: the number of the last step the harness released (written by rename, so
  a reader sees a step whole or not at all).

The offset is ``{"step": n}``: :meth:`FeedReader.latestOffset` returns the last released
step, and a micro-batch from offset ``a`` to ``b`` reads steps ``a+1 … b`` (one partition
each). Every stream of a pipeline is a filter of one feed DataFrame, so a query has one
source (Spark's ``MicroBatchExecution`` keeps one instance per unique source) and reads
the rows of all streams of a step in the same micro-batch. Offsets, the offset log,
watermarks, no-data micro-batches and restarts are Spark's.

Source: PySpark API reference, *Python Data Source API* (``DataSource.streamReader``,
``DataSourceStreamReader.initialOffset`` / ``latestOffset`` / ``partitions`` / ``read``).
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

FORMAT = "sqlstream_test_feed"
"""The name the feed is registered under (``spark.readStream.format(FORMAT)``)."""

TAG = "__sqlstream_stream"
"""The column that names the stream a row belongs to."""


def step_file(folder: Path, step: int) -> Path:
    """The file of step ``step`` (1-based) in ``folder``."""
    return folder / f"step-{step:06d}.pickle"


def release(folder: Path, step: int, rows: list[tuple[str, tuple]]) -> None:
    """Write the rows of step ``step`` and release it to the readers (atomically).

    Args:
        folder: the feed's folder.
        step: the step number, one more than the last released.
        rows: ``(stream tag, row tuple in the feed schema)`` pairs, in arrival order.
    """
    path = step_file(folder, step)
    path.write_bytes(pickle.dumps(rows))
    temporary = folder / "committed.tmp"
    temporary.write_text(str(step), encoding="ascii")
    os.replace(temporary, folder / "committed")


def released(folder: Path) -> int:
    """The last step released in ``folder`` (0 when none)."""
    try:
        return int((folder / "committed").read_text(encoding="ascii"))
    except FileNotFoundError:
        return 0


class FeedSource(DataSource):
    """The data source: options ``path`` (the feed's folder) and ``schema`` (DDL)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return self.options["schema"]

    def streamReader(self, schema):  # noqa: N802 - PySpark's name
        return FeedReader(Path(self.options["path"]))


class FeedReader(DataSourceStreamReader):
    """Offsets ``{"step": n}``; one partition per step."""

    def __init__(self, folder: Path):
        self.folder = folder

    def initialOffset(self) -> dict:  # noqa: N802
        return {"step": 0}

    def latestOffset(self) -> dict:  # noqa: N802
        return {"step": released(self.folder)}

    def partitions(self, start: dict, end: dict):
        return [InputPartition(step) for step in range(int(start["step"]) + 1,
                                                          int(end["step"]) + 1)]

    def read(self, partition):
        folder = self.folder
        for tag, row in pickle.loads(step_file(folder, partition.value).read_bytes()):
            yield (tag, *row)

    def commit(self, end: dict) -> None:
        pass
