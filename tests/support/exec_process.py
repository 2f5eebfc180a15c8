"""``sqlstream exec`` as a child process, as a user's command runs it: started in a process
group of its own (like a terminal job), its output lines collected by threads while it runs,
a wait for a given line, and the text that must never reach the user's terminal.

Each process starts its own JVM (about 10-20 s).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time


def start_exec(path, *args) -> subprocess.Popen:
    """Start ``sqlstream exec <path> --master local[1] <args…>`` with this Python, its
    output unbuffered, stdout and stderr as text pipes, in a new session (its own process
    group: ``os.killpg(proc.pid, …)`` signals it as a terminal's Ctrl-C does)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "sqlstream.cli", "exec", str(path), "--master", "local[1]", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, like a terminal job
    )


NOISE = (
    "Traceback",
    "Py4J",
    "internal error",
    "Using incubator modules",
    "log level",
    "WARN ",
    "ERROR ",
    "\tat ",
)
"""Text of the JVM's and Python's own output that sqlstream's output never holds."""


def watch(stream, seen: list[str]) -> threading.Thread:
    """Append every line of ``stream`` to ``seen`` from a daemon thread (returned, started)
    until the stream ends."""
    reader = threading.Thread(target=lambda: seen.extend(iter(stream.readline, "")), daemon=True)
    reader.start()
    return reader


def wait_for(proc, seen: list[str], text: str, timeout: float = 180) -> None:
    """Wait until a line of ``seen`` holds ``text``, polling every 0.2 s; ``AssertionError``
    if ``proc`` ends first (with its output) or after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while not any(text in line for line in seen):
        assert proc.poll() is None, "".join(seen)
        assert time.time() < deadline, f"no {text!r} in {''.join(seen[-20:])}"
        time.sleep(0.2)
