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
  JVM write ``<key>.<pid>.pending`` when it exits. At its own exit that run waits for the
  JVM and renames the file to ``<key>.jsa`` only if the JVM exited normally
  (:func:`finish_at_exit`): a JVM killed while writing leaves a truncated archive, and a JVM
  that maps a truncated archive dies at start. The rename is atomic: no run maps a file
  being written. A lock whose run was killed is removed (:func:`_stale`).
* ``-Xlog:cds*=off``: the JVM's class-sharing messages (on its stdout, which is the
  console sink's) are not printed.

``SQLSTREAM_JVM_ARCHIVE=off`` turns it off; a folder there puts the archives in it.

Source: JDK 17, JEP 350 "Dynamic CDS Archives" and the ``java`` command's
``-XX:ArchiveClassesAtExit``, ``-XX:SharedArchiveFile``, ``-Xshare`` and ``-Xlog`` options.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV = "SQLSTREAM_JVM_ARCHIVE"
"""``off`` (or ``0``, ``false``, ``no``): no archive; a path: the folder of the archives."""

EXIT_SECONDS = 120.0
"""How long a run that writes the archive waits at its exit for its JVM to finish (s)."""

ABANDONED_SECONDS = 600.0
"""A pending archive this old was left by a run that did not finish it (s): never used,
removed once the archive exists, and no longer holding a killed run's lock."""

STALE_LOCK_SECONDS = 6 * 3600.0
"""A lock this old whose run left no pending archive is removed, whatever its process
(s): a safeguard against a process id reused by another program."""

DEAD_LOCK_SECONDS = 30.0
"""A lock at least this old whose process has ended and left no pending archive is
removed (s): that run was killed (a JVM killed with SIGKILL writes no archive), and a
later run makes the archive instead."""

QUIET = ("-Xshare:auto", "-Xlog:cds*=off")

# What decides which classes the driver loads from where, besides Java and PySpark.
CLASSPATH_SETTINGS = (
    "spark.jars",
    "spark.jars.packages",
    "spark.driver.extraClassPath",
    "spark.jars.repositories",
)


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
    writing = [p for p in folder.glob(f"{key}.*.pending") if _age(p, now) < ABANDONED_SECONDS]
    if writing or age < DEAD_LOCK_SECONDS:
        return False
    try:
        pid = int(lock.read_text().strip() or "0")
    except (OSError, ValueError):
        pid = 0
    return age > STALE_LOCK_SECONDS or pid <= 0 or not _alive(pid)


@dataclass(frozen=True)
class Archive:
    """What :func:`prepare` decided for one JVM.

    Attributes:
        options: for ``spark.driver.extraJavaOptions`` (``[]``: no archive this time).
        pending: where this JVM writes the archive at exit (``None``: it maps one, or none).
        final: where the archive goes once written (``<key>.jsa``).
        lock: the lock this run holds while its JVM writes the archive.
    """

    options: list[str]
    pending: Path | None = None
    final: Path | None = None
    lock: Path | None = None


def prepare(settings: Mapping[str, str], now: float | None = None) -> Archive:
    """Decide whether this JVM maps the archive or writes it at exit.

    Args:
        settings: the Spark settings the JVM is launched with (``{key: value}``).
        now: the time (``time.time()`` seconds) to judge ages by; default the clock.

    Returns:
        An :class:`Archive`; its ``options`` are ``[]`` when turned off, when the folder
        cannot be written, or while another run makes the archive. Never raises for a
        file-system problem: an archive only saves time.
    """
    folder = archive_folder()
    if folder is None:
        return Archive([])
    now = time.time() if now is None else now
    key = archive_key(settings)
    final = folder / f"{key}.jsa"
    try:
        if final.is_file():
            for old in folder.glob(f"{key}.*.pending"):  # from runs that could not finish
                if _age(old, now) > ABANDONED_SECONDS:
                    old.unlink(missing_ok=True)
            return Archive([f"-XX:SharedArchiveFile={final}", *QUIET])
        folder.mkdir(parents=True, exist_ok=True)
        lock = folder / f"{key}.lock"
        try:
            handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _stale(lock, folder, key, now):
                lock.unlink(missing_ok=True)
            return Archive([])
        with os.fdopen(handle, "w") as out:
            out.write(str(os.getpid()))
        pending = folder / f"{key}.{os.getpid()}.pending"
        return Archive([f"-XX:ArchiveClassesAtExit={pending}", *QUIET], pending, final, lock)
    except OSError:
        return Archive([])


def with_archive(settings: Mapping[str, str], given: str | None) -> tuple[str | None, Archive]:
    """``spark.driver.extraJavaOptions`` with :func:`prepare`'s options appended to
    ``given`` (the value set, or ``None``; unchanged when there are none), and the
    :class:`Archive` to give :func:`finish_at_exit` once the JVM runs."""
    archive = prepare(settings)
    if not archive.options:
        return given, archive
    return (" ".join([given, *archive.options]) if given else " ".join(archive.options)), archive


def finish_at_exit(archive: Archive, jvm) -> None:
    """When this process exits, let the JVM that writes ``archive`` finish and put the
    archive in place: stop the SparkContext of that JVM (no other), close the JVM's stdin (PySpark's gateway
    exits at its end), wait up to :data:`EXIT_SECONDS` and rename the pending file to
    ``<key>.jsa`` only if the JVM exited with code 0 (a JVM killed while it writes leaves a
    truncated file, which a JVM mapping it would die of). Nothing when ``archive`` is not
    being written or ``jvm`` (the JVM's ``Popen``) is ``None``.
    """
    if archive.pending is None:
        return
    if jvm is None:
        _discard(archive)
        return
    pending, final = archive.pending, archive.final
    assert final is not None  # (set with pending)

    def finish() -> None:
        try:
            from pyspark import SparkContext

            context = SparkContext._active_spark_context  # noqa: SLF001 - PySpark's own
            if context is not None and getattr(context._gateway, "proc", None) is jvm:  # noqa: SLF001
                context.stop()  # only the context of the JVM that writes the archive
        except Exception:  # noqa: BLE001 - the JVM may be gone already
            pass
        if sys.stderr is not None and sys.stderr.isatty():
            print(
                "sqlstream: the JVM writes its class-data archive (once; later starts are "
                f"faster; {ENV}=off turns it off)",
                file=sys.stderr,
                flush=True,
            )
        try:
            if jvm.stdin is not None:
                jvm.stdin.close()
            jvm.wait(timeout=EXIT_SECONDS)
        except BaseException:  # noqa: BLE001 - still writing (or Ctrl-C): never used
            return
        try:
            if jvm.returncode == 0 and pending.is_file():
                os.replace(pending, final)
        except OSError:
            pass
        _discard(archive)

    atexit.register(finish)


def _discard(archive: Archive) -> None:
    for path in (archive.pending, archive.lock):
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
