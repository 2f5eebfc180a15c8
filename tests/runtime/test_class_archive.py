"""The class-data archive's files (sqlstream/runtime/class_archive.py), without a JVM: which
options each run gets as the archive is made, settles and is used. (The JVM writing and
mapping a real archive: tests/runtime/test_class_archive_spark.py.)"""

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
        assert ca.archive_folder() is None and ca.prepare({}).options == []


def test_default_folder_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(ca.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert ca.archive_folder() == tmp_path / "sqlstream" / "jvm"


class Jvm:
    """A stand-in for the JVM's ``Popen`` in these no-JVM tests: a real process that
    writes ``data`` to the pending file and exits with ``code`` once its stdin closes."""

    def __init__(self, pending, data: bytes, code: int):
        script = (
            f"import sys; sys.stdin.read(); open({str(pending)!r}, 'wb').write({data!r}); "
            f"sys.exit({code})"
        )
        self.process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)
        self.stdin, self.wait = self.process.stdin, self.process.wait

    @property
    def returncode(self):
        return self.process.returncode


def _finish(archive, jvm, monkeypatch):
    """Run what finish_at_exit registers, as the process's exit would."""
    registered = []
    monkeypatch.setattr(ca.atexit, "register", registered.append)
    ca.finish_at_exit(archive, jvm)
    for function in registered:
        function()


def test_one_run_writes_it_at_exit_the_others_then_map_it(folder, monkeypatch):
    key = ca.archive_key({})
    first = ca.prepare({}, now=1000.0)
    assert _option(first.options, "ArchiveClassesAtExit") == str(
        folder / f"{key}.{os.getpid()}.pending"
    )
    assert "-Xlog:cds*=off" in first.options and "-Xshare:auto" in first.options
    assert ca.prepare({}, now=1001.0).options == []  # another run while the first one runs
    _finish(first, Jvm(first.pending, b"archive", 0), monkeypatch)
    assert sorted(p.name for p in folder.iterdir()) == [f"{key}.jsa"]  # lock and pending gone
    assert (folder / f"{key}.jsa").read_bytes() == b"archive"
    assert _option(ca.prepare({}).options, "SharedArchiveFile") == str(folder / f"{key}.jsa")


def test_an_archive_of_a_jvm_that_did_not_exit_normally_is_never_used(folder, monkeypatch):
    first = ca.prepare({})
    _finish(first, Jvm(first.pending, b"trunc", 1), monkeypatch)  # killed while writing
    assert list(folder.iterdir()) == []  # pending and lock removed: a later run retries
    assert _option(ca.prepare({}).options, "ArchiveClassesAtExit")


def test_no_jvm_handle_leaves_nothing_behind(folder):
    ca.finish_at_exit(ca.prepare({}), None)
    assert list(folder.iterdir()) == []


def test_a_lock_of_a_killed_run_is_removed(folder):
    lock = folder / f"{ca.archive_key({})}.lock"
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process that has ended: the run killed before its JVM wrote anything
    lock.write_text(str(dead.pid))
    os.utime(lock, (0.0, 0.0))
    assert ca.prepare({}, now=ca.DEAD_LOCK_SECONDS / 2).options == [] and lock.exists()
    assert ca.prepare({}, now=ca.DEAD_LOCK_SECONDS + 1).options == [] and not lock.exists()
    assert _option(ca.prepare({}).options, "ArchiveClassesAtExit")
    assert lock.read_text() == str(os.getpid())


def test_a_lock_of_a_running_run_is_kept_until_it_is_very_old(folder):
    ca.prepare({}, now=0.0)  # this process holds it, and runs
    lock = folder / f"{ca.archive_key({})}.lock"
    os.utime(lock, (0.0, 0.0))
    assert ca.prepare({}, now=ca.STALE_LOCK_SECONDS / 2).options == [] and lock.exists()
    assert ca.prepare({}, now=ca.STALE_LOCK_SECONDS + 1).options == [] and not lock.exists()


def test_abandoned_pending_files_are_removed_once_the_archive_exists(folder):
    key = ca.archive_key({})
    folder.mkdir()
    (folder / f"{key}.jsa").write_bytes(b"archive")
    for pid, stamp in ((11, 0.0), (12, 1000.0)):
        (folder / f"{key}.{pid}.pending").write_bytes(b"x")
        os.utime(folder / f"{key}.{pid}.pending", (stamp, stamp))
    ca.prepare({}, now=1000.0 + ca.ABANDONED_SECONDS / 2)
    assert sorted(p.name for p in folder.iterdir()) == [f"{key}.12.pending", f"{key}.jsa"]


def test_extra_jars_get_an_archive_of_their_own():
    assert ca.archive_key({}) != ca.archive_key({"spark.jars": "/x/kafka.jar"})
    assert ca.archive_key({}) != ca.archive_key({"spark.jars.packages": "org.apache.spark:a:4.2.0"})
    assert ca.archive_key({"spark.sql.shuffle.partitions": "3"}) == ca.archive_key({})


def test_a_folder_that_cannot_be_made_gives_no_options(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(ca.ENV, str(tmp_path / "file" / "jvm"))
    assert ca.prepare({}).options == []


def test_with_archive_appends_to_the_options_given(folder):
    given = "-Dlog4j.configurationFile=file:/x.properties"
    combined, archive = ca.with_archive({}, given)
    assert combined.startswith(given + " -XX:ArchiveClassesAtExit=") and archive.pending
    assert ca.with_archive({}, given)[0] == given  # the archive is being made: nothing added
