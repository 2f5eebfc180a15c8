"""The test feed: a real Spark streaming source that delivers one micro-batch per step.

The harness writes the rows of each ``input`` step into a folder that a streaming query
reads; Spark's offsets, offset log, watermarks, no-data micro-batches and restarts are
Spark's own. Every stream of a pipeline is a filter of one feed DataFrame (a column
:data:`TAG` names the stream of each row), so a query has one source (Spark's
``MicroBatchExecution`` keeps one instance per unique source) and reads the rows of all
streams of a step in the same micro-batch. Two kinds of feed, chosen per test by the
types of its columns (:func:`file_exact`):

* **the file feed** (the usual one): Spark's JSON file source, a JVM source. Step ``n`` is
  one file ``step-00000n.json`` (JSON lines; written under a hidden name and renamed, so the
  source lists a step whole or not at all; Spark skips names that start with ``.``). Values
  are written in the exact forms the JSON reader parses for the column's type
  (:data:`JSON_OPTIONS`: timestamps with microseconds and an offset, decimals and doubles
  as JSON numbers, binary as base64), and ``mode=FAILFAST`` makes any value it cannot
  read an error, never a silent ``NULL``. No Python process takes part in a micro-batch.
* **the Python feed**, for columns the JSON reader cannot read exactly (a ``MAP`` whose key
  is not a string: JSON object keys are strings): a Python data source (PySpark's
  ``DataSource`` with a ``DataSourceStreamReader``) over ``step-00000n.pickle`` files and a
  ``committed`` file naming the last step released. Its offset is ``{"step": n}``. It costs
  a Python process per query start and a Python worker round trip per micro-batch.

A table's rows are read the same way, as a batch: one JSON file (:func:`write_rows`), or
for columns the JSON reader cannot read exactly one pickle file that the same data source
reads (:func:`write_table`, :class:`TableReader`).

Source: Spark guide, *Structured Streaming Programming Guide* (file source: "files will be
processed in the order of file modification time"; ``maxFilesPerTrigger`` unset reads all
new files); Spark SQL guide, *JSON Files* (``timestampFormat``, ``timestampNTZFormat``,
``dateFormat``, ``allowNonNumericNumbers``, ``mode``); Spark's ``HadoopFSUtils`` /
``InMemoryFileIndex`` (paths starting with ``_`` or ``.`` are hidden); PySpark API
reference, *Python Data Source API* (``DataSource.streamReader``,
``DataSourceStreamReader.initialOffset`` / ``latestOffset`` / ``partitions`` / ``read``).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import os
import pickle
from pathlib import Path

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

from sqlstream.testing.pipeline import TAG

FORMAT = "sqlstream_test_feed"
"""The name the feed is registered under (``spark.readStream.format(FORMAT)``)."""

JSON_OPTIONS = {
    "timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
    "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
    "dateFormat": "yyyy-MM-dd",
    "allowNonNumericNumbers": "true",
    "mode": "FAILFAST",
    "multiLine": "false",
    "encoding": "UTF-8",
}
"""The JSON reader's options of the file feed: the forms :func:`json_value` writes."""


def file_exact(kind: tuple) -> bool:
    """Whether the file feed carries a value of type ``kind`` (a
    :data:`sqlstream.testing.values.Type`) exactly: every type but a ``MAP`` with a key
    that is not a string (at any depth), and a type not known statically."""
    name = kind[0]
    if name == "map":
        return kind[1][0] in ("string", "varchar", "char") and file_exact(kind[2])
    if name == "array":
        return file_exact(kind[1])
    if name == "struct":
        return all(file_exact(t) for _, t in kind[1])
    return name != "unknown"


def json_value(value, kind: tuple) -> str:
    """``value`` (as :func:`sqlstream.testing.values.to_python` makes it for ``kind``) as
    the JSON text the JSON reader with :data:`JSON_OPTIONS` reads back as that value.

    A ``TIMESTAMP`` (an aware ``datetime``) is written as its instant in UTC with
    microseconds; a ``TIMESTAMP_NTZ`` as its wall time; a ``DECIMAL`` and a ``DOUBLE``
    as JSON numbers (``NaN``, ``Infinity``, ``-Infinity`` for the non-finite doubles);
    ``BINARY`` as base64.
    """
    if value is None:
        return "null"
    name = kind[0]
    if name == "timestamp":
        utc = value.astimezone(dt.timezone.utc) if value.tzinfo else value
        return '"' + utc.strftime("%Y-%m-%dT%H:%M:%S.%f") + '+00:00"'
    if name == "timestamp_ntz":
        return '"' + value.strftime("%Y-%m-%dT%H:%M:%S.%f") + '"'
    if name == "date":
        return '"' + value.isoformat() + '"'
    if name == "boolean":
        return "true" if value else "false"
    if name == "decimal":
        return format(value, "f")
    if name in ("double", "float", "real"):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(float(value))
    if name == "binary":
        return '"' + base64.b64encode(bytes(value)).decode("ascii") + '"'
    if name == "array":
        return "[" + ",".join(json_value(v, kind[1]) for v in value) + "]"
    if name == "map":
        return (
            "{"
            + ",".join(
                json.dumps(str(k), ensure_ascii=False) + ":" + json_value(v, kind[2])
                for k, v in value.items()
            )
            + "}"
        )
    if name == "struct":
        return (
            "{"
            + ",".join(
                json.dumps(n, ensure_ascii=False) + ":" + json_value(v, t)
                for v, (n, t) in zip(value, kind[1], strict=True)
            )
            + "}"
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def write_step(
    folder: Path, step: int, columns: list[tuple[str, tuple]], rows: list[tuple[str, tuple]]
) -> None:
    """Write the rows of step ``step`` of the file feed in ``folder`` (atomically).

    Args:
        folder: the feed's folder (the JSON source's path).
        step: the step number (1-based; names the file, so files list in step order).
        columns: ``(name, type)`` of the feed's columns after :data:`TAG`.
        rows: ``(stream tag, row tuple over columns)`` pairs, in arrival order.
    """
    lines = [_json_line(columns, row, tag) for tag, row in rows]
    hidden = folder / f".step-{step:06d}.json"
    hidden.write_text("".join(lines), encoding="utf-8")
    os.replace(hidden, folder / f"step-{step:06d}.json")


def _json_line(columns: list[tuple[str, tuple]], row: tuple, tag: str | None = None) -> str:
    """One JSON line: ``row`` over ``columns`` (nulls left out), after :data:`TAG` when
    ``tag`` is given."""
    fields = [] if tag is None else [json.dumps(TAG) + ":" + json.dumps(tag, ensure_ascii=False)]
    fields += [
        json.dumps(name) + ":" + json_value(value, kind)
        for (name, kind), value in zip(columns, row, strict=True)
        if value is not None
    ]
    return "{" + ",".join(fields) + "}\n"


def write_rows(folder: Path, columns: list[tuple[str, tuple]], rows: list[tuple]) -> None:
    """Write a table's rows (tuples over ``columns``, ``(name, type)``) as the one JSON-lines
    file ``rows.json`` of ``folder``, which Spark's JSON reader reads with
    :data:`JSON_OPTIONS` (no rows: an empty file)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(_json_line(columns, row) for row in rows)
    (folder / "rows.json").write_text(text, encoding="utf-8")


def write_table(folder: Path, rows: list[tuple]) -> None:
    """Write a table's rows (tuples in its schema) as the pickle file ``rows.pickle`` of
    ``folder``, which :class:`TableReader` reads."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rows.pickle").write_bytes(pickle.dumps(list(rows)))


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
    """The data source: ``load(path)`` (the feed's folder) with the rows' schema
    (``schema(ddl)``, else the option ``schema``); a stream (:class:`FeedReader`) or, for a
    table, a batch (:class:`TableReader`)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return self.options["schema"]

    def streamReader(self, schema):  # noqa: N802 - PySpark's name
        return FeedReader(Path(self.options["path"]))

    def reader(self, schema):
        return TableReader(Path(self.options["path"]))


class TableReader(DataSourceReader):
    """A table's rows (:func:`write_table`), in one partition."""

    def __init__(self, folder: Path):
        self.folder = folder

    def read(self, partition):
        yield from pickle.loads((self.folder / "rows.pickle").read_bytes())


class FeedReader(DataSourceStreamReader):
    """Offsets ``{"step": n}``; one partition per step."""

    def __init__(self, folder: Path):
        self.folder = folder

    def initialOffset(self) -> dict:  # noqa: N802
        return {"step": 0}

    # the form without arguments that PySpark 4.0 and 4.1 call (and 4.2 on still does);
    # 4.2's stubs type the one with start and limit
    def latestOffset(self) -> dict:  # type: ignore[override]  # noqa: N802
        return {"step": released(self.folder)}

    def partitions(self, start: dict, end: dict):
        return [
            InputPartition(step) for step in range(int(start["step"]) + 1, int(end["step"]) + 1)
        ]

    def read(self, partition):
        folder = self.folder
        for tag, row in pickle.loads(step_file(folder, partition.value).read_bytes()):
            yield (tag, *row)

    def commit(self, end: dict) -> None:
        pass
