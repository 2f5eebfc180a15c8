"""Timing processes on a shared machine: wall and CPU seconds, the load, the report's lines.

A CLI run's CPU time counts its JVM too: PySpark does not wait for the JVM it launched, so
this process becomes a subreaper (Linux ``prctl``) to inherit and reap it
(:func:`become_subreaper`, :func:`timed_process`). An in-process run's CPU time is its JVM's
plus this Python process's (:func:`session_cpu_seconds`). Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def load1() -> float:
    return os.getloadavg()[0]


def say(text: str = "") -> None:
    print(text, flush=True)


def proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def session_cpu_seconds(spark) -> float | None:
    """CPU seconds used so far by the session's JVM plus this Python process."""
    proc = getattr(
        spark.sparkContext._gateway, "proc", None
    )  # None if the JVM was not launched here
    jvm = proc_cpu_seconds(proc.pid) if proc is not None else None
    return None if jvm is None else jvm + time.process_time()


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux prctl PR_SET_CHILD_SUBREAPER).

    PySpark does not wait for its JVM: when a job's Python process exits, the JVM is
    orphaned and its CPU time never reaches RUSAGE_CHILDREN. As a subreaper this process
    inherits the JVM and can reap it, so the CPU time of each CLI run is complete.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans(timeout: float = 60.0) -> None:
    """Wait (up to ``timeout`` s) for every adopted descendant, e.g. a JVM shutting down.

    Only called while this process has no children of its own (the CLI runs come
    before the in-process SparkSession is created).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)


def sqlstream_command() -> list[str]:
    beside = Path(sys.executable).parent / "sqlstream"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("sqlstream")
    if found:
        return [found]
    return [sys.executable, "-m", "sqlstream.cli"]


def timed_process(
    command: list[str], log: Path, subreaper: bool
) -> tuple[float, float | None, int]:
    """Run ``command``; wall seconds until it exits, CPU seconds of it and its descendants.

    The wall time stops when the command exits (what a user waits for); the CPU time
    also counts a JVM that outlives it (only known when this process is a subreaper).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "wb") as sink:
        done = subprocess.run(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    elapsed = time.perf_counter() - started
    if subreaper:
        reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (
        (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) if subreaper else None
    )
    return elapsed, cpu, done.returncode
