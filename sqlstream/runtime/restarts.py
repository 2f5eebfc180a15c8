"""Restart safety: a query's state signature kept in its checkpoint, compared on restart.

On the first start of a query on a checkpoint location, sqlstream writes the query's
:class:`~sqlstream.ir.plan.StateSignature` — with the Spark settings that shape its state
(the state store provider, ``spark.sql.shuffle.partitions``, the multiple-watermark policy) — to
``<checkpoint>/sqlstream/state_signature.json`` (:data:`SIGNATURE_FILE`). On a later start
it reads that record back and lists what changed (:func:`diff`), each change classified
as Spark's guide does in *Recovery Semantics after Changes in a Streaming Query*
(``docs/streaming/apis-on-dataframes-and-datasets.md``):

* refused (the guide's *not allowed*, or a change that would silently run wrong): another
  number of sources or another input (path, table, topic); any change to the stateful
  operators — added, removed, another kind, other grouping keys or aggregates, other
  ``SELECT DISTINCT`` or deduplication columns, another join type or other join keys, all
  compared by meaning (:mod:`sqlstream.analysis.lineage`: through views, CTEs, subqueries
  and computed columns, equal spellings folded); another ``spark.sql.session.timeZone`` on
  a query whose state holds timestamp-derived values; a files sink whose output another
  checkpoint wrote (:mod:`sqlstream.runtime.sink_owner`); a malformed record;
  another file sink directory or format (or a change *to* a file or table sink); on a
  stateful query, another event-time column, a watermark added or removed, another output
  mode; another state store provider;
* allowed, reported (:attr:`Change.allowed`): another watermark delay (Spark keeps the
  watermark monotonic, so rows are neither rewritten nor reopened; only lateness changes),
  another ``spark.sql.shuffle.partitions`` (Spark keeps the checkpoint's number), another
  ``multipleWatermarkPolicy`` on a query over several watermarks (Spark keeps the
  checkpoint's), another sink topic or sink type (out of the file sink), the output mode of a stateless query;
* not in the signature, so never reported: filters, projections that keep the state,
  rate limits (``maxFilesPerTrigger``), the trigger, other source options.

Pure Python (no pyspark): the binder reads the Spark settings and calls :func:`prepare`
before any query starts and :meth:`Restart.commit` after each one started. Only local
checkpoint locations (a path, or a ``file:`` URI) are checked.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlstream.connectors import lakehouse_offsets
from sqlstream.diagnostics.errors import IncompatibleRestartError
from sqlstream.diagnostics.source_text import Source
from sqlstream.ir import plan as p
from sqlstream.runtime import sink_owner
from sqlstream.runtime.state_changes import (
    PINNED,
    SPARK_SETTINGS,
    Change,
    _connector,
    diff,
    validate,
)

__all__ = ["SIGNATURE_FILE", "SPARK_SETTINGS", "Change", "Restart", "diff", "prepare", "record"]

SIGNATURE_FILE = os.path.join("sqlstream", "state_signature.json")
"""Where the record is kept, relative to the checkpoint location."""

FORMAT = 2
"""Version of the record's layout: 2 adds each operator's ``resolved_keys``,
``resolved_aggregates`` and ``zoned``, and the settings ``time_zone`` and
``case_sensitive``; a record of format 1 still loads and is compared by what it holds."""

GUIDE = "Spark guide, Recovery Semantics after Changes in a Streaming Query"

HINT = (
    "to start over, give the sink a new checkpoint_location (a files sink also a new "
    "path: Spark skips the batches an output directory's _spark_metadata already holds); "
    "or rerun with --allow-incompatible-restart (API: allow_incompatible_restart=True) "
    "at your own risk: Spark may fail or write wrong results"
)


def local_path(path: str | None) -> str | None:
    """An absolute local path for ``path`` (a path or ``file:`` URI), else ``None``."""
    if not path:
        return None
    if path.startswith("file:"):
        path = path[len("file:") :]
        path = "/" + path.lstrip("/") if path.startswith("//") else path
    elif "://" in path:
        return None
    return os.path.normpath(os.path.abspath(path))


def record(
    state: p.StateSignature, spark_settings: Mapping[str, str | None], source: Source | None = None
) -> dict:
    """The JSON-ready record of a query's state signature.

    Args:
        state: the query's state signature.
        spark_settings: :data:`SPARK_SETTINGS` keys → the values in force (``None``: unset).
        source: the pipeline's text; its secrets are redacted from every string
            (:meth:`~sqlstream.diagnostics.source_text.Source.redact_value`: none are written to the
            checkpoint). ``None``: nothing to redact.

    Returns:
        ``{"format", "sources", "operators", "watermarks", "output_mode", "sink", "spark"}``:
        lists and dicts of strings; local file paths made absolute.
    """
    data = dataclasses.asdict(state)
    for read in data["sources"]:
        if _connector(read["connector"]).path_target:
            read["target"] = local_path(read["target"]) or read["target"]
    connector, fmt, path = state.sink
    if _connector(connector).path_target:
        path = local_path(path) or path
    data["sink"] = {"connector": connector, "format": fmt, "path": path}
    data["spark"] = {key: spark_settings.get(key) for key in SPARK_SETTINGS}
    data = (
        source.redact_value(data) if source else json.loads(json.dumps(data))
    )  # lists, not tuples
    return {"format": FORMAT, **data}


# ---- the checkpoint -------------------------------------------------------------------------


def has_state(directory: str) -> bool:
    """``directory`` (a checkpoint location) holds Spark's progress: an ``offsets`` entry."""
    offsets = os.path.join(directory, "offsets")
    return os.path.isdir(offsets) and any(not n.startswith(".") for n in os.listdir(offsets))


MAX_RECORD_BYTES = 16 * 1024 * 1024
"""A record larger than this is refused as malformed (one query's signature is a few KiB)."""


def read(directory: str) -> dict | None:
    """The record kept in checkpoint ``directory``, or ``None`` when there is none.

    Raises:
        OSError: the file exists but cannot be read.
        ValueError: it is not a regular file, is larger than :data:`MAX_RECORD_BYTES`, is
            not UTF-8 JSON (truncated, bad syntax, nested too deep), or is out of shape
            (:func:`~sqlstream.runtime.state_changes.validate`: the message names the field).
    """
    path = os.path.join(directory, SIGNATURE_FILE)
    if not os.path.lexists(path):
        return None
    status = os.stat(path)
    if not stat.S_ISREG(status.st_mode):
        raise ValueError("it is not a regular file")
    if status.st_size > MAX_RECORD_BYTES:
        raise ValueError(f"it holds {status.st_size} bytes, more than a record can")
    with open(path, "rb") as handle:
        raw = handle.read(MAX_RECORD_BYTES + 1)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"it is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}; truncated?)"
        ) from None
    except RecursionError:
        raise ValueError("it is nested too deep to be a record") from None
    return validate(data, FORMAT)


def write(directory: str, data: Mapping) -> None:
    """Write ``data`` to ``directory``'s :data:`SIGNATURE_FILE` atomically (a temporary
    file in the same folder, then ``os.replace``)."""
    folder = os.path.dirname(os.path.join(directory, SIGNATURE_FILE))
    os.makedirs(folder, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=".state_signature.", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(temporary, os.path.join(directory, SIGNATURE_FILE))
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


@dataclass(frozen=True)
class Restart:
    """The decision for one query; :meth:`commit` writes its record once it started.

    Attributes:
        query: the query.
        directory: its local checkpoint location.
        record: the record to write (:func:`record`; the pinned Spark settings kept).
        changes: the changes from the recorded signature (empty on a first start).
        output: a files sink's local output directory, else ``None``.
    """

    query: p.Query
    directory: str
    record: dict
    changes: tuple[Change, ...] = ()
    output: str | None = None

    def commit(self) -> None:
        """Write :attr:`record` to the checkpoint, and for a files sink the checkpoint as
        the owner of :attr:`output` (:func:`~sqlstream.runtime.sink_owner.claim`), after the
        query started."""
        write(self.directory, self.record)
        if self.output is not None:
            sink_owner.claim(self.output, self.directory)


def prepare(
    plan: p.Plan,
    spark_settings: Mapping[str, str | None],
    allow: bool = False,
    report: Callable[[str], None] = print,
) -> dict[str, Restart]:
    """Compare every query of ``plan`` with the record in its checkpoint, before any starts.

    A query without a state signature or a checkpoint location (console, memory) is
    skipped; one whose checkpoint is not local is skipped with a note. A checkpoint without
    Spark's progress is a first start; one with progress but no record (written before
    sqlstream kept records) is adopted: the current signature is recorded, with a note.

    Args:
        plan: the compiled pipeline.
        spark_settings: :data:`SPARK_SETTINGS` keys → values in force in the session.
        allow: report refused changes as notes instead of raising
            (``--allow-incompatible-restart``).
        report: receives one-line notes (allowed changes, adopted checkpoints).

    Returns:
        Query name → its :class:`Restart`, for the queries to record after they start.

    Raises:
        IncompatibleRestartError: (``SS401``) a query's changes include one Spark does
            not allow; positioned at its statement, naming each change and the checkpoint.
            Also when the recorded signature cannot be read (malformed: the message names
            the field), and when a files sink's output directory belongs to another
            checkpoint, or holds batches and the checkpoint is fresh
            (:func:`~sqlstream.runtime.sink_owner.conflict`, naming the owner). Nothing is
            started or written.
        SqlStreamError: (``SS407``) a lakehouse source's offsets in the checkpoint were
            written by the other reader of its format
            (:func:`~sqlstream.connectors.lakehouse_offsets.checkpoint_conflict`).
    """
    decided: dict[str, Restart] = {}
    for query in plan.queries:
        directory = local_path(query.checkpoint_location)
        if directory is not None:  # the offsets of the other reader of a lakehouse format
            lakehouse_offsets.checkpoint_conflict(plan, query, directory)
        if query.state is None or query.checkpoint_location is None:
            continue
        directory = local_path(query.checkpoint_location)
        if directory is None:
            report(
                f"query '{query.name}': restart check skipped: checkpoint "
                f"{query.checkpoint_location} is not a local path"
            )
            continue
        new = record(query.state, spark_settings, plan.source)
        try:
            old = read(directory) if has_state(directory) else None
        except (OSError, ValueError) as exc:
            raise IncompatibleRestartError(
                f"query '{query.name}': cannot read the state signature "
                f"{os.path.join(directory, SIGNATURE_FILE)} of checkpoint {directory}: {exc}",
                query.span,
                plan.source,
                hint=f"delete {os.path.join(directory, SIGNATURE_FILE)} to record the current "
                "query's signature (changes since the last start then go unchecked), or give "
                "the sink a new checkpoint_location",
            ) from None
        output = _output(query)
        problem = output and sink_owner.conflict(output, directory, has_state(directory))
        if problem and not allow:
            raise IncompatibleRestartError(
                f"query '{query.name}' cannot start on checkpoint {directory}: {problem} "
                "(Spark's file sink skips every batch id its _spark_metadata log already "
                "holds: this run would write nothing)",
                query.span,
                plan.source,
                hint="restart with the owning checkpoint, or give the sink a new path "
                "(or empty its directory) to start over",
            )
        if problem:
            report(f"query '{query.name}': refused start allowed by the flag: {problem}")
        if old is None:
            if has_state(directory):
                report(
                    f"query '{query.name}': checkpoint {directory} has no state signature "
                    "(written before sqlstream kept one); recording the current one"
                )
            decided[query.name] = Restart(query, directory, new, output=output)
            continue
        changes = tuple(diff(old, new))
        pinned = {k: v for k, v in old.get("spark", {}).items() if k in PINNED}
        new = {**new, "spark": {**new["spark"], **pinned}}  # Spark keeps the checkpoint's
        refused = [c for c in changes if not c.allowed]
        if refused and not allow:
            raise IncompatibleRestartError(
                f"query '{query.name}' cannot restart from checkpoint {directory}: "
                + "; ".join(c.text() for c in refused),
                query.span,
                plan.source,
                hint=f"{HINT} ({GUIDE})",
            )
        for change in changes:
            label = "allowed" if change.allowed else "refused change allowed by the flag"
            report(f"query '{query.name}': {label}: {change.text()}")
        decided[query.name] = Restart(query, directory, new, changes, output)
    return decided


def _output(query: p.Query) -> str | None:
    """The local output directory of ``query``'s files sink, else ``None``."""
    sink = _connector(query.sink.connector)
    return local_path(query.sink.path) if sink.file_sink and sink.path_target else None
