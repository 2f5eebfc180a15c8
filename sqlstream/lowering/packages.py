"""Spark packages a pipeline needs beyond pyspark's jars: Kafka and Avro.

A plan with a ``kafka`` source or sink needs ``org.apache.spark:spark-sql-kafka-0-10_2.13``
(Spark's Kafka connector), one with Avro values also ``org.apache.spark:spark-avro_2.13``.
Spark users add them with ``--packages`` / ``spark.jars.packages``, which Spark resolves
with Ivy (local caches, then Maven Central) when the session starts (Spark guide,
*Structured Streaming + Kafka Integration Guide*, "Deploying"). :func:`packages_for` does
that for ``exec`` and the run API unless the user configured ``spark.jars.packages`` or
``spark.jars`` (``--packages``, ``--conf``, ``SET``).

The version: the same major.minor as the running pyspark, the newest patch release that
resolves with all its dependencies — a repository does not always serve pyspark's own
patch (measured here: ``4.1.4`` is not served, ``4.1.3`` lacks a dependency, ``4.1.1``
resolves and runs with pyspark 4.1.4). :func:`package_version` finds it:

1. ``SQLSTREAM_SPARK_PACKAGE_VERSION`` if set (the override);
2. the answer cached in ``~/.cache/sqlstream/spark-packages.json`` (``SQLSTREAM_CACHE_DIR``);
3. a version of that major.minor already in Spark's Ivy cache (``~/.ivy2.5.2``, ``~/.ivy2``);
4. ``mvn dependency:get`` (transitive, runtime scope) of each patch from pyspark's down to ``.0``, with
   Maven's own repository settings: the first that resolves is cached;
5. no ``mvn``: pyspark's own version, unprobed.

When no patch of the running minor is served, and the minor is in :data:`FALLBACKS`, the
newest patch of the older minor named there that resolves (steps 3–4 for that minor) —
only for pairs this project's Kafka tests ran on a real broker: the connector's Scala
classes are compiled against that minor's Spark, and nothing else says they work with a
newer one. Measured here: Maven Central serves ``spark-sql-kafka-0-10_2.13`` and
``spark-avro_2.13`` ``4.2.0``, but no ``4.2.1`` and no ``4.3.x``; the Kafka and Avro tests
(``tests/connectors/test_kafka_spark.py``, ``tests/connectors/test_kafka_on_error.py``) pass on
pyspark 4.3.0 with ``4.2.0``. ``exec`` says so when it uses a fallback
(:func:`packages_with_note`).

When nothing resolves (offline, no cache), :class:`PackageError` (``SS510``) names the
package; so does a session whose Ivy resolution fails (:func:`resolution_error`, raised by
:func:`sqlstream.runtime.spark_session.launch_jvm`, whose filter of the JVM's output hides Ivy's report).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from sqlstream.connectors import connector, lakehouse_jvm
from sqlstream.connectors.base import SPARK_AVRO, SPARK_KAFKA
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir import plan as p

KAFKA, AVRO = SPARK_KAFKA, SPARK_AVRO
OVERRIDE = "SQLSTREAM_SPARK_PACKAGE_VERSION"
USER_KEYS = ("spark.jars.packages", "spark.jars")
# 3.x: the 2.8 that Maven picks by default also fetches test-jar dependencies, which Spark's
# package resolution does not need (and Maven Central does not always serve).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
FALLBACKS = {"4.3": "4.2.1"}
"""Spark minor → the newest release of the older minor whose connector is used when no
patch of that minor is served, probed from that release down to ``.0``. Only pairs the
Kafka tests ran on a real broker (see the module docstring)."""


class PackageError(SqlStreamError):
    """A Spark package the pipeline needs cannot be resolved (``SS510``)."""

    code = "SS510"


def needed(plan: p.Plan) -> tuple[str, ...]:
    """The artifacts (``group:artifact``, no version) ``plan`` needs, in the order its
    sources and sinks name them: each one's connector's
    :attr:`~sqlstream.connectors.base.Connector.spark_packages`, and its
    ``format_packages`` of the value ``format`` (:data:`KAFKA`, and :data:`AVRO` for an
    Avro value)."""
    uses = [(r.connector, r.settings) for r in plan.relations if isinstance(r, p.SourceRelation)]
    uses += [(q.sink.connector, q.sink.settings) for q in plan.queries]
    found: dict[str, None] = {}
    for name, settings in uses:
        spec = connector(name)
        found.update(dict.fromkeys(spec.spark_packages))
        found.update(
            dict.fromkeys(
                spec.format_packages.get(str(dict(settings).get("format") or "").lower(), ())
            )
        )
    return tuple(found)


def spark_version() -> str:
    """The installed pyspark's version (``4.1.4``), read without importing pyspark."""
    return metadata.version("pyspark")


def _cache_file() -> Path:
    root = os.environ.get("SQLSTREAM_CACHE_DIR") or os.path.join(Path.home(), ".cache", "sqlstream")
    return Path(root) / "spark-packages.json"


def _ivy_versions(artifact: str, prefix: str) -> list[str]:
    group, name = artifact.split(":")
    found = []
    for root in (".ivy2.5.2", ".ivy2"):
        folder = Path.home() / root / "cache" / group / name
        for ivy in folder.glob(f"ivy-{prefix}.*.xml") if folder.is_dir() else ():
            version = ivy.name[4:-4]
            if (
                re.fullmatch(r"\d+\.\d+\.\d+", version)
                and (folder / "jars" / f"{name}-{version}.jar").exists()
            ):
                found.append(version)
    return sorted(set(found), key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True)


def _mvn_resolves(artifact: str, version: str) -> bool:
    done = subprocess.run(
        [
            "mvn",
            "-q",
            "-B",
            f"{DEPENDENCY_PLUGIN}:get",
            f"-Dartifact={artifact}:{version}",
            "-Dtransitive=true",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    return done.returncode == 0


def package_version(
    artifact: str = KAFKA, spark: str | None = None, probe: bool = True
) -> tuple[str, str]:
    """The version of ``artifact`` to use with Spark ``spark`` (default: pyspark's).
    ``probe=False`` (``translate --to pyspark``: no JVM) skips step 4.

    Returns:
        ``(version, how)``: ``how`` says where it came from (for the notice ``exec`` prints).

    Raises:
        PackageError: ``mvn`` found no patch release of that major.minor that resolves
            (offline, or not served), and none is cached.
    """
    spark = spark or spark_version()
    override = os.environ.get(OVERRIDE)
    if override:
        return override, f"from ${OVERRIDE}"
    major_minor = ".".join(spark.split(".")[:2])
    cache = _cache_file()
    try:
        cached = json.loads(cache.read_text())
    except (OSError, ValueError):
        cached = {}
    key = f"{artifact}:{major_minor}"
    if key in cached:
        return cached[key], f"cached in {cache}"
    candidates = [spark] + ([FALLBACKS[major_minor]] if major_minor in FALLBACKS else [])
    for release in candidates:
        in_ivy = _ivy_versions(artifact, ".".join(release.split(".")[:2]))
        if in_ivy:
            return in_ivy[0], "in the local Ivy cache"
    if not probe or shutil.which("mvn") is None:
        return spark, "pyspark's version (not probed)"
    for release in candidates:
        minor = ".".join(release.split(".")[:2])
        found = _newest_served(artifact, release)
        if found:
            cached[key] = found
            try:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_text(json.dumps(cached, indent=1, sort_keys=True))
            except OSError:
                pass
            return found, f"the newest {minor}.x that resolves (cached in {cache})"
    tried = " and ".join(f"{'.'.join(r.split('.')[:2])}.0–{r}" for r in candidates)
    raise PackageError(
        f"Spark package {artifact} cannot be resolved for Spark {spark}: no version "
        f"{tried} resolves with Maven (offline, or not served by the repository)",
        hint=f"run once with network access; or pass --packages {artifact}:<version> "
        f"(SET 'spark.jars.packages'), spark.jars with local jars, or set {OVERRIDE}",
    )


def _newest_served(artifact: str, release: str) -> str | None:
    """The newest of ``release``'s patch releases down to ``.0`` that Maven resolves."""
    minor = ".".join(release.split(".")[:2])
    patch_match = re.match(r"\d+\.\d+\.(\d+)", release)
    patch = int(patch_match.group(1)) if patch_match else 0
    for candidate in (f"{minor}.{n}" for n in range(patch, -1, -1)):
        if _mvn_resolves(artifact, candidate):
            return candidate
    return None


def fallback_note(version: str, spark: str | None = None) -> str | None:
    """What ``exec`` says when the package ``version`` is not of the running Spark's minor
    (a :data:`FALLBACKS` answer), else ``None``."""
    spark = spark or spark_version()
    own, used = (".".join(v.split(".")[:2]) for v in (spark, version))
    if own == used:
        return None
    return (
        f"no Kafka connector {own}.x is served for Spark {spark}; using {version}, "
        f"the newest {used}.x served (its tests pass on Spark {own})"
    )


def packages_for(plan: p.Plan, conf: dict[str, str], probe: bool = True) -> str | None:
    """The ``spark.jars.packages`` value ``exec`` adds for ``plan``: the needed artifacts
    at :func:`package_version`, then the lakehouse packages of its JVM-path sinks
    (:func:`sqlstream.connectors.lakehouse_jvm.packages`, versions fixed per Spark minor), or ``None`` when none is needed or the user configured
    ``spark.jars.packages`` / ``spark.jars`` (in ``conf`` or a ``SET``).

    Raises:
        PackageError: see :func:`package_version`.
    """
    artifacts, lakehouse = needed(plan), lakehouse_jvm.packages(plan)
    given = {k.lower() for k in conf} | {k.lower() for k, _ in plan.settings}
    if not (artifacts or lakehouse) or any(k in given for k in USER_KEYS):
        return None
    found = list(lakehouse)
    if probe:
        for coordinate in lakehouse:
            prefetch(coordinate)
    if artifacts:
        version, _ = package_version(KAFKA, probe=probe)
        found[:0] = [f"{a}:{version}" for a in artifacts]
    return ",".join(found)


def prefetch(coordinate: str) -> None:
    """Fetch ``coordinate`` (``group:artifact:version``) and its dependencies with ``mvn``
    into the local Maven repository, where Spark's Ivy resolution looks first, unless it
    is in Spark's Ivy cache already (or there is no ``mvn``). Ivy alone fails here on a
    dependency whose POM is cached without its jar (measured: ``jsr305`` of
    ``delta-spark``); Maven fetches it.

    Raises:
        PackageError: Maven cannot resolve it (offline, or not served).
    """
    group, name, version = coordinate.split(":")
    major_minor = ".".join(version.split(".")[:2])
    if version in _ivy_versions(f"{group}:{name}", major_minor) or shutil.which("mvn") is None:
        return
    if not _mvn_resolves(f"{group}:{name}", version):
        raise PackageError(
            f"Spark package {coordinate} cannot be resolved with Maven (offline, or not "
            "served by the repository)",
            hint="run once with network access; or pass --packages / spark.jars yourself",
        )


def packages_with_note(
    plan: p.Plan, conf: dict[str, str], probe: bool = True
) -> tuple[str | None, str | None]:
    """:func:`packages_for` and, when its version is a fallback, :func:`fallback_note`.

    Raises:
        PackageError: see :func:`package_version`.
    """
    packages = packages_for(plan, conf, probe)
    if not packages or os.environ.get(OVERRIDE) or not needed(plan):
        return packages, None
    return packages, fallback_note(packages.split(",")[0].rsplit(":", 1)[1])


def resolution_error(
    packages: str, error: BaseException, unresolved: Sequence[str] = ()
) -> PackageError:
    """The :class:`PackageError` for a session that failed to start while Spark resolved
    ``packages`` (Ivy's "unresolved dependency" lines in ``unresolved``, or the JVM gone
    before the gateway)."""
    why = "; ".join(dict.fromkeys(unresolved)) or (
        f"{type(error).__name__}: {str(error).strip().splitlines()[0][:200]}"
        if str(error).strip()
        else type(error).__name__
    )
    return PackageError(
        f"Spark could not resolve spark.jars.packages {packages} when the session started: {why}",
        hint=f"check the network and the repositories (spark.jars.repositories); or pass "
        f"--packages with a version that is served, or spark.jars with local jars; or set {OVERRIDE}",
    )
