"""The changes between two state signature records (:func:`diff`) and the record's shape
(:func:`validate`).

Each change is classified as Spark's guide does in *Recovery Semantics after Changes in a
Streaming Query* (see :mod:`sqlstream.runtime.restarts`). Grouping keys, aggregates,
distinct, deduplication and join keys are compared by meaning (``resolved_keys``,
``resolved_aggregates``: :mod:`sqlstream.analysis.lineage`) when both records hold it, and
as written otherwise (a record of format 1, written before meanings were kept); watermark
delays are compared as durations. Pure Python, no pyspark.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from sqlstream.connectors import CONNECTORS, Connector
from sqlstream.frontend.literals import duration
from sqlstream.runtime.zone_names import same_zone

SPARK_SETTINGS = {
    "state_store_provider": "spark.sql.streaming.stateStore.providerClass",
    "shuffle_partitions": "spark.sql.shuffle.partitions",
    "watermark_policy": "spark.sql.streaming.multipleWatermarkPolicy",
    "time_zone": "spark.sql.session.timeZone",
    "case_sensitive": "spark.sql.caseSensitive",
}
"""Record key → the Spark setting read when a query starts."""

PINNED = frozenset({"state_store_provider", "shuffle_partitions", "watermark_policy"})
"""The settings Spark pins in the checkpoint's offset log (``OffsetSeqMetadata``) and whose
new value it ignores on restart: the record keeps the checkpoint's. The session time zone
and case sensitivity are not pinned: a new value takes effect."""

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


def _differ(before: dict, after: dict, field: str, literal: bool) -> tuple[str, str] | None:
    """``(old, new)`` text of ``field`` (``keys`` or ``aggregates``) when the two operators
    differ there: by meaning when both records hold it (and as written too when
    ``literal``: names are case-sensitive), else as written; ``None`` when equal."""
    resolved = "resolved_" + field
    if resolved in before and resolved in after:
        same = before[resolved] == after[resolved]
        if literal:
            same = same and before[field] == after[field]
    else:
        same = before[field] == after[field]
    if same:
        return None
    old, new = _listing(before[field]), _listing(after[field])
    if old == new:  # one text, two meanings (a column redefined in a view or a stream)
        old += f" (resolved: {_listing(before[resolved])})"
        new += f" (resolved: {_listing(after[resolved])})"
    return old, new


def _inputs(old: Mapping, new: Mapping) -> tuple[dict[str, str], dict[str, str]]:
    """Each side's source names → one name per input (connector and target): the first,
    in name order, of the new record's sources reading it, else of the old one's. Two
    streams declared over one input hold the same rows, so ``raw.origin`` and
    ``raw2.origin`` of one input are one key — a stream renamed, the other of two such
    streams read, or the branches of a union of them swapped keep the state's meaning.
    Names that are not plain identifiers are left as they are."""
    ident = lambda s: (s["connector"], s["target"])  # noqa: E731
    canonical: dict[tuple, str] = {}
    for record in (new, old):  # the new names win
        for source in sorted(record["sources"], key=lambda s: s["relation"].lower()):
            canonical.setdefault(ident(source), source["relation"].lower())

    def names(record: Mapping) -> dict[str, str]:
        return {
            s["relation"].lower(): canonical[ident(s)]
            for s in record["sources"]
            if re.fullmatch(r"\w+", s["relation"]) and s["relation"].lower() != canonical[ident(s)]
        }

    return names(old), names(new)


def _renamed(operators: list[dict], names: Mapping[str, str]) -> list[dict]:
    """``operators`` with their meanings read in the names of :func:`_inputs`."""
    if not names:
        return list(operators)
    pattern = re.compile(r"(?<![\w.`'])(" + "|".join(map(re.escape, names)) + r")\.", re.IGNORECASE)
    swap = lambda text: pattern.sub(lambda m: names[m.group(1).lower()] + ".", text)  # noqa: E731
    return [
        {
            **o,
            **{
                f: [swap(t) for t in o[f]]
                for f in ("resolved_keys", "resolved_aggregates")
                if f in o
            },
        }
        for o in operators
    ]


def _watermarks_of(watermarks: list[dict], names: Mapping[str, str]) -> list[dict]:
    """``watermarks`` under the names of :func:`_inputs`; two streams of one input with
    one watermark are one, with two different ones each keeps its own name."""
    groups: dict[str, list[dict]] = {}
    for w in watermarks:
        groups.setdefault(names.get((w["relation"] or "").lower(), w["relation"]), []).append(w)
    found = []
    for name, group in groups.items():
        if len({(w["column"], w["delay"]) for w in group}) == 1:
            found.append({**group[0], "relation": name})
        else:
            found.extend(group)
    return found


def _operators(old: list[dict], new: list[dict], literal: bool = False) -> list[Change]:
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
        differ = _differ(before, after, "keys", literal)
        if differ is not None:
            changes.append(
                Change(
                    f"{keys} of {name}{where}",
                    *differ,
                    False,
                    "the state is keyed by them; a change in the keys is not allowed",
                )
            )
        differ = _differ(before, after, "aggregates", literal)
        if differ is not None:
            changes.append(
                Change(
                    f"aggregates of {name}{where}",
                    *differ,
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


def _same_delay(old: str, new: str) -> bool:
    """Two watermark delays are one duration (``60 minutes`` and ``1 hour``)."""
    try:
        return old == new or duration(old) == duration(new)
    except ValueError:
        return False


def _watermarks(old: list[dict], new: list[dict], stateful: bool) -> list[Change]:
    before = {w["relation"]: w for w in old}
    after = {w["relation"]: w for w in new}
    changes = []
    for relation in dict.fromkeys([*before, *after]):
        was, now = before.get(relation), after.get(relation)
        label = f"watermark of {relation}" if relation else "watermark"
        show = lambda w: f"{w['column']} - {w['delay']}" if w else "(none)"  # noqa: E731
        if was and now and was["column"] == now["column"]:
            if not _same_delay(was["delay"], now["delay"]):
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
    was, now = old.get("spark") or {}, new.get("spark") or {}
    literal = "true" in (
        str(was.get("case_sensitive")).lower(),
        str(now.get("case_sensitive")).lower(),
    )
    names, new_names = _inputs(old, new)
    changes = [
        *_sources(old["sources"], new["sources"]),
        *_operators(
            _renamed(old["operators"], names), _renamed(new["operators"], new_names), literal
        ),
        *_watermarks(
            _watermarks_of(old["watermarks"], names),
            _watermarks_of(new["watermarks"], new_names),
            stateful,
        ),
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
        changes += _time_zone(old, new)
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


def _time_zone(old: Mapping, new: Mapping) -> list[Change]:
    """A change of ``spark.sql.session.timeZone`` on a query whose state holds values that
    depend on it (an operator ``zoned``, or a watermark: event time is a timestamp); two
    spellings of one zone are none (:func:`~sqlstream.runtime.zone_names.same_zone`). A
    record without the setting (format 1) has none to compare."""
    was, now = old.get("spark") or {}, new.get("spark") or {}
    if "time_zone" not in was or "time_zone" not in now:
        return []
    if same_zone(was["time_zone"], now["time_zone"]):  # UTC = Etc/UTC = +00:00
        return []
    if not (any(o.get("zoned") for o in old["operators"] + new["operators"]) or new["watermarks"]):
        return []
    return [
        Change(
            "spark.sql.session.timeZone",
            str(was["time_zone"]),
            str(now["time_zone"]),
            False,
            "timestamps read as text, windows' wall-clock bounds and datetime functions "
            "change value with the session time zone; the state holds keys of the old one",
        )
    ]


# ---- the record's shape ---------------------------------------------------------------------

_TEXT, _OPTIONAL, _TEXTS, _FLAG = (
    "a string",
    "a string or null",
    "a list of strings",
    "true or false",
)
_SHAPES: dict[str, dict[str, str]] = {
    "sources": {"relation": _TEXT, "connector": _TEXT, "target": _OPTIONAL},
    "operators": {
        "kind": _TEXT,
        "keys": _TEXTS,
        "aggregates": _TEXTS,
        "join_type": _OPTIONAL,
        "relation": _OPTIONAL,
        "resolved_keys?": _TEXTS,
        "resolved_aggregates?": _TEXTS,
        "zoned?": _FLAG,
    },
    "watermarks": {"relation": _TEXT, "column": _TEXT, "delay": _TEXT},
}
_SINK = {"connector": _TEXT, "format": _OPTIONAL, "path": _OPTIONAL}


def _fits(value: object, shape: str) -> bool:
    if shape == _TEXT:
        return isinstance(value, str)
    if shape == _OPTIONAL:
        return value is None or isinstance(value, str)
    if shape == _FLAG:
        return isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _check_fields(item: object, fields: Mapping[str, str], where: str) -> None:
    if not isinstance(item, dict):
        raise ValueError(f"{where} is {json_type(item)}, not an object")
    for key, shape in fields.items():
        name = key.rstrip("?")
        if name not in item:
            if key.endswith("?"):
                continue
            raise ValueError(f"{where} has no '{name}'")
        if not _fits(item[name], shape):
            raise ValueError(f"{where}.{name} is {json_type(item[name])}, not {shape}")


def json_type(value: object) -> str:
    """The JSON name of ``value``'s type (``null``, ``a number``, ``an object``, …)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def validate(data: object, newest: int) -> dict:
    """Check that ``data`` (a parsed ``state_signature.json``) has the shape
    :func:`~sqlstream.runtime.restarts.record` writes, in any format up to ``newest``:
    fields a later format added may be missing (format 1 has no meanings nor time zone);
    fields it does not know are ignored.

    Returns:
        ``data``, checked.

    Raises:
        ValueError: the first field out of shape, named by its path (e.g.
            ``operators[0].keys is a string, not a list of strings``), or a format newer
            than ``newest``.
    """
    if not isinstance(data, dict):
        raise ValueError(f"the record is {json_type(data)}, not an object")
    version = data.get("format", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"format is {json_type(version)} {version!r}, not a format number")
    if version > newest:
        raise ValueError(
            f"it is of format {version}, written by a newer sqlstream (this one reads "
            f"formats 1 to {newest})"
        )
    for field, fields in _SHAPES.items():
        items = data.get(field)
        if not isinstance(items, list):
            raise ValueError(f"{field} is {json_type(items)}, not a list")
        for i, item in enumerate(items):
            _check_fields(item, fields, f"{field}[{i}]")
    if not isinstance(data.get("output_mode"), str):
        raise ValueError(f"output_mode is {json_type(data.get('output_mode'))}, not a string")
    _check_fields(data.get("sink"), _SINK, "sink")
    spark = data.get("spark", {})
    if not isinstance(spark, dict) or not all(
        v is None or isinstance(v, str) for v in spark.values()
    ):
        raise ValueError("spark is not an object of strings")
    return data
