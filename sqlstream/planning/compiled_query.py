"""The record of one compiled query body: what :func:`sqlstream.planning.compiler.compile_query`
(the compile path, :mod:`sqlstream.planning.compiler`) returns.

A :class:`CompiledQuery` keeps the facts a query was checked with — its rewritten tree,
streaming facts, restricted operators, output columns, output mode and state signature —
so that later stages (the catalog, the plan, restart checks) read them instead of
computing them again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from sqlstream.analysis.facts import QueryInfo
from sqlstream.analysis.lineage import Definitions
from sqlstream.analysis.operators import Operators
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend import ast
from sqlstream.ir import plan

Schema = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CompiledQuery:
    """A query body after every compile step.

    Attributes:
        sql: the Spark SQL that runs, printed from ``tree``.
        text: the query body in the file.
        columns: ``(name, type)`` pairs of its result, or ``None`` when only known at run time.
        info: the streaming facts (:class:`~sqlstream.analysis.facts.QueryInfo`).
        operators: the restricted operators of the query and the views it reads.
        findings: schema findings (unknown names, type errors), positioned in the file.
        steps: plan steps the query needs before its SQL (e.g.
            :class:`~sqlstream.ir.plan.Deduplicate`); empty when Spark SQL expresses it all.
        tree: the rewritten sqlglot tree the checks judged (``sql`` is printed from it).
        node_texts: ``id(node)`` → the query body a node of ``operators`` was written in
            (views' nodes point into the views), for positions in messages.
        stateful: the stateful operators of this body alone
            (:func:`~sqlstream.analysis.state_signature.operators_of`), views' not included.
        watermark_defs: its own ``WATERMARK`` clauses
            (:func:`~sqlstream.analysis.state_signature.watermarks_of`).
        reads: the relations the body reads as written, each where the file names it
            (:class:`~sqlstream.ir.plan.RelationRef`; CTE names left out), in text order;
            the plan's views and queries carry them.
        definitions: the meaning of the columns of the relations it reads
            (:meth:`sqlstream.planning.catalog.Catalog.lineage` of the catalog it was
            compiled against), for the deduplication keys of its state signature.
        output_mode, output_mode_reason, state: set by :func:`check_query` for a query that
            writes to a sink: the output mode (``None`` when none fits), why, and the
            :class:`~sqlstream.ir.plan.StateSignature`; ``None`` for a view.
    """

    sql: str
    text: ast.SqlText
    columns: Schema | None
    info: QueryInfo
    operators: Operators = field(compare=False)
    findings: tuple[SqlStreamError, ...] = field(default=(), compare=False)
    steps: tuple[plan.Relation, ...] = ()
    tree: exp.Expr | None = field(default=None, compare=False, repr=False)
    node_texts: Mapping[int, ast.SqlText] = field(default_factory=dict, compare=False, repr=False)
    stateful: tuple[plan.StatefulOperator, ...] = ()
    watermark_defs: tuple[plan.WatermarkDef, ...] = ()
    reads: tuple[plan.RelationRef, ...] = ()
    definitions: Definitions | None = field(default=None, compare=False, repr=False)
    output_mode: str | None = None
    output_mode_reason: str | None = None
    state: plan.StateSignature | None = None
