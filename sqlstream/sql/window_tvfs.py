"""Window TVFs (``TUMBLE``, ``HOP``, ``CUMULATE``, ``SESSION``) lowered to Spark's ``window()`` /
``session_window()``: one step of :data:`sqlstream.sql.rewrite.REWRITES`.

Errors are :class:`~sqlstream.diagnostics.errors.SemanticError` with ``offset_start``/``offset_end``
(end exclusive) within the parsed query text.

Window TVFs (docs/dialect.md#window-tvfs), as verified on Spark 4.1 (local, file and rate streams,
``availableNow`` into a memory sink, compared with the batch result of the same data):

* Spark's ``window()`` and ``session_window()`` refuse interval literals: ``window(ts,
  INTERVAL 10 MINUTES)`` fails ("must be an integer, long or string literal") and
  ``session_window(ts, INTERVAL '5' SECOND)`` fails ("must be CalendarIntervalType, but got
  DayTimeIntervalType"). Durations are therefore written as strings: ``INTERVAL '1' HOUR``
  → ``'1 hour'``, also inside a dynamic session gap (a ``CASE`` of intervals becomes a
  ``CASE`` of strings, which Spark accepts).
* Aggregated query (GROUP BY holds ``window_start``/``window_end``/``window_time``, bare or
  qualified by the TVF's alias or relation name): the TVF becomes its relation (alias kept)
  and those keys become ONE key, ``window(ts, size[, slide[, offset]])`` or
  ``session_window(ts, gap)``; ``window_start``/``window_end`` become ``window.start`` /
  ``window.end`` (``session_window.start`` …), keeping their output names. This is what
  append mode needs (a grouping key that is a window on the watermarked column) and what
  makes session windows merge. Observed: TUMBLE, HOP (overlapping windows, each row counted
  in size/slide windows) and SESSION (static and dynamic gap) in append mode with a watermark
  give the batch result for every window closed by the watermark.
* ``window_time`` in an aggregated query: Spark refuses ``window_time(window)`` next to the
  aggregate ([MISSING_AGGREGATION]); it only works one level up. A bare ``window_time``
  select item is therefore computed by an outer query, ``SELECT …, window_time(__window) AS
  window_time, … FROM (<aggregate>, window AS __window)``, which keeps Spark's event-time
  metadata: a later TUMBLE over that ``window_time`` (cascading windows) runs in append mode.
  Grouping by both ``window(…)`` and ``window_time(window(…))`` fails at run time ("More
  than one event time columns are available"), so the outer query is the only way found.
  Unaliased non-column items of such a query are named by their SQL text in the inner
  query (``count(*)``; Spark alone would say ``count(1)``): alias them to choose the name.
  Inside larger expressions, HAVING and ORDER BY it is ``window.end - INTERVAL '1'
  MICROSECOND`` (same value; ``window.end - …`` carries no watermark, so a window on it
  would be refused in append mode — verified). Observed: ``window_time = window_end - 1 µs``.
* Non-aggregated TUMBLE/HOP (per-row window assignment, Flink's "window TVF" output): the TVF
  becomes ``(SELECT * EXCEPT (__window), __window.start AS window_start, __window.end AS
  window_end, window_time(__window) AS window_time FROM (SELECT *, window(ts, …) AS __window
  FROM rel)) AS <alias or rel>``. Spark 4.1 accepts ``* EXCEPT``; HOP yields one row per
  overlapping window; the ``window_time`` column keeps the watermark, so it can feed another
  windowed aggregation in append mode.
* CUMULATE becomes a hopping ``window()`` filtered to the cumulating windows; its window
  columns are read from the hidden ``__w`` / ``__cs`` columns (:mod:`sqlstream.sql.cumulate`).
* SESSION without aggregation is refused: Spark merges sessions only inside an aggregate.
  (Spark itself refuses a session-window aggregation in update mode: "not supported for
  session window streaming aggregations".)
* ``availableNow`` runs a final no-data batch, so the append output of a run equals the
  batch result restricted to windows whose end is at or before max(event time) − delay.
* ``FROM STREAM t`` (dropped by :func:`sqlstream.sql.rewrite.drop_stream_markers`): Spark 4.1
  accepts it (and ``STREAM(t)``) on a streaming temp view, but refuses it on a batch view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlglot import exp

from sqlstream.diagnostics.errors import SemanticError
from sqlstream.frontend.literals import duration, duration_problem
from sqlstream.sql.cumulate import CUMULATE_START, CUMULATE_WINDOW, cumulate_relation
from sqlstream.sql.dialect import SqlStream, WindowTVF
from sqlstream.sql.parsing import node_offsets
from sqlstream.sql.tree_walks import find_all

__all__ = ["WINDOW_COLUMNS", "check_window_durations", "duration_text", "rewrite_window_tvfs"]

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
_HIDDEN_WINDOW = "__window"


def _error(message: str, node: exp.Expr | None, hint: str | None = None) -> SemanticError:
    error = SemanticError(message, hint=hint)
    offsets = node_offsets(node) if node is not None else None
    error.offset_start, error.offset_end = offsets or (None, None)
    return error


def _owning_select(tvf: WindowTVF) -> exp.Select:
    parent = tvf.parent
    if (
        isinstance(parent, (exp.From, exp.Join))
        and isinstance(parent.parent, exp.Select)
        and not tvf.args.get("joins")
    ):
        return parent.parent
    raise _error(f"{tvf.kind} must be a relation of a FROM clause or a JOIN", tvf)


def _depth(node: exp.Expr) -> int:
    depth = 0
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def rewrite_window_tvfs(expression: exp.Expr) -> exp.Expr:
    """Replace ``TUMBLE``/``HOP``/``SESSION`` by Spark's ``window()``/``session_window()``.

    Each SELECT scope is rewritten on its own, innermost first (see the module docstring for
    the shapes and why).

    Args:
        expression: a parsed query; it is modified in place.

    Returns:
        The rewritten tree (a new root when the top query had to be wrapped).

    Raises:
        SemanticError: two TVFs in one SELECT; SESSION without ``GROUP BY window_start,
            window_end``; a SESSION ``PARTITION BY`` key missing from GROUP BY; a size,
            slide or offset that is not a constant duration; a TVF outside FROM/JOIN.
    """
    by_select: dict[int, tuple[exp.Select, WindowTVF]] = {}
    for tvf in sorted(find_all(expression, WindowTVF), key=lambda n: node_offsets(n) or (0, 0)):
        select = _owning_select(tvf)
        if id(select) in by_select:
            raise _error(
                f"only one window TVF per SELECT is supported; found a second {tvf.kind}",
                tvf,
                hint="move one of them into a subquery or a view",
            )
        by_select[id(select)] = (select, tvf)
    for select, tvf in sorted(by_select.values(), key=lambda pair: -_depth(pair[0])):
        replacement = _rewrite_scope(select, tvf)
        if select is expression:
            expression = replacement
    return expression


def _qualifiers(tvf: WindowTVF) -> set[str]:
    if tvf.alias:
        return {tvf.alias.lower()}
    return {tvf.this.name.lower()} if isinstance(tvf.this, exp.Table) else set()


def _window_ref(node: exp.Expr, qualifiers: set[str]) -> str | None:
    """Return ``window_start``/``window_end``/``window_time`` if ``node`` names one of the TVF's."""
    if not isinstance(node, exp.Column) or node.name.lower() not in WINDOW_COLUMNS:
        return None
    if node.args.get("db") or (node.table and node.table.lower() not in qualifiers):
        return None
    return node.name.lower()


def _rewrite_scope(select: exp.Select, tvf: WindowTVF) -> exp.Expr:
    qualifiers = _qualifiers(tvf)
    group = select.args.get("group")
    keys = group.expressions if group else []
    for key in keys:  # GROUP BY 1 naming window_start: the window column itself
        if (
            isinstance(key, exp.Literal)
            and key.is_int
            and 1 <= int(key.name) <= len(select.expressions)
        ):
            item = select.expressions[int(key.name) - 1]
            item = item.this if isinstance(item, exp.Alias) else item
            if _window_ref(item, qualifiers):
                key.replace(item.copy())
    keys = group.expressions if group else []
    aggregated = any(_window_ref(key, qualifiers) for key in keys)
    if tvf.kind == "SESSION" and not aggregated:
        raise _error(
            "SESSION windows must be aggregated: GROUP BY window_start, window_end",
            tvf,
            hint="Spark merges rows into sessions only inside an aggregation",
        )
    if tvf.kind == "CUMULATE":
        if aggregated:
            return _rewrite_cumulate_aggregated(select, tvf, qualifiers)
        _rewrite_cumulate_per_row(tvf)
        return select
    if aggregated:
        return _rewrite_aggregated(select, tvf, qualifiers)
    _rewrite_per_row(tvf)
    return select


# --- durations ---------------------------------------------------------------------------


def duration_text(node: exp.Expr) -> str | None:
    """Spark duration string of an interval literal (``INTERVAL '1' HOUR`` → ``1 hour``)."""
    if isinstance(node, exp.Paren):
        return duration_text(node.this)
    if isinstance(node, exp.Neg):
        text = duration_text(node.this)
        single = text is not None and len(text.split()) == 2 and not text.startswith("-")
        return f"-{text}" if single else None
    if isinstance(node, exp.Add):
        left, right = duration_text(node.this), duration_text(node.expression)
        return f"{left} {right}" if left and right else None
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        return None
    unit = node.args.get("unit")
    if unit is not None and not isinstance(unit, exp.Var):
        return None  # INTERVAL '1:30' HOUR TO MINUTE: Spark's duration strings have no such form
    value = node.this.name.strip()
    return f"{value} {unit.name.lower()}" if unit is not None else value


def _duration(node: exp.Expr, what: str, kind: str) -> exp.Expr:
    if isinstance(node, exp.Literal):
        text = node.name if node.is_string else None
    else:
        text = duration_text(node)
        if text is None:
            raise _error(
                f"the {what} of {kind} must be a constant duration",
                node,
                hint="write e.g. INTERVAL '10' MINUTES or '10 minutes'",
            )
    problem = (
        duration_problem(text, "window offset" if what == "offset" else "window")
        if text is not None
        else None
    )
    if problem:
        raise _error(
            f"the {what} of {kind} is not a duration Spark accepts: {problem}",
            node,
            hint="write e.g. INTERVAL '10' MINUTES or '10 minutes' (no months or years)",
        )
    return node.copy() if isinstance(node, exp.Literal) else exp.Literal.string(text)


_WINDOW_ARGS = {"window": ("window", "window", "window offset"), "session_window": ("session gap",)}


def check_window_durations(expression: exp.Expr) -> exp.Expr:
    """Refuse the constant durations of ``window()`` / ``session_window()`` calls that Spark
    refuses when the query starts (``TimeWindow``): one it cannot read, months or years,
    a size or slide not greater than zero, a slide longer than the size, an offset not
    shorter than the slide.

    Returns:
        ``expression``, unchanged.

    Raises:
        SemanticError: at the duration.
    """
    for call in find_all(expression, exp.Anonymous):
        uses = _WINDOW_ARGS.get(call.name.lower())
        if uses is None:
            continue
        micros = []
        # strict=False: a call may pass fewer durations than it can take (offset, slide)
        for use, arg in zip(uses, call.expressions[1:], strict=False):
            if not (isinstance(arg, exp.Literal) and arg.is_string):
                break
            problem = duration_problem(arg.name, use)
            if problem:
                raise _error(
                    f"{call.name}(): {problem}",
                    arg,
                    hint="write e.g. '10 minutes' (no months or years)",
                )
            value = duration(arg.name)
            micros.append((value.days * 86_400_000_000 + value.microseconds, arg))
        if len(micros) >= 2 and micros[1][0] > micros[0][0]:
            raise _error(
                f"{call.name}(): the slide '{micros[1][1].name}' is longer than the "
                f"window '{micros[0][1].name}'",
                micros[1][1],
                hint="a slide is at most the window's size",
            )
        if len(micros) >= 3 and abs(micros[2][0]) >= micros[1][0]:
            raise _error(
                f"{call.name}(): the offset '{micros[2][1].name}' is not shorter than "
                f"the slide '{micros[1][1].name}'",
                micros[2][1],
                hint="an offset is shorter than the slide",
            )
    return expression


def _dynamic_duration(node: exp.Expr) -> exp.Expr:
    """A session gap: a constant, or an expression whose interval literals become strings."""
    text = duration_text(node)
    if text is not None:
        return exp.Literal.string(text)

    def convert(child: exp.Expr) -> exp.Expr:
        if isinstance(child, (exp.Interval, exp.Add, exp.Neg)):
            text = duration_text(child)
            if text is not None:
                return exp.Literal.string(text)
        return child

    return node.copy().transform(convert, copy=False)


def _window_call(tvf: WindowTVF, qualifier: str | None) -> exp.Anonymous:
    def qualify(column: exp.Column) -> exp.Column:
        column.set("table", exp.to_identifier(qualifier) if qualifier else None)
        column.set("db", None)
        column.set("catalog", None)
        return column

    time_column = qualify(tvf.args["time_column"].copy())
    kind = tvf.kind
    if kind == "SESSION":
        gap = _dynamic_duration(tvf.args["gap"])
        if qualifier:
            for column in find_all(gap, exp.Column):
                if not column.table:
                    qualify(column)
        return exp.Anonymous(this="session_window", expressions=[time_column, gap])
    size = _duration(tvf.args["size"], "size", kind)
    slide = _duration(tvf.args["slide"], "slide", kind) if kind == "HOP" else size.copy()
    offset = tvf.args.get("offset")
    args = [time_column, size]
    if kind == "HOP" or offset is not None:
        args.append(slide)
    if offset is not None:
        args.append(_duration(offset, "offset", kind))
    return exp.Anonymous(this="window", expressions=args)


# --- aggregated scope ---------------------------------------------------------------------


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
        ref = _window_ref(node, qualifiers)
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


def _rewrite_aggregated(select: exp.Select, tvf: WindowTVF, qualifiers: set[str]) -> exp.Expr:
    struct = "session_window" if tvf.kind == "SESSION" else "window"
    relation_name = tvf.alias or (tvf.this.name if isinstance(tvf.this, exp.Table) else None)
    qualifier = relation_name if select.args.get("joins") else None
    call = _window_call(tvf, qualifier)

    relation = tvf.this
    if tvf.args.get("alias"):
        relation.set("alias", tvf.args["alias"])

    def fields(ref: str) -> exp.Expr:
        if ref == "window_start":
            return exp.column("start", table=struct)
        end = exp.column("end", table=struct)
        if ref == "window_end":
            return end
        return _minus_micro(end)

    return _group_by_window(select, tvf, qualifiers, [call], relation, fields, struct)


def _minus_micro(end: exp.Expr) -> exp.Expr:
    return exp.Sub(
        this=end, expression=exp.Interval(this=exp.Literal.string("1"), unit=exp.var("MICROSECOND"))
    )


def _group_by_window(
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
            raise _error(
                f"SESSION PARTITION BY {key.name} needs {key.name} in GROUP BY",
                key,
                hint=f"GROUP BY window_start, window_end, {key.name}",
            )
    new_keys: list[exp.Expr] = []
    for key in group.expressions:
        if not _window_ref(key, qualifiers):
            new_keys.append(key)
        elif calls[0] not in new_keys:
            new_keys.extend(calls)
    group.set("expressions", new_keys)
    tvf.replace(relation)

    items = select.expressions
    bare = {
        i
        for i, item in enumerate(items)
        if _window_ref(item.unalias(), qualifiers) == "window_time"
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
        ref = _window_ref(item, qualifiers)
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

    select.set("expressions", [*new_items, exp.alias_(exp.column(struct), _HIDDEN_WINDOW)])
    outer_items = []
    for i, item in enumerate(items):
        if i in bare:
            name = item.alias if isinstance(item, exp.Alias) else item.name
            window_time = exp.Anonymous(
                this="window_time", expressions=[exp.column(_HIDDEN_WINDOW)]
            )
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


# --- per-row scope -----------------------------------------------------------------------


def _rewrite_per_row(tvf: WindowTVF) -> None:
    """TUMBLE/HOP without aggregation: each row gets window_start, window_end, window_time."""
    relation = tvf.this
    alias = tvf.alias or (relation.name if isinstance(relation, exp.Table) else None)
    hidden = exp.column(_HIDDEN_WINDOW)
    assign = exp.Select(
        expressions=[exp.Star(), exp.alias_(_window_call(tvf, None), _HIDDEN_WINDOW)]
    )
    assign.set("from_", exp.From(this=relation))
    expand = exp.Select(
        expressions=[
            exp.Star(except_=[hidden.copy()]),
            exp.alias_(exp.column("start", table=_HIDDEN_WINDOW), "window_start"),
            exp.alias_(exp.column("end", table=_HIDDEN_WINDOW), "window_end"),
            exp.alias_(
                exp.Anonymous(this="window_time", expressions=[hidden.copy()]), "window_time"
            ),
        ]
    )
    expand.set("from_", exp.From(this=exp.Subquery(this=assign)))
    subquery = exp.Subquery(this=expand)
    if alias:
        subquery.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    tvf.replace(subquery)


# --- CUMULATE ------------------------------------------------------------------------------


def _micros_of(literal: exp.Expr) -> int:
    value = duration(literal.name)
    return value.days * 86_400_000_000 + value.microseconds


def _cumulate(tvf: WindowTVF) -> exp.Subquery:
    """The relation of a CUMULATE (:func:`sqlstream.sql.cumulate.cumulate_relation`)."""
    step = _duration(tvf.args["step"], "step", "CUMULATE")
    size = _duration(tvf.args["size"], "size", "CUMULATE")
    step_us, size_us = _micros_of(step), _micros_of(size)
    if size_us % step_us:
        raise _error(
            f"the size of CUMULATE ('{size.name}') is not a multiple of its step ('{step.name}')",
            tvf.args["size"],
            hint="Flink's rule: size = n × step, e.g. step INTERVAL '1' HOUR, "
            "size INTERVAL '1' DAY",
        )
    offset = tvf.args.get("offset")
    offset_literal = _duration(offset, "offset", "CUMULATE") if offset is not None else None
    offset_us = _micros_of(offset_literal) if offset_literal is not None else 0
    relation = tvf.this
    alias = tvf.alias or (relation.name if isinstance(relation, exp.Table) else None)
    time_column = tvf.args["time_column"].copy()
    for part in ("table", "db", "catalog"):
        time_column.set(part, None)
    return cumulate_relation(
        relation,
        time_column,
        step.name,
        size.name,
        offset_literal.name if offset_literal is not None else None,
        step_us,
        size_us,
        offset_us,
        alias,
    )


def _rewrite_cumulate_aggregated(
    select: exp.Select, tvf: WindowTVF, qualifiers: set[str]
) -> exp.Expr:
    """CUMULATE under ``GROUP BY window_start, window_end``: group by the hopping window and
    the cumulating start (see :mod:`sqlstream.sql.cumulate`)."""
    relation = _cumulate(tvf)
    qualifier = relation.alias if select.args.get("joins") and relation.alias else None
    calls = [
        exp.column(CUMULATE_WINDOW, table=qualifier),
        exp.column(CUMULATE_START, table=qualifier),
    ]

    def fields(ref: str) -> exp.Expr:
        if ref == "window_start":
            return exp.column(CUMULATE_START, table=qualifier)
        end = (
            exp.Dot(
                this=exp.column(CUMULATE_WINDOW, table=qualifier),
                expression=exp.to_identifier("end"),
            )
            if qualifier
            else exp.column("end", table=CUMULATE_WINDOW)
        )
        return end if ref == "window_end" else _minus_micro(end)

    return _group_by_window(select, tvf, qualifiers, calls, relation, fields, CUMULATE_WINDOW)


def _rewrite_cumulate_per_row(tvf: WindowTVF) -> None:
    """CUMULATE without aggregation: one row per cumulating window of each row."""
    relation = _cumulate(tvf)
    alias = relation.alias
    relation.set("alias", None)
    hidden = exp.column(CUMULATE_WINDOW)
    expand = exp.Select(
        expressions=[
            exp.Star(except_=[hidden.copy(), exp.column(CUMULATE_START)]),
            exp.alias_(exp.column(CUMULATE_START), "window_start"),
            exp.alias_(exp.column("end", table=CUMULATE_WINDOW), "window_end"),
            exp.alias_(
                exp.Anonymous(this="window_time", expressions=[hidden.copy()]), "window_time"
            ),
        ]
    )
    expand.set("from_", exp.From(this=relation))
    subquery = exp.Subquery(this=expand)
    if alias:
        subquery.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    tvf.replace(subquery)
