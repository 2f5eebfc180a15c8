"""The API's functions and the :class:`Pipeline` they return (re-exported by ``sqlstream``).

``compile``, ``translate``, ``check`` and :meth:`Pipeline.to_pyspark` never import pyspark
nor start a JVM; :meth:`Pipeline.start` does (through :mod:`sqlstream.runtime.runner`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend.limits import read_file
from sqlstream.ir.plan import Plan
from sqlstream.lowering.lowered import Lowered

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from sqlstream.runtime.events import ListenerLike

__all__ = ["Pipeline", "check", "check_plan", "compile", "compile_file", "read_file", "translate"]


@dataclass(frozen=True)
class Pipeline(Lowered):
    """A compiled `.ssql` file, ready to translate or start: its plan and its program
    (:class:`~sqlstream.lowering.lowered.Lowered`), lowered once — on first use, so that
    ``check`` does not pay for it.

    Attributes:
        plan: the :class:`~sqlstream.ir.plan.Plan` (sources, views, queries).
        program: the :class:`~sqlstream.ir.calls.Program` of binding calls that
            :meth:`translate` prints and :meth:`start` runs.
    """

    def translate(self) -> str:
        """The Spark SQL and PySpark binding of every statement (secrets redacted): the
        program :meth:`start` runs."""
        from sqlstream.frontend.limits import run_deep
        from sqlstream.lowering.printer import render

        return run_deep(render, self)

    def to_pyspark(
        self,
        master: str | None = None,
        conf: dict[str, str] | None = None,
        available_now: bool = False,
    ) -> str:
        """A standalone PySpark script running this pipeline (``translate --to pyspark``).

        Args:
            master: the Spark master of the script's session (default ``local[*]``).
            conf: Spark configuration for that session (as ``exec --conf``).
            available_now: every query with ``trigger(availableNow=True)``.

        Returns:
            Python source that does not import sqlstream: the session with ``exec``'s
            defaults, the settings, reads, views and queries, and a wait for the queries
            (see :func:`sqlstream.lowering.printer.to_pyspark`). Secrets are redacted.
        """
        from sqlstream.frontend.limits import run_deep
        from sqlstream.lowering.printer import to_pyspark

        return run_deep(to_pyspark, self, master, conf, available_now)

    def start(
        self,
        spark: SparkSession,
        available_now: bool = False,
        listeners: Iterable[ListenerLike] = (),
        allow_incompatible_restart: bool = False,
    ) -> list[StreamingQuery]:
        """Define the pipeline's views in ``spark`` and start its queries:
        :func:`sqlstream.runtime.runner.start` (whose docstring says what is started, what is
        emitted, and what is raised), as :meth:`sqlstream.Session.start` does.

        Args:
            spark: an active SparkSession.
            available_now, listeners, allow_incompatible_restart: as for
                :func:`sqlstream.runtime.runner.start`.

        Returns:
            The started ``StreamingQuery`` objects, in file order.
        """
        from sqlstream.runtime.runner import start

        return start(spark, self, available_now, listeners, allow_incompatible_restart)


def compile(  # noqa: A001 - the API's name in the spec
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    state_dir: str | None = None,
    checks: bool = True,
    spark_version: str | None = None,
    trust: bool = False,
) -> Pipeline:
    """Compile `.ssql` text.

    Args:
        text: the file's text.
        variables: values for ``${name}`` references.
        path: the file's path: names the pipeline (checkpoints go under its stem) and the
            folder that relative paths are resolved against; used in messages. The file is
            not read.
        state_dir: root of default checkpoint locations (overrides ``SET 'sqlstream.state_dir'``).
        checks: ``False`` turns violations of streaming rules (codes ``SS3xx``), schema
            findings (``SS205``–``SS209``) and watermarks on non-timestamps into warnings
            and plans the queries anyway, so Spark itself can be asked; for testing the
            rules, not for running pipelines.
        spark_version: the Spark major.minor to judge the text for (``"4.2"``; overrides
            ``SET 'sqlstream.spark_version'``; default: the installed PySpark's, see
            :mod:`sqlstream.ir.spark_versions`).
        trust: the caller trusts the project: the Python modules the text names
            (``CREATE FUNCTION``, ``foreach_batch``) are imported to check them, so their
            top-level code runs (its standard output sent to standard error). ``False``:
            no user code runs; functions are typed from their declarations or their
            source (docs/operations.md#trust). :meth:`sqlstream.Session.compile` trusts.

    Returns:
        A :class:`Pipeline`: the plan and its program (lowered on first use, once).

    Raises:
        SqlStreamError: the first problem in the file, with its position (``SS103``:
            nesting deeper than :data:`sqlstream.frontend.limits.MAX_NESTING`).

    The compiler runs in a thread with a deep stack (:func:`sqlstream.frontend.limits.run_deep`):
    nesting is bounded by :data:`~sqlstream.frontend.limits.MAX_NESTING`, not by Python's
    recursion limit.
    """
    from sqlstream.frontend.limits import run_deep

    return run_deep(_compile, text, variables, path, state_dir, checks, spark_version, trust)


def _compile(
    text: str,
    variables: Mapping[str, object] | None,
    path: str | None,
    state_dir: str | None,
    checks: bool,
    spark_version: str | None = None,
    trust: bool = False,
    state_lineage: bool = True,
) -> Pipeline:
    from sqlstream.frontend.parser import parse
    from sqlstream.planning.planner import build_plan
    from sqlstream.sql.parsing import check_sqlglot_build

    check_sqlglot_build()  # SS003 once, not at every query
    script = parse(text, variables, path)
    plan = build_plan(script, path, state_dir, checks, spark_version, trust, state_lineage)
    return Pipeline(plan)


def compile_file(
    path: str | Path,
    variables: Mapping[str, object] | None = None,
    state_dir: str | None = None,
    trust: bool = False,
) -> Pipeline:
    """Read (:func:`read_pipeline`) and compile a `.ssql` file (see :func:`compile`; ``trust``:
    user modules are imported).

    Raises:
        SqlStreamError: the file cannot be read or is not UTF-8 (``SS002``), or the first
            problem in it.
    """
    return compile(read_pipeline(path, trust), variables, str(path), state_dir, trust=trust)


def read_pipeline(path: str | Path, trust: bool = False) -> str:
    """The text of the `.ssql` file ``path`` (:func:`read_file`) as a command reads the
    files it is pointed at: untrusted, a symbolic link whose target leaves the file's
    project (:func:`~sqlstream.ir.context.linked_out`; a committed ``x.ssql ->
    /etc/passwd``) is not read, as a test file's is not, so no message quotes what it
    holds.

    Raises:
        SqlStreamError: ``SS002``: such a link, or the file cannot be read (:func:`read_file`).
    """
    from sqlstream.ir.context import linked_out

    if not trust and linked_out(path):
        raise SqlStreamError(
            f"cannot read {path}: a symbolic link out of its project (or into a hidden "
            "folder); it is not read unless the project is trusted",
            code="SS002",
        )
    return read_file(path)


def translate(
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    trust: bool = False,
) -> str:
    """Return what ``sqlstream translate`` prints for ``text`` (no JVM, no pyspark import;
    ``trust``: user modules are imported, see :func:`compile`).

    Raises:
        SqlStreamError: the first problem in the text, with its position.
    """
    return compile(text, variables, path, trust=trust).translate()


def check_plan(
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    spark_version: str | None = None,
    trust: bool = False,
) -> tuple[list[SqlStreamError], Plan | None]:
    """Compile ``text``; return ``(findings, plan)``: every finding (errors and warnings) in
    file order, and the plan, or ``None`` when there is an error. ``spark_version``: the
    Spark major.minor to judge it for; ``trust``: user modules are imported (see
    :func:`compile`). The plan starts no query: its stateful operators' keys are not
    resolved to source columns (``resolved_keys`` empty: what only the restart guard of a
    run compares, :attr:`~sqlstream.ir.context.CompileContext.state_lineage`).

    Never raises for problems in the text (no JVM, no pyspark import).
    """
    from sqlstream.diagnostics.errors import CompileError

    try:
        from sqlstream.frontend.limits import run_deep

        plan = run_deep(
            _compile, text, variables, path, None, True, spark_version, trust, False
        ).plan
    except CompileError as error:
        return error.findings, None
    except SqlStreamError as error:
        return [error], None
    return list(plan.warnings), plan


def check(
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    spark_version: str | None = None,
    trust: bool = False,
) -> list[SqlStreamError]:
    """Compile ``text`` and return every finding (errors and warnings), in file order
    (:func:`check_plan` without the plan), judged for Spark ``spark_version`` (a
    major.minor such as ``"4.2"``; default: the installed PySpark's); ``trust``: user
    modules are imported (see :func:`compile`).

    Never raises for problems in the text (no JVM, no pyspark import): an empty list
    means the file compiles cleanly. ``finding.severity`` is ``"error"`` or ``"warning"``.
    """
    return check_plan(text, variables, path, spark_version, trust)[0]
