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
  ``SELECT DISTINCT`` or deduplication columns, another join type or other join keys;
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
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlstream.connectors import CONNECTORS, Connector
from sqlstream.diagnostics.errors import IncompatibleRestartError
from sqlstream.diagnostics.source_text import Source
from sqlstream.ir import plan as p

SIGNATURE_FILE = os.path.join("sqlstream", "state_signature.json")
"""Where the record is kept, relative to the checkpoint location."""

FORMAT = 1
"""Version of the record's layout."""

SPARK_SETTINGS = {
    "state_store_provider": "spark.sql.streaming.stateStore.providerClass",
    "shuffle_partitions": "spark.sql.shuffle.partitions",
    "watermark_policy": "spark.sql.streaming.multipleWatermarkPolicy",
}
"""Record key → the Spark setting read when a query starts. Spark also pins each in the
checkpoint's offset log and ignores a new value on restart."""

GUIDE = "Spark guide, Recovery Semantics after Changes in a Streaming Query"

HINT = (
    "to start over, give the sink a new checkpoint_location (a files sink also a new "
    "path: Spark skips the batches an output directory's _spark_metadata already holds); "
    "or rerun with --allow-incompatible-restart (API: allow_incompatible_restart=True) "
    "at your own risk: Spark may fail or write wrong results"
)

_LABELS = {
    "aggregation": ("the aggregation", "grouping keys"),
    "distinct": ("SELECT DISTINCT", "columns"),
    "deduplicate": ("the deduplication", "keys"),
    "deduplicate_within_watermark": ("the deduplication within the watermark", "keys"),
    "stream_stream_join": ("the stream-stream join", "join keys"),
}


@dataclass(frozen=True)
class Change:
    """One difference between the recorded state signature and the new one.

    Attributes:
        what: what changed, e.g. ``grouping keys of the aggregation``.
        old, new: the recorded and the new value, as text.
        allowed: ``True`` when Spark's guide allows it (it runs; reported as a notice).
        why: why it is refused, or what it does when allowed (one clause).
    """

    what: str
    old: str
    new: str
    allowed: bool
    why: str

    def text(self) -> str:
        """``what: old → new (why)``."""
        return f"{self.what}: {self.old} → {self.new} ({self.why})"


def _connector(name: str) -> Connector:
    """The connector called ``name``; the base :class:`Connector` (no ``path_target``, no
    ``file_sink``) for one a recorded signature names and this version lacks."""
    return CONNECTORS.get(name) or Connector()


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


def _listing(values) -> str:
    values = list(values)
    return ", ".join(values) if values else "(none)"


def _sources(old: list[dict], new: list[dict]) -> list[Change]:
    ident = lambda s: f"{s['connector']} {s['target']}"  # noqa: E731
    if Counter(map(ident, old)) == Counter(map(ident, new)):
        return []
    by_name = {s["relation"]: s for s in old}
    if len(old) == len(new) and all(s["relation"] in by_name for s in new):
        return [
            Change(
                f"input of source '{s['relation']}'",
                ident(by_name[s["relation"]]),
                ident(s),
                False,
                "the checkpoint's offsets are those of the old input; "
                "changes to subscribed topics or files are not allowed",
            )
            for s in new
            if ident(s) != ident(by_name[s["relation"]])
        ]
    show = lambda ss: _listing(f"{s['relation']} ({ident(s)})" for s in ss)  # noqa: E731
    return [
        Change(
            "sources",
            show(old),
            show(new),
            False,
            "Spark matches the checkpoint's offsets to the sources; changes in the "
            "number or type of input sources are not allowed",
        )
    ]


def _operators(old: list[dict], new: list[dict]) -> list[Change]:
    shape = lambda ops: [(o["kind"], o["relation"]) for o in ops]  # noqa: E731
    if [o["kind"] for o in old] != [o["kind"] for o in new]:
        show = lambda ops: _listing(  # noqa: E731
            k + (f" in view {r}" if r else "") for k, r in shape(ops)
        )
        return [
            Change(
                "stateful operators",
                show(old),
                show(new),
                False,
                "Spark restores each operator's state by position; adding, removing or "
                "replacing a stateful operation is not allowed",
            )
        ]
    changes = []
    for before, after in zip(old, new, strict=True):
        name, keys = _LABELS.get(after["kind"], (after["kind"], "keys"))
        where = f" in view {after['relation']}" if after["relation"] else ""
        if before["keys"] != after["keys"]:
            changes.append(
                Change(
                    f"{keys} of {name}{where}",
                    _listing(before["keys"]),
                    _listing(after["keys"]),
                    False,
                    "the state is keyed by them; a change in the keys is not allowed",
                )
            )
        if before["aggregates"] != after["aggregates"]:
            changes.append(
                Change(
                    f"aggregates of {name}{where}",
                    _listing(before["aggregates"]),
                    _listing(after["aggregates"]),
                    False,
                    "the state holds their buffers; a change in the aggregates is not allowed",
                )
            )
        if before["join_type"] != after["join_type"]:
            changes.append(
                Change(
                    f"join type of {name}{where}",
                    str(before["join_type"]),
                    str(after["join_type"]),
                    False,
                    "a change in join type is not allowed",
                )
            )
    return changes


def _watermarks(old: list[dict], new: list[dict], stateful: bool) -> list[Change]:
    before = {w["relation"]: w for w in old}
    after = {w["relation"]: w for w in new}
    changes = []
    for relation in dict.fromkeys([*before, *after]):
        was, now = before.get(relation), after.get(relation)
        label = f"watermark of {relation}" if relation else "watermark"
        show = lambda w: f"{w['column']} - {w['delay']}" if w else "(none)"  # noqa: E731
        if was and now and was["column"] == now["column"]:
            if was["delay"] != now["delay"]:
                changes.append(
                    Change(
                        f"delay of the {label}",
                        was["delay"],
                        now["delay"],
                        True,
                        "Spark keeps the watermark where the checkpoint left it "
                        "until the new delay moves it on; only lateness changes",
                    )
                )
        elif was != now:
            changes.append(
                Change(
                    label,
                    show(was),
                    show(now),
                    not stateful,
                    "the state is evicted by the event-time column's watermark; "
                    "another column would mix two rules"
                    if stateful
                    else "the query keeps no state",
                )
            )
    return changes


def _sink(old: dict, new: dict) -> list[Change]:
    show = lambda s: " ".join(str(v) for v in s.values() if v)  # noqa: E731
    if old == new:
        return []
    sink = _connector(new["connector"])
    if sink.file_sink and old["connector"] != new["connector"]:
        return [
            Change(
                "sink",
                show(old),
                show(new),
                False,
                "a file sink's log of written batches would not hold the earlier ones; "
                "a change to a file sink is not allowed",
            )
        ]
    if old["connector"] == new["connector"] and sink.file_sink:
        return [
            Change(
                "sink " + ("directory" if sink.path_target else "table"),
                show(old),
                show(new),
                False,
                "its log of written batches is in the old output: the output would "
                "split; changes to the output directory of a file sink are not allowed",
            )
        ]
    return [Change("sink", show(old), show(new), True, "the new sink sees only new data")]


def diff(old: Mapping, new: Mapping) -> list[Change]:
    """What changed from the recorded ``old`` to the ``new`` record (both from
    :func:`record`), in the order sources, operators, watermarks, output mode, sink, Spark
    settings. Refused changes have ``allowed=False`` (see the module's docstring)."""
    stateful = bool(old["operators"] or new["operators"])
    changes = [
        *_sources(old["sources"], new["sources"]),
        *_operators(old["operators"], new["operators"]),
        *_watermarks(old["watermarks"], new["watermarks"], stateful),
    ]
    if old["output_mode"] != new["output_mode"]:
        changes.append(
            Change(
                "output mode",
                old["output_mode"],
                new["output_mode"],
                not stateful,
                "the sink holds rows written with the old meaning (final rows or "
                "updates) of the same state"
                if stateful
                else "the query keeps no state",
            )
        )
    changes += _sink(old["sink"], new["sink"])
    if stateful:
        was, now = old.get("spark", {}), new.get("spark", {})
        if was.get("state_store_provider") != now.get("state_store_provider"):
            changes.append(
                Change(
                    "state store provider",
                    str(was.get("state_store_provider")),
                    str(now.get("state_store_provider")),
                    False,
                    "Spark keeps the checkpoint's provider and ignores the new "
                    "setting; one provider cannot read another's state",
                )
            )
        if was.get("shuffle_partitions") != now.get("shuffle_partitions"):
            changes.append(
                Change(
                    "spark.sql.shuffle.partitions",
                    str(was.get("shuffle_partitions")),
                    str(now.get("shuffle_partitions")),
                    True,
                    "Spark keeps the checkpoint's number of state partitions",
                )
            )
        if (
            len(new["watermarks"]) > 1
            and "watermark_policy" in was
            and str(was["watermark_policy"]).lower() != str(now.get("watermark_policy")).lower()
        ):
            changes.append(
                Change(
                    "spark.sql.streaming.multipleWatermarkPolicy",
                    str(was["watermark_policy"]),
                    str(now.get("watermark_policy")),
                    True,
                    "Spark keeps the checkpoint's policy (its offset log "
                    "pins it) and ignores the new setting",
                )
            )
    return changes


# ---- the checkpoint -------------------------------------------------------------------------


def has_state(directory: str) -> bool:
    """``directory`` (a checkpoint location) holds Spark's progress: an ``offsets`` entry."""
    offsets = os.path.join(directory, "offsets")
    return os.path.isdir(offsets) and any(not n.startswith(".") for n in os.listdir(offsets))


def read(directory: str) -> dict | None:
    """The record kept in checkpoint ``directory``, or ``None`` when there is none.

    Raises:
        OSError, ValueError: the file exists but cannot be read or is not JSON.
    """
    path = os.path.join(directory, SIGNATURE_FILE)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


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
    """

    query: p.Query
    directory: str
    record: dict
    changes: tuple[Change, ...] = ()

    def commit(self) -> None:
        """Write :attr:`record` to the checkpoint (after the query started)."""
        write(self.directory, self.record)


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
            Also when the recorded signature cannot be read. Nothing is started or written.
    """
    decided: dict[str, Restart] = {}
    for query in plan.queries:
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
                f"query '{query.name}': cannot read the state signature in checkpoint "
                f"{directory}: {exc}",
                query.span,
                plan.source,
                hint=f"delete {os.path.join(directory, SIGNATURE_FILE)} to record the current "
                "query's signature (changes since the last start then go unchecked), or give "
                "the sink a new checkpoint_location",
            ) from None
        if old is None:
            if has_state(directory):
                report(
                    f"query '{query.name}': checkpoint {directory} has no state signature "
                    "(written before sqlstream kept one); recording the current one"
                )
            decided[query.name] = Restart(query, directory, new)
            continue
        changes = tuple(diff(old, new))
        pinned = {k: v for k, v in old.get("spark", {}).items() if k in SPARK_SETTINGS}
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
        decided[query.name] = Restart(query, directory, new, changes)
    return decided
