"""The expectations of a plan as the static commands show them: ``check``'s summary,
``explain``, ``graph`` and the language server's hover (docs/dialect.md#expectations).

Each :class:`~sqlstream.ir.plan.Expectation` is listed at the relation it guards: a stream
checks its rules on every row it reads, after the watermark; a sink checks its
rules on the rows its queries write. :func:`describe_expectation` gives the JSON-ready dict
of one rule, :func:`guarded` the rules of a plan per stream and sink, :func:`rule_line` a
rule's ``name EXPECT (…) [ON VIOLATION …]`` text. Conditions are redacted
(``${env:…}`` values become ``***``). No Spark and no pyspark import.
"""

from __future__ import annotations

from sqlstream.ir import plan as p

ON_VIOLATION = {"keep": "", "drop": "ON VIOLATION DROP ROW", "fail": "ON VIOLATION FAIL UPDATE"}
"""A rule's action -> its ``ON VIOLATION`` clause as written (``keep``: none)."""

EFFECT = {
    "keep": "a violating row is counted and kept",
    "drop": "a violating row is counted and dropped",
    "fail": "a violating row stops the query in its micro-batch (nothing of it written)",
}
"""A rule's action -> what a violating row does, in one phrase."""

COUNTED = (
    "counted per micro-batch by name (Spark's Dataset.observe): the `expectations` of each "
    "`batch_progress` event (`--log-format json`), the live progress, the run summary and "
    "a `sqlstream test` step's `expectations:`"
)
"""Where a rule's violations are counted, in one sentence (Markdown)."""


def describe_expectation(expectation: p.Expectation) -> dict:
    """One rule as ``{"name", "action", "on_violation", "condition", "line"}``: ``action``
    is ``keep``, ``drop`` or ``fail`` (:class:`~sqlstream.ir.plan.Expectation`);
    ``on_violation`` the clause as written (``""`` for ``keep``); ``condition`` the Spark
    SQL condition as written, without its parentheses; ``line`` its 1-based line in the
    file. Not redacted: the caller redacts with its plan's source."""
    return {
        "name": expectation.name,
        "action": expectation.action,
        "on_violation": ON_VIOLATION[expectation.action],
        "condition": expectation.condition,
        "line": expectation.span.line,
    }


def guarded(plan: p.Plan) -> list[dict]:
    """Every stream and sink of ``plan`` with expectations, in file order of their
    rules (secrets redacted).

    Returns:
        A list of ``{"kind", "relation", "expectations"}``: ``kind`` is ``stream`` or
        ``sink`` (a table takes no rules, ``SS110``); ``relation`` its name; ``expectations`` a list of
        :func:`describe_expectation` dicts in the order written. A sink written by several
        queries is listed once.
    """
    found: list[dict] = []
    for relation in plan.relations:
        if isinstance(relation, p.SourceRelation) and relation.expectations:
            found.append(_entry("stream", relation.name, relation))
    seen: set[str] = set()
    for query in plan.queries:
        if query.expectations and query.sink.name.lower() not in seen:
            seen.add(query.sink.name.lower())
            found.append(_entry("sink", query.sink.name, query))
    found.sort(key=lambda entry: entry["expectations"][0]["line"])
    return plan.source.redact_value(found)


def _entry(kind: str, name: str, holder: p.SourceRelation | p.Query) -> dict:
    return {
        "kind": kind,
        "relation": name,
        "expectations": [describe_expectation(e) for e in holder.expectations],
    }


def rule_line(described: dict) -> str:
    """A :func:`describe_expectation` dict (or :func:`guarded`'s) as one line of text:
    ``name EXPECT (condition) [ON VIOLATION …]``."""
    clause = described["on_violation"]
    text = f"{described['name']} EXPECT ({described['condition']})"
    return f"{text} {clause}" if clause else text
