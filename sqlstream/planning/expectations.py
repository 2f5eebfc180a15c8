"""Expectations: the ``CONSTRAINT name EXPECT (cond) [ON VIOLATION …]`` rules of a stream
or a sink, checked and put in the plan (docs/dialect.md#expectations).

A condition is Spark SQL over one row of its relation: the stream's columns (declared,
metadata and computed), or the columns a sink is written (the result of the query into
it). It is typed without a JVM as a computed column is
(:func:`sqlstream.analysis.schema.expression_type`): unknown columns and type errors are
positioned in the condition, and its type must be ``BOOLEAN`` (``SS230``). A rule sees its
row only, so aggregates, window functions and subqueries are refused (``SS232``), and one
that a retried micro-batch must answer alike, so non-deterministic functions are refused
(``SS233``). Names are unique in the file (``SS231``): each rule's violations are counted
under its name. Expectations are counted per micro-batch (``Dataset.observe``), which
continuous processing and real-time mode lack (``SS380``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Protocol

from sqlglot import exp

from sqlstream.analysis.facts import NONDETERMINISTIC, function_name
from sqlstream.analysis.schema import UNKNOWN, Schema, expression_type
from sqlstream.analysis.spark_types import aggregate_call
from sqlstream.diagnostics.errors import SemanticError, SqlStreamError
from sqlstream.diagnostics.source_text import Span
from sqlstream.frontend import ast
from sqlstream.ir import plan
from sqlstream.ir.context import CompileContext
from sqlstream.planning.catalog import Catalog
from sqlstream.planning.compiler import locate
from sqlstream.sql.parsing import node_offsets, parse_expression
from sqlstream.sql.tree_walks import find_all

NON_DETERMINISTIC = NONDETERMINISTIC | {
    "current_time",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
}
"""Spark's functions whose value is not a function of the row: those whose value differs
from run to run (:data:`~sqlstream.analysis.facts.NONDETERMINISTIC`: ``Nondeterministic``
expressions, the current time), the time of day, and the file a row was read from."""


class Record(Protocol):
    """Keeps a finding, with the text it is positioned in (``None``: it has a span)."""

    def __call__(self, finding: SqlStreamError, text: ast.SqlText | None = None, /) -> None: ...


def _row_problem(tree: exp.Expr, text: ast.SqlText, version: str) -> SqlStreamError | None:
    """``SS232`` (an aggregate, window function or subquery) or ``SS233`` (a
    non-deterministic function) in a condition, at the node; ``None`` when it is a
    function of its row."""
    for node in find_all(tree, exp.Expr):
        offsets = node_offsets(node)
        span = text.locate(*offsets) if offsets else text.span
        if isinstance(node, (exp.Window, exp.Subquery, exp.Exists)) or aggregate_call(
            node, version, text.text
        ):
            return SemanticError(
                f"an expectation is checked on each row by itself: '{node.sql(dialect='spark')}' "
                "looks at other rows",
                span,
                hint="use the row's own columns; aggregate in a query and put the rule on its sink",
                code="SS232",
            )
        if function_name(node) in NON_DETERMINISTIC:
            return SemanticError(
                f"'{function_name(node)}()' is not a function of the row: a retried micro-batch "
                "would count, drop or stop on other rows",
                span,
                hint="write the condition over the row's columns only",
                code="SS233",
            )
    return None


def plan_expectations(
    constraints: Sequence[ast.Expectation],
    columns: Schema | None,
    context: CompileContext,
    record: Record,
) -> tuple[plan.Expectation, ...]:
    """The plan's rules of one stream or sink.

    Args:
        constraints: the constraints as written, in order.
        columns: ``(name, type)`` of the row they are checked on, or ``None`` when only
            known at run time (the conditions are then only parsed and checked for
            ``SS232``/``SS233``).
        context: the compile context (functions of its Spark minor, user functions).
        record: receives the findings that do not stop the statement (type and name
            findings positioned in the condition, ``SS230``–``SS233``).

    Returns:
        One :class:`~sqlstream.ir.plan.Expectation` per constraint whose condition is
        valid, in order.

    Raises:
        SqlStreamError: ``SS102`` a condition that does not parse, positioned in the file.
    """
    found: list[plan.Expectation] = []
    seen: set[str] = set()
    for constraint in constraints:
        key = constraint.name.value.lower()
        if key in seen:
            record(duplicate(constraint.name.value, constraint.name.span))
            continue
        seen.add(key)
        text = constraint.condition
        try:
            tree = parse_expression(text.text, context.caches)
        except SqlStreamError as error:
            raise locate(error, text) from None
        problem = _row_problem(tree, text, context.spark_version)
        if problem is not None:
            record(problem)
            continue
        if columns is not None:
            kind, findings = expression_type(tree, columns, text.text, context)
            for finding in findings:
                record(finding, text)
            if findings:
                continue
            if kind not in ("BOOLEAN", UNKNOWN):
                record(
                    SemanticError(
                        f"the condition of expectation '{constraint.name}' is {kind}, not BOOLEAN",
                        text.span,
                        hint="a row violates the rule when the condition is FALSE: write a "
                        "comparison, e.g. dep_delay < 2000",
                        code="SS230",
                    )
                )
                continue
        found.append(
            plan.Expectation(constraint.name.value, text.text, constraint.action, constraint.span)
        )
    return tuple(found)


def duplicate(name: str, span: Span) -> SqlStreamError:
    """``SS231`` at ``span``: a constraint ``name`` an earlier one in the file has."""
    return SemanticError(
        f"a second expectation named '{name}': its violations are counted by name",
        span,
        hint="give each CONSTRAINT its own name",
        code="SS231",
    )


def expect_sinks(
    queries: Iterable[plan.Query],
    relations: Iterable[plan.Relation],
    catalog: Catalog,
    context: CompileContext,
    record: Record,
) -> list[plan.Query]:
    """``queries`` with the rules of their sink's ``CREATE SINK (CONSTRAINT …)`` checked on
    each query's result columns (:attr:`~sqlstream.ir.plan.Query.expectations`); names
    used twice in the file (``SS231``) and a continuous or real-time query with rules of
    its own or of a stream it reads (``SS380``) recorded. A dead-letter query (it reads a
    source's decoded view) writes no rule's rows.
    """
    sources = [r for r in relations if isinstance(r, plan.SourceRelation)]
    decoded = {r.decoding.decoded_view for r in sources if r.decoding and r.decoding.decoded_view}
    names: set[str] = set()
    for source in sources:
        for rule in source.expectations:
            if rule.name.lower() in names:
                record(duplicate(rule.name, rule.span))
            names.add(rule.name.lower())
    result = []
    for query in queries:
        entry = catalog.sink(query.sink.name)
        constraints = getattr(entry, "constraints", ()) if entry is not None else ()
        if constraints and not any(r.name in decoded for r in query.reads):
            for constraint in constraints:
                if constraint.name.value.lower() in names:
                    record(duplicate(constraint.name.value, constraint.name.span))
            rules = plan_expectations(constraints, query.columns, context, record)
            names.update(c.name.value.lower() for c in constraints)
            query = replace(query, expectations=rules)
        result.append(query)
    for query in result:
        read = {s.relation for s in query.state.sources} if query.state else set()
        ruled = query.expectations or any(r.expectations for r in sources if r.name.lower() in read)
        if (
            ruled
            and query.trigger is not None
            and query.trigger.kind in ("continuous", "real_time")
        ):
            record(
                SemanticError(
                    f"query '{query.name}' has expectations, which Spark counts per micro-batch "
                    "(Dataset.observe): continuous processing and real-time mode have none",
                    query.span,
                    hint="use a micro-batch trigger (EMIT … EVERY …, or none)",
                    code="SS380",
                )
            )
    return result
