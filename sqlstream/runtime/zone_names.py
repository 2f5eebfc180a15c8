"""Spellings of one session time zone (``spark.sql.session.timeZone``), for the restart
guard: ``UTC``, ``Z``, ``Etc/UTC`` and ``+00:00`` are one zone, as are ``US/Eastern`` and
``America/New_York`` (a link of the tz database), so a restart that only respells the zone
keeps the state's meaning.

Spark reads the setting with Java's ``ZoneId.of`` (region IDs, ``Z``, ``UTC``/``GMT``/``UT``
with or without an offset, offsets ``+h``, ``+hh``, ``+hh:mm``, ``+hhmm``), *Spark SQL
reference, Datetime patterns* and ``SQLConf.SESSION_LOCAL_TIMEZONE``. Two region IDs are
one zone when the tz database holds the same rules for them (the same TZif file, read from
the system's ``zoneinfo`` folders or the ``tzdata`` package, as Python's :mod:`zoneinfo`
looks them up). A name neither form reads stays itself: only equal text is equal.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import os
import re
import zoneinfo

__all__ = ["same_zone", "zone_key"]

_UTC_NAMES = frozenset(
    n.lower()
    for n in (
        "Z",
        "UTC",
        "GMT",
        "UT",
        "UCT",
        "Zulu",
        "Universal",
        "Greenwich",
        "GMT0",
        "Etc/UTC",
        "Etc/UCT",
        "Etc/GMT",
        "Etc/GMT0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Etc/Greenwich",
        "Etc/Universal",
        "Etc/Zulu",
    )
)
_OFFSET = re.compile(r"(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?", re.I)


def _offset_key(text: str) -> str | None:
    found = _OFFSET.fullmatch(text)
    if found is None:
        return None
    sign, hours, minutes, seconds = found.groups()
    total = int(hours) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    if total == 0:
        return "UTC"
    return f"{sign}{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


@functools.lru_cache(maxsize=256)
def _rules(name: str) -> str | None:
    """A digest of the TZif file of the region ID ``name``, or ``None`` if none is found."""
    if not re.fullmatch(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*", name) or ".." in name:
        return None
    for folder in zoneinfo.TZPATH:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                return hashlib.sha256(handle.read(1 << 20)).hexdigest()
    try:
        parts = name.split("/")
        package = ".".join(["tzdata", "zoneinfo", *parts[:-1]])
        data = importlib.resources.files(package).joinpath(parts[-1]).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, IsADirectoryError, ValueError, OSError):
        return None
    return hashlib.sha256(data).hexdigest()


def zone_key(name: object) -> str:
    """What ``name`` (a value of ``spark.sql.session.timeZone``) is compared by: ``UTC``
    for its spellings, ``±hh:mm:ss`` for a fixed offset, the digest of its rules for a
    region ID, else its text."""
    text = str(name).strip()
    if text.lower() in _UTC_NAMES:
        return "UTC"
    offset = _offset_key(text)
    if offset is not None:
        return offset
    rules = _rules(text)
    if rules is not None and _rules("UTC") == rules:
        return "UTC"
    return f"tz:{rules}" if rules is not None else text


def same_zone(old: object, new: object) -> bool:
    """``old`` and ``new`` name one time zone (:func:`zone_key`)."""
    return old == new or zone_key(old) == zone_key(new)
