"""Which checkpoint owns a files sink's output directory.

Spark's file sink keeps a log of the batches written to its directory
(``<path>/_spark_metadata``) and skips a batch id that log already holds. A query started
on a *new* checkpoint (a "fresh start" with another ``--state-dir`` or
``checkpoint_location``) numbers its batches from 0 again: every batch the log already
lists is skipped, and the run exits 0 having written nothing. So the checkpoint that writes
a directory is recorded there (:data:`OWNER_FILE`, written atomically once its query
started), and a start is refused before any query runs when the directory's log lists
batches and either another checkpoint is recorded as the owner, or the starting checkpoint
holds no progress (it was deleted or never ran: Spark would skip batches from 0 on).

Why a record in the directory and not only a comparison of the log with the checkpoint's
commits: the record names the owner (the message tells which checkpoint to use), survives
the owner's checkpoint being moved or deleted, and costs one small file Spark's readers
ignore (a name starting with ``_`` is hidden from Spark's file listing; readers of a sink's
output use its ``_spark_metadata`` log). The log is still read, so that a directory written
before owners were recorded is protected from a fresh checkpoint too.
"""

from __future__ import annotations

import json
import os
import tempfile

OWNER_FILE = "_sqlstream_checkpoint.json"
"""The record of the owning checkpoint, in the sink's output directory."""

_MAX_BYTES = 64 * 1024


def logged_batches(directory: str) -> bool:
    """The file sink log ``<directory>/_spark_metadata`` lists at least one batch."""
    log = os.path.join(directory, "_spark_metadata")
    try:
        names = os.listdir(log)
    except OSError:
        return False
    return any(name.split(".")[0].isdigit() for name in names)


def owner(directory: str) -> str | None:
    """The checkpoint recorded as owning output ``directory``, or ``None`` when none is
    recorded or the record cannot be read (treated as none: the log still guards)."""
    path = os.path.join(directory, OWNER_FILE)
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError, RecursionError):
        return None
    value = data.get("checkpoint") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def conflict(directory: str, checkpoint: str, has_progress: bool) -> str | None:
    """Why a query on ``checkpoint`` must not write output ``directory``, or ``None``.

    Args:
        directory: the files sink's local output directory.
        checkpoint: the query's local checkpoint location.
        has_progress: the checkpoint holds Spark's progress (an offset entry).

    Returns:
        One clause naming the owning checkpoint, when the directory's log lists batches
        and another checkpoint owns it or this one is fresh; else ``None``.
    """
    if not logged_batches(directory):
        return None
    recorded = owner(directory)
    if recorded is not None and os.path.normpath(recorded) != os.path.normpath(checkpoint):
        return f"output directory {directory} is written by checkpoint {recorded}"
    if not has_progress:
        who = f"checkpoint {recorded}" if recorded else "another checkpoint (not recorded)"
        return (
            f"output directory {directory} already holds batches written by {who}, "
            f"and checkpoint {checkpoint} starts from batch 0"
        )
    return None


def claim(directory: str, checkpoint: str) -> None:
    """Record ``checkpoint`` as the owner of output ``directory`` (atomically: a temporary
    file beside it, then ``os.replace``); the directory is made if missing."""
    os.makedirs(directory, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix="_sqlstream_checkpoint.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"checkpoint": checkpoint}, handle)
            handle.write("\n")
        os.replace(temporary, os.path.join(directory, OWNER_FILE))
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
