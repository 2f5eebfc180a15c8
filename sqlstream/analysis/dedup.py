"""Deduplication of streams (docs/dialect.md#deduplication): the three spellings, found on the rewritten tree.

Spark SQL has no streaming deduplication; the DataFrame API has
``DataFrame.dropDuplicates(keys)`` and ``DataFrame.dropDuplicatesWithinWatermark(keys)``
(Spark guide, *Streaming Deduplication*). :func:`find_deduplication` recognises, on a tree
after :func:`sqlstream.sql.rewrite.rewrite`, one of:

* ``SELECT DISTINCT cols FROM s …`` (not an aggregation) → ``dropDuplicates()`` of the rows
  of ``SELECT cols FROM s …`` (every column is a key);
* ``SELECT DISTINCT ON (k) …`` and ``… QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY
  ts) = 1``, both rewritten to Flink's pattern, and that pattern written by hand:
  ``SELECT … FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM s)
  WHERE rn = 1`` → ``dropDuplicates([k])``, or ``dropDuplicatesWithinWatermark([k])`` when
  the input has a watermark and ``k`` does not hold its event-time column.

and splits the query (:meth:`Deduplication.split`): the input rows become a view of their
own, the query reads the deduplicated view instead. The compiler
(:func:`sqlstream.planning.compiler.compile_query`) plans the input view, the
:class:`~sqlstream.ir.plan.Deduplicate` step, and judges the query that reads them.

Keep-first is Spark's: ``dropDuplicates`` keeps the first row *that arrives* for a key, not
the one with the smallest ``ts`` (within one micro-batch, the order of the batch). A
``ROW_NUMBER`` pattern ordered by something else than one time column ascending, keeping
the last row (``DESC``) or several rows (``rn <= 3``) cannot be rewritten: its window node
is marked (``meta[DEDUP_REFUSED]``, the reason) and :mod:`sqlstream.analysis.checks` reports SS325.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from sqlstream.analysis.facts import RelationInfo, StreamingScope, from_relations, is_aggregate
from sqlstream.analysis.operators import conjuncts
from sqlstream.sql.meta import DEDUP_REFUSED, REWRITTEN_FROM
from sqlstream.sql.tree_walks import find_all

TIME_TYPES = {"TIMESTAMP", "TIMESTAMP_NTZ", "DATE"}


@dataclass
class Deduplication:
    """One deduplication found in a query tree.

    Attributes:
        spelling: ``SELECT DISTINCT``, ``DISTINCT ON``, ``QUALIFY`` or ``ROW_NUMBER``.
        input: the query of the rows to deduplicate (a detached SELECT; Spark SQL).
        keys: the deduplication keys (column names of ``input``); ``()``: every column.
        order: the time column of ``ORDER BY`` (``ROW_NUMBER`` spellings), or ``None``.
        node: the node the user wrote (the ``DISTINCT`` or the window), for positions.
        replace: the node of the query that :meth:`split` replaces.
        condition: the ``rn = 1`` conjunct :meth:`split` removes, or ``None``.
        star_except: the query is ``SELECT * EXCEPT (rn)``; :meth:`split` makes it
            ``SELECT *`` (the deduplicated rows have no ``rn``).
    """

    spelling: str
    input: exp.Select
    keys: tuple[str, ...]
    order: str | None
    node: exp.Expr
    replace: exp.Expr
    condition: exp.Expr | None = None
    star_except: bool = False

    def split(self, tree: exp.Expr, name: str) -> exp.Expr:
        """Make the query read the deduplicated relation ``name`` instead of the input rows.

        Args:
            tree: the query tree :func:`find_deduplication` searched (modified in place).
            name: the relation of the :class:`~sqlstream.ir.plan.Deduplicate` step.

        Returns:
            The new tree (a new root when the whole query was the ``SELECT DISTINCT``).
        """
        if self.spelling == "SELECT DISTINCT":
            select = self.replace
            reading = exp.select("*").from_(exp.to_table(name))
            for key in ("order", "limit", "offset"):
                if select.args.get(key) is not None:
                    reading.set(key, select.args[key])
            if select is tree:
                return reading
            select.replace(reading)
            return tree
        alias = self.replace.args.get("alias")
        table = exp.to_table(name)
        if alias is not None:
            table.set("alias", alias)
        self.replace.replace(table)
        outer = table.find_ancestor(exp.Select)
        assert outer is not None  # (the deduplication's SELECT)
        if self.star_except:
            outer.set("expressions", [exp.Star()])
        rest = [c for c in conjuncts(outer.args["where"].this) if c is not self.condition]
        outer.set("where", exp.Where(this=exp.and_(*rest)) if rest else None)
        return tree


def _reads_aggregate(select: exp.Select, scope: StreamingScope) -> bool:
    """An aggregation below ``select`` (Spark refuses ``dropDuplicates`` after one)."""
    infos = scope.infos
    for relation in from_relations(select):
        for node in find_all(relation, exp.Expr):
            if isinstance(node, exp.Select) and is_aggregate(node, scope.version):
                return True
            if (
                isinstance(node, exp.Table)
                and infos.get(node.name.lower(), RelationInfo(False)).aggregate
            ):
                return True
    return False


def _plain_input(select: exp.Select, ctes) -> bool:
    """A SELECT that can be a view of its own: no CTE of the enclosing query, no window
    function of its own."""
    if any(t.name.lower() in ctes for t in find_all(select, exp.Table)):
        return False
    return not any(w.find_ancestor(exp.Select) is select for w in find_all(select, exp.Window))


def _distinct(select: exp.Select, scope: StreamingScope) -> Deduplication | None:
    distinct = select.args.get("distinct")
    if (
        distinct is None
        or distinct.args.get("on") is not None
        or is_aggregate(select, scope.version)
    ):
        return None
    if not scope.streaming(select) or _reads_aggregate(select, scope):
        return None
    if not _plain_input(select, scope.ctes):
        return None
    rows = select.copy()
    for key in ("distinct", "order", "limit", "offset"):
        rows.set(key, None)
    return Deduplication("SELECT DISTINCT", rows, (), None, distinct, select)


def _rn_filter(outer: exp.Select, rn: str) -> tuple[exp.Expr | None, str | None]:
    """The conjunct of ``outer``'s WHERE that keeps the first row (``rn = 1``) and, when
    ``rn`` is filtered otherwise, why that is no deduplication."""
    where = outer.args.get("where")
    if where is None:
        return None, None
    found, why = None, None
    for conjunct in conjuncts(where.this):
        if not any(c.name.lower() == rn for c in find_all(conjunct, exp.Column)):
            continue
        sides = (conjunct.this, conjunct.expression) if isinstance(conjunct, exp.Binary) else ()
        one = [s for s in sides if isinstance(s, exp.Literal) and s.name == "1"]
        col = [s for s in sides if isinstance(s, exp.Column) and s.name.lower() == rn]
        if isinstance(conjunct, exp.EQ) and one and col and found is None:
            found = conjunct
        else:
            why = (
                f"it keeps the rows where `{conjunct.sql(dialect='spark')}`, not one row "
                "per key (Spark's deduplication keeps exactly the first)"
            )
    return (None, why) if why else (found, None)


def _refuse(window: exp.Expression, why: str) -> None:
    window.meta[DEDUP_REFUSED] = why


def _row_number(outer: exp.Select, scope: StreamingScope) -> Deduplication | None:
    """``SELECT … FROM (SELECT …, ROW_NUMBER() OVER (…) AS rn FROM s) WHERE rn = 1``."""
    source = outer.args.get("from_")
    if source is None or outer.args.get("joins") or not isinstance(source.this, exp.Subquery):
        return None
    subquery = source.this
    inner = subquery.this
    if not isinstance(inner, exp.Select) or not scope.streaming(inner):
        return None
    numbered = [
        p
        for p in inner.expressions
        if isinstance(p, exp.Alias)
        and isinstance(p.this, exp.Window)
        and isinstance(p.this.this, exp.RowNumber)
    ]
    if len(numbered) != 1:
        return None
    alias = numbered[0]
    window, rn = alias.this, alias.alias.lower()
    if window.meta.get(DEDUP_REFUSED) if window._meta else None:
        return None
    condition, why = _rn_filter(outer, rn)
    if condition is None and why is None:
        return None  # a ROW_NUMBER that filters nothing: a window function (SS314)
    spelling = (window.meta.get(REWRITTEN_FROM) if window._meta else None) or "ROW_NUMBER"
    partition = window.args.get("partition_by") or []
    order = [o for o in (window.args.get("order").expressions if window.args.get("order") else [])]
    keys = [p.name for p in partition if isinstance(p, exp.Column)]
    if why is None and (not partition or len(keys) != len(partition)):
        why = "its PARTITION BY is not a list of columns (the deduplication keys)"
    lowered = [k.lower() for k in keys]
    while order and isinstance(order[0].this, exp.Column) and order[0].this.name.lower() in lowered:
        order.pop(0)  # DISTINCT ON (k) … ORDER BY k, ts: the keys first
    if why is None and len(order) > 1:
        why = "it orders by more than one time column"
    if why is None and order and order[0].args.get("desc"):
        why = (
            "it keeps the last row per key (ORDER BY … DESC); Spark's deduplication keeps "
            "the first that arrives"
        )
    if why is None and order and not isinstance(order[0].this, exp.Column):
        why = "it orders by an expression, not a time column"
    if why is None and (
        is_aggregate(inner, scope.version)
        or inner.args.get("distinct") is not None
        or not _plain_input(_without(inner, alias), scope.ctes)
        or _reads_aggregate(inner, scope)
    ):
        why = "its subquery aggregates or has another window function"
    if why is not None:
        _refuse(window, why)
        return None
    rows = _without(inner, alias)
    star_except = _star_except(outer, rn)
    if (outer.is_star and not star_except) or any(
        c.name.lower() == rn
        for c in find_all(outer, exp.Column)
        if not c.find_ancestor(exp.Where, exp.Star)
    ):
        rows.append("expressions", exp.alias_(exp.Literal.number(1), alias.alias))
    time = order[0].this.name if order else None
    if not any(p.is_star for p in rows.expressions):
        present = {p.alias_or_name.lower() for p in rows.expressions}
        missing = [
            c for c in dict.fromkeys([*keys, *([time] if time else [])]) if c.lower() not in present
        ]
        if missing and outer.is_star and not star_except:
            _refuse(
                window,
                f"its subquery does not select `{missing[0]}`, which it partitions or orders by",
            )
            return None
        for column in missing:  # the query selects its own columns: an extra one is unseen
            rows.append("expressions", exp.column(column))
    return Deduplication(
        spelling, rows, tuple(keys), time, window, subquery, condition, star_except
    )


def _star_except(outer: exp.Select, rn: str) -> bool:
    """``outer`` is ``SELECT * EXCEPT (rn)`` (the rewrite of ``DISTINCT ON (k) *``)."""
    if len(outer.expressions) != 1 or not isinstance(outer.expressions[0], exp.Star):
        return False
    star = outer.expressions[0]
    excepted = star.args.get("except_") or star.args.get("except") or []
    return [e.name.lower() for e in excepted] == [rn]


def _without(select: exp.Select, alias: exp.Expr) -> exp.Select:
    """``select`` without the projection ``alias`` (a copy)."""
    index = select.expressions.index(alias)
    rows = select.copy()
    rows.set("expressions", [e for i, e in enumerate(rows.expressions) if i != index])
    return rows


def find_deduplication(
    tree: exp.Expr, infos: Mapping[str, RelationInfo], version: str
) -> Deduplication | None:
    """The innermost deduplication of a rewritten query over a stream, or ``None``.

    Args:
        tree: a query after :func:`sqlstream.sql.rewrite.rewrite`.
        infos: lower-case relation name → what is known of it (streaming, aggregated).
        version: the Spark major.minor judged for (which functions aggregate).

    Returns:
        The :class:`Deduplication` to split, innermost first (its input holds none). A
        ``ROW_NUMBER`` pattern that cannot be one is marked ``meta[DEDUP_REFUSED]`` on its window
        and skipped (the checks report it, SS325); a tree over tables only has none.
    """
    scope = StreamingScope(tree, infos, version)
    for select in reversed(list(find_all(tree, exp.Select))):
        found = _distinct(select, scope) or _row_number(select, scope)
        if found is not None:
            return found
    return None
