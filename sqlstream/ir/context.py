"""The compile context: what the rules judge a file by besides its statements, passed
explicitly from the planner to every function that needs it (no process-wide state).

One :class:`CompileContext` per planned file: the Spark minor it is judged for, the user
functions defined so far (the planner adds each ``CREATE FUNCTION`` as it reads it, so a
function is known to the statements after its own), the stores a compile may answer
from (:class:`~sqlstream.ir.caches.CompileCaches`), whether the user trusts the
project's code (:attr:`CompileContext.trust`, docs/operations.md#trust), and whether the
compile is still wanted (the language server stops a check a newer edit made stale:
:class:`Cancelled`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlstream.ir import spark_versions
from sqlstream.ir.caches import CompileCaches
from sqlstream.ir.user_functions import UserFunction

__all__ = ["TRUST_VARIABLE", "Cancelled", "CompileContext", "trusted"]

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
            (:mod:`sqlstream.connectors.user_code`).
        stop: called between statements; when it returns true the planner raises
            :class:`Cancelled` (``None``: the compile runs to the end).
    """

    spark_version: str = field(default_factory=spark_versions.default)
    functions: Mapping[str, UserFunction] = field(default_factory=dict)
    caches: CompileCaches = field(default_factory=CompileCaches.for_compile)
    trust: bool = False
    stop: Callable[[], bool] | None = None

    def check_stop(self) -> None:
        """Raise :class:`Cancelled` when :attr:`stop` says the compile is no longer wanted."""
        if self.stop is not None and self.stop():
            raise Cancelled("the compile is no longer wanted")

    def at_least(self, version: str) -> bool:
        """The judged Spark minor is ``version`` (``"4.2"``) or newer."""
        return spark_versions.at_least(self.spark_version, version)
