"""What a test file says, with where it says it: the data :mod:`~sqlstream.testing.loading`
makes of a ``*.test.yaml`` file and the harness runs.

Every value keeps its :class:`~sqlstream.diagnostics.source_text.Span` in the test file,
so a problem found late (a value that does not fit the type Spark gives a sink's column,
a failed check) still points at its line and column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlstream.diagnostics.source_text import Source, Span


@dataclass
class Cell:
    """One value as written (YAML data: ``str``, ``int``, ``float``, ``bool``, ``None``,
    lists, mappings, ``datetime``/``date`` for unquoted YAML timestamps) and its span."""

    value: object
    span: Span
    key_span: Span | None = None


@dataclass
class Row:
    """One row: column name (as written) → :class:`Cell`; ``span`` is the row's."""

    cells: dict[str, Cell]
    span: Span


@dataclass
class Rows:
    """The rows given for one stream, table or sink.

    Attributes:
        rows: in the order written.
        span: the rows' node (``[]`` included).
        key_span: the span of the stream, table or sink name.
        values: for a stream or table, each row's values in the order of its given
            columns, as PySpark takes them (filled in by the loader).
    """

    rows: list[Row]
    span: Span
    key_span: Span
    values: list[tuple] = field(default_factory=list)


@dataclass
class Check:
    """A per-query check (``watermark``, ``state_rows``, ``dropped_by_watermark``):
    ``query`` is ``None`` for the single-value form (the pipeline's one query)."""

    query: str | None
    value: object
    span: Span
    key_span: Span | None = None


@dataclass
class Step:
    """One step of a test (1-based ``number``; ``span`` is the step's mapping).

    Attributes:
        input: stream name → rows of this micro-batch (``None``: not an input step).
        restart: a ``restart: true`` step.
        expect: sink name → expected rows.
        table: sink name → the sink's whole current table after the step
            (:mod:`sqlstream.testing.tables`).
        watermark, state_rows, dropped_by_watermark: the checks of the step.
        expectations: ``expectations: {rule: count}``, one :class:`Check` per rule
            (``query`` holds the rule's name): the rows of the step's micro-batch that
            violated it (docs/dialect.md#expectations).
        error: the expected error (a code such as ``SS501`` or a message fragment).
        node: the step's YAML mapping (``--record`` writes into it).
    """

    number: int
    span: Span
    input: dict[str, Rows] | None = None
    restart: bool = False
    expect: dict[str, Rows] = field(default_factory=dict)
    table: dict[str, Rows] = field(default_factory=dict)
    watermark: list[Check] = field(default_factory=list)
    state_rows: list[Check] = field(default_factory=list)
    dropped_by_watermark: list[Check] = field(default_factory=list)
    expectations: list[Check] = field(default_factory=list)
    error: Cell | None = None
    node: object = None


@dataclass
class Case:
    """One test: its ``name``, ``steps`` and what it sets.

    Attributes:
        tables: ``CREATE TABLE`` name → rows (a table not named is empty).
        variables: ``${…}`` values (the file's, overridden by the test's).
        settings: Spark settings applied before the queries start (the file's, then the
            test's).
        ordered: compare a sink's rows in order (default: as a multiset).
        tolerance: relative tolerance of ``DOUBLE`` / ``FLOAT`` values (default ``1e-9``).
    """

    name: str
    span: Span
    steps: list[Step]
    tables: dict[str, Rows] = field(default_factory=dict)
    variables: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    ordered: bool = False
    tolerance: float = 1e-9
    node: object = None


@dataclass
class TestFile:
    """A loaded ``*.test.yaml`` file.

    Attributes:
        path: the file.
        source: its text (for messages with a caret).
        pipeline: the ``.ssql`` file (absolute), ``pipeline_span`` where it is named.
        cases: the tests, in file order.
        document: the ruamel round-trip document (``--record`` edits and writes it).
    """

    path: Path
    source: Source
    pipeline: Path
    pipeline_span: Span
    cases: list[Case]
    document: object = None
