"""``CREATE FLOW … AS AUTO CDC INTO …`` (docs/cdc.md#auto-cdc): its Lark tree → a
:class:`~sqlstream.frontend.ast.CreateFlow`, for :class:`~sqlstream.frontend.builder.TreeBuilder`.

The grammar (``create_flow`` in ``grammar/ssql.lark``) takes Spark 4.3's clauses in Spark's
order; what they mean (names, types, the target) is the planner's to judge
(:mod:`sqlstream.planning.flows`). Source: Spark's declarative pipelines grammar
(``CREATE FLOW … AS AUTO CDC INTO``, SPARK-58261: ``STORED AS SCD TYPE``, ``TRACK HISTORY
ON``).
"""

from __future__ import annotations

from typing import Protocol

from lark import Token, Tree

from sqlstream.diagnostics.errors import ForeignSpellingError, ParseError
from sqlstream.diagnostics.source_text import Source, Span
from sqlstream.frontend import ast


class TreeBuilder(Protocol):
    """What of :class:`sqlstream.frontend.builder.TreeBuilder` the flow's building uses."""

    source: Source

    def name(self, node: Tree | Token | None) -> ast.Name: ...

    def span(self, node: Tree | Token) -> Span: ...

    def sql(self, node: Tree | Token | None) -> ast.SqlText: ...

    def type(self, node: Tree | Token | None, depth: int = 1) -> str: ...


def _child(node: Tree, data: str) -> Tree | None:
    return next((c for c in node.children if isinstance(c, Tree) and c.data == data), None)


def _names(builder: TreeBuilder, node: Tree | None) -> tuple[ast.Name, ...]:
    """The names of a ``name_list``, or of the ``name_list`` directly inside ``node``."""
    if node is not None and node.data != "name_list":
        node = _child(node, "name_list")
    if node is None:
        return ()
    return tuple(builder.name(c) for c in node.children if isinstance(c, Tree))


def _selection(builder: TreeBuilder, node: Tree | None) -> tuple[tuple[ast.Name, ...] | None, bool]:
    """``(names, except)`` of a ``COLUMNS`` / ``TRACK HISTORY ON`` clause; ``(None,
    False)`` without one."""
    if node is None:
        return None, False
    excepted = _child(node, "cdc_except")
    if excepted is not None:
        return _names(builder, _child(excepted, "name_list")), True
    return _names(builder, _child(node, "name_list")), False


def build_flow(builder: TreeBuilder, node: Tree) -> ast.CreateFlow:
    """The :class:`~sqlstream.frontend.ast.CreateFlow` of a ``create_flow`` tree, every
    part with its span. The SCD type is kept as written (a number the planner checks)."""
    names = [c for c in node.children if isinstance(c, Tree) and c.data == "name"]
    delete = _child(node, "cdc_delete")
    sequence = _child(node, "cdc_sequence")
    stored = _child(node, "cdc_stored")
    track = _child(node, "cdc_track")
    assert sequence is not None  # the grammar requires it
    columns, except_columns = _selection(builder, _child(node, "cdc_columns"))
    tracked, except_track = _selection(builder, track)
    scd_type, scd_span = 1, None
    if stored is not None:
        number = stored.children[-1]
        scd_span = builder.span(number)
        text = str(number)
        scd_type = int(text) if text.isdigit() else -1
    return ast.CreateFlow(
        name=builder.name(names[0]),
        target=builder.name(_child(node, "cdc_target")),
        source=builder.name(names[1]),
        keys=_names(builder, _child(node, "cdc_keys")),
        delete_when=builder.sql(_child(delete, "expr")) if delete is not None else None,
        sequence=builder.sql(_child(sequence, "expr")),
        columns=columns,
        except_columns=except_columns,
        scd_type=scd_type,
        scd_span=scd_span,
        track=tracked,
        except_track=except_track,
        track_span=builder.span(track) if track is not None else None,
        span=builder.span(node),
    )


def sink_columns(
    builder: TreeBuilder, node: Tree | None
) -> tuple[tuple[ast.ColumnDef, ...], ast.PrimaryKey | None]:
    """The columns and ``PRIMARY KEY`` of a sink's list (Flink's changelog spelling,
    docs/cdc.md#flink-spelling), ``((), None)`` without them; the planner judges them.

    Raises:
        ParseError: a second ``PRIMARY KEY`` (at it).
    """
    columns: list[ast.ColumnDef] = []
    key: ast.PrimaryKey | None = None
    for child in node.children if node is not None else ():
        if not isinstance(child, Tree):
            continue
        if child.data == "column_def":
            parts = [c for c in child.children if isinstance(c, Tree)]
            columns.append(
                ast.ColumnDef(builder.name(parts[0]), builder.type(parts[1]), builder.span(child))
            )
        elif child.data == "primary_key":
            if key is not None:
                raise ParseError(
                    "a sink has one PRIMARY KEY",
                    builder.span(child),
                    builder.source,
                    hint="list every key column in one PRIMARY KEY (a, b) NOT ENFORCED",
                )
            enforced = not any(str(c).upper() == "ENFORCED" for c in child.children)
            key = ast.PrimaryKey(_names(builder, child), enforced, builder.span(child))
    return tuple(columns), key


def primary_key_error(builder: TreeBuilder, node: Tree) -> ForeignSpellingError:
    """Flink's ``PRIMARY KEY (k, …) NOT ENFORCED`` in the column list of a stream or table
    (read here, not updated): ``SS108``, at the clause, with the two spellings that update
    a table by key — the key on a ``CREATE SINK`` (Flink's, docs/cdc.md#flink-spelling) and
    ``CREATE FLOW … AS AUTO CDC`` (Spark 4.3's, docs/cdc.md#auto-cdc)."""
    keys = ", ".join(n.value for n in _names(builder, node))
    return ForeignSpellingError(
        f"Flink's PRIMARY KEY ({keys}) declares a table updated by key; a stream or table "
        "declared here is read, not updated: the key goes on the sink",
        builder.span(node),
        builder.source,
        code="SS108",
        hint=f"declare the table as CREATE SINK name (…, PRIMARY KEY ({keys}) NOT ENFORCED) "
        "WITH (connector = 'postgres', …) and INSERT INTO name SELECT … FROM changes, or "
        f"CREATE FLOW name_cdc AS AUTO CDC INTO name FROM STREAM(changes) KEYS ({keys}) "
        "APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq (docs/cdc.md#flink-spelling)",
    )
