"""The process's standard output and error through the pipeline's secret redaction, for the
commands that start a Spark JVM (which writes to file descriptors 1 and 2 itself)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator

from sqlstream.diagnostics.source_text import Source


@contextlib.contextmanager
def redacted_output(source: Source) -> Iterator[None]:
    """While the block runs, everything written to file descriptors 1 and 2 — by Python,
    and by the Spark JVM started in the block, which inherits them for good (its log
    lines, uncaught exceptions, console sink rows; PySpark's own loggers) — passes through
    a pipe whose reader replaces the pipeline's secrets with ``***``
    (:meth:`~sqlstream.diagnostics.source_text.Source.redact`) before it reaches the terminal. Nothing to do
    when the pipeline has no secret. A line is held until its ``\\n`` or ``\\r`` (so a
    secret cannot be split between two writes), at most 64 KiB. Used by ``exec`` and
    ``explain --physical``, the commands that start a JVM."""
    if not source.secrets:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pumps = []
    for fd in (1, 2):
        saved = os.dup(fd)
        read, write = os.pipe()
        os.dup2(write, fd)
        os.close(write)
        pump = threading.Thread(
            target=_pump,
            args=(read, saved, source.redact),
            daemon=True,
            name=f"sqlstream-redact-{fd}",
        )
        pump.start()
        pumps.append((fd, saved))
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # Python writes directly again; the JVM keeps writing into the pipes until it exits
        for fd, saved in pumps:
            os.dup2(saved, fd)


def _pump(read: int, out: int, redact) -> None:
    pending = b""
    while chunk := os.read(read, 65536):
        pending += chunk
        cut = max(pending.rfind(b"\n"), pending.rfind(b"\r")) + 1
        if not cut and len(pending) > 65536:
            cut = len(pending)
        if cut:
            text = redact(pending[:cut].decode("utf-8", "replace"))
            os.write(out, text.encode("utf-8"))
            pending = pending[cut:]
    if pending:
        os.write(out, redact(pending.decode("utf-8", "replace")).encode("utf-8"))
    os.close(read)
    os.close(out)
