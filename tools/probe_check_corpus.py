#!/usr/bin/env python
"""Run the check corpus on the installed Spark and record its verdicts in the corpus files.

Each program of ``tests/fixtures/check/`` says what Spark does with it (``-- spark: runs |
rejects | differs``, and ``-- spark X.Y: …`` where a version does otherwise). This script runs
the corpus's Spark test (``tests/analysis/test_check_corpus.py::test_on_spark``, which starts
each program on a shared local SparkSession over small files) with
``$SQLSTREAM_CORPUS_RECORD`` set, so the test appends what Spark did — ``ran``, ``rejected at
start``, ``failed at run time`` — per program, and writes the verdict observed on this
Spark's minor into each program's ``-- probed:`` line (``-- probed: 4.0 runs, 4.1 runs, 4.2
runs, 4.3 rejects``): ``runs`` (``differs`` for a program whose header says its result
differs), or ``rejects``. The fast ``test_check`` then holds every header to the recorded
verdicts, version by version. Run it once per supported minor, each in its venv, and
review the diff like code::

    .venv/bin/python tools/probe_check_corpus.py            # the newest Spark
    .ci/spark-venv 4.2 && .venv-4.2/bin/python tools/probe_check_corpus.py
    .venv/bin/python tools/probe_check_corpus.py -k 361_    # some programs only

Prints the programs whose probed verdict for this version changed, and pytest's failures
(a header that disagrees with Spark). Takes about as long as the corpus's Spark test
(a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "check"
PROBED = re.compile(r"^-- probed: *(.*?) *$", re.MULTILINE)
HEADER_SPARK = re.compile(r"^-- spark: *(\w+)", re.MULTILINE)


def verdict(status: str, header: str) -> str:
    """The corpus verdict for what Spark did (``status`` as the test records it)."""
    if status == "ran":
        return "differs" if header == "differs" else "runs"
    return "rejects"


def record(path: Path, version: str, observed: str) -> bool:
    """Put ``version observed`` into ``path``'s ``-- probed:`` line (added after the
    ``-- spark:`` line when missing), versions in order. Returns whether it changed."""
    text = path.read_text(encoding="utf-8")
    found = PROBED.search(text)
    entries = dict(e.split() for e in (found.group(1).split(",") if found else []) if e.strip())
    if entries.get(version) == observed:
        return False
    entries[version] = observed
    line = "-- probed: " + ", ".join(
        f"{v} {entries[v]}" for v in sorted(entries, key=lambda v: tuple(map(int, v.split("."))))
    )
    if found:
        text = text[: found.start()] + line + text[found.end() :]
    else:
        spark = re.search(r"^-- spark: .*$", text, re.MULTILINE)
        text = text[: spark.end()] + "\n" + line + text[spark.end() :]
    path.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", dest="keyword", help="only the programs pytest -k selects")
    args = parser.parse_args(argv)
    with tempfile.NamedTemporaryFile("r", suffix=".txt", delete=False) as handle:
        out = Path(handle.name)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "spark",
        "tests/analysis/test_check_corpus.py",
    ] + (["-k", args.keyword] if args.keyword else [])
    done = subprocess.run(
        command, cwd=ROOT, env={**os.environ, "SQLSTREAM_CORPUS_RECORD": str(out)}
    )
    changed = []
    for line in out.read_text(encoding="utf-8").splitlines():
        stem, version, status = line.split()
        path = CORPUS / f"{stem}.ssql"
        observed = verdict(status.replace("_", " "), HEADER_SPARK.search(path.read_text()).group(1))
        if record(path, version, observed):
            changed.append(f"{stem}: Spark {version} {observed}")
    out.unlink()
    print(
        "\n".join(["probed verdicts changed:", *changed])
        if changed
        else "no probed verdict changed"
    )
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
