"""A class-data archive of Spark's JVM, so that a start after the first maps Spark's classes
instead of loading them from jars.

Spark's driver loads and verifies about 15,000 classes from PySpark's jars at every start,
most of them before the first micro-batch. The JDK can write the classes an application
loaded into an archive when it exits (dynamic Application Class-Data Sharing,
``-XX:ArchiveClassesAtExit``) and map that archive at the next start
(``-XX:SharedArchiveFile``). On this project's 2-core machine that took about 2 s off
creating the SparkSession and 1.3 s off starting the first query (bench/README.md).

One archive per Java, PySpark and set of extra jars (:func:`archive_key`), in
:func:`archive_folder`:

* ``<key>.jsa`` exists: the JVM maps it (``-Xshare:auto``: an archive the JVM cannot use —
  another JDK build, jars changed — is ignored and classes load from the jars as before).
* Otherwise one run (the one that creates ``<key>.lock``, holding its process id) has its
  JVM write ``<key>.<pid>.pending`` when it exits (a lock whose run was killed is removed:
  :func:`_stale`); a later run renames the newest pending file older
  than :data:`SETTLE_SECONDS` to ``<key>.jsa`` (the rename is atomic: no run maps a file
  still being written).
* ``-Xlog:cds*=off``: the JVM's class-sharing messages (on its stdout, which is the
  console sink's) are not printed.

``SQLSTREAM_JVM_ARCHIVE=off`` turns it off; a folder there puts the archives in it.

Source: JDK 17, JEP 350 "Dynamic CDS Archives" and the ``java`` command's
``-XX:ArchiveClassesAtExit``, ``-XX:SharedArchiveFile``, ``-Xshare`` and ``-Xlog`` options.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

ENV = "SQLSTREAM_JVM_ARCHIVE"
"""``off`` (or ``0``, ``false``, ``no``): no archive; a path: the folder of the archives."""

SETTLE_SECONDS = 60.0
"""How old a pending archive must be before it is used (s): the JVM writes it while it
exits, a few seconds after the run that launched it ended."""

STALE_LOCK_SECONDS = 6 * 3600.0
"""A lock this old whose run left no pending archive is removed, whatever its process
(s): a safeguard against a process id reused by another program."""

DEAD_LOCK_SECONDS = 30.0
"""A lock at least this old whose process has ended and left no pending archive is
removed (s): that run was killed (a JVM killed with SIGKILL writes no archive), and a
later run makes the archive instead."""

QUIET = ("-Xshare:auto", "-Xlog:cds*=off")

# What decides which classes the driver loads from where, besides Java and PySpark.
CLASSPATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath",
                      "spark.jars.repositories")


def archive_folder() -> Path | None:
    """The folder of the archives: ``$SQLSTREAM_JVM_ARCHIVE``, else
    ``$XDG_CACHE_HOME/sqlstream/jvm``, else ``~/.cache/sqlstream/jvm``; ``None`` when turned
    off."""
    given = os.environ.get(ENV, "").strip()
    if given.lower() in ("off", "0", "false", "no"):
        return None
    if given:
        return Path(given).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "sqlstream" / "jvm"


def archive_key(settings: Mapping[str, str]) -> str:
    """16 hex digits naming the archive of a JVM: the ``java`` that ``spark-submit`` runs
    (``$JAVA_HOME/bin/java``, else the one on ``PATH``), PySpark's version and folder,
    and the settings of :data:`CLASSPATH_SETTINGS` in ``settings``."""
    import pyspark

    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else (shutil.which("java") or "java")
    parts = [os.path.realpath(java), pyspark.__version__, os.path.dirname(pyspark.__file__)]
    parts += [f"{k}={settings.get(k, '')}" for k in CLASSPATH_SETTINGS]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _age(path: Path, now: float) -> float:
    try:
        return now - path.stat().st_mtime
    except OSError:
        return -1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    return True


def _stale(lock: Path, folder: Path, key: str, now: float) -> bool:
    """The run that holds ``lock`` will not write an archive: it was killed (its process
    ended :data:`DEAD_LOCK_SECONDS` or more after it took the lock, leaving no pending
    archive), or the lock is older than :data:`STALE_LOCK_SECONDS` with none."""
    age = _age(lock, now)
    if list(folder.glob(f"{key}.*.pending")) or age < DEAD_LOCK_SECONDS:
        return False
    try:
        pid = int(lock.read_text().strip() or "0")
    except (OSError, ValueError):
        pid = 0
    return age > STALE_LOCK_SECONDS or pid <= 0 or not _alive(pid)


def java_options(settings: Mapping[str, str], now: float | None = None) -> list[str]:
    """The JVM options that map this JVM's archive, or have this JVM write it at exit.

    Args:
        settings: the Spark settings the JVM is launched with (``{key: value}``).
        now: the time (``time.time()`` seconds) to judge ages by; default the clock.

    Returns:
        Options for ``spark.driver.extraJavaOptions`` (see the module docstring); ``[]``
        when turned off, when the folder cannot be written, or while another run makes
        the archive. Never raises for a file-system problem: an archive only saves time.
    """
    folder = archive_folder()
    if folder is None:
        return []
    now = time.time() if now is None else now
    key = archive_key(settings)
    final = folder / f"{key}.jsa"
    if final.is_file():
        return [f"-XX:SharedArchiveFile={final}", *QUIET]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        pending = sorted((p for p in folder.glob(f"{key}.*.pending")
                          if _age(p, now) > SETTLE_SECONDS), key=lambda p: _age(p, now))
        lock = folder / f"{key}.lock"
        if pending:
            os.replace(pending[0], final)
            for other in pending[1:]:
                other.unlink(missing_ok=True)
            lock.unlink(missing_ok=True)
            return [f"-XX:SharedArchiveFile={final}", *QUIET]
        try:
            handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _stale(lock, folder, key, now):
                lock.unlink(missing_ok=True)
            return []
        with os.fdopen(handle, "w") as out:
            out.write(str(os.getpid()))
        return [f"-XX:ArchiveClassesAtExit={folder / f'{key}.{os.getpid()}.pending'}", *QUIET]
    except OSError:
        return []


def with_archive(settings: Mapping[str, str], given: str | None) -> str | None:
    """``spark.driver.extraJavaOptions`` with :func:`java_options` appended to ``given``
    (the value set, or ``None``); ``given`` unchanged when there are none."""
    options = java_options(settings)
    if not options:
        return given
    return " ".join([given, *options]) if given else " ".join(options)
