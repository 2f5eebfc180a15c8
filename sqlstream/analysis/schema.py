"""Static schemas: the columns and types of every query, from declared schemas, with no JVM.

:func:`query_schema` works on a query after :func:`sqlstream.sql.rewrite.rewrite` (the tree
that is printed and run: window TVFs are already Spark's ``window()`` /
``session_window()``) and a catalog of relation schemas. Name resolution is
sqlglot's (``qualify``: stars, aliases, ``USING``, CTEs, subqueries, lateral column aliases,
struct fields, lambdas), except for a query over one relation whose columns each name one
of its columns, which is qualified here (:func:`_qualify_plain`, tested to agree); types
come from sqlglot's ``TypeAnnotator`` driven by our own
table of Spark typing rules (:mod:`sqlstream.analysis.spark_types`), each checked against Spark 4.1
(``df.schema``). What is not in the table is ``UNKNOWN``: a type is never guessed,
and ``UNKNOWN`` never causes a finding.

With the query text (``sql=``), every function call is checked by the name written against
Spark's built-in functions of the judged Spark minor (``spark_functions_<X.Y>.txt``, written
by ``tools/gen_spark_functions.py``);
without it, only the calls sqlglot does not know.

``WATERMARK`` clauses are replaced, in a copy, by equivalent subqueries
(``WATERMARK expr AS name`` adds ``name`` first, as Spark does); ``window()`` and
``session_window()`` give ``STRUCT<start, end>`` (``TIMESTAMP_NTZ`` fields on a
``TIMESTAMP_NTZ`` column) and make the column ``window`` / ``session_window`` visible.

Findings (offsets within the query text, end exclusive; ``span`` is ``None``):
``SS205`` unknown column, ``SS206`` unknown function, ``SS207`` ambiguous column, ``SS208``
a type error Spark is certain to raise: a window on a numeric or boolean column,
``TIMESTAMP`` plus or minus a number, a field of a column that is not a struct or map.

Output names follow Spark: the alias, the column or field name as written, a star's
declared names; unaliased expressions get a Spark-like name (``count(1)``,
``(flight + 1)``, ``upper(carrier)``; :mod:`sqlstream.analysis.naming`), which is best effort.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from sqlstream.analysis.naming import output_name
from sqlstream.analysis.resolution import (
    ALIASES,
    ROW,
    ROW_TABLE,
    check_columns,
    check_functions,
    check_grouping,
    check_types,
    finding,
    window_columns,
)
from sqlstream.analysis.spark_types import (
    UNKNOWN,
    WINDOW_FUNCTIONS,
    data_type,
    known_functions,
    spark_type,
    type_of,
)
from sqlstream.analysis.type_annotation import Annotator
from sqlstream.analysis.type_rules import common_type
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir.context import CompileContext
from sqlstream.sql.dialect import WindowTVF
from sqlstream.sql.meta import LOOKUP_TIME
from sqlstream.sql.parsing import parse_expression, parse_query
from sqlstream.sql.rewrite import rewrite
from sqlstream.sql.tree_walks import copy_tree, find_all, tree_key

__all__ = [
    "UNKNOWN",
    "Schema",
    "expression_type",
    "known_functions",
    "query_schema",
    "spark_type",
]

Schema = tuple[tuple[str, str], ...]

_NAME = "sqlstream_name"  # meta key: the output name of a select item, decided before qualify


# ---- preparing a copy for sqlglot's optimizer ---------------------------------------------


def _replace_watermark(relation: exp.Expr) -> None:
    """``rel WATERMARK c DELAY OF i AS a`` → ``(SELECT * FROM rel WHERE c IS NULL) AS a``;
    ``WATERMARK expr AS name`` puts ``name`` first, as Spark does."""
    watermark = relation.args.get("watermark")
    relation.set("watermark", None)
    alias = relation.args.get("alias")
    relation.set("alias", None)
    if alias is None and isinstance(relation, exp.Table):
        alias = exp.TableAlias(this=exp.to_identifier(relation.name))
    assert watermark is not None  # (called on a relation with one)
    column = watermark.this
    inner = exp.Select(
        expressions=[column.copy(), exp.Star()] if isinstance(column, exp.Alias) else [exp.Star()]
    )
    if not isinstance(column, exp.Alias):
        inner.set("where", exp.Where(this=exp.Is(this=column.copy(), expression=exp.Null())))
    subquery = exp.Subquery(this=inner, alias=alias)
    relation.replace(subquery)
    inner.set(
        "from_",
        exp.From(
            this=exp.Subquery(this=relation.this)
            if isinstance(relation, exp.Subquery)
            else relation
        ),
    )


def _check_positions(select: exp.Select, findings: list) -> None:
    """``GROUP BY 3`` / ``ORDER BY 3`` beyond the select list (Spark: GROUP_BY_POS_OUT_OF_RANGE)."""
    count = len(select.expressions)
    if any(
        isinstance(i, exp.Star) or (isinstance(i, exp.Column) and i.is_star)
        for i in select.expressions
    ):
        return
    for key, label in (("group", "GROUP BY"), ("order", "ORDER BY")):
        clause = select.args.get(key)
        for item in list(clause.expressions if clause else ()):
            literal = item.this if isinstance(item, exp.Ordered) else item
            if (
                isinstance(literal, exp.Literal)
                and literal.is_int
                and not 1 <= int(literal.this) <= count
            ):
                findings.append(
                    finding(
                        "SS205",
                        f"{label} position {literal.this} is not in the select "
                        f"list (it has {count} item{'s' if count != 1 else ''})",
                        literal,
                    )
                )
                item.pop()
        if clause is not None and not clause.expressions and key == "group":
            select.set("group", None)


def _where_alias_refs(select: exp.Select) -> list[exp.Column]:
    """Unqualified columns in WHERE named like a select alias: Spark does not see aliases there."""
    where = select.args.get("where")
    aliases = {i.alias.lower() for i in select.expressions if isinstance(i, exp.Alias)}
    if where is None or not aliases:
        return []
    return [
        c
        for c in find_all(where, exp.Column)
        if not c.table and c.name.lower() in aliases and c.find_ancestor(exp.Select) is select
    ]


def _prepare(tree: exp.Expr, findings: list) -> dict[int, list[exp.Column]]:
    for table in find_all(tree, exp.Table):
        table.args.pop("stream", None)
    if any(True for _ in find_all(tree, WindowTVF)):  # a caller's bug, not the user's
        raise ValueError(
            "query_schema needs a rewritten tree (sqlstream.sql.rewrite.rewrite): "
            "window TVFs are lowered there, once"
        )
    for relation in [n for n in find_all(tree, exp.Table, exp.Subquery) if n.args.get("watermark")]:
        _replace_watermark(relation)
    where_refs = {}
    for select in find_all(tree, exp.Select):
        _check_positions(select, findings)
        where_refs[id(select)] = _where_alias_refs(select)
        select.meta[ALIASES] = [i.alias for i in select.expressions if isinstance(i, exp.Alias)]
        for item in select.expressions:
            name = output_name(item)
            if name is not None:
                item.meta[_NAME] = name
    return where_refs


# ---- entry points -----------------------------------------------------------------------


def _dedupe(findings: list) -> list:
    seen, result = set(), []
    for item in findings:
        key = (item.code, item.message, getattr(item, "offset_start", None))
        if key not in seen:
            seen.add(key)
            result.append(item)
    return sorted(result, key=lambda f: getattr(f, "offset_start", None) or 0)


def _analyze(
    expression: exp.Expr,
    catalog: Mapping[str, Schema],
    sql: str | None,
    context: CompileContext,
    copy: bool = True,
):
    tree = copy_tree(expression) if copy else expression  # the checks below change the tree
    findings: list[SqlStreamError] = []
    check_functions(tree, sql, findings, context)
    names = {t.name.lower() for t in find_all(tree, exp.Table)}
    known = {name: catalog[name] for name in names if catalog.get(name)}
    case = {c.lower(): c for s in known.values() for c, _ in s}
    group_all = any(g.args.get("all") for g in find_all(tree, exp.Group))  # dropped on the way
    where_refs = _prepare(tree, findings)
    for join in find_all(tree, exp.Join):  # a lookup join's AS OF time: its columns are checked
        time = (join._meta or {}).get(LOOKUP_TIME)  # as a predicate of the join (this copy only)
        if time is not None:
            known_time = exp.or_(exp.Is(this=time.copy(), expression=exp.Null()), exp.true())
            join.set("on", exp.and_(join.args.get("on"), known_time))
    for node in find_all(tree, exp.Expr):
        if _NAME in (node._meta or {}):
            case.setdefault(node.meta[_NAME].lower(), node.meta[_NAME])
    case.update({c: c for c in ("window_start", "window_end", "window_time")})
    mapping = _mapping(tuple(sorted(known.items())))
    if _qualify_plain(tree, known, sql):  # qualify would only name each column's relation
        table = tree.args["from_"].this  # the one relation
        scopes = [Scope(tree, sources={table.alias_or_name: table})]
    else:
        # Only qualify's OptimizeError is expected: `JOIN … USING (c)` with c not a column of
        # both sides, `x.*` of an unknown relation (both Spark errors too: _optimizer_finding).
        # Nothing else was raised by the fast tests, nor by `sqlstream check` over every
        # fixture and example: any other exception is a bug and propagates to the CLI's handler.
        try:
            tree = qualify(
                tree,
                schema=mapping,
                dialect="spark",
                validate_qualify_columns=False,
                quote_identifiers=False,
                identify=False,
                allow_partial_qualification=True,
            )
        except OptimizeError as error:
            findings += _optimizer_finding(str(error), expression)
            return None, _dedupe(findings)
        schemas = {n: [c.lower() for c, _ in s] for n, s in known.items()}
        scopes = traverse_scope(tree)
        check_columns(scopes, schemas, case, where_refs, findings)
        window_columns(scopes)
    if not group_all and not any(f.code in ("SS205", "SS206", "SS207") for f in findings):
        check_grouping(scopes, sql, findings, context.spark_version)
    Annotator(mapping, context.functions).annotate(tree)
    check_types(tree, findings)
    return _output(tree, case), _dedupe(findings)


@functools.lru_cache(maxsize=512)
def _mapping(known: tuple[tuple[str, Schema], ...]) -> MappingSchema:
    """sqlglot's schema of ``(relation, columns)`` pairs, built once per distinct set of
    relations (a file's queries read the same few; qualify and annotate only read it)."""
    return MappingSchema({n: {c: data_type(t) for c, t in s} for n, s in known}, dialect="spark")


_PLAIN_SELECT = {"expressions", "from_", "where", "group"}
# Nodes that need sqlglot's qualify (scopes, struct fields, stars, lambdas, window
# functions): a query with one of them takes the full path of _analyze.
_NOT_SIMPLE = (
    exp.Subquery,
    exp.Query,
    exp.Lambda,
    exp.Star,
    exp.Dot,
    exp.Window,
    exp.Table,
    WindowTVF,
)


def _qualify_plain(tree: exp.Expr, known: Mapping[str, Schema], sql: str | None) -> bool:
    """Qualify ``SELECT <expressions> FROM <relation> [WHERE …] [GROUP BY <expressions>]``
    here, when every column names (unqualified or by the relation's name) exactly one
    column of the one relation, which ``known`` holds, and nothing else needs sqlglot's
    ``qualify``: no join, subquery, CTE, star (but ``COUNT(*)``), struct field, lambda,
    window function, ``HAVING``, order, ordinal or select alias in ``GROUP BY``. Each
    column then gets its relation, and ``window.start`` next to a ``window(…)`` call becomes
    that call's field (as :func:`~sqlstream.analysis.resolution.window_columns` does after
    qualify); no check can find an unknown or ambiguous column, and the grouping check runs
    as on the full path. This is also the path of a plain computed column
    (:func:`expression_type`: one item over its row). ``False`` (tree untouched) for
    anything else; the equivalence with the full path is tested over every query of the
    tests and examples and over expressions (``tests/analysis/test_schema_fast_path.py``)."""
    if type(tree) is not exp.Select or any(
        v for k, v in tree.args.items() if k not in _PLAIN_SELECT
    ):
        return False
    source, group = tree.args.get("from_"), tree.args.get("group")
    table = source.this if source is not None else None
    if type(table) is not exp.Table or any(
        v for k, v in table.args.items() if k not in ("this", "alias")
    ):
        return False
    alias = table.args.get("alias")
    if alias is not None and any(v for k, v in alias.args.items() if k != "this"):
        return False
    aliases = {i.alias.lower() for i in tree.expressions if isinstance(i, exp.Alias)}
    if group is not None and (
        any(v for k, v in group.args.items() if k != "expressions")
        or any(type(key) in (exp.Literal, exp.Tuple, exp.Paren) for key in group.expressions)
        or any(c.name.lower() in aliases for c in find_all(group, exp.Column))
    ):
        return False  # ROLLUP, ALL, an ordinal, a select alias: qualify resolves them
    names: dict[str, int] = {}
    for declared, _ in known.get(table.name.lower()) or ():
        names[declared.lower()] = names.get(declared.lower(), 0) + 1
    qualifier = table.alias_or_name
    columns: list[exp.Column] = []
    fields: list[exp.Column] = []
    calls: dict[str, exp.Anonymous] = {}
    if qualifier.lower() in WINDOW_FUNCTIONS or names.keys() & WINDOW_FUNCTIONS:
        return False
    for node in find_all(tree, exp.Expr):
        if (
            node is tree
            or node is source
            or node is table
            or node is alias
            or (type(node) is exp.Identifier and node.parent in (table, alias))
        ):
            continue
        if type(node) is exp.Star and type(node.parent) is exp.Count:
            continue
        if isinstance(node, _NOT_SIMPLE):
            return False
        if isinstance(node, exp.Anonymous) and node.name.lower() in WINDOW_FUNCTIONS:
            calls.setdefault(node.name.lower(), node)
        elif isinstance(node, exp.Column):
            if node.args.get("db") or type(node.this) is not exp.Identifier:
                return False
            if node.table and node.table.lower() != qualifier.lower():
                fields.append(node)  # `window.start`: a field of the window() call, or unknown
            elif names.get(node.name.lower()) != 1:
                return False
            else:
                columns.append(node)
    if any(f.table.lower() not in calls for f in fields):
        return False
    for node in (*columns, *fields):  # names in lower case, as qualify's normalize_identifiers
        node.this.set("this", node.name.lower())  # makes them (Spark's are case-insensitive)
    for column in columns:
        column.set("table", exp.to_identifier(qualifier))
    for field in fields:
        field.replace(exp.Dot(this=calls[field.table.lower()].copy(), expression=field.this))
    return bool(names)


def _optimizer_finding(message: str, expression: exp.Expr) -> list[SqlStreamError]:
    """The qualify errors that certainly are Spark errors too; others are dropped."""
    match = re.match(r"Cannot automatically join: (\w+)", message)
    if match:
        name = match.group(1)
        node = next(
            (
                i
                for j in find_all(expression, exp.Join)
                for i in j.args.get("using") or []
                if i.name.lower() == name.lower()
            ),
            None,
        )
        return [
            finding(
                "SS205", f"USING column '{name}' is not a column of both sides of the join", node
            )
        ]
    match = re.match(r"Unknown table: (\w+)", message)
    if match:
        node = next(
            (
                c
                for c in find_all(expression, exp.Column)
                if c.is_star and c.table.lower() == match.group(1).lower()
            ),
            None,
        )
        if node is not None:
            return [finding("SS205", f"unknown relation '{node.table}' in {node.table}.*", node)]
    return []


def _output(tree: exp.Expr, case: dict[str, str]) -> Schema | None:
    branches = [tree]
    while any(isinstance(b, exp.SetOperation) for b in branches):
        branches = [
            p
            for b in branches
            for p in ((b.left, b.right) if isinstance(b, exp.SetOperation) else (b,))
        ]
    selects = [typing.cast(exp.Query, b.unnest()).selects for b in branches]
    if any(
        isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects[0]
    ):
        return None
    result = []
    for position, item in enumerate(selects[0]):
        name = (item._meta or {}).get(_NAME) or (item.unalias()._meta or {}).get(_NAME)
        name = name or case.get(item.alias_or_name.lower(), item.alias_or_name)
        types = [type_of(s[position]) if position < len(s) else UNKNOWN for s in selects]
        result.append((name, types[0] if len(types) == 1 else common_type(types)))
    return tuple(result)


def query_schema(
    expression: exp.Expr | str,
    catalog: Mapping[str, Schema],
    sql: str | None = None,
    context: CompileContext | None = None,
) -> tuple[Schema | None, list[SqlStreamError]]:
    """Return the output schema of a query and the problems found in it.

    Args:
        expression: a tree from :func:`sqlstream.sql.rewrite.rewrite`, or the query's text
            (parsed and rewritten here). The tree is not modified.
        catalog: lower-case relation name → its schema. Relations not in it (unknown, or
            their schema unknown) have unknown columns: never a finding.
        sql: the text ``expression`` was parsed from; with it, every function call is checked
            by the name written (without it, only calls sqlglot does not know).
        context: the Spark minor judged for (its functions), the user functions defined
            so far, and the stores: with ``caches.schemas`` on, the columns of a query
            without findings are kept and an equal query is answered from them (below);
            ``None``: a default :class:`~sqlstream.ir.context.CompileContext`.

    Returns:
        ``(schema, findings)``: ``schema`` is ``None`` when its columns cannot be known (a
        ``*`` over an unknown relation); a type that cannot be known is ``UNKNOWN``.
        ``findings`` are :class:`~sqlstream.diagnostics.errors.UnknownNameError` (``SS205`` unknown
        column, ``SS206`` unknown function, ``SS207`` ambiguous column) and
        :class:`~sqlstream.diagnostics.errors.SemanticError` (``SS208`` type error, ``SS209`` column
        neither grouped nor aggregated), in text order, each with
        ``offset_start``/``offset_end`` (end exclusive) within the query text.

    Raises:
        SqlSyntaxError: ``expression`` is text that is not valid Spark SQL.
        Exception: anything else sqlglot raises is a bug (in sqlstream, or sqlglot failing
            on valid SQL) and propagates: it must not read as "no findings".
    """
    context = context if context is not None else CompileContext()
    if isinstance(expression, str):
        sql = expression
        expression = rewrite(parse_query(expression, context.caches), copy=False)
    # The answer depends only on the tree's content (tree_key: classes, arguments,
    # positions, comments), the schemas of the relations it names, the text, the Spark
    # minor judged for, and the functions defined: the key holds the first four and nothing
    # is kept or answered while a function is defined; a tree tree_key cannot key is
    # analysed each time. Findings are not kept (callers position them, which changes them).
    remembered = context.caches.schemas
    if remembered is None or context.functions:
        return _analyze(expression, catalog, sql, context)
    tables: list[exp.Table] = []
    shape = tree_key(expression, tables)
    if shape is None:
        return _analyze(expression, catalog, sql, context)
    names = {t.name.lower() for t in tables}  # as _analyze reads them
    key = (
        shape,
        tuple(sorted((n, catalog[n]) for n in names if catalog.get(n))),
        sql,
        context.spark_version,
    )
    columns = remembered.get(key, _MISSING)
    if columns is not _MISSING:
        return columns, []
    columns, findings = _analyze(expression, catalog, sql, context)
    if not findings:
        remembered.keep(key, columns)
    return columns, findings


_MISSING = object()


def expression_type(
    sql_expression: exp.Expr | str,
    schema: Schema,
    sql: str | None = None,
    context: CompileContext | None = None,
) -> tuple[str, list[SqlStreamError]]:
    """Return the type of a scalar expression over one row of ``schema`` (a computed column).

    Args:
        sql_expression: the expression's text (e.g. ``dep_delay > 15``) or its parsed tree.
        schema: the columns it may use.
        sql: the text a parsed ``sql_expression`` came from (see :func:`query_schema`).
        context: as for :func:`query_schema` (no store is consulted).

    Returns:
        ``(type, findings)`` as in :func:`query_schema`; a syntax error is returned as a
        :class:`~sqlstream.diagnostics.errors.SqlSyntaxError` finding with type ``UNKNOWN``.

    Raises:
        Exception: as :func:`query_schema`, only for bugs.
    """
    if isinstance(sql_expression, str):
        sql = sql_expression
        try:
            sql_expression = parse_expression(sql, context.caches if context else None)
        except SqlStreamError as error:
            return UNKNOWN, [error]
    query = exp.Select(expressions=[copy_tree(sql_expression)]).from_(
        copy_tree(ROW_TABLE), copy=False
    )
    context = context if context is not None else CompileContext()
    result, findings = _analyze(query, {ROW: schema}, sql, context, copy=False)  # ours to change
    return (result[0][1] if result else UNKNOWN), findings
