"""The compile context: what the rules judge a file by besides its statements, passed
explicitly from the planner to every function that needs it (no process-wide state).

One :class:`CompileContext` per planned file: the Spark minor it is judged for, the user
functions defined so far (the planner adds each ``CREATE FUNCTION`` as it reads it, so a
function is known to the statements after its own), the stores a compile may answer
from (:class:`~sqlstream.ir.caches.CompileCaches`), whether the user trusts the
project's code (:attr:`CompileContext.trust`, docs/operations.md#trust), and whether the
compile is still wanted (the language server stops a check a newer edit made stale:
:class:`Cancelled`), and the project the compile-time reads of files stay in unless the
user trusts it (:func:`project_of`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlstream.ir import spark_versions
from sqlstream.ir.caches import CompileCaches
from sqlstream.ir.user_functions import UserFunction

__all__ = [
    "PROJECT_MARKERS",
    "TRUST_VARIABLE",
    "Cancelled",
    "CompileContext",
    "inside",
    "linked_out",
    "project_of",
    "trusted",
]

PROJECT_MARKERS = (".git", ".hg", "pyproject.toml", "setup.py", "setup.cfg")
"""Entries that mark a project's root folder: where compile-time reads stay
(:func:`project_of`) and where user modules are looked for up to
(:func:`sqlstream.connectors.user_code.project_roots`)."""

TRUST_VARIABLE = "SQLSTREAM_TRUST"
"""The environment variable that trusts the project for every command and the language
server: ``1`` (also ``true``, ``yes``)."""


def trusted(flag: bool = False) -> bool:
    """The trust decision of a command or the language server: ``flag`` (``--trust``, the
    server's ``initializationOptions``), or :data:`TRUST_VARIABLE` set to ``1``, ``true`` or
    ``yes`` in the environment."""
    value = os.environ.get(TRUST_VARIABLE, "").strip().lower()
    return flag or value in ("1", "true", "yes")


class Cancelled(Exception):
    """A compile stopped because its :attr:`CompileContext.stop` said it is no longer
    wanted (raised between two statements; not a finding)."""


@dataclass(frozen=True)
class CompileContext:
    """What one file is compiled with.

    Attributes:
        spark_version: the Spark major.minor judged for (one of
            :data:`sqlstream.ir.spark_versions.SUPPORTED`): its function lists, streaming
            rules and clauses.
        functions: the user-defined functions defined so far, by lower-case name, in file
            order. The mapping is the planner's own (it adds to it, and the language
            server's resumed planner cuts it back), so the field is fixed and its content
            grows.
        caches: the stores consulted (:meth:`CompileCaches.for_compile` by default).
        trust: the user trusts the project: the Python modules the file names are imported
            (their top-level code runs) to check its functions. ``False`` (the default of
            the static commands and the language server): no user code runs, functions are
            typed from their declarations or their source read with :mod:`ast`
            (:mod:`sqlstream.connectors.user_code`); compile-time reads of files stay in
            :attr:`project`.
        stop: called between statements; when it returns true the planner raises
            :class:`Cancelled` (``None``: the compile runs to the end).
        project: the absolute folder compile-time reads of files (a CSV header) stay in
            (:func:`project_of` the pipeline file) unless trusted; ``None``: a text compiled
            without a file, no boundary.
        state_lineage: each stateful operator's keys and aggregates are also resolved to
            the source columns they read (``resolved_keys``: what the restart guard compares,
            :mod:`sqlstream.analysis.lineage`); the language server, which starts no query,
            turns it off (about a fifth of an edit's re-check).
    """

    spark_version: str = field(default_factory=spark_versions.default)
    functions: Mapping[str, UserFunction] = field(default_factory=dict)
    caches: CompileCaches = field(default_factory=CompileCaches.for_compile)
    trust: bool = False
    stop: Callable[[], bool] | None = None
    project: str | None = None
    state_lineage: bool = True

    def check_stop(self) -> None:
        """Raise :class:`Cancelled` when :attr:`stop` says the compile is no longer wanted."""
        if self.stop is not None and self.stop():
            raise Cancelled("the compile is no longer wanted")

    def at_least(self, version: str) -> bool:
        """The judged Spark minor is ``version`` (``"4.2"``) or newer."""
        return spark_versions.at_least(self.spark_version, version)


def project_of(path: str | os.PathLike) -> str:
    """The project of the file ``path``: the nearest folder above it (its own included)
    holding one of :data:`PROJECT_MARKERS` (a repository's root), else the file's folder.
    The folder is the one the path names (a symbolic link's own, not its target's).

    Args:
        path: a file (a `.ssql` pipeline, a test file); relative to the working directory.

    Returns:
        The project's folder, absolute, symbolic links resolved.
    """
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    candidate = folder
    while True:
        if any(os.path.lexists(os.path.join(candidate, m)) for m in PROJECT_MARKERS):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return folder
        candidate = parent


def inside(path: str | os.PathLike, project: str | os.PathLike) -> bool:
    """``path``, symbolic links resolved, is ``project`` or below it, through no hidden
    (``.``-prefixed) folder or file of it (``.git``, ``.ssh``: not a pipeline's data).

    Args:
        path: a file or folder (relative to the working directory, or absolute).
        project: the project's folder (:func:`project_of`).
    """
    real, root = os.path.realpath(path), os.path.realpath(project)
    try:
        if os.path.commonpath([real, root]) != root:
            return False
    except ValueError:  # another drive
        return False
    relative = os.path.relpath(real, root)
    return relative == "." or not any(p.startswith(".") for p in relative.split(os.sep))


def linked_out(path: str | os.PathLike, project: str | os.PathLike | None = None) -> bool:
    """``path`` is reached through a symbolic link (its own name or a folder of it) and,
    links resolved, leaves ``project`` or enters a hidden folder of it (:func:`inside`): a
    committed link ``x.ssql -> /etc/passwd`` or ``-> ~/.ssh/id_rsa``, which an untrusted
    command must not read (its first line would be quoted by a syntax error).

    Args:
        path: a file (a `.ssql` pipeline, a test file).
        project: the folder it must stay in (``None``: :func:`project_of` ``path``).
    """
    if os.path.realpath(path) == os.path.abspath(path):
        return False
    return not inside(path, project if project is not None else project_of(path))
