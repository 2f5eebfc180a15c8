"""Binding calls: a neutral, printable description of the PySpark calls a plan makes.

A :class:`Program` is what :func:`sqlstream.lowering.lower.lower` makes of a
:class:`~sqlstream.ir.plan.Plan`, and the one thing both readers read:
:mod:`sqlstream.runtime.binder` evaluates it against a real ``SparkSession`` and
:mod:`sqlstream.lowering.printer` prints it (``sqlstream translate``, ``--to pyspark``). So what is
printed is what runs.

A program is a tuple of :class:`Block` (one per statement: settings, a relation, a
query), each a sequence of comment lines and :class:`Chain` objects. A chain is one
Python statement, a call chain from a root name::

    df = (spark.readStream.format('csv').schema('`a` INT').option('header', 'true').load('in'))
    Chain('spark', (Step('readStream', call=False), Step('format', ('csv',)),
                    Step('schema', ('`a` INT',)), Step('option', ('header', 'true')),
                    Step('load', ('in',))), assign='df')

Arguments are ``str``, ``int``, ``float``, ``bool``, ``None``, a tuple (passed and
printed as a Python list) or a nested :class:`Chain` (evaluated first; e.g. a schema
read from the files with ``spark.read…load(path).schema``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from sqlstream.diagnostics.source_text import Span

Arg = object  # str | int | float | bool | None | tuple[Arg, ...] | Chain


SQL_TEXT_STEPS = frozenset({"sql", "selectExpr", "expr", "where", "filter"})
"""The PySpark methods whose string arguments are Spark SQL text: a secret's token there
stands inside a ``'…'`` string, so its value goes in escaped (the binder, and the script of
``translate --to pyspark``; docs/dialect.md#secrets)."""


@dataclass(frozen=True)
class Step:
    """One link of a chain: ``.name(*args, **kwargs)``, or the property ``.name``.

    Attributes:
        name: the attribute (``readStream``, ``format``, ``option``, ``start``, …).
        args: positional arguments (see the module docstring for their kinds).
        kwargs: ``(keyword, value)`` pairs, e.g. ``(("availableNow", True),)``.
        call: ``False`` for a property read (``spark.readStream``, ``df.writeStream``,
            ``spark.conf``), ``True`` for a method call.
    """

    name: str
    args: tuple[Arg, ...] = ()
    kwargs: tuple[tuple[str, Arg], ...] = ()
    call: bool = True


@dataclass(frozen=True)
class Chain:
    """One statement: ``[assign =] root.step.step…``.

    Attributes:
        root: the name the chain starts from: ``spark`` (the session), ``df`` (the
            DataFrame assigned by an earlier chain), ``F`` (``pyspark.sql.functions``, for
            a nested chain such as ``F.expr(…)``) or, in a standalone script only,
            ``SparkSession``.
        steps: the links, in order.
        assign: the name the chain's value is assigned to (``df``), or ``None``.
        label: what failed, for the message when Spark raises (``Spark rejected
            'flights'``; the binder appends Spark's message).
        span: the statement the chain comes from (where errors point), or ``None``.
        hint: the hint of that error, or ``None``.
        note: for a nested chain, a note the binder reports with the evaluated value
            (``flights: schema inferred from data/x: struct<…>``), or ``None``.
    """

    root: str
    steps: tuple[Step, ...]
    assign: str | None = None
    label: str = ""
    span: Span | None = None
    hint: str | None = None
    note: str | None = None


class ChainOrigin(TypedDict):
    """Where the chains of one statement come from, given to each :class:`Chain` as
    ``**origin``: its ``label`` and ``span``."""

    label: str
    span: Span | None


@dataclass(frozen=True)
class Block:
    """The calls of one statement, with the comments that head them.

    Attributes:
        kind: ``warnings``, ``settings``, ``function``, ``relation`` or ``query``.
        items: comment lines (``str``, without a comment marker) and :class:`Chain`
            objects, in printing (and running) order.
        name: the relation or query name (``None`` for settings and warnings).
    """

    kind: str
    items: tuple[str | Chain, ...]
    name: str | None = None

    @property
    def chains(self) -> tuple[Chain, ...]:
        """The chains of the block, without its comments."""
        return tuple(item for item in self.items if isinstance(item, Chain))


@dataclass(frozen=True)
class Program:
    """The binding calls of a whole plan: blocks in running order (warnings, settings,
    relations in dependency order, queries in file order)."""

    blocks: tuple[Block, ...]
