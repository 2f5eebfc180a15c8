"""The failure of a query stopped by an expectation ``ON VIOLATION FAIL UPDATE``
(docs/dialect.md#expectations): Spark's ``raise_error`` message
(:data:`sqlstream.lowering.expectation_calls.FAILURE_MARK`) found in the query's error, turned
into an ``SS560`` error at the constraint, naming it and the violating row.
"""

from __future__ import annotations

import re

from sqlstream.diagnostics.errors import QueryFailedError
from sqlstream.ir import plan as p
from sqlstream.lowering.expectation_calls import FAILURE_MARK

_FOUND = re.compile(
    re.escape(FAILURE_MARK) + r"(\S+) violated by row (\{.*?\})(?=\s+SQLSTATE|\n|$)"
)


def violated_rule(trace: str) -> tuple[str, str] | None:
    """``(rule name, the violating row as JSON)`` from the text of a query's error and its
    causes (Spark's ``USER_RAISED_EXCEPTION``), or ``None`` when no rule stopped it."""
    found = _FOUND.search(trace)
    return (found.group(1), found.group(2)) if found else None


def expectation_failure(trace: str, plan: p.Plan, query: p.Query) -> QueryFailedError | None:
    """The ``SS560`` error of ``query`` when a ``FAIL UPDATE`` rule stopped it, positioned
    at the rule (the query's own sink's, or a stream's), else ``None``. The row is shown as
    Spark wrote it; rendering the error redacts secrets (the plan's source)."""
    found = violated_rule(trace)
    if found is None:
        return None
    name, row = found
    rules = [*query.expectations]
    rules += [e for r in plan.relations if isinstance(r, p.SourceRelation) for e in r.expectations]
    rule = next((r for r in rules if r.name == name), None)
    return QueryFailedError(
        f"query '{query.name}' stopped: expectation '{name}' (ON VIOLATION FAIL UPDATE) is "
        f"violated by the row {row}; nothing of this micro-batch was written or committed",
        rule.span if rule is not None else query.span,
        plan.source,
        hint="correct the input or the rule, then run again: a restart reads this "
        "micro-batch again and stops here while the row violates the rule",
        code="SS560",
    )
