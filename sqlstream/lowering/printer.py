"""Print a plan's binding calls (:class:`~sqlstream.ir.calls.Program`) as text.

:func:`render` is what ``sqlstream translate`` prints and :func:`sqlstream.translate`
returns: per statement, ``--`` comments (kind, name, line, columns, output mode and why)
and the PySpark calls the binder makes. :func:`to_pyspark` is ``translate --to pyspark``:
the same calls as a standalone PySpark script (a session builder with ``exec``'s
defaults, the calls, then waiting for the queries). Both print the program that
:func:`sqlstream.lowering.lower.lower` makes and :mod:`sqlstream.runtime.binder` runs, so what is shown
is what runs. No Spark, no pyspark import. Secrets (values of ``${env:…}``) are redacted
from the translation; the script reads them from the environment when it runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, Program, Step
from sqlstream.lowering.lower import lower
from sqlstream.lowering.packages import packages_for
from sqlstream.lowering.session_config import session_defaults, session_settings

# A chain with one of these steps is printed one step a line.
_MULTILINE = {"builder", "read", "readStream", "writeStream"}


Literal = Callable[[object], str]  # Python source of a str/int/bool/None argument


def render_arg(arg, literal: Literal = repr) -> str:
    """Python source of an argument: ``literal`` of a value (``repr``), a tuple as a
    list, a nested chain inline."""
    if isinstance(arg, Chain):
        return "".join(_root_and_steps(arg, literal))
    if isinstance(arg, tuple):
        return "[" + ", ".join(render_arg(a, literal) for a in arg) + "]"
    return literal(arg)


def render_step(step: Step, literal: Literal = repr) -> str:
    """``.name`` for a property, ``.name(arg, …, key=value, …)`` for a call."""
    if not step.call:
        return f".{step.name}"
    args = [render_arg(a, literal) for a in step.args]
    args += [f"{k}={render_arg(v, literal)}" for k, v in step.kwargs]
    return f".{step.name}({', '.join(args)})"


def _root_and_steps(chain: Chain, literal: Literal = repr) -> list[str]:
    return [chain.root, *(render_step(s, literal) for s in chain.steps)]


def render_chain(chain: Chain, literal: Literal = repr) -> list[str]:
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


def render_program(program: Program, marker: str = "--", literal: Literal = repr) -> str:
    """The text of ``program``: its blocks separated by blank lines, comments after
    ``marker`` (``--`` for ``translate``, ``#`` in a script), values written by
    ``literal``. Not redacted."""
    blocks = []
    for block in program.blocks:
        lines: list[str] = []
        for item in block.items:
            lines += (render_chain(item, literal) if isinstance(item, Chain)
                      else [f"{marker} {item}"])
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def render(plan: p.Plan) -> str:
    """Return the translation of ``plan`` (what ``sqlstream translate`` prints).

    The blocks are, in order: warnings (as comments), session settings (``SET``),
    relations (reads and temporary views) and queries, each headed by a ``--`` comment
    naming the statement's line. Secrets are redacted.
    """
    return plan.source.redact(render_program(lower(plan)))


def _builder(plan: p.Plan, master: str | None, conf: dict[str, str]) -> Chain:
    """``spark = SparkSession.builder.appName(…)[.master(…)].config(k, v)….getOrCreate()``
    with the configuration ``sqlstream exec`` gives a new session
    (:mod:`sqlstream.lowering.session_config`)."""
    packages = packages_for(plan, {**conf, **dict(plan.settings)}, probe=False)
    settings = session_settings(plan, session_defaults(plan, master, conf), conf, packages)
    # no master: spark-submit's --master applies, and `python job.py` runs on local[*]
    # (the default of the spark-submit PySpark launches)
    steps = [Step("builder", call=False), Step("appName", (f"sqlstream:{plan.name}",)),
             *([Step("master", (master,))] if master else []),
             *(Step("config", (k, v)) for k, v in settings.items()), Step("getOrCreate")]
    return Chain("SparkSession", tuple(steps), assign="spark")


def _secret_literal(plan: p.Plan) -> Literal:
    """``repr``, except that a string holding the value of an ``${env:NAME}`` is written
    as an expression reading ``os.environ['NAME']`` (so the script holds no secret); in
    Spark SQL text, where the value is a string literal's escaped text, the expression
    escapes it the same way (``\\`` → ``\\\\``, ``'`` → ``\\'``). The names come from the
    substitution's records (:class:`~sqlstream.diagnostics.source_text.Secret`); where two
    references have one value, the first one's name is used."""
    names: dict[str, str] = {}
    for secret in plan.source.secrets:
        value, read = secret.value, f"os.environ[{secret.name!r}]"
        if not value or value in names:
            continue
        names[value] = read
        # in a Spark SQL string literal (spark.sql's text) the value is escaped
        quoted = value.replace("\\", "\\\\").replace("'", "\\'")
        if quoted != value:
            names.setdefault(quoted, f"{read}.replace('\\\\', '\\\\\\\\')"
                                     f".replace(\"'\", \"\\\\'\")")
    if not names:
        return repr
    pattern = re.compile("|".join(re.escape(v) for v in sorted(names, key=len, reverse=True)))

    def literal(value) -> str:
        if not isinstance(value, str) or not pattern.search(value):
            return repr(value)
        parts, pos = [], 0
        for match in pattern.finditer(value):
            if match.start() > pos:
                parts.append(repr(value[pos:match.start()]))
            parts.append(names[match.group()])
            pos = match.end()
        if pos < len(value):
            parts.append(repr(value[pos:]))
        return " + ".join(parts)

    return literal


_WAIT = '''\
# Wait until every query has stopped; awaitAnyTermination raises the error of a failed one.
while True:
    spark.streams.awaitAnyTermination()
    spark.streams.resetTerminated()
    if not spark.streams.active:
        break
'''


def to_pyspark(plan: p.Plan, master: str | None = None, conf: dict[str, str] | None = None,
               available_now: bool = False) -> str:
    """A standalone PySpark script that runs ``plan`` (``translate --to pyspark``).

    Args:
        plan: the compiled pipeline.
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
        plan = plan.available_now()
    program = lower(plan)
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
