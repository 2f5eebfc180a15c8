"""Print a plan's binding calls (:class:`~sqlstream.calls.Program`) as text.

:func:`render` is what ``sqlstream translate`` prints and :func:`sqlstream.translate`
returns: per statement, ``--`` comments (kind, name, line, columns, output mode and why)
and the PySpark calls the binder makes. :func:`to_pyspark` is ``translate --to pyspark``:
the same calls as a standalone PySpark script (a session builder with ``exec``'s
defaults, the calls, then waiting for the queries). Both print the program that
:func:`sqlstream.program.lower` makes and :mod:`sqlstream.binder` runs, so what is shown
is what runs. No Spark, no pyspark import; secrets (values of ``${env:…}``) are redacted.
"""

from __future__ import annotations

from sqlstream import plan as p
from sqlstream.calls import Chain, Program, Step
from sqlstream.program import lower

# A chain with one of these steps is printed one step a line.
_MULTILINE = {"builder", "read", "readStream", "writeStream"}


def render_arg(arg) -> str:
    """Python source of an argument: ``repr`` of a literal, a tuple as a list, a nested
    chain inline."""
    if isinstance(arg, Chain):
        return "".join(_root_and_steps(arg))
    if isinstance(arg, tuple):
        return "[" + ", ".join(render_arg(a) for a in arg) + "]"
    return repr(arg)


def render_step(step: Step) -> str:
    """``.name`` for a property, ``.name(arg, …, key=value, …)`` for a call."""
    if not step.call:
        return f".{step.name}"
    args = [render_arg(a) for a in step.args] + [f"{k}={render_arg(v)}" for k, v in step.kwargs]
    return f".{step.name}({', '.join(args)})"


def _root_and_steps(chain: Chain) -> list[str]:
    return [chain.root, *(render_step(s) for s in chain.steps)]


def render_chain(chain: Chain) -> list[str]:
    """The Python statement of ``chain``, as lines.

    One line (``df = df.selectExpr(…)``), or, for a chain that reads or writes (a
    ``readStream``, ``read``, ``writeStream`` or ``builder`` step), the root and its
    first step on the first line and one step a line after it, in parentheses.
    """
    assign = f"{chain.assign} = " if chain.assign else ""
    parts = _root_and_steps(chain)
    if not any(s.name in _MULTILINE for s in chain.steps) or len(parts) < 3:
        return [assign + "".join(parts)]
    lines = [f"{assign}({parts[0]}{parts[1]}", *("    " + part for part in parts[2:])]
    lines[-1] += ")"
    return lines


def render_program(program: Program, marker: str = "--") -> str:
    """The text of ``program``: its blocks separated by blank lines, comments after
    ``marker`` (``--`` for ``translate``, ``#`` in a script). Not redacted."""
    blocks = []
    for block in program.blocks:
        lines: list[str] = []
        for item in block.items:
            lines += render_chain(item) if isinstance(item, Chain) else [f"{marker} {item}"]
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
    """``spark = SparkSession.builder.appName(…).master(…).config(k, v)….getOrCreate()``
    with the configuration ``sqlstream exec`` gives a new session
    (:func:`sqlstream.runtime.create_session`)."""
    from sqlstream.runtime import session_defaults

    settings = {**session_defaults(plan, master, conf), **conf}
    settings.update((k, v) for k, v in plan.settings if not k.lower().startswith("sqlstream."))
    steps = [Step("builder", call=False), Step("appName", (f"sqlstream:{plan.name}",)),
             Step("master", (master or "local[*]",)),
             *(Step("config", (k, v)) for k, v in settings.items()), Step("getOrCreate")]
    return Chain("SparkSession", tuple(steps), assign="spark")


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
        master: the Spark master (``local[*]`` when ``None``), as ``exec --master``.
        conf: Spark configuration for the session, as ``exec --conf``.
        available_now: every query with ``trigger(availableNow=True)``.

    Returns:
        Python source: imports, ``PYSPARK_PYTHON``, the session builder with the defaults
        of ``sqlstream exec`` (``runtime.session_defaults``), the program's calls with
        ``#`` comments naming the `.ssql` lines, then a loop that waits for the queries.
        It does not import sqlstream. Secrets are redacted (shown as ``***``): set them
        in the script before running it.
    """
    conf = dict(conf or {})
    program = lower(plan, available_now)
    source = plan.source.path or "<string>"
    head = [
        f'"""PySpark job of {source}, written by `sqlstream translate --to pyspark`."""',
        "",
        "import os",
        "import sys",
        "",
        "from pyspark.sql import SparkSession",
        "",
        "os.environ.setdefault('PYSPARK_PYTHON', sys.executable)",
        *render_chain(_builder(plan, master, conf)),
        "",
    ]
    if plan.source.secrets:
        head.insert(1, "\n# Values from ${env:…} are shown as '***': put them back before running.")
    text = "\n".join(head) + "\n" + render_program(program, marker="#")
    if plan.queries:
        text += "\n" + _WAIT
    return plan.source.redact(text)
