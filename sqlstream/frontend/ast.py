"""The AST of a `.ssql` file: frozen dataclasses, each with the :class:`Span` it came from.

The parser (:mod:`sqlstream.frontend.parser`) builds these from the Lark tree; nothing after it
sees Lark. Query bodies and column expressions stay Spark SQL text (:class:`SqlText`),
parsed later by sqlglot; their offsets map back to the original file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlstream.diagnostics.source_text import Span
from sqlstream.frontend.variables import SourceMap


@dataclass(frozen=True)
class SqlText:
    """A piece of Spark SQL inside the file (a query body or a scalar expression).

    Attributes:
        text: the SQL after variable substitution.
        start: offset of ``text[0]`` in the substituted file text.
        span: the original-file span of the whole piece.
        source_map: maps offsets inside ``text`` back to the original file.
    """

    text: str
    start: int
    span: Span
    source_map: SourceMap = field(repr=False, compare=False)

    def locate(self, start: int, end: int | None = None) -> Span:
        """Return the original-file :class:`Span` of ``text[start:end]`` (offsets in ``text``)."""
        end = start + 1 if end is None else end
        return self.source_map.span(self.start + start, self.start + end)


@dataclass(frozen=True)
class Name:
    """An identifier as written (backticks removed) and where it was written."""

    value: str
    span: Span

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Option:
    """``key = value`` in a ``WITH (…)`` list or a ``SET`` statement.

    Attributes:
        key: the key as written (dotted keys joined with ``.``, quotes removed).
        value: a ``str`` for strings and bare words, ``bool`` for ``true``/``false``,
            ``int``/``float`` for numbers.
        span: the whole ``key = value``; ``key_span`` and ``value_span`` the two sides.
    """

    key: str
    value: str | bool | int | float
    span: Span
    key_span: Span
    value_span: Span

    @property
    def text(self) -> str:
        """The value as Spark receives it in ``.option(key, value)``: ``true``, ``1``, …"""
        if isinstance(self.value, bool):
            return "true" if self.value else "false"
        return str(self.value)


@dataclass(frozen=True)
class ColumnDef:
    """A physical column: ``name TYPE`` (type normalised to Spark SQL, e.g. ``STRING``)."""

    name: Name
    type: str
    span: Span


@dataclass(frozen=True)
class ComputedColumn:
    """``name AS expr``: evaluated on every row (Flink's computed column)."""

    name: Name
    expression: SqlText
    span: Span


@dataclass(frozen=True)
class MetadataColumn:
    """``name TYPE METADATA [FROM 'key']``: what the connector knows besides the payload.

    ``key`` is ``None`` when omitted (the column's name is the key).
    """

    name: Name
    type: str
    key: str | None
    span: Span


@dataclass(frozen=True)
class WatermarkDef:
    """``WATERMARK FOR column AS expression`` (only ``column - INTERVAL …`` is valid)."""

    column: Name
    expression: SqlText
    span: Span


Column = ColumnDef | ComputedColumn | MetadataColumn


@dataclass(frozen=True)
class Expectation:
    """``CONSTRAINT name EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]``: a
    data-quality rule on every row (docs/dialect.md#expectations).

    Attributes:
        name: the constraint's name.
        condition: the Spark SQL boolean expression; a row violates it when it is ``FALSE``.
        action: ``keep`` (no ``ON VIOLATION``: counted), ``drop`` (``DROP ROW``) or
            ``fail`` (``FAIL UPDATE``).
        span: the whole constraint.
    """

    name: Name
    condition: SqlText
    action: str
    span: Span


@dataclass(frozen=True)
class Trigger:
    """When micro-batches run (docs/dialect.md#emit).

    Attributes:
        kind: ``processing_time``, ``available_now``, ``continuous`` or ``real_time``.
        interval: a Spark duration string such as ``"10 seconds"`` (``processing_time``,
            ``continuous`` and ``real_time``), else ``None``; ``continuous`` without ``EVERY``
            is ``"1 second"``, ``real_time`` without ``CHECKPOINT EVERY`` ``"5 minutes"``.
    """

    kind: str
    interval: str | None
    span: Span


@dataclass(frozen=True)
class Emit:
    """The ``EMIT`` clause.

    Attributes:
        output_mode: ``append``, ``update``, ``complete`` or ``None`` (to be inferred).
        trigger: the trigger, or ``None`` for Spark's default (next batch when the last ends).
    """

    output_mode: str | None
    trigger: Trigger | None
    span: Span


@dataclass(frozen=True)
class SetStatement:
    """``SET 'key' = 'value'``."""

    option: Option
    span: Span


@dataclass(frozen=True)
class CreateStream:
    """``CREATE STREAM`` — an unbounded source, or (with ``query``) a derived stream.

    ``query``/``emit`` are set for ``CREATE STREAM name WITH (…) AS SELECT …``, which starts
    a query into the sink described by ``options`` and also names the query's result.
    """

    name: Name
    columns: tuple[Column, ...]
    watermark: WatermarkDef | None
    options: tuple[Option, ...]
    if_not_exists: bool
    query: SqlText | None
    emit: Emit | None
    span: Span
    has_schema: bool = True
    constraints: tuple[Expectation, ...] = ()


@dataclass(frozen=True)
class CreateTable:
    """``CREATE TABLE`` — a bounded relation read once with ``spark.read``."""

    name: Name
    columns: tuple[Column, ...]
    options: tuple[Option, ...]
    if_not_exists: bool
    span: Span
    has_schema: bool = True


@dataclass(frozen=True)
class CreateView:
    """``CREATE VIEW name AS query`` — a derived relation; starts no query."""

    name: Name
    query: SqlText
    span: Span


@dataclass(frozen=True)
class CreateSink:
    """``CREATE SINK name [(CONSTRAINT …, …)] WITH (…) [AS query [EMIT …]]``; ``constraints``
    are checked on the rows written. ``columns`` and ``primary_key``: Flink's changelog
    spelling, ``CREATE SINK t (id BIGINT, …, PRIMARY KEY (id) NOT ENFORCED) WITH (…)``."""

    name: Name
    options: tuple[Option, ...]
    query: SqlText | None
    emit: Emit | None
    span: Span
    constraints: tuple[Expectation, ...] = ()
    columns: tuple[ColumnDef, ...] = ()
    primary_key: PrimaryKey | None = None


@dataclass(frozen=True)
class PrimaryKey:
    """Flink's ``PRIMARY KEY (k, …) NOT ENFORCED`` in a sink's column list: a table updated
    by key (docs/cdc.md#flink-spelling); ``enforced`` when ``NOT ENFORCED`` is missing."""

    names: tuple[Name, ...]
    enforced: bool
    span: Span


@dataclass(frozen=True)
class Insert:
    """``INSERT INTO sink query [EMIT …]`` — one streaming query.

    Attributes:
        ksql_table: written as ksqlDB's ``CREATE TABLE sink AS SELECT …`` (without ``WITH``),
            for the messages about it.
    """

    sink: Name
    query: SqlText
    emit: Emit | None
    span: Span
    ksql_table: bool = False


@dataclass(frozen=True)
class Select:
    """A bare top-level query: an ad-hoc query printed to the console sink."""

    query: SqlText
    emit: Emit | None
    span: Span


@dataclass(frozen=True)
class CreateFunction:
    """``CREATE FUNCTION`` — a user-defined function (docs/dialect.md#create-function).

    Attributes:
        name: the function's name.
        parameters: ``(name, Spark SQL type)`` of each declared parameter, or ``None``
            without a parameter list (Flink's form: the types are the callable's annotations).
        returns: the declared result type (``RETURNS``), or ``None``.
        returns_span: where the type was written (``None`` without ``RETURNS``).
        language: ``PYTHON`` or ``SQL`` (upper case) as written, or ``None``.
        reference: the string after ``AS`` (``'module:callable'`` or Flink's
            ``'module.callable'``), or ``None``.
        reference_span: where that string was written.
        body: a SQL function's expression (after ``RETURN``), or ``None``.
        span: the whole statement.
    """

    name: Name
    parameters: tuple[tuple[Name, str], ...] | None
    returns: str | None
    returns_span: Span | None
    language: Name | None
    reference: str | None
    reference_span: Span | None
    body: SqlText | None
    span: Span


@dataclass(frozen=True)
class CreateFlow:
    """``CREATE FLOW name AS AUTO CDC INTO target FROM STREAM(source) KEYS (…) [APPLY AS
    DELETE WHEN cond] SEQUENCE BY expr [COLUMNS …] [STORED AS SCD TYPE n] [TRACK HISTORY ON
    …]``: a change feed applied to a table (docs/cdc.md#auto-cdc).

    Attributes:
        columns: ``COLUMNS a, b`` (``except_columns`` ``False``) or ``COLUMNS * EXCEPT (a,
            b)`` (``True``); ``None``: every column of the source.
        scd_type: 1 or 2 as written (the planner checks it), ``scd_span`` where (or
            ``None``: not written, type 1).
        track: ``TRACK HISTORY ON a, b`` (``except_track`` ``False``) or ``* EXCEPT (…)``
            (``True``); ``None``: every column; ``track_span`` the clause.
    """

    name: Name
    target: Name
    source: Name
    keys: tuple[Name, ...]
    delete_when: SqlText | None
    sequence: SqlText
    columns: tuple[Name, ...] | None
    except_columns: bool
    scd_type: int
    scd_span: Span | None
    track: tuple[Name, ...] | None
    except_track: bool
    track_span: Span | None
    span: Span


Statement = (
    SetStatement
    | CreateStream
    | CreateTable
    | CreateView
    | CreateSink
    | Insert
    | Select
    | CreateFunction
    | CreateFlow
)


@dataclass(frozen=True)
class Script:
    """A parsed `.ssql` file: its statements in order and the map back to the source.

    ``ends`` holds the offset just past each top-level ``;`` in the substituted text (where
    one statement ends and the next may start); :func:`sqlstream.frontend.parser.reparse`
    cuts there.
    """

    statements: tuple[Statement, ...]
    source_map: SourceMap = field(repr=False, compare=False)
    ends: tuple[int, ...] = field(default=(), repr=False, compare=False)
    chunks: Mapping = field(default_factory=dict, repr=False, compare=False)
    """Each piece of the substituted text from one top-level ``;`` (or the start) through
    the next → ``(trees, origin)``: the statement grammar's trees of its statements, their
    token positions counted from ``origin`` (where the piece started in the text parsed);
    :func:`~sqlstream.frontend.parser.reparse` builds an unchanged piece from them."""
