"""The columns that identify a row of an update-mode query (``sqlstream verify`` keeps the
last row written per key): the grouping keys of its aggregation, from the plan.

In an aggregation every output column that is not an aggregate is a function of the
grouping keys (Spark's analyzer rejects any other), so the key columns of a query are its
output columns without an aggregate call: ``window.start AS window_start``, ``word``,
``UNIX_SECONDS(window.start) AS start``. They are read from the query's Spark SQL as the
compiler parses it (:func:`sqlstream.sql.parsing.parse_query`), with the compiler's
aggregate functions of the plan's Spark version
(:func:`sqlstream.analysis.facts.is_aggregate`,
:func:`sqlstream.analysis.spark_types.aggregate_call`) and, when the query selects from a
view that aggregates (the plan's :class:`~sqlstream.ir.plan.StatefulOperator` in that
view), through that view's SQL in the plan.

Source: Spark SQL guide, *GROUP BY Clause*; Spark guide, *Structured Streaming Programming
Guide* (update mode: the rows of the result table updated since the last trigger).
"""

from __future__ import annotations

from sqlglot import exp

from sqlstream.analysis.facts import is_aggregate
from sqlstream.analysis.spark_types import aggregate_call
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir import plan as p
from sqlstream.sql.parsing import parse_query
from sqlstream.sql.tree_walks import find_all

__all__ = ["key_names"]


def key_names(plan: p.Plan, query: p.Query) -> list[str] | None:
    """The lower-case names of ``query``'s output columns that are grouping keys, in
    output order; ``None`` when the plan does not tell (no aggregation the query's
    columns come from, a set operation, a SQL the parser refuses)."""
    views = {r.name.lower(): r for r in plan.relations}
    return _keys(query.sql, views, plan.spark_version, 0)


def _keys(sql: str, views: dict, version: str, depth: int) -> list[str] | None:
    try:
        tree = parse_query(sql)
    except SqlStreamError:
        return None
    return _keys_of(tree, views, version, depth)


def _keys_of(tree: exp.Expr, views: dict, version: str, depth: int) -> list[str] | None:
    select = tree if isinstance(tree, exp.Select) else None
    if select is None or depth > 8:
        return None
    if is_aggregate(select, version):
        return [
            item.alias_or_name.lower()
            for item in select.expressions
            if not any(aggregate_call(node, version) for node in find_all(item, exp.Expr))
        ]
    source = select.args.get("from_")
    if source is None or select.args.get("joins"):
        return None
    inner = _read(source.this, views, version, depth)
    if inner is None:
        return None
    found = []
    for item in select.expressions:
        if isinstance(item, exp.Star) or (
            isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
        ):
            found += inner
        else:
            body = item.this if isinstance(item, exp.Alias) else item
            if isinstance(body, exp.Column) and body.name.lower() in inner:
                found.append(item.alias_or_name.lower())
    return found


def _read(node: exp.Expr, views: dict, version: str, depth: int) -> list[str] | None:
    """The key columns of the relation ``node`` a ``FROM`` reads: a subquery, or a view of
    the plan (a deduplication passes its input's through)."""
    if isinstance(node, exp.Subquery):
        return _keys_of(node.this, views, version, depth + 1)
    if not isinstance(node, exp.Table) or node.db:
        return None
    relation = views.get(node.name.lower())
    if isinstance(relation, p.SqlView):
        return _keys(relation.sql, views, version, depth + 1)
    if isinstance(relation, p.Deduplicate):
        return _read(exp.to_table(relation.input), views, version, depth + 1)
    return None
