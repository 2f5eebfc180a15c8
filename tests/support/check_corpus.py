"""The check corpus (``tests/fixtures/check/NNN_name.ssql``): its programs with the headers
that say what ``check`` reports and what Spark does, and the small data they run on.

Read by ``tests/analysis/test_check_corpus.py`` (the headers against ``check`` and Spark)
and ``tests/planning/test_compiler.py``; the clicks and views also by
``tests/runtime/test_state_reader.py``. The header format is described in the first.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from sqlstream.ir import spark_versions
from tests.conftest import FIXTURES

CORPUS = FIXTURES / "check"
CHECK_VARIABLES = {"data": "/data", "out": "/out"}
"""The values of the corpus's ``${data}`` and ``${out}`` when it is only checked (no Spark)."""
HEADER = re.compile(r"^-- (expect|spark|probed)(?: (\d+\.\d+))?: *(.*?) *$", re.MULTILINE)
VERDICTS = ("runs", "rejects", "differs")
MIN_PROGRAMS = 80


@dataclass(frozen=True)
class Program:
    """One corpus file and what its header promises: ``expect`` / ``spark`` on every
    version, ``expect_on`` / ``spark_on`` where a version differs, ``probed`` the verdicts
    ``tools/probe_check_corpus.py`` saw, by version."""

    path: Path
    text: str
    expect: frozenset[str]
    spark: str  # runs | rejects | differs
    why: str
    expect_on: tuple[tuple[str, frozenset[str]], ...] = ()
    spark_on: tuple[tuple[str, str], ...] = ()
    probed: tuple[tuple[str, str], ...] = ()

    @property
    def stem(self) -> str:
        return self.path.stem

    def expect_for(self, version: str) -> frozenset[str]:
        """The codes ``check`` reports judging for Spark ``version``."""
        return dict(self.expect_on).get(version, self.expect)

    def spark_for(self, version: str) -> str:
        """What Spark ``version`` does with it: runs, rejects or differs."""
        return dict(self.spark_on).get(version, self.spark)

    @property
    def versioned(self) -> bool:
        """Some version judges it otherwise."""
        return bool(self.expect_on or self.spark_on)

    @property
    def query_name(self) -> str:
        return f"q_{self.stem}"


def codes(value: str) -> frozenset[str]:
    """The codes of a header value: ``ok`` is none, else comma-separated codes."""
    return frozenset() if value == "ok" else frozenset(code.strip() for code in value.split(","))


def read_program(path: Path) -> Program:
    """The corpus file ``path`` and its header (``AssertionError`` naming the file when the
    header is malformed: no ``expect`` or ``spark`` line, an unknown verdict or version)."""
    text = path.read_text(encoding="utf-8")
    lines = HEADER.findall(text)
    header = {key: value for key, version, value in lines if not version}
    assert {"expect", "spark"} <= set(header), f"{path.name}: needs '-- expect:' and '-- spark:'"
    spark, _, why = header["spark"].partition(":")
    assert spark in VERDICTS, f"{path.name}: bad '-- spark: {spark}'"
    assert (spark == "differs") == bool(why.strip()), f"{path.name}: 'differs: <why>' needs a why"
    expect_on = tuple((v, codes(value)) for key, v, value in lines if key == "expect" and v)
    spark_on = tuple(
        (v, value.partition(":")[0]) for key, v, value in lines if key == "spark" and v
    )
    probed = tuple(
        tuple(entry.split()) for entry in header.get("probed", "").split(",") if entry.strip()
    )
    for version, verdict in spark_on + probed:
        assert version in spark_versions.SUPPORTED and verdict in VERDICTS, (
            path.name,
            version,
            verdict,
        )
    return Program(
        path, text, codes(header["expect"]), spark, why.strip(), expect_on, spark_on, probed
    )


PROGRAMS = [read_program(p) for p in sorted(CORPUS.glob("*.ssql"))]
"""Every program of the corpus, in file-name order."""

# The data the corpus runs on (``corpus_data`` in tests/analysis/test_check_corpus.py).
CLICKS = [  # user_id, url, ts (2024-01-01, UTC); one file per list, read in this order
    [("u1", "/a", "10:00:00"), ("u2", "/b", "10:00:30"), ("u1", "/c", "10:01:10")],
    [("u3", "/a", "10:02:00"), ("u1", "/a", "10:00:00"), ("u2", "/d", "10:05:00")],
    [("u4", "/x", "10:20:00"), ("u1", "/b", "10:21:00")],
]
VIEWS = [  # user_id, page, ts
    [("u1", "home", "10:00:20"), ("u2", "cart", "10:00:50"), ("u5", "home", "10:03:00")],
    [("u4", "pay", "10:20:30"), ("u1", "home", "10:21:30")],
]
USERS = [("u1", "Ann"), ("u2", "Bob"), ("u3", "Cy"), ("u9", "Zed")]
# users_struct/: a table with struct columns, `w` a one-minute window of CLICKS' first minutes
USERS_STRUCT = [
    '{"user_id": "u1", "w": {"start": "2024-01-01T10:00:00Z", "end": "2024-01-01T10:01:00Z"}, '
    '"tier": "gold", "info": {"tier": "gold", "since": "2020-05-01"}}',
    '{"user_id": "u2", "w": {"start": "2024-01-01T10:00:00Z", "end": "2024-01-01T10:01:00Z"}, '
    '"tier": "free", "info": {"tier": "free", "since": "2023-02-11"}}',
]


def json_files(folder: Path, files: list, names: tuple[str, str, str]) -> None:
    """Write each list of ``(a, b, time)`` rows of ``files`` as ``folder/part-<i>.json``
    (``folder`` made; a row is ``{names[0]: a, names[1]: b, names[2]: "2024-01-01T<time>Z"}``),
    the files' mtimes a minute apart in order, as Spark's file source reads them."""
    folder.mkdir()
    for i, rows in enumerate(files):
        lines = [
            f'{{"{names[0]}": "{a}", "{names[1]}": "{b}", "{names[2]}": "2024-01-01T{t}Z"}}'
            for a, b, t in rows
        ]
        target = folder / f"part-{i}.json"
        target.write_text("\n".join(lines) + "\n")
        stamp = 1_700_000_000 + i * 60  # Spark's file source reads files in modification order
        os.utime(target, (stamp, stamp))
