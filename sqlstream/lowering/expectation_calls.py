"""Expectations lowered: the calls that count, stop on and drop the rows that violate a
stream's or a sink's rules (docs/dialect.md#expectations;
:mod:`sqlstream.planning.expectations` plans them). Reads only the plan: no Spark.

On the stream's DataFrame (after its watermark) or on the query's result before
``writeStream``, in this order::

    df.observe('expect:<owner>', F.expr('count_if(NOT (<cond>)) AS `<name>`'), …)
      .where("CASE WHEN NOT (<cond>) THEN raise_error(<message>) ELSE true END")  # FAIL UPDATE
      .where('coalesce(<cond>, true) AND …')                                     # DROP ROW

``count_if(NOT (cond))`` counts the rows whose condition is ``FALSE`` (``NULL`` passes);
``Dataset.observe`` reports the counts of each micro-batch in the query's progress
(``observedMetrics``), every rule counted on every row before any row is dropped. A ``FAIL
UPDATE`` rule makes the task fail on a violating row (``raise_error``): Spark fails the
micro-batch before it commits it (nothing is in the checkpoint's commit log or a files
sink's log), so a restart reads the same micro-batch and fails again. Spark: *Dataset.observe*,
*raise_error*.
"""

from __future__ import annotations

from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.frontend.literals import string_literal as literal
from sqlstream.ir import plan
from sqlstream.ir.calls import Chain, ChainOrigin, Step

METRIC_PREFIX = "expect:"
"""The observation of a stream's or sink's rules is named ``expect:<stream or query>``;
:func:`sqlstream.runtime.events.batch_progress` reads its counts by rule name."""

FAILURE_MARK = "sqlstream expectation "
"""How the message of a ``FAIL UPDATE`` rule's ``raise_error`` starts: ``sqlstream
expectation <name> violated by row <JSON>``; :mod:`sqlstream.runtime.spark_errors` finds
it in Spark's error (``USER_RAISED_EXCEPTION``)."""


def failure_message_sql(rule: plan.Expectation) -> str:
    """The SQL of the message a violated ``FAIL UPDATE`` rule raises: its name and the row
    as JSON (``to_json(struct(*))``)."""
    head = literal(f"{FAILURE_MARK}{rule.name} violated by row ")
    return f"concat({head}, to_json(struct(*)))"


def expectation_steps(owner: str, rules: tuple[plan.Expectation, ...]) -> tuple[Step, ...]:
    """The calls that check ``rules`` on a DataFrame (see the module docstring): one
    ``observe``, a ``where`` per ``FAIL UPDATE`` rule, one ``where`` for the ``DROP ROW``
    rules; ``()`` without rules.

    Args:
        owner: the stream's name or the query's: names the observation ``expect:<owner>``.
        rules: the rules, in file order.
    """
    if not rules:
        return ()
    counts = tuple(
        Chain("F", (Step("expr", (f"count_if(NOT ({r.condition})) AS {quote(r.name)}",)),))
        for r in rules
    )
    steps = [Step("observe", (METRIC_PREFIX + owner, *counts))]
    steps += [
        Step(
            "where",
            (
                f"CASE WHEN NOT ({r.condition}) THEN raise_error({failure_message_sql(r)}) "
                "ELSE true END",
            ),
        )
        for r in rules
        if r.action == "fail"
    ]
    dropping = [f"coalesce({r.condition}, true)" for r in rules if r.action == "drop"]
    if dropping:
        steps.append(Step("where", (" AND ".join(dropping),)))
    return tuple(steps)


def comment(rules: tuple[plan.Expectation, ...]) -> tuple[str, ...]:
    """``("expectations: name (kept and counted), …",)`` for a block's head; ``()`` without."""
    words = {"keep": "counted", "drop": "dropped", "fail": "stops the query"}
    if not rules:
        return ()
    return ("expectations: " + ", ".join(f"{r.name} ({words[r.action]})" for r in rules),)


def with_source_rules(
    relation: plan.SourceRelation, chains: tuple[Chain, ...]
) -> tuple[Chain, ...]:
    """A stream's read ``chains`` (the last ends with ``createOrReplaceTempView(name)``)
    with its rules' steps put before that call, each as ``df = df.<step>``."""
    steps = expectation_steps(relation.name, relation.expectations)
    if not steps or not chains:
        return chains
    last = chains[-1]
    assert last.steps[-1].name == "createOrReplaceTempView"  # every read registers its view
    origin: ChainOrigin = dict(label=last.label, span=last.span)
    head = list(chains[:-1])
    if len(last.steps) > 1:  # (spark.readStream….load()).createOrReplaceTempView(name)
        head.append(Chain(last.root, last.steps[:-1], "df", last.label, last.span, last.hint))
    view = Chain("df", (last.steps[-1],), **origin)
    return (*head, *(Chain("df", (s,), assign="df", **origin) for s in steps), view)


def with_query_rules(query: plan.Query, chain: Chain) -> Chain:
    """A query's write ``chain`` (``spark.sql(sql)…``) with its sink's rules' steps right
    after ``sql(…)``: checked on the rows the query writes, before the sink encodes them."""
    steps = expectation_steps(query.name, query.expectations)
    if not steps:
        return chain
    assert chain.steps[0].name == "sql"  # every write starts from the query's SQL
    return Chain(
        chain.root,
        (chain.steps[0], *steps, *chain.steps[1:]),
        chain.assign,
        chain.label,
        chain.span,
        chain.hint,
        chain.note,
    )
