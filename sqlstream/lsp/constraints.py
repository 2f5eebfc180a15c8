"""The expectations of a document for the editor: ``CONSTRAINT name EXPECT (condition)
[ON VIOLATION DROP ROW | FAIL UPDATE]`` of each stream and sink (docs/dialect.md#expectations).

:func:`constraints` reads them from the parsed script of an
:class:`~sqlstream.lsp.document_index.Analysis` (a refused statement has none), each with its
place in the text; :func:`hover` says what a rule does when the cursor is on its name: its
condition as written in the editor, its action, the queries in whose progress its
violations are counted, and whether the compiler accepted it. Offsets are characters in the
document's text; nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.lowering.expectation_calls import METRIC_PREFIX
from sqlstream.lowering.expectation_listing import COUNTED, EFFECT, ON_VIOLATION
from sqlstream.lsp.document_index import Analysis


@dataclass(frozen=True)
class Constraint:
    """One rule as written in the document.

    Attributes:
        name: the constraint's name.
        kind: ``stream`` or ``sink``: what holds it (``CREATE STREAM … AS`` a query
            holds sink rules: checked on the rows the query writes).
        relation: the name of the stream or sink.
        condition: the condition as written in the document (``${…}`` not substituted).
        action: ``keep``, ``drop`` or ``fail`` (:class:`~sqlstream.ir.plan.Expectation`).
        start: offset of ``CONSTRAINT``; ``end`` one past its last character.
        name_start: offset of the name; ``name_end`` one past it.
    """

    name: str
    kind: str
    relation: str
    condition: str
    action: str
    start: int
    end: int
    name_start: int
    name_end: int

    @property
    def line(self) -> str:
        """``EXPECT (condition)`` and its ``ON VIOLATION`` clause, as a symbol's detail."""
        clause = ON_VIOLATION[self.action]
        return f"EXPECT ({self.condition})" + (f" {clause}" if clause else "")


def constraints(analysis: Analysis) -> list[Constraint]:
    """Every rule of the document's streams and sinks, in text order (none when the grammar
    refused the text)."""
    if analysis.script is None:
        return []
    found = []
    for statement in analysis.script.statements:
        if not isinstance(statement, (ast.CreateStream, ast.CreateSink)):
            continue
        # CREATE STREAM … AS query is a sink too: its rules are checked on the rows written
        written = isinstance(statement, ast.CreateSink) or statement.query is not None
        kind = "sink" if written else "stream"
        for rule in statement.constraints:
            where = rule.condition.span
            found.append(
                Constraint(
                    rule.name.value,
                    kind,
                    statement.name.value,
                    analysis.text[where.start : where.end],
                    rule.action,
                    rule.span.start,
                    rule.span.end,
                    rule.name.span.start,
                    rule.name.span.end,
                )
            )
    return found


def constraint_at(analysis: Analysis, offset: int) -> Constraint | None:
    """The rule whose name covers ``offset``, or ``None``."""
    for rule in constraints(analysis):
        if rule.name_start <= offset <= rule.name_end:
            return rule
    return None


def _counting_queries(plan: p.Plan | None, rule: Constraint) -> tuple[list[str], bool]:
    """``(queries, planned)``: the queries in whose progress ``rule`` is counted (those
    writing its sink, or reading its stream), and whether the plan holds the rule (``False``
    when the compiler refused it: a finding is on it)."""
    if plan is None:
        return [], False
    key, name = rule.relation.lower(), rule.name.lower()
    if rule.kind == "sink":
        queries = [q for q in plan.queries if q.sink.name.lower() == key]
        planned = any(e.name.lower() == name for q in queries for e in q.expectations)
        return [q.name for q in queries], planned
    planned = any(
        isinstance(r, p.SourceRelation)
        and r.name.lower() == key
        and any(e.name.lower() == name for e in r.expectations)
        for r in plan.relations
    )
    readers = [
        q.name
        for q in plan.queries
        if q.state is not None and any(s.relation.lower() == key for s in q.state.sources)
    ]
    return readers, planned


def hover(analysis: Analysis, offset: int) -> tuple[str, int, int] | None:
    """``(markdown, start, end)`` on a rule's name: its condition, action and where its
    violations are counted; ``None`` off a rule's name."""
    rule = constraint_at(analysis, offset)
    if rule is None:
        return None
    queries, planned = _counting_queries(analysis.plan, rule)
    on = "each row read" if rule.kind == "stream" else "each row written"
    clause = ON_VIOLATION[rule.action]
    lines = [
        f"**expectation `{rule.name}`** on {rule.kind} `{rule.relation}` (checked on {on})",
        "",
        f"- condition: `{rule.condition}` (a row violates it when `FALSE`; `NULL` passes)",
        f"- on violation: **{clause.removeprefix('ON VIOLATION ') if clause else 'count'}**: "
        f"{EFFECT[rule.action]}",
        f"- {COUNTED}",
    ]
    if queries and rule.kind == "stream":
        names = ", ".join(f"`{q}`" for q in queries)
        lines.append(f"- in the progress of {names} (observation `{METRIC_PREFIX}{rule.relation}`)")
    elif queries:
        names = ", ".join(f"`{q}` (observation `{METRIC_PREFIX}{q}`)" for q in queries)
        lines.append(f"- in the progress of {names}")
    elif rule.kind == "sink":
        lines.append("- no query writes this sink yet: nothing is counted")
    if not planned:
        lines.append("- not checked as written: see the finding on it")
    return "\n".join(lines), rule.name_start, rule.name_end
