"""``SET`` statements: the compiler's own settings, and the Spark settings checked and
expanded before anything runs.

A ``SET 'key' = 'value'`` becomes zero or more ``(key, value)`` pairs of the plan
(:func:`expand`); every ``spark.*`` pair is applied to the session with
``spark.conf.set`` (:func:`sqlstream.lowering.lower.settings_block`), which ``translate`` prints,
except the static ones (:data:`STATIC_SETTINGS`), which only a session being created takes.

* ``sqlstream.state_dir``: the root of default checkpoint locations (docs/dialect.md#checkpoints).
* ``sqlstream.state_store``: the state store provider of every stateful query
  (:data:`STATE_STORES`). ``rocksdb`` expands to Spark's
  ``spark.sql.streaming.stateStore.providerClass`` =
  ``org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider`` and
  ``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled`` = ``true``
  (each micro-batch commits only the changed keys; snapshots are uploaded in the
  background); ``hdfs`` to the default ``HDFSBackedStateStoreProvider``; a
  fully-qualified class name is taken as the provider class. Both are SQL settings
  that Spark reads when a query starts (``StateStoreConf``), so they can be set on a
  running session; Spark then pins the provider in the checkpoint's offset log and
  keeps it on every restart (Spark guide, *State Store*; *RocksDB state store
  implementation*). Any other value is ``SS326``.
* ``sqlstream.spark_version``: the Spark major.minor ``check`` judges the file for
  (:mod:`sqlstream.ir.spark_versions`; ``check --spark-version`` overrides it); one
  of :data:`~sqlstream.ir.spark_versions.SUPPORTED`, else ``SS202``. It applies to
  the whole file, wherever it stands.
* ``spark.sql.streaming.multipleWatermarkPolicy``: how a query over several watermarked
  streams computes its global watermark, ``min`` (Spark's default: the slowest stream
  decides, nothing of it is dropped as late) or ``max`` (the fastest decides: results
  sooner, rows of the slower stream that are behind it are dropped). Spark refuses other
  values when the setting is made (``INVALID_CONF_VALUE``); here that is ``SS327`` at the
  value, before a session exists. Spark guide, *Policy for handling multiple watermarks*.

Pure Python, no pyspark import.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlstream.diagnostics.errors import OptionError, SqlStreamError, did_you_mean
from sqlstream.frontend import ast
from sqlstream.ir import spark_versions

__all__ = [
    "CHANGELOG_CHECKPOINTING",
    "COMPILER_SETTINGS",
    "PROVIDER_CLASS",
    "STATE_STORES",
    "STATIC_SETTINGS",
    "WATERMARK_POLICY",
    "expand",
    "is_static",
    "problem",
    "state_store",
    "watermark_policy",
]

COMPILER_SETTINGS = {"sqlstream.state_dir", "sqlstream.state_store", spark_versions.SETTING}
"""The ``sqlstream.*`` keys; any other is ``SS202``."""

STATIC_SETTINGS = (
    "spark.app.",
    "spark.driver.",
    "spark.executor.",
    "spark.jars",
    "spark.master",
    "spark.ui.",
    "spark.sql.warehouse.dir",
    "spark.sql.extensions",
    "spark.sql.catalogImplementation",
)
"""Spark settings that take effect only when the SparkContext / session starts (key
prefixes, compared in lower case; :func:`is_static`).

Spark's *Configuration* page: deploy-related properties (``spark.driver.memory``,
``spark.executor.instances``) "may not be affected when setting programmatically through
SparkConf in runtime", and *Static SQL Configuration* (``spark.sql.warehouse.dir``,
``spark.sql.extensions``, ``spark.sql.catalogImplementation``) are "cross-session,
immutable" settings given "by setting SparkConf that are used to create SparkSession".
A running session refuses ``spark.conf.set`` of them (``CANNOT_MODIFY_CONFIG``,
``CANNOT_MODIFY_STATIC_CONFIG``; ``spark.master`` and ``spark.app.*`` it accepts and
ignores). So a ``SET`` of one is given to the session builder only (``translate`` shows it
as a comment, :func:`sqlstream.lowering.lower.settings_block`), and a Spark Connect session or
one already running keeps its own (:func:`sqlstream.runtime.spark_session.create_session`)."""


_STATIC_PREFIXES = tuple(s.lower() for s in STATIC_SETTINGS)


def is_static(key: str) -> bool:
    """Whether Spark reads setting ``key`` only at start (:data:`STATIC_SETTINGS`)."""
    return key.lower().startswith(_STATIC_PREFIXES)


PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
WATERMARK_POLICY = "spark.sql.streaming.multipleWatermarkPolicy"
WATERMARK_POLICIES = ("min", "max")

_STATE_PACKAGE = "org.apache.spark.sql.execution.streaming.state."
STATE_STORES: dict[str, tuple[tuple[str, str], ...]] = {
    "rocksdb": (
        (PROVIDER_CLASS, _STATE_PACKAGE + "RocksDBStateStoreProvider"),
        (CHANGELOG_CHECKPOINTING, "true"),
    ),
    "hdfs": ((PROVIDER_CLASS, _STATE_PACKAGE + "HDFSBackedStateStoreProvider"),),
}
"""``sqlstream.state_store`` value → the Spark settings it stands for, in order."""


class StateStoreError(OptionError):
    """``SET 'sqlstream.state_store'`` to a value that names no state store provider."""

    code = "SS326"


class WatermarkPolicyError(OptionError):
    """``SET 'spark.sql.streaming.multipleWatermarkPolicy'`` to neither ``min`` nor ``max``."""

    code = "SS327"


def _is_class_name(value: str) -> bool:
    parts = value.split(".")
    return len(parts) > 1 and all(part.isidentifier() for part in parts)


def problem(option: ast.Option) -> SqlStreamError | None:
    """What is wrong with a ``SET``, positioned in the file, or ``None``.

    Args:
        option: the ``key = value`` of the ``SET`` statement.

    Returns:
        ``OptionError`` (``SS202``): an unknown ``sqlstream.*`` key (with "did you mean"),
        ``spark.sql.variable.substitute`` set to anything but ``false``;
        or a ``sqlstream.spark_version`` that is not a supported Spark version;
        :class:`StateStoreError` (``SS326``): a ``sqlstream.state_store`` that is neither a
        name of :data:`STATE_STORES` nor a qualified class name;
        :class:`WatermarkPolicyError` (``SS327``): a ``multipleWatermarkPolicy`` that is
        neither ``min`` nor ``max`` (case-insensitive, as Spark compares it).
    """
    key, value = option.key.lower(), option.text.strip()
    if key == "spark.sql.variable.substitute" and value.lower() != "false":
        return OptionError(
            "spark.sql.variable.substitute stays 'false': Spark would expand ${env:…} and "
            "${system:…} in the query text at run time, outside secret redaction",
            option.value_span,
            hint="use sqlstream's ${name} (--var) and ${env:NAME} instead",
        )
    if key.startswith("sqlstream.") and key not in COMPILER_SETTINGS:
        return OptionError(
            f"unknown setting '{option.key}'{did_you_mean(option.key, COMPILER_SETTINGS)}",
            option.key_span,
            hint=f"compiler settings: {', '.join(sorted(COMPILER_SETTINGS))}",
        )
    if (
        key == "sqlstream.state_store"
        and value.lower() not in STATE_STORES
        and not _is_class_name(value)
    ):
        return StateStoreError(
            f"unknown state store '{value}'{did_you_mean(value.lower(), STATE_STORES)}",
            option.value_span,
            hint="'rocksdb' (RocksDB with changelog checkpointing), 'hdfs' (Spark's default, "
            "in memory) or the fully-qualified class name of a StateStoreProvider",
        )
    if key == spark_versions.SETTING and spark_versions.supported(value) is None:
        return OptionError(
            f"Spark version '{value}' is not supported",
            option.value_span,
            hint=f"the supported Spark versions: {', '.join(spark_versions.SUPPORTED)}",
        )
    if key == WATERMARK_POLICY.lower() and value.lower() not in WATERMARK_POLICIES:
        return WatermarkPolicyError(
            f"'{value}' is not a multiple-watermark policy: Spark accepts 'min' or 'max'",
            option.value_span,
            hint="'min' (default): the global watermark follows the slowest stream; 'max': "
            "the fastest (rows of slower streams behind it are dropped as late)",
        )
    return None


def expand(key: str, value: str) -> list[tuple[str, str]]:
    """The settings a ``SET key = value`` stands for, in the order they are applied.

    ``sqlstream.state_store`` is kept (printed as a comment) and followed by the Spark
    settings of :data:`STATE_STORES` (a class name: ``providerClass`` = that class; a
    value :func:`problem` refuses is passed the same way, for Spark to refuse when it is
    not checked). Every other key stands for itself.

    Returns:
        ``[(key, value), …]``.
    """
    pairs = [(key, value)]
    if key.lower() == "sqlstream.state_store":
        pairs += STATE_STORES.get(value.strip().lower(), ((PROVIDER_CLASS, value.strip()),))
    return pairs


def _last(settings: Iterable[tuple[str, str]], key: str) -> str | None:
    found = None
    for name, value in settings:
        if name.lower() == key.lower():
            found = value
    return found


def state_store(settings: Iterable[tuple[str, str]]) -> str | None:
    """The state store the plan's settings choose: ``rocksdb``, ``hdfs``, another
    provider's class name, or ``None`` (not set: Spark's default, ``hdfs``, unless the
    session was configured otherwise). ``rocksdb`` only when changelog checkpointing is
    not turned off; else ``rocksdb (no changelog checkpointing)``."""
    settings = list(settings)
    provider = _last(settings, PROVIDER_CLASS)
    if provider is None:
        return None
    for name, pairs in STATE_STORES.items():
        if pairs[0][1] == provider.strip():
            if (
                name == "rocksdb"
                and (_last(settings, CHANGELOG_CHECKPOINTING) or "false").strip().lower() != "true"
            ):
                return "rocksdb (no changelog checkpointing)"
            return name
    return provider.strip()


def watermark_policy(settings: Iterable[tuple[str, str]]) -> tuple[str, str]:
    """The multiple-watermark policy and where it comes from: ``("max", "SET")`` or
    ``("min", "Spark's default")``."""
    value = _last(settings, WATERMARK_POLICY)
    return (value.strip().lower(), "SET") if value is not None else ("min", "Spark's default")


def target_version(script: ast.Script, given: str | None = None) -> str:
    """The Spark major.minor a file is judged for: ``given`` (``--spark-version``), else the
    last valid ``SET 'sqlstream.spark_version'`` of ``script`` (an invalid one is ``SS202``
    at its statement), else :func:`sqlstream.ir.spark_versions.default`.

    Raises:
        SqlStreamError: ``SS202``: ``given`` is not a supported version.
    """
    if given is not None:
        found = spark_versions.supported(given)
        if found is None:
            raise SqlStreamError(
                f"Spark version '{given}' is not supported",
                code="SS202",
                hint=f"the supported Spark versions: {', '.join(spark_versions.SUPPORTED)}",
            )
        return found
    found = None
    for statement in script.statements:
        if (
            isinstance(statement, ast.SetStatement)
            and statement.option.key.lower() == spark_versions.SETTING
        ):
            found = spark_versions.supported(statement.option.text) or found
    return found or spark_versions.default()
