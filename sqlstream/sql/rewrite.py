"""Rewrites from the sqlstream dialect to Spark SQL: plain ``Expression -> Expression`` steps.

:func:`rewrite` runs :data:`REWRITES` in order (sqlglot ``transforms.py`` style). Each step
takes and returns a sqlglot tree; errors are :class:`~sqlstream.diagnostics.errors.SemanticError` with
``offset_start``/``offset_end`` (end exclusive) within the parsed query text, so the caller
can map them to the file.

The steps, in order: ``FROM STREAM t`` markers dropped; Flink's lookup joins (``JOIN t FOR
SYSTEM_TIME AS OF s.ts``) made the stream-static joins they mean; window TVFs lowered to
Spark's ``window()`` (:mod:`sqlstream.sql.window_tvfs`); and the rewrites sqlglot's Spark generator
would otherwise make while printing (``DISTINCT ON``, ``QUALIFY``, ``UNNEST``, ``ANY``),
run here, before the checks, so that what is checked is what is printed and run.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp, transforms

from sqlstream.diagnostics.errors import SemanticError
from sqlstream.ir.caches import CompileCaches
from sqlstream.sql.meta import LOOKUP, LOOKUP_TIME, REWRITTEN_FROM
from sqlstream.sql.parsing import node_offsets
from sqlstream.sql.tree_walks import copy_tree, find_all, tree_key
from sqlstream.sql.window_durations import check_window_durations, duration_text
from sqlstream.sql.window_tvfs import rewrite_window_tvfs

__all__ = [
    "REWRITES",
    "any_to_exists",
    "balance_connectors",
    "check_window_durations",
    "drop_stream_markers",
    "duration_text",
    "eliminate_distinct_on",
    "eliminate_qualify",
    "lookup_joins",
    "relation_names",
    "relation_tables",
    "rewrite",
    "rewrite_window_tvfs",
    "table_reference",
    "unnest_to_explode",
]


def drop_stream_markers(expression: exp.Expr) -> exp.Expr:
    """Drop the ``stream`` marker of ``FROM STREAM t``: every relation already streams.

    Args:
        expression: a parsed query.

    Returns:
        The same tree, without ``stream`` args on tables.
    """
    for table in find_all(expression, exp.Table):
        table.args.pop("stream", None)
    return expression


_LOOKUP_KINDS = ("", "left")  # Flink's lookup joins: INNER and LEFT (OUTER) only


def _lookup_error(message: str, node: exp.Expr, hint: str) -> SemanticError:
    error = SemanticError(message, hint=hint, code="SS335")
    error.offset_start, error.offset_end = node_offsets(node) or (None, None)
    return error


def lookup_joins(expression: exp.Expr) -> exp.Expr:
    """Rewrite Flink's lookup join ``s JOIN t FOR SYSTEM_TIME AS OF s.ts ON …`` (also ``LEFT
    JOIN``) to the join it means here, ``s JOIN t ON …``: a relation declared with ``CREATE
    TABLE`` is static, one version valid at every time, so the row of ``t`` "as of" ``s.ts``
    is the row of ``t``, and Spark's stream-static join looks it up in every micro-batch
    (Spark guide, *Stream-static Joins*; Flink docs, *Joins › Lookup Join*). Spark SQL's
    ``TIMESTAMP AS OF`` is time travel to a constant version of a table and is refused on
    a view or with a column, so the clause is never left in the SQL.

    The join keeps the time expression in ``meta[LOOKUP]`` (its SQL: the rule SS336 of
    :mod:`sqlstream.analysis.checks` refuses the lookup of a relation that reads a stream, which no
    Spark join means) and ``meta[LOOKUP_TIME]`` (its tree: :mod:`sqlstream.analysis.schema` checks its
    columns as Spark would have, SS205 for an unknown one).

    Args:
        expression: a parsed query.

    Returns:
        The same tree, without ``FOR SYSTEM_TIME AS OF`` on joined tables.

    Raises:
        SemanticError: ``SS335`` — the clause on the ``FROM`` relation, in a join other than
            ``JOIN`` / ``LEFT JOIN``, with another form (``FOR SYSTEM_TIME FROM … TO …``,
            ``VERSION AS OF``), or with a time naming a relation not on the left of the join;
            offsets within the query text.
    """
    for table in list(find_all(expression, exp.Table)):
        version = table.args.get("version")
        if version is None:
            continue
        join = table.parent
        if version.this != "TIMESTAMP" or version.args.get("kind") != "AS OF":
            raise _lookup_error(
                "only FOR SYSTEM_TIME AS OF <time> (a lookup join) is supported: "
                "Spark has no time travel on a sqlstream relation",
                table,
                "join the table without a version clause",
            )
        if not isinstance(join, exp.Join) or join.this is not table:
            raise _lookup_error(
                "FOR SYSTEM_TIME AS OF is a lookup join: the table it versions "
                "must be the right side of a JOIN",
                table,
                "write FROM stream AS s JOIN table FOR SYSTEM_TIME AS OF s.ts AS t ON …",
            )
        if (join.args.get("side") or "").lower() not in _LOOKUP_KINDS or join.args.get("kind"):
            raise _lookup_error(
                "a lookup join (FOR SYSTEM_TIME AS OF) is a JOIN or LEFT JOIN, as in Flink",
                join,
                "use JOIN or LEFT JOIN",
            )
        select = join.parent
        assert select is not None  # a join is in a SELECT
        source = select.args.get("from_") or select.args.get("from")
        if source is None:  # `SELECT 1 JOIN t FOR SYSTEM_TIME …`: no left side to look up from
            raise _lookup_error(
                "a lookup join (FOR SYSTEM_TIME AS OF) needs a stream on its "
                "left: this SELECT has no FROM",
                table,
                "write FROM stream AS s JOIN table FOR SYSTEM_TIME AS OF s.ts AS t ON …",
            )
        left = {
            name.lower()
            for relation in [source.this, *(j.this for j in select.args["joins"][: join.index])]
            for name in (
                relation.alias_or_name,
                relation.name if isinstance(relation, exp.Table) else "",
            )
            if name
        }
        for column in find_all(version.expression, exp.Column):
            if column.table and column.table.lower() not in left:
                raise _lookup_error(
                    f"the time of a lookup join must come from the left of the "
                    f"join, not '{column.table}'",
                    column,
                    "use the stream's time column, e.g. FOR SYSTEM_TIME AS OF s.ts",
                )
        join.meta[LOOKUP] = version.expression.sql(dialect="spark")
        join.meta[LOOKUP_TIME] = version.expression
        table.set("version", None)
    return expression


BALANCE_FROM = 64  # operands of one AND/OR chain from which it is balanced


def balance_connectors(expression: exp.Expr) -> exp.Expr:
    """Rebuild each chain of more than :data:`BALANCE_FROM` ``AND`` (or ``OR``) operands as a
    balanced tree, as Spark's parser does (SPARK-13657): ``a AND b AND c AND …`` parses as a
    left-deep tree as deep as it is long, and walking up such a tree from each operand
    takes time quadratic in its length. The SQL printed is the same text (the operators
    are associative; parenthesised operands keep their parentheses).

    Args:
        expression: a parsed query.

    Returns:
        The same tree, long chains balanced.
    """
    roots = [
        node
        for node in find_all(expression, exp.And, exp.Or)
        if type(node.parent) is not type(node)
    ]
    for root in roots:
        chain = list(root.flatten(unnest=False))
        if len(chain) <= BALANCE_FROM:
            continue
        if any(
            node.comments
            for node in root.dfs(prune=lambda n: type(n) is not type(root))  # noqa: B023 (called now)
            if type(node) is type(root)
        ):
            continue  # a comment on an operator would be lost
        kind = type(root)
        level = [operand.pop() for operand in chain]
        while len(level) > 1:
            paired = [
                kind(this=level[i], expression=level[i + 1]) for i in range(0, len(level) - 1, 2)
            ]
            level = paired + ([level[-1]] if len(level) % 2 else [])
        if root is expression:
            return level[0]
        root.replace(level[0])
    return expression


def _every_select(
    transform: Callable[[exp.Expr], exp.Expr],
    label: str | None = None,
    wanted: Callable[[exp.Expr], bool] | None = None,
):
    """Apply one of sqlglot's per-SELECT ``transforms`` to every SELECT of a tree (innermost
    first), as sqlglot's Spark generator would while printing; ``label`` marks the window
    functions the transform creates (``meta[REWRITTEN_FROM]``) so messages can name the
    syntax the user wrote; ``wanted(tree)`` says whether the tree has anything the
    transform changes (``None``: always run it)."""

    def step(expression: exp.Expr) -> exp.Expr:
        if wanted is not None and not wanted(expression):
            return expression  # nothing for the transform to do: no walk over every SELECT
        for select in reversed(list(find_all(expression, exp.Select))):
            before = {id(w) for w in find_all(select, exp.Window)} if label else set()
            parent, arg_key, index = select.parent, select.arg_key, select.index
            replacement = transform(select)  # may wrap ``select`` in a new query
            if label:
                for window in find_all(replacement, exp.Window):
                    if id(window) not in before:
                        window.meta[REWRITTEN_FROM] = label
            if replacement is not select:
                if parent is None:
                    expression = replacement
                else:
                    assert arg_key is not None  # a node with a parent has its key there
                    parent.set(arg_key, replacement, index)
        return expression

    step.__name__ = transform.__name__
    step.__doc__ = (
        f"sqlglot's ``transforms.{transform.__name__}`` on every SELECT "
        "(what sqlglot's Spark generator would do while printing)."
    )
    return step


# Spark has no QUALIFY and no DISTINCT ON: both become a window function in a subquery
# (on a stream, Spark refuses it: check SS314); ``UNNEST`` becomes ``explode`` and
# ``x = ANY(array)`` an ``EXISTS`` (Spark's ``any`` is the boolean aggregate). These are the
# rewrites of sqlglot's Spark generator (``transforms.preprocess`` on ``exp.Select``), run
# here explicitly, before the checks: the generator itself no longer rewrites
# (:data:`sqlstream.sql.dialect_generator.GENERATOR_REWRITES`).
def _distinct_on(select: exp.Expr) -> exp.Expr:
    """sqlglot's ``eliminate_distinct_on``, without leaking its ``_row_number`` column
    through ``SELECT DISTINCT ON (k) *`` (the outer query becomes ``* EXCEPT (…)``)."""
    star = (
        isinstance(select, exp.Select)
        and select.args.get("distinct") is not None
        and any(item.is_star for item in select.expressions)
    )
    result = transforms.eliminate_distinct_on(select)
    if result is select or not isinstance(result, exp.Select):
        return result
    if star:
        row_number = result.args["where"].this.this  # WHERE <_row_number> = 1
        result.set("expressions", [exp.Star(except_=[exp.column(row_number.name)])])
    # The tree as Spark SQL parses back: columns, not bare identifiers; ``OVER``; sort keys.
    result.set(
        "expressions",
        [exp.column(e.name) if isinstance(e, exp.Identifier) else e for e in result.expressions],
    )
    for window in find_all(select, exp.Window):
        if window.args.get("over") is None and isinstance(window.this, exp.RowNumber):
            window.set("over", "OVER")
            order = window.args.get("order")
            for key in list(order.expressions if order else ()):
                if not isinstance(key, exp.Ordered):
                    key.replace(exp.Ordered(this=key.copy(), nulls_first=True))
    return result


_distinct_on.__name__ = "eliminate_distinct_on"


def _has(*kinds: type[exp.Expr]) -> Callable[[exp.Expr], bool]:
    return lambda tree: next(find_all(tree, *kinds), None) is not None


def _selects_with(arg: str, sub: str | None = None) -> Callable[[exp.Expr], bool]:
    def wanted(tree: exp.Expr) -> bool:
        for select in find_all(tree, exp.Select):
            value = select.args.get(arg)
            if value is not None and (sub is None or value.args.get(sub)):
                return True
        return False

    return wanted


eliminate_distinct_on = _every_select(_distinct_on, "DISTINCT ON", _selects_with("distinct", "on"))
eliminate_qualify = _every_select(transforms.eliminate_qualify, "QUALIFY", _selects_with("qualify"))
unnest_to_explode = _every_select(transforms.unnest_to_explode, wanted=_has(exp.Unnest))
any_to_exists = _every_select(transforms.any_to_exists, wanted=_has(exp.Any))


REWRITES: tuple[Callable[[exp.Expr], exp.Expr], ...] = (
    balance_connectors,
    drop_stream_markers,
    lookup_joins,
    rewrite_window_tvfs,
    check_window_durations,
    eliminate_distinct_on,
    eliminate_qualify,
    unnest_to_explode,
    any_to_exists,
)


def rewrite(expression: exp.Expr, copy: bool = True) -> exp.Expr:
    """Rewrite a parsed sqlstream query into Spark SQL by running :data:`REWRITES` in order.

    Args:
        expression: a tree from :func:`sqlstream.sql.parsing.parse_query`.
        copy: work on a copy (default) instead of modifying ``expression``.

    Returns:
        A tree that :func:`sqlstream.sql.parsing.to_spark_sql` prints as SQL Spark runs.

    Raises:
        SemanticError: see :func:`rewrite_window_tvfs`.
    """
    if copy:
        expression = copy_tree(expression)
    for step in REWRITES:
        expression = step(expression)
    return expression


def kept_query(
    sql: str, caches: CompileCaches | None
) -> tuple[list[tuple[str, int, int]], exp.Expr] | None:
    """What :func:`keep_query` kept for the query text ``sql`` in ``caches.query_texts``:
    its :func:`relation_names` and a copy of its rewritten tree; ``None`` otherwise (or
    when the store is off)."""
    texts = caches.query_texts if caches is not None else None
    kept = texts.get(sql) if texts is not None else None
    return None if kept is None else (kept[0], copy_tree(kept[1]))


def keep_query(
    sql: str,
    names: list[tuple[str, int, int]],
    rewritten: exp.Expr,
    caches: CompileCaches | None,
) -> None:
    """Keep in ``caches.query_texts`` (when on), for the query text ``sql``, the
    :func:`relation_names` of its parse and its :func:`rewrite_parsed` tree, for a caller
    that obtained both from nothing but the text: a parse that succeeded and was a query,
    with no step between parse and rewrite that reads anything else (the compiler keeps
    none when the query has a ksqlDB window, which reads the catalog). Kept only when a
    copy of the tree equals it in every link, as :func:`rewrite_parsed` keeps; callers
    still check the names against their catalog."""
    texts = caches.query_texts if caches is not None else None
    if texts is None or not _copyable(rewritten):
        return
    texts.keep(sql, (list(names), copy_tree(rewritten)))


def _copyable(result: exp.Expr) -> bool:
    """Whether a copy of ``result`` equals it in every attribute and link: a root, no node
    in ``meta`` (:func:`~sqlstream.sql.tree_walks.tree_key` keys it), no node at two places."""
    if (
        result.parent is not None
        or result.arg_key is not None
        or result.index is not None
        or tree_key(result) is None
    ):
        return False
    nodes = list(find_all(result, exp.Expr))
    return len({id(n) for n in nodes}) == len(nodes)


def rewrite_parsed(expression: exp.Expr, caches: CompileCaches | None = None) -> exp.Expr:
    """``rewrite(expression, copy=False)`` for a tree the caller does not use again (nor
    any node of it).

    Args:
        expression: the parsed tree.
        caches: the compile context's stores: with ``rewrites`` on, the result is kept
            under everything the tree holds (:func:`~sqlstream.sql.tree_walks.tree_key`;
            a rewrite depends on the tree only: no catalog, no Spark version) and an
            equal tree is answered with a copy (:func:`~sqlstream.sql.tree_walks.copy_tree`)
            of it. A rewrite that failed, or whose result a copy would not equal in every
            attribute and link (a node in ``meta`` or at two places, a root with a
            parent), is not kept. ``None``: rewrite.

    Raises:
        SemanticError: as :func:`rewrite`.
    """
    remembered = caches.rewrites if caches is not None else None
    key = tree_key(expression) if remembered is not None else None
    if remembered is None or key is None:
        return rewrite(expression, copy=False)
    kept = remembered.get(key)
    if kept is not None:
        return copy_tree(kept)
    result = rewrite(expression, copy=False)
    if _copyable(result):
        remembered.keep(key, copy_tree(result))
    return result


def _cte_in_scope(
    table: exp.Table, name: str, index: dict[int, tuple[dict[int, int], dict[str, int]]]
) -> bool:
    """Whether CTE ``name`` is visible at ``table``: all of an enclosing WITH from its main
    query, only the earlier ones from inside a CTE body (Spark CTEs are not recursive).

    ``index`` caches, per WITH node, each CTE's position and each name's first position, so
    that a chain of n CTEs is checked in time linear in n."""
    child: exp.Expr
    child, node = table, table.parent
    while node is not None:
        with_ = (
            node
            if isinstance(node, exp.With)
            else (node.args.get("with_") if isinstance(node, exp.Query) else None)
        )
        if with_ is not None and with_ is not child:
            if id(with_) not in index:
                ctes = with_.expressions
                first: dict[str, int] = {}
                for i, cte in enumerate(ctes):
                    first.setdefault(cte.alias.lower(), i)
                index[id(with_)] = ({id(cte): i for i, cte in enumerate(ctes)}, first)
            positions, first = index[id(with_)]
            limit = positions.get(id(child), len(positions)) if node is with_ else len(positions)
            if first.get(name, limit) < limit:
                return True
        child, node = node, node.parent
    return False


def relation_tables(expression: exp.Expr) -> list[exp.Table]:
    """The table references of a query that name a relation it reads: those inside window
    TVFs, subqueries and CTE bodies; not references to CTEs (a CTE is visible in the main
    query and in the CTEs defined after it) nor table functions such as ``range(10)``.

    Args:
        expression: a parsed (rewritten or not) query.

    Returns:
        The ``Table`` nodes, in tree order (:func:`relation_names` gives names and offsets).
    """
    found: list[exp.Table] = []
    index: dict[int, tuple[dict[int, int], dict[str, int]]] = {}
    for table in find_all(expression, exp.Table):
        if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
            continue
        if not table.args.get("db") and _cte_in_scope(table, table.name.lower(), index):
            continue
        found.append(table)
    return found


def table_reference(table: exp.Table) -> tuple[str, int, int]:
    """``(name, start, end)`` of a table reference: ``name`` dotted for a multi-part name
    (``db.t``), as written; offsets of the whole name within the query text, end
    exclusive (``-1`` for a node a rewrite made)."""
    spans = [node_offsets(part) for part in table.parts]
    start = min((span[0] for span in spans if span), default=-1)
    end = max((span[1] for span in spans if span), default=-1)
    return ".".join(part.name for part in table.parts), start, end


def relation_names(expression: exp.Expr) -> list[tuple[str, int, int]]:
    """List the relations a query reads (:func:`relation_tables`), for checking against
    declared streams and views; the compiler keeps them, placed in the file, as the
    ``reads`` of the plan's views and queries.

    Args:
        expression: a parsed (rewritten or not) query.

    Returns:
        ``(name, start, end)`` per reference (:func:`table_reference`) in text order.
    """
    found = [table_reference(table) for table in relation_tables(expression)]
    return sorted(found, key=lambda item: item[1])
