"""The class-data archive with a real JVM (sqlstream/runtime/class_archive.py): the first
run's JVM writes it at exit (the run waits for it and puts it in place), and the next
run's JVM loads Spark's classes from it — seen
in the JVM's own class-loading log (``-Xlog:class+load``: "source: shared objects file
(top)" is the dynamic archive). Each run is a fresh Python process that launches its JVM
(the shared session of the other tests has one already)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

RUN = """
import sys
from sqlstream.testing.suite import test_session
conf = {"spark.driver.extraJavaOptions": sys.argv[1]} if sys.argv[1:] else None
spark = test_session("local[1]", conf)
assert spark.range(3).count() == 3
"""


def _run(env: dict[str, str], *args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cds" not in done.stdout  # the JVM's class-sharing messages are not printed


@pytest.mark.spark
def test_the_first_run_writes_the_archive_and_the_next_maps_sparks_classes(tmp_path):
    folder = tmp_path / "jvm"
    env = {**os.environ, "SQLSTREAM_JVM_ARCHIVE": str(folder), "PYSPARK_PYTHON": sys.executable}
    _run(env)  # its JVM writes the archive as it exits; the run waits and puts it in place
    (archive,) = folder.iterdir()
    assert archive.suffix == ".jsa" and archive.stat().st_size > 10_000_000  # not a stub
    log = tmp_path / "class-load.log"
    _run(env, f"-Xlog:class+load=info:file={log}")
    assert [p.suffix for p in folder.iterdir()] == [".jsa"]
    loaded = {
        line.split()[1]: line
        for line in log.read_text().splitlines()
        if "source:" in line and len(line.split()) > 1
    }
    for name in (
        "org.apache.spark.SparkContext",
        "org.apache.spark.sql.SparkSession",
        "org.apache.spark.sql.catalyst.analysis.Analyzer",
    ):
        assert "shared objects file (top)" in loaded[name], loaded.get(name)
