"""Print a plan's binding calls (:class:`~sqlstream.ir.calls.Program`) as text.

:func:`render` is what ``sqlstream translate`` prints and :func:`sqlstream.translate`
returns: per statement, ``--`` comments (kind, name, line, columns, output mode and why)
and the PySpark calls the binder makes. :func:`to_pyspark` is ``translate --to pyspark``:
the same calls as a standalone PySpark script (a session builder with ``exec``'s
defaults, the calls, then waiting for the queries). Both print the program of a
:class:`~sqlstream.lowering.lowered.Lowered` pipeline, the one :mod:`sqlstream.runtime.binder`
runs, so what is shown is what runs. No Spark, no pyspark import. Secrets (values of ``${env:…}``) are redacted
from the translation; the script reads them from the environment when it runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from sqlstream.diagnostics.source_text import SECRET_TOKEN
from sqlstream.ir import plan as p
from sqlstream.ir.calls import SQL_TEXT_STEPS, Chain, Program, Step
from sqlstream.lowering.lowered import Lowered
from sqlstream.lowering.packages import packages_for
from sqlstream.lowering.session_config import session_defaults, session_settings

# A chain with one of these steps is printed one step a line.
_MULTILINE = {"builder", "read", "readStream", "writeStream"}


Literal = Callable[[object, bool], str]
"""Python source of a str/int/bool/None argument; the flag: the argument is Spark SQL text
(an argument of :data:`~sqlstream.ir.calls.SQL_TEXT_STEPS`)."""


def plain(value, sql: bool = False) -> str:
    """The :data:`Literal` of ``translate``: ``repr`` (``sql`` is not read)."""
    return repr(value)


def render_arg(arg, literal: Literal = plain, sql: bool = False) -> str:
    """Python source of an argument: ``literal`` of a value (``repr``), a tuple as a
    list, a nested chain inline; ``sql``: the argument is Spark SQL text."""
    if isinstance(arg, Chain):
        return "".join(_root_and_steps(arg, literal))
    if isinstance(arg, tuple):
        return "[" + ", ".join(render_arg(a, literal, sql) for a in arg) + "]"
    return literal(arg, sql)


def render_step(step: Step, literal: Literal = plain) -> str:
    """``.name`` for a property, ``.name(arg, …, key=value, …)`` for a call."""
    if not step.call:
        return f".{step.name}"
    sql = step.name in SQL_TEXT_STEPS
    args = [render_arg(a, literal, sql) for a in step.args]
    args += [f"{k}={render_arg(v, literal, sql)}" for k, v in step.kwargs]
    return f".{step.name}({', '.join(args)})"


def _root_and_steps(chain: Chain, literal: Literal = plain) -> list[str]:
    return [chain.root, *(render_step(s, literal) for s in chain.steps)]


def render_chain(chain: Chain, literal: Literal = plain) -> list[str]:
    """The Python statement of ``chain``, as lines.

    One line (``df = df.selectExpr(…)``), or, for a chain that reads or writes (a
    ``readStream``, ``read``, ``writeStream`` or ``builder`` step), the root and its
    first step on the first line and one step a line after it, in parentheses.
    """
    assign = f"{chain.assign} = " if chain.assign else ""
    parts = _root_and_steps(chain, literal)
    if not any(s.name in _MULTILINE for s in chain.steps) or len(parts) < 3:
        return [assign + "".join(parts)]
    lines = [f"{assign}({parts[0]}{parts[1]}", *("    " + part for part in parts[2:])]
    lines[-1] += ")"
    return lines


def render_program(program: Program, marker: str = "--", literal: Literal = plain) -> str:
    """The text of ``program``: its blocks separated by blank lines, comments after
    ``marker`` (``--`` for ``translate``, ``#`` in a script), values written by
    ``literal``. Not redacted."""
    blocks = []
    for block in program.blocks:
        lines: list[str] = []
        for item in block.items:
            lines += (
                render_chain(item, literal) if isinstance(item, Chain) else [f"{marker} {item}"]
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def render(pipeline: Lowered) -> str:
    """Return the translation of ``pipeline`` (what ``sqlstream translate`` prints): its
    program (:attr:`~sqlstream.lowering.lowered.Lowered.program`, the one that runs).

    The blocks are, in order: warnings (as comments), session settings (``SET``),
    relations (reads and temporary views) and queries, each headed by a ``--`` comment
    naming the statement's line. Secrets are redacted.
    """
    return pipeline.plan.source.redact(render_program(pipeline.program))


def _builder(plan: p.Plan, master: str | None, conf: dict[str, str]) -> Chain:
    """``spark = SparkSession.builder.appName(…)[.master(…)].config(k, v)….getOrCreate()``
    with the configuration ``sqlstream exec`` gives a new session
    (:mod:`sqlstream.lowering.session_config`)."""
    packages = packages_for(plan, {**conf, **dict(plan.settings)}, probe=False)
    settings = session_settings(plan, session_defaults(plan, master, conf), conf, packages)
    # no master: spark-submit's --master applies, and `python job.py` runs on local[*]
    # (the default of the spark-submit PySpark launches)
    steps = [
        Step("builder", call=False),
        Step("appName", (f"sqlstream:{plan.name}",)),
        *([Step("master", (master,))] if master else []),
        *(Step("config", (k, v)) for k, v in settings.items()),
        Step("getOrCreate"),
    ]
    return Chain("SparkSession", tuple(steps), assign="spark")


def _secret_literal(plan: p.Plan) -> Literal:
    """``repr``, except that a string holding a secret's token is written as an expression
    that puts in ``os.environ['NAME']`` for it (so the script holds no secret); in the SQL
    text of :data:`SQL_TEXT_STEPS`, where the token stands inside a ``'…'`` string, the
    expression escapes the value (``\\`` → ``\\\\``, ``'`` → ``\\'``) as
    :meth:`~sqlstream.diagnostics.source_text.Source.unseal` does. The names come from the
    substitution's records (:class:`~sqlstream.diagnostics.source_text.Secret`), found by
    the token, never by the value."""
    secrets = plan.source.secrets
    if not secrets:
        return plain

    def read(match: re.Match, sql: bool) -> str:
        index = int(match.group(1))
        if index >= len(secrets):
            return repr(match.group())
        value = f"os.environ[{secrets[index].name!r}]"
        if sql:
            value += ".replace('\\\\', '\\\\\\\\').replace(\"'\", \"\\\\'\")"
        return value

    def literal(value, sql: bool = False) -> str:
        if not isinstance(value, str) or not SECRET_TOKEN.search(value):
            return repr(value)
        parts, pos = [], 0
        for match in SECRET_TOKEN.finditer(value):
            if match.start() > pos:
                parts.append(repr(value[pos : match.start()]))
            parts.append(read(match, sql))
            pos = match.end()
        if pos < len(value):
            parts.append(repr(value[pos:]))
        return " + ".join(parts)

    return literal


_WAIT = """\
# Wait until every query has stopped; awaitAnyTermination raises the error of a failed one.
while True:
    spark.streams.awaitAnyTermination()
    spark.streams.resetTerminated()
    if not spark.streams.active:
        break
"""


def to_pyspark(
    pipeline: Lowered,
    master: str | None = None,
    conf: dict[str, str] | None = None,
    available_now: bool = False,
) -> str:
    """A standalone PySpark script that runs ``pipeline`` (``translate --to pyspark``).

    Args:
        pipeline: the compiled pipeline (its plan and program).
        master: the Spark master, as ``exec --master``; ``None``: no ``.master(…)`` call, so
            that ``spark-submit --master …`` decides (``python job.py``: ``local[*]``).
        conf: Spark configuration for the session, as ``exec --conf``.
        available_now: every query with ``trigger(availableNow=True)``.

    Returns:
        Python source: imports, ``PYSPARK_PYTHON``, the session builder with the defaults
        of ``sqlstream exec`` (:func:`~sqlstream.lowering.session_config.session_defaults`), the program's calls with
        ``#`` comments naming the `.ssql` lines, then a loop that waits for the queries.
        It does not import sqlstream (except for a ``postgres`` sink, whose
        ``foreachBatch`` writer is sqlstream's). A value from ``${env:NAME}`` is read from
        ``os.environ['NAME']`` when the script runs; any other trace of it is redacted.
    """
    conf = dict(conf or {})
    if available_now:
        pipeline = pipeline.available_now()
    plan, program = pipeline.plan, pipeline.program
    source = plan.source.path or "<string>"
    head = [
        f'"""PySpark job of {source}, written by `sqlstream translate --to pyspark`.',
        "",
        "Run it with python where pyspark is installed. Relative paths are relative to the",
        "folder sqlstream translate ran in.",
        '"""',
        "",
        "import os",
        "import sys",
        "",
        "from pyspark.sql import SparkSession",
        "from pyspark.sql import functions as F",
        "",
        "os.environ.setdefault('PYSPARK_PYTHON', sys.executable)",
    ]
    literal = _secret_literal(plan)
    head += [*render_chain(_builder(plan, master, conf), literal), ""]
    calls = render_program(program, "#", literal)
    if "importlib." in calls:  # a foreachBatch function, imported by its module path
        head.insert(head.index("import os"), "import importlib")
    if any(f.module for f in plan.functions) and plan.source.path:
        folder = os.path.dirname(plan.source.path) or "."  # CREATE FUNCTION modules beside it
        head.append(f"sys.path.append(os.path.abspath({folder!r}))")
    text = "\n".join(head) + "\n" + calls
    if plan.queries:
        text += "\n" + _WAIT
    return plan.source.redact(text)
