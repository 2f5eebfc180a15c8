"""The class-data archive's files (sqlstream/runtime/class_archive.py), without a JVM: which
options each run gets as the archive is made, settles and is used. (The JVM writing and
mapping a real archive: tests/spark/test_class_archive.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sqlstream.runtime import class_archive as ca


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv(ca.ENV, str(tmp_path / "jvm"))
    return tmp_path / "jvm"


def _option(options: list[str], name: str) -> str | None:
    return next((o.split("=", 1)[1] for o in options if o.startswith(f"-XX:{name}=")), None)


def test_off_gives_no_options(monkeypatch):
    for value in ("off", "0", "false", "no", "OFF"):
        monkeypatch.setenv(ca.ENV, value)
        assert ca.archive_folder() is None and ca.java_options({}) == []


def test_default_folder_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(ca.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ca.archive_folder() == tmp_path / "sqlstream" / "jvm"


def test_one_run_writes_it_the_others_wait_then_all_map_it(folder):
    key = ca.archive_key({})
    first = ca.java_options({}, now=1000.0)
    pending = _option(first, "ArchiveClassesAtExit")
    assert pending == str(folder / f"{key}.{os.getpid()}.pending")
    assert "-Xlog:cds*=off" in first and "-Xshare:auto" in first
    assert ca.java_options({}, now=1001.0) == []  # another run while the first one runs
    # the first run's JVM wrote the archive as it exited
    with open(pending, "wb") as out:
        out.write(b"archive")
    os.utime(pending, (2000.0, 2000.0))
    assert ca.java_options({}, now=2000.0 + ca.SETTLE_SECONDS / 2) == []  # maybe still writing
    settled = ca.java_options({}, now=2000.0 + ca.SETTLE_SECONDS + 1)
    assert _option(settled, "SharedArchiveFile") == str(folder / f"{key}.jsa")
    assert sorted(p.name for p in folder.iterdir()) == [f"{key}.jsa"]  # lock and pending gone
    assert ca.java_options({}) == settled


def test_newest_settled_pending_archive_wins(folder):
    key = ca.archive_key({})
    ca.java_options({}, now=0.0)
    for pid, stamp in ((11, 100.0), (12, 300.0), (13, 390.0)):
        path = folder / f"{key}.{pid}.pending"
        path.write_bytes(str(pid).encode())
        os.utime(path, (stamp, stamp))
    ca.java_options({}, now=300.0 + ca.SETTLE_SECONDS + 1)  # 13 is too young
    assert (folder / f"{key}.jsa").read_bytes() == b"12"
    assert not (folder / f"{key}.11.pending").exists()
    assert (folder / f"{key}.13.pending").exists()


def test_a_lock_of_a_killed_run_is_removed(folder):
    lock = folder / f"{ca.archive_key({})}.lock"
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process that has ended: the run killed before its JVM wrote anything
    lock.write_text(str(dead.pid))
    os.utime(lock, (0.0, 0.0))
    assert ca.java_options({}, now=ca.DEAD_LOCK_SECONDS / 2) == [] and lock.exists()
    assert ca.java_options({}, now=ca.DEAD_LOCK_SECONDS + 1) == [] and not lock.exists()
    assert _option(ca.java_options({}), "ArchiveClassesAtExit")
    assert lock.read_text() == str(os.getpid())


def test_a_lock_of_a_running_run_is_kept_until_it_is_very_old(folder):
    ca.java_options({}, now=0.0)  # this process holds it, and runs
    lock = folder / f"{ca.archive_key({})}.lock"
    os.utime(lock, (0.0, 0.0))
    assert ca.java_options({}, now=ca.STALE_LOCK_SECONDS / 2) == [] and lock.exists()
    assert ca.java_options({}, now=ca.STALE_LOCK_SECONDS + 1) == [] and not lock.exists()


def test_extra_jars_get_an_archive_of_their_own():
    assert ca.archive_key({}) != ca.archive_key({"spark.jars": "/x/kafka.jar"})
    assert ca.archive_key({}) != ca.archive_key({"spark.jars.packages": "org.apache.spark:a:4.2.0"})
    assert ca.archive_key({"spark.sql.shuffle.partitions": "3"}) == ca.archive_key({})


def test_a_folder_that_cannot_be_made_gives_no_options(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(ca.ENV, str(tmp_path / "file" / "jvm"))
    assert ca.java_options({}) == []


def test_with_archive_appends_to_the_options_given(folder):
    given = "-Dlog4j.configurationFile=file:/x.properties"
    combined = ca.with_archive({}, given)
    assert combined.startswith(given + " -XX:ArchiveClassesAtExit=")
    assert ca.with_archive({}, given) == given  # the archive is being made: nothing added
