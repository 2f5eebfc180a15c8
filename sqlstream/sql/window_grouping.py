"""A window TVF's aggregated scope: its window keys made one key, its window columns read
from the window's struct.

Under ``GROUP BY window_start, window_end`` (bare, or qualified by the TVF's alias or
relation name: :func:`window_ref`), :func:`group_by_window` groups the SELECT by the window
call(s) in place of those keys and reads ``window_start`` / ``window_end`` / ``window_time``
through the struct's fields; a bare ``window_time`` select item is computed one query up
(``window_time(__window)``), the only place Spark accepts it (:mod:`sqlstream.sql.window_tvfs`
says why). Used by TUMBLE, HOP and SESSION (:mod:`sqlstream.sql.window_tvfs`) and CUMULATE
(:mod:`sqlstream.sql.cumulate`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from sqlstream.sql.dialect import SqlStream, WindowTVF
from sqlstream.sql.window_durations import window_error

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
HIDDEN_WINDOW = "__window"


def window_ref(node: exp.Expr, qualifiers: set[str]) -> str | None:
    """Return ``window_start``/``window_end``/``window_time`` if ``node`` names one of the TVF's."""
    if not isinstance(node, exp.Column) or node.name.lower() not in WINDOW_COLUMNS:
        return None
    if node.args.get("db") or (node.table and node.table.lower() not in qualifiers):
        return None
    return node.name.lower()


def _scope_nodes(root: exp.Expr):
    """Nodes of ``root`` that belong to the current SELECT scope (not nested queries)."""
    return [
        node
        for node in root.walk(prune=lambda n: isinstance(n, exp.Query) and n is not root)
        if not (isinstance(node, exp.Query) and node is not root)
    ]


def _replace_refs(
    root: exp.Expr, qualifiers: set[str], fields: Callable[[str], exp.Expr]
) -> exp.Expr:
    for node in _scope_nodes(root):
        ref = window_ref(node, qualifiers)
        if ref:
            replacement = fields(ref)
            if node is root:
                return replacement
            node.replace(replacement)
    return root


def _output_name(item: exp.Expr) -> str | None:
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, (exp.Column, exp.Dot)) and not isinstance(item.this, exp.Star):
        return item.name or None
    return None


def _expression_name(item: exp.Expr) -> str:
    # Close to (not always equal to) Spark's automatic name: lower-case function names.
    return item.sql(dialect=SqlStream, normalize_functions="lower", comments=False)


def minus_micro(end: exp.Expr) -> exp.Expr:
    """``end - INTERVAL '1' MICROSECOND``: a window's ``window_time`` read from its end."""
    return exp.Sub(
        this=end, expression=exp.Interval(this=exp.Literal.string("1"), unit=exp.var("MICROSECOND"))
    )


def group_by_window(
    select: exp.Select,
    tvf: WindowTVF,
    qualifiers: set[str],
    calls: Sequence[exp.Expr],
    relation: exp.Expr,
    fields: Callable[[str], exp.Expr],
    struct: str,
) -> exp.Expr:
    """Group ``select`` by ``calls`` in place of its window keys, read the window columns
    through ``fields``, and put ``relation`` in place of the TVF (see the module docstring)."""
    group = select.args["group"]
    for key in tvf.args.get("partition_by") or []:
        if not any(
            isinstance(k, exp.Column) and k.name.lower() == key.name.lower()
            for k in group.expressions
        ):
            raise window_error(
                f"SESSION PARTITION BY {key.name} needs {key.name} in GROUP BY",
                key,
                hint=f"GROUP BY window_start, window_end, {key.name}",
            )
    new_keys: list[exp.Expr] = []
    for key in group.expressions:
        if not window_ref(key, qualifiers):
            new_keys.append(key)
        elif calls[0] not in new_keys:
            new_keys.extend(calls)
    group.set("expressions", new_keys)
    tvf.replace(relation)

    items = select.expressions
    bare = {
        i for i, item in enumerate(items) if window_ref(item.unalias(), qualifiers) == "window_time"
    }
    names = [None if i in bare else _output_name(item) for i, item in enumerate(items)]
    wrap = bool(bare)
    if wrap:
        for i, item in enumerate(items):
            if i not in bare and names[i] is None:
                names[i] = _expression_name(item)
        visible = [n.lower() for n in names if n is not None]
        wrap = len(set(visible)) == len(visible) and not any(isinstance(i, exp.Star) for i in items)

    new_items = []
    for i, item in enumerate(items):
        if wrap and i in bare:
            continue
        ref = window_ref(item, qualifiers)
        if ref:
            new_items.append(exp.alias_(fields(ref), item.name))
            continue
        if wrap and not isinstance(item, exp.Alias) and _output_name(item) is None:
            item = exp.alias_(item, names[i], quoted=True)
        new_items.append(_replace_refs(item, qualifiers, fields))
    for arg in ("having", "order", "qualify"):
        if select.args.get(arg) is not None:
            _replace_refs(select.args[arg], qualifiers, fields)
    if not wrap:
        select.set("expressions", new_items)
        return select

    select.set("expressions", [*new_items, exp.alias_(exp.column(struct), HIDDEN_WINDOW)])
    outer_items = []
    for i, item in enumerate(items):
        if i in bare:
            name = item.alias if isinstance(item, exp.Alias) else item.name
            window_time = exp.Anonymous(this="window_time", expressions=[exp.column(HIDDEN_WINDOW)])
            outer_items.append(exp.alias_(window_time, name))
        else:
            name = names[i]
            assert name is not None  # (None only for a bare window column)
            outer_items.append(exp.column(name, quoted=not name.isidentifier()))
    outer = exp.Select(expressions=outer_items)
    with_ = select.args.get("with_")
    select.set("with_", None)
    placeholder = exp.Placeholder()
    select.replace(placeholder)
    outer.set("from_", exp.From(this=exp.Subquery(this=select)))
    if with_ is not None:
        outer.set("with_", with_)
    return placeholder.replace(outer) if placeholder.parent is not None else outer
