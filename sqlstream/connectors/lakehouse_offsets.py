"""Rate limits and offsets of ``delta`` and ``iceberg`` *sources*, as the two readers of a
table have them — the format's own Spark reader (the JVM path) and sqlstream's Python data
source (:mod:`sqlstream.runtime.lakehouse_reader`) — without pyspark.

**Rate limits** (the options of the format's Spark reader, same names, on the stream's
``WITH``): Delta's ``maxFilesPerTrigger`` (files per micro-batch, default 1000) and
``maxBytesPerTrigger`` (a soft maximum of bytes: the file that crosses it is still read;
a whole number with an optional unit ``b``, ``k``/``kb``, ``m``/``mb``, ``g``/``gb``,
``t``/``tb``, ``p``/``pb``, powers of 1024, as Spark's ``JavaUtils.byteStringAsBytes``);
Iceberg's ``streaming-max-files-per-micro-batch`` and ``streaming-max-rows-per-micro-batch``
(a soft maximum of rows: the next file is always read, a further one only within it). A
micro-batch stops at the first limit reached (:class:`Limits`). Checked when the file is
compiled (:func:`check_rates`): ``SS286`` the other format's option, ``SS287`` a value that
is not a positive whole number (or byte size), ``SS288`` a limit where the Python reader
cannot honour it (PySpark 4.0 and 4.1 have no admission control for Python stream readers).

**Offsets in a checkpoint** (:func:`reader_of`): Delta's reader writes
``{"sourceVersion": 1, "reservoirId": …, "reservoirVersion": v, "index": i,
"isStartingVersion": b}``, Iceberg's ``{"version": 1, "snapshot_id": id, "position": p,
"scan_all_files": b}``, the Python reader ``{"version": v}`` / ``{"snapshot_id": id}`` (with
``files``, ``snapshot`` / ``scan`` inside a commit). Neither reader reads the other's, so a
checkpoint written by one is refused before a query reads it with the other (``SS407``,
:func:`checkpoint_conflict`): a query moved between Spark minors whose paths differ (Delta
from 4.2 to 4.3, Iceberg from 4.1 to 4.2).

Sources: Delta Lake guide *Table streaming reads and writes* (*Limit input rate*); Delta's
``DeltaSourceOffset`` (its JSON fields); Iceberg's Spark guide *Structured Streaming* (*Limit
input rate*) and ``StreamingOffset`` (its JSON fields); Spark's ``JavaUtils.byteStringAsBytes``;
PySpark 4.2's ``DataSourceStreamReader.latestOffset(start, limit)``.
"""

from __future__ import annotations

import json
import os
import re

from sqlstream.connectors.base import ResolvedOptions
from sqlstream.diagnostics.errors import OptionError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.ir import plan as p

RATE_OPTIONS = {
    "delta": ("maxFilesPerTrigger", "maxBytesPerTrigger"),
    "iceberg": ("streaming-max-files-per-micro-batch", "streaming-max-rows-per-micro-batch"),
}
"""Connector → its Spark reader's rate-limit options (files, then bytes or rows)."""
ALL_RATE_OPTIONS = tuple(name for names in RATE_OPTIONS.values() for name in names)
ADMISSION_CONTROL = "4.2"
"""The first PySpark minor whose Python stream readers take a read limit."""
_BYTES = re.compile(r"(\d+)\s*(b|k|kb|m|mb|g|gb|t|tb|p|pb)?", re.IGNORECASE)
_UNITS = {"": 0, "b": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def byte_count(text: str) -> int | None:
    """``'10m'`` → 10485760: a byte size as Spark reads one (``JavaUtils.byteStringAsBytes``:
    a whole number, a unit of powers of 1024), or ``None`` when ``text`` is none."""
    found = _BYTES.fullmatch(text.strip())
    if found is None:
        return None
    unit = (found.group(2) or "").lower().rstrip("b") or ""
    return int(found.group(1)) * 1024 ** _UNITS[unit]


def _canonical(key: str) -> str | None:
    return next((n for n in ALL_RATE_OPTIONS if n.lower() == key.lower()), None)


def rate_options(resolved: ResolvedOptions) -> tuple[tuple[str, str], ...]:
    """The rate-limit options given, as ``(Spark's name, text)``."""
    pairs = ((name, resolved.get(name.lower())) for name in ALL_RATE_OPTIONS)
    return tuple((name, text.strip()) for name, text in pairs if text is not None)


def check_rates(
    resolved: ResolvedOptions, role: str, python_reader: bool, spark_version: str, source: Source
) -> None:
    """The rate-limit options of a lakehouse connector used as ``role``.

    Args:
        python_reader: the source is read by the Python data source on ``spark_version``.

    Raises:
        OptionError: ``SS283`` a rate limit on a sink; ``SS286`` the other format's option;
            ``SS287`` a value that is not a positive whole number (``maxBytesPerTrigger``:
            or a byte size such as ``10m``); ``SS288`` a rate limit on a Python-path
            source on a Spark minor before :data:`ADMISSION_CONTROL`.
    """
    connector = resolved.spec.name
    for key, option in resolved.compiler.items():
        name = _canonical(key)
        if name is None:
            continue
        if role == "sink":
            raise OptionError(
                f"'{option.key}' is a rate limit of a {connector} source, not of a sink",
                option.span,
                source,
                code="SS283",
                hint=f"remove {option.key}; a sink writes every micro-batch it is given",
            )
        own = RATE_OPTIONS[connector]
        if name not in own:
            other = next(c for c, names in RATE_OPTIONS.items() if name in names)
            meant = own[RATE_OPTIONS[other].index(name)]
            raise OptionError(
                f"'{option.key}' is an option of {other}'s reader, not of "
                f"{'an' if connector == 'iceberg' else 'a'} {connector} source",
                option.key_span,
                source,
                code="SS286",
                hint=f"a {connector} source takes {' and '.join(own)} (here: '{meant}')",
            )
        text = option.text.strip()
        value = byte_count(text) if name == "maxBytesPerTrigger" else None
        if value is None:
            value = int(text) if text.isdigit() else 0
        if value < 1:
            size = " or a byte size such as 64m" if name == "maxBytesPerTrigger" else ""
            raise OptionError(
                f"{option.key} '{option.text}' is not a positive whole number{size}",
                option.value_span,
                source,
                code="SS287",
                hint=f"{name} = 1 reads at most one file per micro-batch"
                if "files" in name.lower()
                else f"{name} = {'64m' if size else '100000'}",
            )
        if python_reader and spark_version < ADMISSION_CONTROL:
            raise OptionError(
                f"{option.key}: on Spark {spark_version} a {connector} source is read by "
                "sqlstream's Python data source, and PySpark before "
                f"{ADMISSION_CONTROL} gives a Python stream reader no read limit",
                option.key_span,
                source,
                code="SS288",
                hint=f"remove {option.key} (each micro-batch reads every new commit), or "
                f"target Spark {ADMISSION_CONTROL} or later",
            )


class Limits:
    """A micro-batch's rate limits: at most ``files`` files; ``size`` a soft maximum of a
    measure per file (bytes for Delta, rows for Iceberg), ``crossing`` whether the file that
    crosses it is read (Delta's ``maxBytesPerTrigger``) or left for the next micro-batch
    (Iceberg's ``streaming-max-rows-per-micro-batch``); the first file is always read."""

    def __init__(self, files: int | None, size: int | None, crossing: bool):
        self.files, self.size, self.crossing = files, size, crossing

    def admitted(self, measures: list[int], taken: tuple[int, int]) -> tuple[int, tuple[int, int]]:
        """How many of the next files (their ``measures``) a micro-batch that already took
        ``taken`` (files, measure) reads, and what it has taken then."""
        files, size = taken
        count = 0
        for measure in measures:
            full = self.files is not None and files >= self.files
            past = self.size is not None and (
                size >= self.size or (not self.crossing and size + measure > self.size)
            )
            if files and (full or past):
                break
            files, size, count = files + 1, size + measure, count + 1
        return count, (files, size)


# ---- offsets in a checkpoint ----------------------------------------------------------------

READERS = {
    "delta": ("Delta's Spark reader (format 'delta')", "sqlstream's Python reader of Delta"),
    "iceberg": (
        "Iceberg's Spark reader (format 'iceberg')",
        "sqlstream's Python reader of Iceberg",
    ),
}
"""Connector → (its JVM reader, its Python reader), as messages name them."""


def reader_of(offset: dict) -> tuple[str, bool] | None:
    """``(connector, by the Python reader?)`` of an offset a lakehouse reader wrote, or
    ``None`` for another source's offset."""
    keys = set(offset)
    if {"reservoirId", "reservoirVersion"} <= keys:
        return "delta", False
    if {"snapshot_id", "position"} <= keys:
        return "iceberg", False
    if "version" in keys and keys <= {"version", "files", "snapshot"}:
        return "delta", True
    if "snapshot_id" in keys and keys <= {"snapshot_id", "files", "scan"}:
        return "iceberg", True
    return None


def latest_offsets(directory: str) -> list[dict]:
    """The source offsets of the last entry of the offset log of checkpoint ``directory``
    (Spark's ``offsets/<batch>``: a version line, the batch's metadata, one JSON offset per
    source), ``[]`` when there is none."""
    folder = os.path.join(directory, "offsets")
    try:
        batches = [int(n) for n in os.listdir(folder) if n.isdigit()]
    except OSError:
        return []
    if not batches:
        return []
    with open(os.path.join(folder, str(max(batches))), encoding="utf-8") as lines:
        entries = [line.strip() for line in lines][2:]
    found = []
    for entry in entries:
        try:
            value = json.loads(entry)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def checkpoint_conflict(plan: p.Plan, query: p.Query, directory: str) -> None:
    """Refuse ``query`` when checkpoint ``directory`` holds an offset of a lakehouse source
    written by the other reader than the one this plan reads the format with.

    Raises:
        SqlStreamError: ``SS407`` at the query, naming both readers, the Spark minor and
            what to do.
    """
    python = {}  # the reader of each lakehouse format, which the Spark minor decides
    for relation in plan.relations:
        if isinstance(relation, p.SourceRelation) and relation.connector in READERS:
            python[relation.connector] = (relation.format or "").startswith("sqlstream_")
    if not python:
        return
    for offset in latest_offsets(directory):
        found = reader_of(offset)
        if found is None or found[0] not in python or found[1] == python[found[0]]:
            continue
        connector, by_python = found
        wrote, reads = READERS[connector][by_python], READERS[connector][not by_python]
        raise SqlStreamError(
            f"query '{query.name}' cannot start on checkpoint {directory}: its offsets of "
            f"the {connector} source were written by {wrote}, and on Spark "
            f"{plan.spark_version} the source is read by {reads}, which cannot read them",
            query.span,
            plan.source,
            code="SS407",
            hint="give the query a new checkpoint_location (the table is then read from its "
            "start again), or run it on the Spark minor that wrote the checkpoint",
        )
