"""A real PostgreSQL server for the tests: Debian's ``postgresql`` package, started once.

The session-scoped fixture ``postgres`` runs ``initdb`` into a fresh temporary folder
(password authentication over TCP, ``scram-sha-256``), starts the server with ``pg_ctl``
on 127.0.0.1 on a free port, waits until it accepts connections (``pg_ctl -w``), creates
the database ``sqlstream_test`` and stops the server (``-m fast``) after the run.
PostgreSQL refuses to run as root: when the tests run as root (as CI does), the server
runs as the ``postgres`` user of the package (``runuser -u postgres``), in a folder it
owns. Without the package, the tests that use it are skipped with the reason (CI
installs it: ``.ci/run``). :func:`running_server` is the same outside pytest.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

PASSWORD = "pg-test-secret-7f3a"


@dataclass(frozen=True)
class Server:
    """A running server: where it listens and how to log in."""

    host: str
    port: int
    user: str
    password: str
    database: str

    @property
    def url(self) -> str:
        """``postgresql://host:port/database`` (no credentials)."""
        return f"postgresql://{self.host}:{self.port}/{self.database}"

    def connect(self, database: str | None = None, autocommit: bool = True):
        """A psycopg connection to ``database`` (default: the test database)."""
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            dbname=database or self.database,
            autocommit=autocommit,
        )

    def rows(self, query: str, params=()) -> list[tuple]:
        """The rows of ``query``."""
        with self.connect() as conn:
            return conn.execute(query, params).fetchall()


def _bin_dir() -> str | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0,
    )
    if found:
        return os.path.dirname(found[-1])
    pg_ctl = shutil.which("pg_ctl")
    return os.path.dirname(pg_ctl) if pg_ctl else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server() -> Iterator[Server]:
    """Start a server as the module docstring says, yield it as a :class:`Server`, stop it
    and delete its folder afterwards (what the ``postgres`` fixture and
    ``bench/crash_recovery.py`` use).

    Raises:
        RuntimeError: PostgreSQL is not installed, or it did not start (its log's end).
    """
    bin_dir = _bin_dir()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    as_user: list[str] = []
    folder = tempfile.mkdtemp(prefix="sqlstream-pg-")
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = os.path.join(folder, "data"), os.path.join(folder, "server.log")
    pwfile = os.path.join(folder, "pw")

    def run(*args: str) -> None:
        subprocess.run([*as_user, *args], check=True, capture_output=True, timeout=120)

    with open(pwfile, "w", encoding="utf-8") as out:
        out.write(PASSWORD + "\n")
    if as_user:
        os.chown(pwfile, owner.pw_uid, owner.pw_gid)
    run(
        f"{bin_dir}/initdb",
        "-D",
        data,
        "-U",
        "postgres",
        "--pwfile",
        pwfile,
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "-E",
        "UTF8",
        "--no-sync",
    )
    port = _free_port()
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
    try:
        run(f"{bin_dir}/pg_ctl", "-D", data, "-o", options, "-l", log, "-w", "-t", "60", "start")
    except subprocess.CalledProcessError:
        with open(log, encoding="utf-8", errors="replace") as text:
            raise RuntimeError("PostgreSQL did not start:\n" + text.read()[-2000:]) from None
    server = Server("127.0.0.1", port, "postgres", PASSWORD, "sqlstream_test")
    try:
        with server.connect("postgres") as conn:
            conn.execute("CREATE DATABASE sqlstream_test")
        yield server
    finally:
        subprocess.run(
            [*as_user, f"{bin_dir}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"],
            capture_output=True,
            timeout=120,
        )
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres():
    """A :class:`Server` on 127.0.0.1, for the whole test run (skipped without PostgreSQL)."""
    if _bin_dir() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with running_server() as server:
        yield server
