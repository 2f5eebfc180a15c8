"""The Spark versions sqlstream supports, and the one a program is judged for.

Spark's streaming rules, its functions and its error texts change between minor
releases, so ``check`` judges a program for one Spark *major.minor*, the **target**:
``check --spark-version 4.2``, else ``SET 'sqlstream.spark_version' = '4.2'`` in the
file, else the installed PySpark's major.minor (:func:`installed`, read from the package
metadata without importing pyspark), else the newest supported one (:func:`default`). The
planner puts the target in its :class:`~sqlstream.ir.context.CompileContext`.

Pure Python, no pyspark import.
"""

from __future__ import annotations

import re
from importlib import metadata

SUPPORTED = ("4.0", "4.1", "4.2", "4.3")
"""The supported Spark minors, oldest first (``pyproject.toml``: ``pyspark>=4.0,<4.4``)."""

SETTING = "sqlstream.spark_version"
"""The ``SET`` key that names the target version in a file."""


def major_minor(version: str) -> str | None:
    """``"4.2.1"`` / ``"4.2"`` / ``"4.3.0.dev1"`` → ``"4.2"`` / ``"4.2"`` / ``"4.3"``;
    ``None`` when ``version`` does not start with ``<major>.<minor>``."""
    found = re.match(r"\s*(\d+)\.(\d+)(?:\.\d+\S*)?\s*$", version or "")
    return f"{int(found.group(1))}.{int(found.group(2))}" if found else None


def installed() -> str | None:
    """The installed PySpark's major.minor (``importlib.metadata``, no import), or
    ``None`` when PySpark is not installed."""
    try:
        return major_minor(metadata.version("pyspark"))
    except metadata.PackageNotFoundError:
        return None


def default() -> str:
    """The target when none is given: the installed PySpark's major.minor when it is a
    supported one, else the newest supported."""
    found = installed()
    return found if found in SUPPORTED else SUPPORTED[-1]


def supported(version: str) -> str | None:
    """``version`` (``4.2`` or ``4.2.1``) as a supported major.minor, or ``None``."""
    found = major_minor(version)
    return found if found in SUPPORTED else None


def at_least(target: str, version: str) -> bool:
    """``target`` (a major.minor) is ``version`` or newer."""
    return tuple(map(int, target.split("."))) >= tuple(map(int, version.split(".")))
