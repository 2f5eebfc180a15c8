"""Findings on a qualified query tree, as Spark's analyzer raises them (no JVM).

:mod:`sqlstream.analysis.schema` prepares a copy of a query, lets sqlglot's ``qualify`` resolve its
names and runs these checks over the result: unknown functions (``SS206``, by the name
written, against ``spark_functions_<X.Y>.txt`` of the target Spark), unknown and ambiguous columns (``SS205``,
``SS207``; Spark's ``UNRESOLVED_COLUMN`` / ``AMBIGUOUS_REFERENCE``), columns neither grouped
nor aggregated (``SS209``, ``MISSING_AGGREGATION``) and type errors Spark is certain to raise
(``SS208``, ``DATATYPE_MISMATCH``). Each finding carries offsets within the query text (end
exclusive); the caller positions it in the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from sqlstream.analysis.naming import pretty
from sqlstream.analysis.spark_types import (
    FRACTIONAL,
    INTEGRAL,
    WINDOW_FUNCTIONS,
    aggregate_call,
    known_functions,
    type_of,
)
from sqlstream.analysis.type_rules import is_numeric
from sqlstream.diagnostics.errors import (
    ForeignSpellingError,
    SemanticError,
    SqlStreamError,
    UnknownNameError,
    did_you_mean,
)
from sqlstream.ir.context import CompileContext
from sqlstream.sql.dialect import Watermark as WatermarkClause
from sqlstream.sql.foreign import FOREIGN_FUNCTIONS
from sqlstream.sql.parsing import node_offsets
from sqlstream.sql.tree_walks import find_all

ROW = "__sqlstream_row"  # internal: the relation of expression_type()
TABLE_FUNCTIONS = {"range", "sql_keywords", "variant_explode", "variant_explode_outer"}  # FROM only
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
ALIASES = "sqlstream_aliases"  # meta key: the aliases a SELECT was written with
ROW_TABLE = exp.Table(this=exp.to_identifier(ROW))


_HINTS = {
    "SS205": "check the spelling against the relation's declared columns (CREATE STREAM/TABLE) "
    "or the view's SELECT list",
    "SS206": "use one of Spark's built-in functions (SHOW FUNCTIONS lists them); "
    "or declare your own with CREATE FUNCTION (docs/dialect.md#create-function)",
    "SS207": "qualify it with the relation's name or alias, e.g. f.carrier",
}


def finding(
    code: str, message: str, node: exp.Expr | None, kind=UnknownNameError, hint: str | None = None
) -> SqlStreamError:
    """A finding of ``kind`` (an :class:`~sqlstream.diagnostics.errors.SqlStreamError` subclass) with
    ``code``, ``message`` and a hint (``hint``, else the code's usual one), carrying the
    offsets of ``node`` within the query text (``offset_start``/``offset_end``, end
    exclusive; ``None`` without a node or positions)."""
    error = kind(message, code=code, hint=hint or _HINTS.get(code))
    offsets = node_offsets(node) if node is not None else None
    error.offset_start, error.offset_end = offsets or (None, None)
    return error


def check_functions(
    tree: exp.Expr, sql: str | None, findings: list, context: CompileContext
) -> None:
    """Unknown functions: every call sqlglot does not know; with ``sql``, every call by name
    (against the functions of ``context``'s Spark minor and its user functions, whose
    argument counts are checked, ``SS273``). And ``SS338``: a ``WATERMARK <column> DELAY OF
    <interval>`` clause when judging for Spark 4.0, whose SQL parser lacks it
    (``PARSE_SYNTAX_ERROR``; 4.1 added ``watermarkClause``, measured on 4.0.5 and 4.1.4)."""
    defined = context.functions
    if not context.at_least("4.1"):
        for clause in find_all(tree, WatermarkClause):
            findings.append(
                finding(
                    "SS338",
                    f"Spark {context.spark_version} has no WATERMARK … DELAY OF clause in "
                    "SQL (Spark 4.1 added it)",
                    clause,
                    kind=SemanticError,
                    hint="declare the watermark on the stream: WATERMARK FOR ts AS ts - INTERVAL …",
                )
            )
    known = known_functions(context.spark_version)
    for node in find_all(tree, exp.Func):
        meta = node._meta or {}
        if isinstance(node, exp.Anonymous):
            if isinstance(node.parent, exp.Dot) and node.arg_key == "expression":
                continue  # db.func(…) or a method-like call: not ours to judge
            name = node.name
        elif sql is not None and meta.get("start") is not None and meta.get("end") is not None:
            name = sql[meta["start"] : meta["end"] + 1]
            if not IDENTIFIER.match(name) or not sql[meta["end"] + 1 :].lstrip().startswith("("):
                continue
        else:
            continue
        user = defined.get(name.lower())
        if user is not None:
            _check_arity(node, user, meta, findings)
        elif name.lower() in FOREIGN_FUNCTIONS:
            message, hint = FOREIGN_FUNCTIONS[name.lower()]
            error = finding("SS260", message, node, kind=ForeignSpellingError, hint=hint)
            if meta.get("start") is not None and meta.get("end") is not None:
                error.offset_start, error.offset_end = meta["start"], meta["end"] + 1
            findings.append(error)
        elif name.lower() not in known:
            error = finding(
                "SS206",
                f"unknown function '{name}'"
                f"{did_you_mean(name, (known - TABLE_FUNCTIONS) | set(defined))}",
                node,
            )
            if meta.get("start") is not None and meta.get("end") is not None:
                error.offset_start, error.offset_end = meta["start"], meta["end"] + 1
            findings.append(error)


def _check_arity(node: exp.Func, user, meta: dict, findings: list) -> None:
    """``SS273``: a call of a user-defined function with an argument count it does not take."""
    count = (
        len(node.expressions)
        if isinstance(node, exp.Anonymous)
        else len([a for a in node.args.values() if a is not None])
    )
    if count >= user.min_args and (user.max_args is None or count <= user.max_args):
        return
    error = finding(
        "SS273",
        f"{user.name} takes {user.arity_text()} argument(s), this call gives {count}",
        node,
        kind=SemanticError,
        hint=f"{user.name}({', '.join(f'{n} {t}' for n, t in user.parameters)}) "
        f"is defined at line {user.span.line}",
    )
    findings.append(error)


class _Sources:
    """The relations a SELECT scope reads: name → lower-case column names, ``None`` if unknown.

    ``local``: the scope's own FROM/JOIN relations; ``outer``: those of the enclosing scopes
    a correlated subquery sees (nearest first). ``cache`` (``id(scope)`` → local relations)
    lets :func:`check_columns` compute each scope's relations once, so a query of ``d``
    nested subqueries costs ``O(d²)`` lookups, not ``2^d``.
    """

    def __init__(
        self,
        scope: Scope,
        schemas: Mapping[str, list[str]],
        cache: dict[int, dict[str, list[str] | None]] | None = None,
    ):
        cache = {} if cache is None else cache
        self.local = _local_sources(scope, schemas, cache)
        self.outer: dict[str, list[str] | None] = {}
        parent: Scope | None
        parent, child = scope.parent, scope
        while parent is not None and (child.is_subquery or child.can_be_correlated):
            for name, columns in _local_sources(parent, schemas, cache).items():
                self.outer.setdefault(name, columns)
            child = parent
            parent = parent.parent
        self.incomplete = any(c is None for c in (*self.local.values(), *self.outer.values()))


def _local_sources(
    scope: Scope, schemas: Mapping[str, list[str]], cache: dict[int, dict[str, list[str] | None]]
) -> dict[str, list[str] | None]:
    """The relations ``scope`` itself reads (FROM, JOINs, LEFT SEMI/ANTI sides): name →
    lower-case column names, ``None`` if unknown; memoised in ``cache`` by ``id(scope)``."""
    if id(scope) in cache:
        return cache[id(scope)]
    local: dict[str, list[str] | None] = {}
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
        elif isinstance(source, Scope) and isinstance(
            source.expression, (exp.Select, exp.SetOperation)
        ):
            selects = source.expression.selects
            if not any(
                isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star)
                for s in selects
            ):
                columns = [s.alias_or_name.lower() for s in selects]
        local[name] = columns
    cache[id(scope)] = local
    return local


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


def check_columns(
    scopes: list[Scope], schemas, case: dict[str, str], where_refs, findings: list
) -> None:
    """Append to ``findings`` the unknown (``SS205``) and ambiguous (``SS207``) columns of
    each SELECT scope of a qualified tree, as Spark's ``UNRESOLVED_COLUMN`` /
    ``AMBIGUOUS_REFERENCE``. ``schemas``: lower-case relation → lower-case column names
    (relations not in it have unknown columns: never a finding); ``case``: lower-case
    name → the spelling to show; ``where_refs``: ``id(SELECT)`` → the unqualified WHERE
    columns named like one of its select aliases (Spark does not see aliases there)."""
    cache: dict[int, dict[str, list[str] | None]] = {}
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        sources = _Sources(scope, schemas, cache)
        pseudo = {
            n.name.lower()
            for n in find_all(select, exp.Anonymous)
            if n.name.lower() in WINDOW_FUNCTIONS
        }
        aliases = select.meta.get(ALIASES, [])
        from_where = {id(c) for c in where_refs.get(id(select), ())}
        columns_named = [case.get(c, c) for cols in sources.local.values() for c in cols or ()]
        where = " (a select alias is not visible in WHERE)"
        single = next(iter(sources.local)) if len(sources.local) == 1 else None
        having = (
            [
                c
                for c in find_all(select.args["having"], exp.Column)
                if not c.table and c.find_ancestor(exp.Select) is select and not _lambda_variable(c)
            ]
            if select.args.get("having")
            else []
        )  # sqlglot leaves them out of scope.columns
        for column in [*scope.columns, *where_refs.get(id(select), ()), *having]:
            name, table = column.name, column.table
            lowered = name.lower()
            if table:
                columns = sources.local.get(table, sources.outer.get(table, False))
                lateral = table.lower() in {a.lower() for a in aliases}  # `SELECT s AS t, t.a`
                # `w.end` where `w` is no relation but a column (a struct; a USING key too):
                # Spark resolves it as the field `end` of column `w` (its ResolveReferences
                # tries relation.column first, then column.field)
                field = columns is False and any(
                    table.lower() in (cols or ())
                    for cols in (*sources.local.values(), *sources.outer.values())
                )
                if field:
                    continue
                if (
                    columns is False
                    and table.lower() not in pseudo
                    and not lateral
                    and not sources.incomplete
                ):
                    findings.append(
                        finding(
                            "SS205",
                            f"unknown column '{table}.{name}'{did_you_mean(name, columns_named + aliases)}",
                            column,
                        )
                    )
                elif columns and isinstance(columns, list) and lowered not in columns:
                    findings.append(
                        finding(
                            "SS205",
                            f"unknown column '{name}' in {table}"
                            + _suggestion(name, [case.get(c, c) for c in columns]),
                            column,
                        )
                    )
                continue
            if lowered in pseudo or sources.incomplete:
                continue
            owners = [n for n, cols in sources.local.items() if lowered in (cols or ())]
            if len(owners) > 1:
                findings.append(
                    finding(
                        "SS207",
                        f"column '{name}' is ambiguous: it is a column of "
                        + " and ".join(owners)
                        + "; qualify it",
                        column,
                    )
                )
            elif (
                not owners
                and not any(lowered in (cols or ()) for cols in sources.outer.values())
                and (id(column) in from_where or lowered not in {a.lower() for a in aliases})
            ):
                place = f" in {single}" if single and single != ROW else ""
                why = where if id(column) in from_where else ""
                candidates = columns_named if why else columns_named + aliases
                suggestion = (
                    _suggestion(name, candidates)
                    if place and not why
                    else did_you_mean(name, candidates)
                )
                findings.append(
                    finding("SS205", f"unknown column '{name}'{place}{why}" + suggestion, column)
                )


def window_columns(scopes: list[Scope]) -> None:
    """``window`` / ``window.start`` next to ``GROUP BY window(…)`` → that call (for typing)."""
    for scope in scopes:
        calls = {
            n.name.lower(): n
            for n in find_all(scope.expression, exp.Anonymous)
            if n.name.lower() in WINDOW_FUNCTIONS
        }
        for column in scope.columns if calls else ():
            if not column.table and column.name.lower() in calls:
                column.replace(calls[column.name.lower()].copy())
            elif column.table.lower() in calls and column.table not in scope.sources:
                column.replace(
                    exp.Dot(this=calls[column.table.lower()].copy(), expression=column.this)
                )


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


def _same(a: exp.Expr, b: exp.Expr) -> bool:
    """``a`` and ``b`` are the same expression as Spark resolves names: identifiers compare
    by name, whatever their case or quotes (``spark.sql.caseSensitive`` is false by
    default; sqlglot's ``==`` tells `` `b` `` from ``b``)."""
    if a == b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, exp.Identifier):
        return a.name.lower() == b.name.lower()
    for key in a.args.keys() | b.args.keys():
        x, y = a.args.get(key), b.args.get(key)
        if isinstance(x, list) or isinstance(y, list):
            x, y = x or [], y or []
            if len(x) != len(y) or not all(
                _same(i, j) if isinstance(i, exp.Expr) and isinstance(j, exp.Expr) else i == j
                for i, j in zip(x, y, strict=True)
            ):
                return False
        elif isinstance(x, exp.Expr) and isinstance(y, exp.Expr):
            if not _same(x, y):
                return False
        elif x != y and (x or y):
            return False
    return True


def _ungrouped(
    node: exp.Expr, keys: list[exp.Expr], scope: Scope, sql: str | None, version: str
) -> list[exp.Column]:
    """Columns of ``node`` outside aggregate functions and grouping expressions (Spark's
    ``CheckAnalysis.checkValidAggregateExpression``)."""
    if (
        any(_same(node, key) for key in keys)
        or aggregate_call(node, version, sql)
        or (isinstance(node, exp.Filter) and aggregate_call(node.this, version, sql))
    ):
        return []  # an aggregate's FILTER (WHERE …) reads each input row, as its arguments do
    if isinstance(node, (exp.Window, exp.Subquery, exp.Select, exp.Lambda)):
        return []  # window functions, subqueries and lambdas: not judged here
    if isinstance(node, exp.Column):
        local = node.table in scope.sources or not node.table
        return (
            [node] if local and not node.is_star and node.name.lower() not in _TVF_COLUMNS else []
        )
    return [
        c for child in node.iter_expressions() for c in _ungrouped(child, keys, scope, sql, version)
    ]


def check_grouping(scopes: list[Scope], sql: str | None, findings: list, version: str) -> None:
    """SS209: a SELECT-list column of an aggregation that is neither grouped nor aggregated
    (Spark: ``MISSING_AGGREGATION``, or ``MISSING_GROUP_BY`` without GROUP BY); aggregate
    functions are those of Spark ``version`` (a major.minor)."""
    for scope in scopes:
        select = scope.expression
        if not isinstance(select, exp.Select):
            continue
        keys = _grouping_keys(select)
        if keys is None:
            continue
        aggregates = [
            n
            for item in select.expressions
            for n in find_all(item, exp.Expr)
            if aggregate_call(n, version, sql) and n.find_ancestor(exp.Window, exp.Select) is select
        ]
        if not keys and not aggregates:
            continue
        for item in select.expressions:
            for column in _ungrouped(item.unalias(), keys, scope, sql, version):
                name = _display(column)
                if keys:
                    message = (
                        f"column '{name}' is neither in GROUP BY nor inside an aggregate function"
                    )
                    hint = f"add {name} to GROUP BY, or aggregate it, e.g. first({name})"
                else:
                    message = (
                        f"column '{name}' is not aggregated, but the query aggregates "
                        "without GROUP BY"
                    )
                    hint = f"add GROUP BY {name}, or aggregate it, e.g. first({name})"
                findings.append(finding("SS209", message, column, SemanticError, hint))


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


def check_types(tree: exp.Expr, findings: list) -> None:
    """Type errors Spark is certain to raise at analysis (each verified on Spark 4.1)."""
    numeric = (*INTEGRAL, *FRACTIONAL, "BOOLEAN")
    for node in find_all(tree, exp.Expr):
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Identifier):
            fields, base = _field_names(node.this.type), type_of(node.this)
            field = node.expression.name
            if fields is not None and field.lower() not in {f.lower() for f in fields}:
                findings.append(
                    finding(
                        "SS205",
                        f"unknown field '{field}' of {_display(node.this)}"
                        + did_you_mean(field, fields),
                        node.expression,
                    )
                )
            elif base in (
                *numeric,
                "STRING",
                "DATE",
                "TIMESTAMP",
                "TIMESTAMP_NTZ",
                "BINARY",
            ) or base.startswith("DECIMAL("):
                findings.append(
                    finding(
                        "SS208",
                        f"{_display(node.this)} has type {base}: it has no field '{field}'",
                        node.expression,
                        SemanticError,
                        "only STRUCT and MAP values have fields; check the column's type",
                    )
                )
            continue
        if isinstance(node, exp.Anonymous) and node.name.lower() in WINDOW_FUNCTIONS:
            time = node.expressions[0] if node.expressions else None
            if time is not None and (
                type_of(time) in numeric or type_of(time).startswith("DECIMAL(")
            ):
                findings.append(
                    finding(
                        "SS208",
                        f"the time column of a window has type {type_of(time)}; "
                        "it must be a TIMESTAMP",
                        time,
                        SemanticError,
                        "window on a TIMESTAMP column, e.g. CAST(col AS TIMESTAMP) "
                        "or timestamp_seconds(col) for epoch seconds",
                    )
                )
        elif isinstance(node, (exp.Add, exp.Sub)):
            sides = type_of(node.this), type_of(node.expression)
            if any(s in ("TIMESTAMP", "TIMESTAMP_NTZ") for s in sides) and any(
                is_numeric(s) for s in sides
            ):
                findings.append(
                    finding(
                        "SS208",
                        f"cannot add or subtract {' and '.join(sides)}",
                        node,
                        SemanticError,
                        "add or subtract an INTERVAL, e.g. ts + INTERVAL 1 HOUR",
                    )
                )
