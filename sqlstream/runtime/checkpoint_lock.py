"""One run per checkpoint: an OS file lock on each query's checkpoint location while it runs.

Two runs of a query on one checkpoint location race for its offset log: on Spark 4.1 the
second fails some seconds after it started ("Race while writing batch 0"), with no word
of the other run. Before any query of a plan starts — and, when
:class:`sqlstream.session.Session` creates the SparkSession, before the JVM — :func:`acquire`
takes an exclusive lock on ``<checkpoint>/sqlstream/run.lock`` (:data:`LOCK_FILE`) for every
query with a local checkpoint location, and writes the holder into it (:class:`Holder`: pid,
host, start time, pipeline, query). A location another run holds is refused with
:class:`~sqlstream.diagnostics.errors.CheckpointInUseError` (``SS502``) at the query's
statement, naming that run; nothing is started and no lock is kept.

The lock is ``flock(LOCK_EX | LOCK_NB)`` on a descriptor kept open while the queries run.
The kernel releases it when the descriptor is closed, which happens when the process ends,
however it ends (SIGKILL, a crash): a lock left by a run that did not release it is free,
the next run takes it (the kernel grants it to one of two racing starters only) and
reports whose it was. A clean release empties the file; the file is never removed
(removing it would let a run lock a new file of the same name while another holds the old).
Within one process, the lock of a run whose queries have all stopped
(``StreamingQuery.isActive`` false) is taken over at once (a pipeline stopped and started
again); one whose queries are active, or still starting, refuses.

Covered: checkpoints on a local file system (runs on one machine), and on NFS, where Linux
implements ``flock`` with NFS byte-range locks, so runs on different clients exclude each
other. Not covered: checkpoint locations that are not local paths (``hdfs://``,
``s3a://``, …: skipped with a note, like the restart check), and file systems whose locks
stay on each machine (NFS mounted ``nolock`` or ``local_lock=all``, some FUSE and SMB
mounts): there two machines do not see each other's lock; taking over a lock whose last
holder was on another host says so.

Source: Linux ``flock(2)`` (a lock belongs to the open file description and is released
when its last descriptor is closed; over NFS, emulated with ``fcntl`` byte-range locks);
Python's ``fcntl.flock``.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from sqlstream.diagnostics.errors import CheckpointInUseError
from sqlstream.ir import plan as p
from sqlstream.runtime.restarts import local_path

LOCK_FILE = os.path.join("sqlstream", "run.lock")
"""Where the lock is kept, relative to the checkpoint location."""

POLL_SECONDS = 1.0
"""How often :meth:`Lease.release_when_stopped` asks whether the queries are active (s)."""

_HELD: dict[tuple[int, int], _Lock] = {}  # (st_dev, st_ino) of a lock file -> held here
_GUARD = threading.Lock()


@dataclass(frozen=True)
class Holder:
    """The run that holds (or last held) a checkpoint's lock, as written in the lock file.

    Attributes:
        pid: its process id; ``host``: ``socket.gethostname()`` there.
        started: when it took the lock (ISO 8601, local time with its UTC offset).
        pipeline: the `.ssql` file it runs (``<string>`` for text); ``query``: the query.
    """

    pid: int
    host: str
    started: str
    pipeline: str
    query: str

    def text(self) -> str:
        """``pid 123 on host h, since 2025-01-01T10:00:00+01:00 (query 'q' of p.ssql)``."""
        return (
            f"pid {self.pid} on host {self.host}, since {self.started} "
            f"(query '{self.query}' of {self.pipeline})"
        )

    @staticmethod
    def read(fd: int) -> Holder | None:
        """The holder written in the lock file open as ``fd``; ``None`` when it is empty
        (released cleanly, or its holder is still writing it) or not a holder record."""
        try:
            data = json.loads(os.pread(fd, 65536, 0).decode("utf-8") or "null")
            return Holder(
                int(data["pid"]),
                str(data["host"]),
                str(data["started"]),
                str(data["pipeline"]),
                str(data["query"]),
            )
        except (OSError, ValueError, TypeError, KeyError):
            return None


@dataclass
class _Lock:
    fd: int
    key: tuple[int, int]
    lease: Lease
    holder: Holder


class Lease:
    """The checkpoint locks one run holds (:func:`acquire`), until :meth:`release`.

    The run that took it calls :meth:`attach` with its started queries, and releases it
    once they have stopped (or :meth:`release_when_stopped`, when nobody waits for them).
    """

    def __init__(self) -> None:
        self.locks: list[_Lock] = []
        self.handles: list | None = None  # None: the queries are still starting
        self.released = False

    def attach(self, handles: Iterable) -> None:
        """Record the run's started ``StreamingQuery`` objects (for :meth:`active`)."""
        self.handles = list(handles)

    def active(self) -> bool:
        """Whether the run may still write its checkpoints: not released, and its queries
        still starting or any of them ``isActive`` (one that cannot be asked counts as
        stopped: its SparkSession is gone)."""
        if self.released or self.handles is None:
            return not self.released
        for handle in self.handles:
            try:
                if handle.isActive:
                    return True
            except Exception:  # noqa: BLE001, S112 - the JVM is gone: it writes nothing
                continue
        return False

    def release(self) -> None:
        """Empty every lock file and unlock it (closing its descriptor). Idempotent."""
        with _GUARD:
            self.released = True
            for lock in self.locks:
                _unlock(lock)
            self.locks.clear()

    def release_when_stopped(self, poll: float = POLL_SECONDS) -> None:
        """Release the locks, on a daemon thread, once no query is :meth:`active` (asked
        every ``poll`` seconds); for runs nobody waits for (``Pipeline.start``)."""

        def watch() -> None:
            while self.active():
                time.sleep(poll)
            self.release()

        if self.locks:
            threading.Thread(target=watch, name="sqlstream-checkpoint-lock", daemon=True).start()


def _unlock(lock: _Lock) -> None:
    """Empty, unlock and close one lock (the caller holds ``_GUARD``)."""
    if _HELD.get(lock.key) is lock:
        del _HELD[lock.key]
    try:
        os.ftruncate(lock.fd, 0)
        fcntl.flock(lock.fd, fcntl.LOCK_UN)
    except OSError:
        pass  # closing releases it anyway
    finally:
        os.close(lock.fd)


def acquire(plan: p.Plan, report: Callable[[str], None] = print) -> Lease:
    """Lock the checkpoint location of every query of ``plan``, in file order.

    Queries without a checkpoint location (console, memory) are skipped; one that is not a
    local path is skipped with a note.

    Args:
        plan: the compiled pipeline.
        report: receives one-line notes (a skipped location, a lock taken over from a run
            that ended without releasing it).

    Returns:
        The :class:`Lease` holding the locks; the caller releases it.

    Raises:
        CheckpointInUseError: (``SS502``) a query's checkpoint is locked by another run
            (another process, here or on another machine; or active queries of this
            process), positioned at the query's statement; no lock is kept.
        OSError: the lock file cannot be created or opened (e.g. a read-only directory).
    """
    lease = Lease()
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    try:
        for query in plan.queries:
            if query.checkpoint_location is None:
                continue
            directory = local_path(query.checkpoint_location)
            if directory is None:
                report(
                    f"query '{query.name}': not locked against a second run: checkpoint "
                    f"{query.checkpoint_location} is not a local path"
                )
                continue
            holder = Holder(
                os.getpid(),
                socket.gethostname(),
                started,
                plan.source.redact(plan.source.name),
                query.name,
            )
            _lock(plan, query, directory, holder, lease, report)
    except BaseException:
        lease.release()
        raise
    return lease


def _lock(
    plan: p.Plan,
    query: p.Query,
    directory: str,
    holder: Holder,
    lease: Lease,
    report: Callable[[str], None],
) -> None:
    """Take the lock of one checkpoint for ``lease`` (see :func:`acquire`)."""
    path = os.path.join(directory, LOCK_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        stat = os.fstat(fd)
        key = (stat.st_dev, stat.st_ino)
        with _GUARD:
            mine = _HELD.get(key)
            if mine is not None and (mine.lease is lease or mine.lease.active()):
                os.close(fd)
                raise _in_use(
                    plan,
                    query,
                    directory,
                    mine.holder,
                    "plan" if mine.lease is lease else "process",
                )
            if mine is not None:  # a run of this process whose queries have stopped
                mine.lease.locks.remove(mine)
                _unlock(mine)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = Holder.read(fd)
            os.close(fd)
            raise _in_use(plan, query, directory, other, "other") from None
        try:
            now = os.stat(path)
        except FileNotFoundError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == key:
            break
        os.close(fd)  # the file was removed or replaced while we locked it: lock the new one
    previous = Holder.read(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(asdict(holder)) + "\n").encode("utf-8"), 0)
    lock = _Lock(fd, key, lease, holder)
    with _GUARD:
        _HELD[key] = lock
        lease.locks.append(lock)
    if previous is not None:
        elsewhere = previous.host != holder.host
        report(
            f"query '{query.name}': checkpoint {directory}: taking over the lock of "
            f"{previous.text()}, "
            + (
                "which is free: that run ended, or this file system does not share "
                "locks between machines"
                if elsewhere
                else "which ended without releasing it (killed or crashed)"
            )
        )


def _in_use(
    plan: p.Plan, query: p.Query, directory: str, holder: Holder | None, where: str
) -> CheckpointInUseError:
    """The error for ``query``'s checkpoint, locked by ``holder`` (``None``: unknown) of
    ``where``: ``"plan"`` (another query of the same plan), ``"process"`` (an active run of
    this process) or ``"other"`` (another process)."""
    if where == "plan":
        return CheckpointInUseError(
            f"query '{query.name}': checkpoint {directory} is also the checkpoint of query "
            f"'{holder.query if holder else '?'}'",
            query.span,
            plan.source,
            hint="give each query's sink its own checkpoint_location",
        )
    if where == "process":
        return CheckpointInUseError(
            f"query '{query.name}': checkpoint {directory} is in use by a run of this "
            f"process whose queries are active: {holder.text() if holder else '?'}",
            query.span,
            plan.source,
            hint="stop those queries first (StreamingQuery.stop()), "
            "or give the sink another checkpoint_location",
        )
    who = holder.text() if holder else "a process that has not written its details yet"
    stop = f"kill {holder.pid} on {holder.host}" if holder else "stop the other process"
    return CheckpointInUseError(
        f"query '{query.name}': checkpoint {directory} is in use by another run: {who}",
        query.span,
        plan.source,
        hint=f"wait for that run to finish, stop it (Ctrl-C where it runs, or {stop}: "
        "SIGTERM stops it cleanly), or give the sink another checkpoint_location (a files "
        "sink also another path) to run a second copy",
    )
