"""Column lineage: what a query's expressions mean in terms of the sources' columns.

The restart guard (:mod:`sqlstream.analysis.state_signature`) compares grouping keys and
aggregates by meaning, not by text: ``origin`` read through ``CREATE VIEW v AS SELECT dest
AS origin FROM raw`` is ``raw.dest``, and a computed column of ``CREATE STREAM`` is its
expression. :func:`resolve` replaces every column of an expression by its definition —
through CTEs, subqueries in ``FROM``, views (their output columns, from
:func:`query_columns`) and a stream's projection (:func:`source_columns`) — down to the
columns a source reads, each printed ``relation.column``. :func:`normalized` then folds the
spellings Spark reads as one: identifiers and function names case-folded (Spark resolves
them case-insensitively by default, ``spark.sql.caseSensitive=false``), intervals and
window durations to one canonical duration, ``COUNT(1)`` / ``COUNT(<non-null literal>)``
as ``COUNT(*)`` (Spark's analyzer rewrites them to ``count(1)``).

A source column whose type is a ``TIMESTAMP`` (with the session's time zone, not
``TIMESTAMP_NTZ``) is marked: :func:`zoned` tells whether an expression's value depends on
``spark.sql.session.timeZone`` (a timestamp parsed from text, a datetime function).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend.literals import duration
from sqlstream.ir import plan
from sqlstream.sql.parsing import to_spark_sql
from sqlstream.sql.tree_walks import copy_tree

Columns = Mapping[str, exp.Expr]
"""Output column (lower case) → its meaning (source columns as ``relation.column``)."""

Definitions = Callable[[str], "Columns | None"]
"""Relation name (lower case) → its columns' meanings; ``None`` for a relation read as it is
(its columns are then ``relation.column``)."""

ZONED = "sqlstream_zoned"
"""``meta`` key set on a source column whose values depend on the session time zone."""

_ZONED_FUNCTIONS = {
    "current_timestamp",
    "now",
    "current_date",
    "localtimestamp",
    "to_timestamp",
    "unix_timestamp",
    "to_unix_timestamp",
    "from_unixtime",
    "date_format",
    "from_utc_timestamp",
    "to_utc_timestamp",
    "timestamp_seconds",
    "timestamp_millis",
    "timestamp_micros",
}
"""Spark functions whose value depends on ``spark.sql.session.timeZone`` whatever their
arguments (they read or print a wall-clock time)."""

_WINDOWS = {"window", "session_window"}


def _base(relation: str, name: str, zoned: bool = False) -> exp.Column:
    column = exp.column(name.lower(), table=relation.lower())
    if zoned:
        column.meta[ZONED] = True
    return column


def _zoned_type(type_name: str | None) -> bool:
    text = (type_name or "").upper()
    return text.startswith("TIMESTAMP") and "NTZ" not in text


def source_columns(
    source: plan.SourceRelation, parse: Callable[[str], exp.Expr]
) -> dict[str, exp.Expr] | None:
    """The meaning of each column a stream or table declares.

    Args:
        source: the source read.
        parse: parses one projection item (a Spark SQL expression, maybe aliased).

    Returns:
        Column (lower case) → its expression over the columns as read (``relation.column``,
        marked :data:`ZONED` when a ``TIMESTAMP``); ``None`` when the columns are only known
        at run time.
    """
    read = {n.lower(): t for n, t in source.read_columns or source.columns or ()}
    declared = {n.lower(): t for n, t in source.columns or ()}

    def base(name: str) -> exp.Expr:
        return _base(source.name, name, _zoned_type(read.get(name.lower())))

    if not source.projection:
        if source.columns is None:
            return None
        return {n.lower(): base(n) for n, _ in source.columns}
    found: dict[str, exp.Expr] = {}
    for item in source.projection:
        try:
            node = parse(item)
        except SqlStreamError:  # a projection the compiler made: unreadable is opaque
            return None
        name = node.alias_or_name.lower()
        body = node.this if isinstance(node, exp.Alias) else node
        resolved = copy_tree(body).transform(
            lambda n: base(n.name) if isinstance(n, exp.Column) and not n.table else n,
            copy=False,
        )
        if _zoned_type(declared.get(name)) and isinstance(resolved, exp.Column):
            resolved.meta[ZONED] = True
        found[name] = resolved
    return found


class _Scope:
    """The relations one ``SELECT`` reads: alias → (relation name, its columns or ``None``)."""

    def __init__(self, sources: dict[str, tuple[str, Columns | None]]) -> None:
        self.sources = sources

    def column(self, column: exp.Column) -> exp.Expr:
        name, table = column.name.lower(), column.table.lower()
        if table:
            if table not in self.sources:
                return exp.column(name, table=table)
            candidates = [self.sources[table]]
        else:
            candidates = list(self.sources.values())
        for _, columns in candidates:
            if columns is not None and name in columns:
                return copy_tree(columns[name])
        opaque = [relation for relation, columns in candidates if columns is None]
        if len(opaque) == 1 or len(candidates) == 1:
            return _base((opaque or [candidates[0][0]])[0], name)
        return exp.column(name)


def _ctes(node: exp.Expr, ctes: Mapping[str, exp.Expr]) -> dict[str, exp.Expr]:
    found = dict(ctes)
    with_ = node.args.get("with_")
    for cte in with_.expressions if with_ is not None else ():
        found[cte.alias.lower()] = cte.this
    return found


def ctes_in_scope(node: exp.Expr) -> dict[str, exp.Expr]:
    """The CTEs ``node`` sees: those of every query around it (inner ones win)."""
    chain = []
    parent: exp.Expr | None = node
    while parent is not None:
        chain.append(parent)
        parent = parent.parent
    found: dict[str, exp.Expr] = {}
    for outer in reversed(chain):
        found = _ctes(outer, found)
    return found


class Lineage:
    """Resolves expressions of one query tree to their meaning over the sources' columns.

    Args:
        definitions: the columns' meanings of the relations the tree reads by name.
    """

    def __init__(self, definitions: Definitions) -> None:
        self.definitions = definitions
        self._scopes: dict[int, tuple[exp.Select, _Scope]] = {}  # id(select) → its scope

    def scope(self, select: exp.Select, ctes: Mapping[str, exp.Expr]) -> _Scope:
        """The relations ``select`` reads in ``FROM`` and its joins."""
        source = select.args.get("from_")
        nodes = [source.this] if source is not None else []
        nodes += [join.this for join in select.args.get("joins") or ()]
        sources: dict[str, tuple[str, Columns | None]] = {}
        for node in nodes:
            alias = node.alias_or_name.lower()
            if isinstance(node, exp.Table):
                name = node.name.lower()
                if name in ctes and not node.db:
                    sources[alias] = (name, self.columns(ctes[name], ctes))
                else:
                    sources[alias] = (name, self.definitions(name))
            elif isinstance(node, exp.Subquery):
                sources[alias] = (alias, self.columns(node.this, ctes))
            else:
                sources[alias] = (alias, None)
        return _Scope(sources)

    def columns(self, query: exp.Expr, ctes: Mapping[str, exp.Expr]) -> Columns | None:
        """The meaning of each output column of ``query`` (a ``SELECT``, a set operation —
        each column the tuple of its branches' — or a subquery); ``None`` when unknown."""
        if isinstance(query, exp.Subquery):
            return self.columns(query.this, ctes)
        ctes = _ctes(query, ctes)
        if isinstance(query, exp.SetOperation):
            left = self.columns(query.this, ctes)
            right = self.columns(query.expression, ctes)
            if left is None or right is None:
                return None
            return {
                name: exp.Tuple(expressions=[a.copy(), b.copy()])
                for (name, a), b in zip(left.items(), right.values(), strict=False)
            }
        if not isinstance(query, exp.Select):
            return None
        scope = self.scope(query, ctes)
        found: dict[str, exp.Expr] = {}
        for item in query.expressions:
            if isinstance(item, exp.Star) or (
                isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
            ):
                table = item.table.lower() if isinstance(item, exp.Column) else ""
                for alias, (_, columns) in scope.sources.items():
                    if columns is None or (table and alias != table):
                        continue
                    for name, meaning in columns.items():
                        found.setdefault(name, meaning)
                continue
            body = item.this if isinstance(item, exp.Alias) else item
            found[item.alias_or_name.lower()] = self._swap(body, scope)
        return found

    def _swap(self, node: exp.Expr, scope: _Scope) -> exp.Expr:
        return copy_tree(node).transform(
            lambda n: (
                scope.column(n)
                if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star)
                else n
            ),
            copy=False,
        )

    def resolve(self, node: exp.Expr, select: exp.Select) -> exp.Expr:
        """``node`` (an expression of ``select``) with every column replaced by its
        meaning over the sources' columns (a copy; ``node`` is left alone)."""
        kept = self._scopes.get(id(select))
        if kept is None or kept[0] is not select:
            kept = select, self.scope(select, ctes_in_scope(select))
            self._scopes[id(select)] = kept
        return self._swap(node, kept[1])


def _duration_text(text: str, whole: bool) -> str | None:
    try:
        value = duration(text)
    except ValueError:
        return None
    if whole:  # a window's length: Spark counts a day as 24 hours and refuses months
        micros = value.days * 86_400_000_000 + value.microseconds
        return f"{value.months} months {micros} microseconds"
    return f"{value.months} months {value.days} days {value.microseconds} microseconds"


def _normal(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Column):
        return exp.column(node.name.lower(), table=node.table.lower() or None)
    if isinstance(node, exp.Anonymous):
        node.set("this", node.name.lower())
        if node.name in _WINDOWS:
            for i, argument in enumerate(node.expressions[1:], start=1):
                if isinstance(argument, exp.Literal) and argument.is_string:
                    text = _duration_text(argument.this, whole=True)
                    if text is not None:
                        node.expressions[i].replace(exp.Literal.string(text))
        return node
    if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal):
        unit = node.args.get("unit")
        text = _duration_text(f"{node.this.this} {unit.name if unit else ''}", whole=False)
        if text is not None:
            return exp.Interval(this=exp.Literal.string(text))
    if (
        isinstance(node, exp.Count)
        and isinstance(node.this, exp.Literal)
        and not isinstance(node.this, exp.Null)
    ):
        return exp.Count(this=exp.Star())
    return node


def normalized(node: exp.Expr) -> exp.Expr:
    """``node`` with equal spellings folded (see the module's docstring): a new tree."""
    return copy_tree(node).transform(_normal, copy=False)


def _function_name(call: exp.Func) -> str:
    """The name Spark knows ``call`` by (sqlglot's class names differ: ``TimeToStr`` is
    ``date_format``)."""
    if isinstance(call, exp.Anonymous):
        return call.name.lower()
    return to_spark_sql(call).split("(", 1)[0].strip().lower()


def zoned(node: exp.Expr) -> bool:
    """The value of ``node`` (a resolved expression) depends on the session time zone: it
    reads a source's ``TIMESTAMP`` column, casts to a timestamp or calls a function of
    :data:`_ZONED_FUNCTIONS`."""
    for part in node.walk():
        if isinstance(part, exp.Column) and part.meta.get(ZONED):
            return True
        if isinstance(part, exp.Cast) and _zoned_type(part.to.sql()):
            return True
        if isinstance(part, exp.Func) and _function_name(part) in _ZONED_FUNCTIONS:
            return True
    return False
