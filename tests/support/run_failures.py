"""The error a pipeline's run raises, for tests of what a failing query reports."""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlstream


def failure_of(spark, folder: Path, text: str) -> sqlstream.SqlStreamError:
    """The SqlStreamError that running ``text`` (written as ``p.ssql`` in ``folder``) with
    ``available_now`` raises in the session ``spark``; the test fails if it raises none."""
    (folder / "p.ssql").write_text(text)
    pipeline = sqlstream.compile_file(folder / "p.ssql")
    with pytest.raises(sqlstream.SqlStreamError) as failed:
        sqlstream.Session(spark).run(pipeline, available_now=True)
    return failed.value
