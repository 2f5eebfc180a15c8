"""User-defined functions (``CREATE FUNCTION``): the record of what the planner learnt of each.

A :class:`UserFunction` is data: the planner (:mod:`sqlstream.planning.function_definitions`)
makes one per ``CREATE FUNCTION`` and adds it to the functions of its
:class:`~sqlstream.ir.context.CompileContext`; the analysis reads them there to know the name
(no ``SS206``), type its calls (:attr:`UserFunction.returns`) and check their argument
count; lowering registers it in the session before any relation is defined.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlstream.diagnostics.source_text import Span

KINDS = ("python", "pandas", "sql")


@dataclass(frozen=True)
class UserFunction:
    """One ``CREATE FUNCTION``.

    Attributes:
        name: the function's name as written.
        kind: ``python`` (a Spark Python UDF: one call per row), ``pandas`` (a pandas UDF:
            one call per Arrow batch, ``pandas.Series`` in and out) or ``sql`` (Spark's
            temporary SQL function).
        parameters: ``(name, Spark SQL type)`` pairs, declared or read from the Python
            callable's annotations.
        returns: the Spark SQL type of a call's result (``STRING``, ``DOUBLE``, …).
        min_args: the fewest arguments a call takes.
        max_args: the most (``None``: any number, a ``*args`` callable).
        span: the ``CREATE FUNCTION`` statement.
        module: the Python module (``python``/``pandas``), else ``None``.
        attrs: the attribute path of the callable in ``module`` (``('fn',)``).
        wrapped: the callable already is a PySpark UDF (decorated with ``udf`` or
            ``pandas_udf``): registered as it is, with its own return type.
        body: a SQL function's expression (Spark SQL text), else ``None``.
        stamp: ``(path, modification time in ns, size)`` of the module file read or
            imported for it, else ``None`` (an edited module is read again).
        checked: its types and arguments were read from the callable or its source (or
            declared); ``False`` for a function an untrusted compile could not read
            (``SS274``): its calls are not checked and typed ``UNKNOWN``.
    """

    name: str
    kind: str
    parameters: tuple[tuple[str, str], ...]
    returns: str
    min_args: int
    max_args: int | None
    span: Span
    module: str | None = None
    attrs: tuple[str, ...] = ()
    wrapped: bool = False
    body: str | None = None
    stamp: tuple[str, int, int] | None = None
    checked: bool = True

    @property
    def reference(self) -> str:
        """``module:attr.attr`` of a Python function, else ``""``."""
        return f"{self.module}:{'.'.join(self.attrs)}" if self.module else ""

    def arity_text(self) -> str:
        """``2``, ``1 to 3`` or ``at least 1``: the argument counts a call may have."""
        if self.max_args is None:
            return f"at least {self.min_args}"
        if self.max_args == self.min_args:
            return str(self.min_args)
        return f"{self.min_args} to {self.max_args}"
