"""Static schemas: the columns and types of every query, from declared schemas, with no JVM.

:func:`query_schema` works on a query after :func:`sqlstream.rewrite.rewrite` (the tree
that is printed and run: window TVFs are already Spark's ``window()`` /
``session_window()``) and a catalog of relation schemas. Name resolution is
sqlglot's (``qualify``: stars, aliases, ``USING``, CTEs, subqueries, lateral column aliases,
struct fields, lambdas); types come from sqlglot's ``TypeAnnotator`` driven by our own
table of Spark typing rules (:mod:`sqlstream.spark_types`), each checked against Spark 4.1
(``df.schema``). What is not in the table is ``UNKNOWN``: a type is never guessed,
and ``UNKNOWN`` never causes a finding.

With the query text (``sql=``), every function call is checked by the name written against
Spark's built-in functions (``spark_functions.txt``, written by ``tools/gen_spark_functions.py``);
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
``(flight + 1)``, ``upper(carrier)``; :mod:`sqlstream.naming`), which is best effort.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope
from sqlglot.schema import MappingSchema

from sqlstream.dialect import WindowTVF, node_offsets, parse_expression, parse_query
from sqlstream.errors import SemanticError, SqlStreamError, UnknownNameError, did_you_mean
from sqlstream.naming import output_name, pretty
from sqlstream.rewrite import rewrite
from sqlstream.spark_types import (
    EXPRESSION_METADATA, FRACTIONAL, INTEGRAL, UNKNOWN, WINDOW_FUNCTIONS, Annotator,
    aggregate_call, common_type, data_type, is_numeric, known_functions, spark_type, type_of,
)

__all__ = ["UNKNOWN", "Schema", "expression_type", "known_functions", "query_schema", "spark_type"]

Schema = tuple[tuple[str, str], ...]

_ROW = "__sqlstream_row"  # internal: the relation of expression_type()
_TABLE_FUNCTIONS = {"range", "sql_keywords", "variant_explode", "variant_explode_outer"}  # FROM only
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAME = "sqlstream_name"  # meta key: the output name of a select item, decided before qualify
_ALIASES = "sqlstream_aliases"  # meta key: the aliases a SELECT was written with


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
    column = watermark.this
    inner = exp.Select(expressions=[column.copy(), exp.Star()] if isinstance(column, exp.Alias) else [exp.Star()])
    if not isinstance(column, exp.Alias):
        inner.set("where", exp.Where(this=exp.Is(this=column.copy(), expression=exp.Null())))
    subquery = exp.Subquery(this=inner, alias=alias)
    relation.replace(subquery)
    inner.set("from_", exp.From(this=exp.Subquery(this=relation.this) if isinstance(relation, exp.Subquery) else relation))


def _check_positions(select: exp.Select, findings: list) -> None:
    """``GROUP BY 3`` / ``ORDER BY 3`` beyond the select list (Spark: GROUP_BY_POS_OUT_OF_RANGE)."""
    count = len(select.expressions)
    if any(isinstance(i, exp.Star) or (isinstance(i, exp.Column) and i.is_star) for i in select.expressions):
        return
    for key, label in (("group", "GROUP BY"), ("order", "ORDER BY")):
        clause = select.args.get(key)
        for item in list(clause.expressions if clause else ()):
            literal = item.this if isinstance(item, exp.Ordered) else item
            if isinstance(literal, exp.Literal) and literal.is_int and not 1 <= int(literal.this) <= count:
                findings.append(_finding("SS205", f"{label} position {literal.this} is not in the select "
                                         f"list (it has {count} item{'s' if count != 1 else ''})", literal))
                item.pop()
        if clause is not None and not clause.expressions and key == "group":
            select.set("group", None)


def _where_alias_refs(select: exp.Select) -> list[exp.Column]:
    """Unqualified columns in WHERE named like a select alias: Spark does not see aliases there."""
    where = select.args.get("where")
    aliases = {i.alias.lower() for i in select.expressions if isinstance(i, exp.Alias)}
    if where is None or not aliases:
        return []
    return [c for c in where.find_all(exp.Column) if not c.table and c.name.lower() in aliases
            and c.find_ancestor(exp.Select) is select]


def _prepare(tree: exp.Expr, findings: list) -> dict[int, list[exp.Column]]:
    for table in tree.find_all(exp.Table):
        table.args.pop("stream", None)
    if any(True for _ in tree.find_all(WindowTVF)):  # a caller's bug, not the user's
        raise ValueError("query_schema needs a rewritten tree (sqlstream.rewrite.rewrite): "
                         "window TVFs are lowered there, once")
    for relation in [n for n in tree.find_all(exp.Table, exp.Subquery) if n.args.get("watermark")]:
        _replace_watermark(relation)
    where_refs = {}
    for select in tree.find_all(exp.Select):
        _check_positions(select, findings)
        where_refs[id(select)] = _where_alias_refs(select)
        select.meta[_ALIASES] = [i.alias for i in select.expressions if isinstance(i, exp.Alias)]
        for item in select.expressions:
            name = output_name(item)
            if name is not None:
                item.meta[_NAME] = name
    return where_refs


# ---- findings ---------------------------------------------------------------------------

_HINTS = {
    "SS205": "check the spelling against the relation's declared columns (CREATE STREAM/TABLE) "
             "or the view's SELECT list",
    "SS206": "use one of Spark's built-in functions (SHOW FUNCTIONS lists them); "
             "sqlstream does not know user-defined functions",
    "SS207": "qualify it with the relation's name or alias, e.g. f.carrier",
}


def _finding(code: str, message: str, node: exp.Expr | None, kind=UnknownNameError,
             hint: str | None = None) -> SqlStreamError:
    error = kind(message, code=code, hint=hint or _HINTS.get(code))
    offsets = node_offsets(node) if node is not None else None
    error.offset_start, error.offset_end = offsets or (None, None)
    return error


def _check_functions(tree: exp.Expr, sql: str | None, findings: list) -> None:
    """Unknown functions: every call sqlglot does not know; with ``sql``, every call by name."""
    known = known_functions()
    for node in tree.find_all(exp.Func):
        meta = node._meta or {}
        if isinstance(node, exp.Anonymous):
            if isinstance(node.parent, exp.Dot) and node.arg_key == "expression":
                continue  # db.func(…) or a method-like call: not ours to judge
            name = node.name
        elif sql is not None and meta.get("start") is not None and meta.get("end") is not None:
            name = sql[meta["start"]:meta["end"] + 1]
            if not _IDENTIFIER.match(name) or not sql[meta["end"] + 1:].lstrip().startswith("("):
                continue
        else:
            continue
        if name.lower() not in known:
            error = _finding("SS206", f"unknown function '{name}'"
                             f"{did_you_mean(name, known - _TABLE_FUNCTIONS)}", node)
            if meta.get("start") is not None and meta.get("end") is not None:
                error.offset_start, error.offset_end = meta["start"], meta["end"] + 1
            findings.append(error)


class _Sources:
    """The relations a SELECT scope reads: name → lower-case column names, ``None`` if unknown."""

    def __init__(self, scope: Scope, schemas: Mapping[str, list[str]]):
        self.local: dict[str, list[str] | None] = {}
        selected = dict(scope.selected_sources)
        for join in scope.expression.args.get("joins") or []:  # LEFT SEMI/ANTI sides too
            name = join.this.alias_or_name
            if name in scope.sources and name not in selected:
                selected[name] = (join.this, scope.sources[name])
        for name, (node, source) in selected.items():
            columns = None
            if node is not None and getattr(node, "alias_column_names", None):
                columns = [c.lower() for c in node.alias_column_names]
            elif isinstance(source, exp.Table):
                columns = schemas.get(source.name.lower())
            elif isinstance(source, Scope) and isinstance(source.expression, (exp.Select, exp.SetOperation)):
                selects = source.expression.selects
                if not any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects):
                    columns = [s.alias_or_name.lower() for s in selects]
            self.local[name] = columns
        self.outer: dict[str, list[str] | None] = {}
        parent, child = scope.parent, scope
        while parent is not None and (child.is_subquery or child.can_be_correlated):
            for name, columns in _Sources(parent, schemas).local.items():
                self.outer.setdefault(name, columns)
            parent, child = parent.parent, parent
        self.incomplete = any(c is None for c in (*self.local.values(), *self.outer.values()))


def _suggestion(name: str, candidates: list[str], listed: int = 8) -> str:
    """``; did you mean 'x'?``, or when nothing is close, the columns there are (up to ``listed``)."""
    close = did_you_mean(name, candidates)
    if close or not candidates:
        return close
    shown = list(dict.fromkeys(candidates))
    more = ", …" if len(shown) > listed else ""
    return f" (its columns: {', '.join(shown[:listed])}{more})"


def _lambda_variable(column: exp.Column) -> bool:
    node = column.parent
    while node is not None:
        if isinstance(node, exp.Lambda) and column.name in {v.name for v in node.expressions}:
            return True
        node = node.parent
    return False


def _check_columns(scopes: list[Scope], schemas, case: dict[str, str], where_refs, findings: list) -> None:
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        sources = _Sources(scope, schemas)
        pseudo = {n.name.lower() for n in select.find_all(exp.Anonymous) if n.name.lower() in WINDOW_FUNCTIONS}
        aliases = select.meta.get(_ALIASES, [])
        from_where = {id(c) for c in where_refs.get(id(select), ())}
        columns_named = [case.get(c, c) for cols in sources.local.values() for c in cols or ()]
        where = " (a select alias is not visible in WHERE)"
        single = next(iter(sources.local)) if len(sources.local) == 1 else None
        having = [c for c in select.args["having"].find_all(exp.Column)
                  if not c.table and c.find_ancestor(exp.Select) is select and not _lambda_variable(c)
                  ] if select.args.get("having") else []  # sqlglot leaves them out of scope.columns
        for column in [*scope.columns, *where_refs.get(id(select), ()), *having]:
            name, table = column.name, column.table
            lowered = name.lower()
            if table:
                columns = sources.local.get(table, sources.outer.get(table, False))
                lateral = table.lower() in {a.lower() for a in aliases}  # `SELECT s AS t, t.a`
                if columns is False and table.lower() not in pseudo and not lateral and not sources.incomplete:
                    findings.append(_finding(
                        "SS205", f"unknown column '{table}.{name}'{did_you_mean(name, columns_named + aliases)}", column))
                elif columns and lowered not in columns:
                    findings.append(_finding("SS205", f"unknown column '{name}' in {table}"
                                             + _suggestion(name, [case.get(c, c) for c in columns]), column))
                continue
            if lowered in pseudo or sources.incomplete:
                continue
            owners = [n for n, cols in sources.local.items() if lowered in cols]
            if len(owners) > 1:
                findings.append(_finding("SS207", f"column '{name}' is ambiguous: it is a column of "
                                         + " and ".join(owners) + "; qualify it", column))
            elif not owners and not any(lowered in cols for cols in sources.outer.values()):
                if id(column) in from_where or lowered not in {a.lower() for a in aliases}:
                    place = f" in {single}" if single and single != _ROW else ""
                    why = where if id(column) in from_where else ""
                    candidates = columns_named if why else columns_named + aliases
                    suggestion = _suggestion(name, candidates) if place and not why else \
                        did_you_mean(name, candidates)
                    findings.append(_finding("SS205", f"unknown column '{name}'{place}{why}"
                                             + suggestion, column))


def _window_columns(scopes: list[Scope]) -> None:
    """``window`` / ``window.start`` next to ``GROUP BY window(…)`` → that call (for typing)."""
    for scope in scopes:
        calls = {n.name.lower(): n for n in scope.expression.find_all(exp.Anonymous)
                 if n.name.lower() in WINDOW_FUNCTIONS}
        for column in scope.columns if calls else ():
            if not column.table and column.name.lower() in calls:
                column.replace(calls[column.name.lower()].copy())
            elif column.table.lower() in calls and column.table not in scope.sources:
                column.replace(exp.Dot(this=calls[column.table.lower()].copy(), expression=column.this))


_TVF_COLUMNS = {"window_start", "window_end", "window_time"}  # Spark gets them from the window


def _grouping_keys(select: exp.Select) -> list[exp.Expr] | None:
    """The grouping expressions of ``select`` (inside ROLLUP/CUBE/GROUPING SETS too), ``[]``
    without GROUP BY; ``None`` for ``GROUP BY ALL`` or a key ``qualify`` left as an ordinal."""
    group = select.args.get("group")
    if group is None:
        return []
    if group.args.get("all"):
        return None
    keys, pending = [], [v for k, v in group.args.items() if k != "all" and v]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending += item
        elif isinstance(item, (exp.Rollup, exp.Cube, exp.GroupingSets, exp.Tuple)):
            pending += item.expressions
        elif isinstance(item, exp.Paren):
            pending.append(item.this)
        elif isinstance(item, exp.Expr):
            if isinstance(item, exp.Literal) and item.is_int:
                return None
            keys.append(item)
    return keys


def _ungrouped(node: exp.Expr, keys: list[exp.Expr], scope: Scope, sql: str | None) -> list[exp.Column]:
    """Columns of ``node`` outside aggregate functions and grouping expressions (Spark's
    ``CheckAnalysis.checkValidAggregateExpression``)."""
    if any(node == key for key in keys) or aggregate_call(node, sql):
        return []
    if isinstance(node, (exp.Window, exp.Subquery, exp.Select, exp.Lambda)):
        return []  # window functions, subqueries and lambdas: not judged here
    if isinstance(node, exp.Column):
        local = node.table in scope.sources or not node.table
        return [node] if local and not node.is_star and node.name.lower() not in _TVF_COLUMNS else []
    return [c for child in node.iter_expressions() for c in _ungrouped(child, keys, scope, sql)]


def _check_grouping(scopes: list[Scope], sql: str | None, findings: list) -> None:
    """SS209: a SELECT-list column of an aggregation that is neither grouped nor aggregated
    (Spark: ``MISSING_AGGREGATION``, or ``MISSING_GROUP_BY`` without GROUP BY)."""
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        keys = _grouping_keys(select)
        if keys is None:
            continue
        aggregates = [n for item in select.expressions for n in item.walk()
                      if aggregate_call(n, sql) and n.find_ancestor(exp.Window, exp.Select) is select]
        if not keys and not aggregates:
            continue
        for item in select.expressions:
            for column in _ungrouped(item.unalias(), keys, scope, sql):
                name = _display(column)
                if keys:
                    message = f"column '{name}' is neither in GROUP BY nor inside an aggregate function"
                    hint = f"add {name} to GROUP BY, or aggregate it, e.g. first({name})"
                else:
                    message = (f"column '{name}' is not aggregated, but the query aggregates "
                               "without GROUP BY")
                    hint = f"add GROUP BY {name}, or aggregate it, e.g. first({name})"
                findings.append(_finding("SS209", message, column, SemanticError, hint))


def _display(node: exp.Expr) -> str:
    """A column or field path as the user wrote it, without the qualifier ``qualify`` added."""
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Dot):
        return f"{_display(node.this)}.{node.name}"
    return pretty(node)


def _field_names(dtype: exp.DataType | None) -> list[str] | None:
    if dtype is None or not dtype.is_type(exp.DType.STRUCT) or not dtype.expressions:
        return None
    return [f.name for f in dtype.expressions]


def _check_types(tree: exp.Expr, findings: list) -> None:
    """Type errors Spark is certain to raise at analysis (each verified on Spark 4.1)."""
    numeric = (*INTEGRAL, *FRACTIONAL, "BOOLEAN")
    for node in tree.walk():
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
            fields, base = _field_names(node.this.type), type_of(node.this)
            field = node.expression.name
            if fields is not None and field.lower() not in {f.lower() for f in fields}:
                findings.append(_finding("SS205", f"unknown field '{field}' of {_display(node.this)}"
                                         + did_you_mean(field, fields), node.expression))
            elif base in (*numeric, "STRING", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "BINARY") \
                    or base.startswith("DECIMAL("):
                findings.append(_finding("SS208", f"{_display(node.this)} has type {base}: it has no "
                                         f"field '{field}'", node.expression, SemanticError,
                                         "only STRUCT and MAP values have fields; check the column's type"))
            continue
        if isinstance(node, exp.Anonymous) and node.name.lower() in WINDOW_FUNCTIONS:
            time = node.expressions[0] if node.expressions else None
            if time is not None and (type_of(time) in numeric or type_of(time).startswith("DECIMAL(")):
                findings.append(_finding("SS208", f"the time column of a window has type {type_of(time)}; "
                                         "it must be a TIMESTAMP", time, SemanticError,
                                         "window on a TIMESTAMP column, e.g. CAST(col AS TIMESTAMP) "
                                         "or timestamp_seconds(col) for epoch seconds"))
        elif isinstance(node, (exp.Add, exp.Sub)):
            sides = type_of(node.this), type_of(node.expression)
            if any(s in ("TIMESTAMP", "TIMESTAMP_NTZ") for s in sides) and any(is_numeric(s) for s in sides):
                findings.append(_finding("SS208", f"cannot add or subtract {' and '.join(sides)}",
                                         node, SemanticError,
                                         "add or subtract an INTERVAL, e.g. ts + INTERVAL 1 HOUR"))


# ---- entry points -----------------------------------------------------------------------


def _dedupe(findings: list) -> list:
    seen, result = set(), []
    for finding in findings:
        key = (finding.code, finding.message, getattr(finding, "offset_start", None))
        if key not in seen:
            seen.add(key)
            result.append(finding)
    return sorted(result, key=lambda f: (getattr(f, "offset_start", None) or 0))


def _analyze(expression: exp.Expr, catalog: Mapping[str, Schema], sql: str | None):
    tree = expression.copy()
    findings: list[SqlStreamError] = []
    _check_functions(tree, sql, findings)
    names = {t.name.lower() for t in tree.find_all(exp.Table)}
    known = {name: catalog[name] for name in names if catalog.get(name)}
    case = {c.lower(): c for s in known.values() for c, _ in s}
    group_all = any(g.args.get("all") for g in tree.find_all(exp.Group))  # dropped on the way
    where_refs = _prepare(tree, findings)
    for node in tree.find_all(exp.Expr):
        if _NAME in (node._meta or {}):
            case.setdefault(node.meta[_NAME].lower(), node.meta[_NAME])
    case.update({c: c for c in ("window_start", "window_end", "window_time")})
    mapping = MappingSchema({n: {c: data_type(t) for c, t in s} for n, s in known.items()}, dialect="spark")
    # Only qualify's OptimizeError is expected: `JOIN … USING (c)` with c not a column of
    # both sides, `x.*` of an unknown relation (both Spark errors too: _optimizer_finding).
    # Nothing else was raised by the fast tests, nor by `sqlstream check` over every fixture
    # and example: any other exception is a bug and propagates to the CLI's handler.
    try:
        tree = qualify(tree, schema=mapping, dialect="spark", validate_qualify_columns=False,
                       quote_identifiers=False, identify=False, allow_partial_qualification=True)
    except OptimizeError as error:
        findings += _optimizer_finding(str(error), expression)
        return None, _dedupe(findings)
    schemas = {n: [c.lower() for c, _ in s] for n, s in known.items()}
    scopes = traverse_scope(tree)
    _check_columns(scopes, schemas, case, where_refs, findings)
    _window_columns(scopes)
    if not group_all and not any(f.code in ("SS205", "SS206", "SS207") for f in findings):
        _check_grouping(scopes, sql, findings)
    Annotator(mapping, expression_metadata=EXPRESSION_METADATA).annotate(tree)
    _check_types(tree, findings)
    return _output(tree, case), _dedupe(findings)


def _optimizer_finding(message: str, expression: exp.Expr) -> list[SqlStreamError]:
    """The qualify errors that certainly are Spark errors too; others are dropped."""
    match = re.match(r"Cannot automatically join: (\w+)", message)
    if match:
        name = match.group(1)
        node = next((i for j in expression.find_all(exp.Join) for i in j.args.get("using") or []
                     if i.name.lower() == name.lower()), None)
        return [_finding("SS205", f"USING column '{name}' is not a column of both sides of the join", node)]
    match = re.match(r"Unknown table: (\w+)", message)
    if match:
        node = next((c for c in expression.find_all(exp.Column)
                     if c.is_star and c.table.lower() == match.group(1).lower()), None)
        if node is not None:
            return [_finding("SS205", f"unknown relation '{node.table}' in {node.table}.*", node)]
    return []


def _output(tree: exp.Expr, case: dict[str, str]) -> Schema | None:
    branches = [tree]
    while any(isinstance(b, exp.SetOperation) for b in branches):
        branches = [p for b in branches for p in ((b.left, b.right) if isinstance(b, exp.SetOperation) else (b,))]
    selects = [b.unnest().selects for b in branches]
    if any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in selects[0]):
        return None
    result = []
    for position, item in enumerate(selects[0]):
        name = (item._meta or {}).get(_NAME) or (item.unalias()._meta or {}).get(_NAME)
        name = name or case.get(item.alias_or_name.lower(), item.alias_or_name)
        types = [type_of(s[position]) if position < len(s) else UNKNOWN for s in selects]
        result.append((name, types[0] if len(types) == 1 else common_type(types)))
    return tuple(result)


def query_schema(expression: exp.Expr | str, catalog: Mapping[str, Schema],
                 sql: str | None = None) -> tuple[Schema | None, list[SqlStreamError]]:
    """Return the output schema of a query and the problems found in it.

    Args:
        expression: a tree from :func:`sqlstream.rewrite.rewrite`, or the query's text
            (parsed and rewritten here). The tree is not modified.
        catalog: lower-case relation name → its schema. Relations not in it (unknown, or
            their schema unknown) have unknown columns: never a finding.
        sql: the text ``expression`` was parsed from; with it, every function call is checked
            by the name written (without it, only calls sqlglot does not know).

    Returns:
        ``(schema, findings)``: ``schema`` is ``None`` when its columns cannot be known (a
        ``*`` over an unknown relation); a type that cannot be known is ``UNKNOWN``.
        ``findings`` are :class:`~sqlstream.errors.UnknownNameError` (``SS205`` unknown
        column, ``SS206`` unknown function, ``SS207`` ambiguous column) and
        :class:`~sqlstream.errors.SemanticError` (``SS208`` type error, ``SS209`` column
        neither grouped nor aggregated), in text order, each with
        ``offset_start``/``offset_end`` (end exclusive) within the query text.

    Raises:
        SqlSyntaxError: ``expression`` is text that is not valid Spark SQL.
        Exception: anything else sqlglot raises is a bug (in sqlstream, or sqlglot failing
            on valid SQL) and propagates: it must not read as "no findings".
    """
    if isinstance(expression, str):
        sql, expression = expression, rewrite(parse_query(expression), copy=False)
    return _analyze(expression, catalog, sql)


def expression_type(sql_expression: exp.Expr | str, schema: Schema,
                    sql: str | None = None) -> tuple[str, list[SqlStreamError]]:
    """Return the type of a scalar expression over one row of ``schema`` (a computed column).

    Args:
        sql_expression: the expression's text (e.g. ``dep_delay > 15``) or its parsed tree.
        schema: the columns it may use.
        sql: the text a parsed ``sql_expression`` came from (see :func:`query_schema`).

    Returns:
        ``(type, findings)`` as in :func:`query_schema`; a syntax error is returned as a
        :class:`~sqlstream.errors.SqlSyntaxError` finding with type ``UNKNOWN``.

    Raises:
        Exception: as :func:`query_schema`, only for bugs.
    """
    if isinstance(sql_expression, str):
        sql = sql_expression
        try:
            sql_expression = parse_expression(sql)
        except SqlStreamError as error:
            return UNKNOWN, [error]
    query = exp.Select(expressions=[sql_expression.copy()]).from_(_ROW)
    result, findings = _analyze(query, {_ROW: schema}, sql)
    return (result[0][1] if result else UNKNOWN), findings
