"""The catalog: one record per name a pipeline declares, in file order.

The planner folds the statements of a file into a :class:`Catalog`: every ``CREATE
STREAM`` / ``CREATE TABLE`` / ``CREATE VIEW`` adds a :class:`CatalogRelation`, every sink a
:class:`CatalogSink`, every query claims its query name. Later statements read it to
resolve names (a statement sees what was declared before it). A declaration that failed
is still recorded (``poisoned``), so one mistake is reported once.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlstream.analysis.facts import RelationInfo
from sqlstream.analysis.lineage import Columns, Lineage, source_columns
from sqlstream.diagnostics.errors import UnknownNameError
from sqlstream.frontend import ast
from sqlstream.ir import plan
from sqlstream.planning.compiled_query import CompiledQuery
from sqlstream.sql.parsing import parse_expression

if TYPE_CHECKING:  # pragma: no cover
    from sqlstream.connectors import ResolvedOptions

Schema = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CatalogRelation:
    """A stream, table or view, as later statements see it.

    Attributes:
        name: the name as declared.
        kind: ``"stream"``, ``"table"`` or ``"view"`` (a ``CREATE STREAM … AS SELECT`` is a
            view of its query).
        declared_at: the name in its declaration (its span, for "already declared").
        info: what the streaming analysis knows of it (streaming, watermarks, aggregated).
        columns: ``(name, type)`` pairs, or ``None`` when only known at run time.
        source: the source read of a stream or table, else ``None``.
        query: the compiled query of a view, else ``None``.
    """

    name: str
    kind: str
    declared_at: ast.Name
    info: RelationInfo
    columns: Schema | None = None
    source: plan.SourceRelation | None = None
    query: CompiledQuery | None = None

    @property
    def poisoned(self) -> bool:
        """Its declaration failed: nothing is known of it."""
        return self.info.poisoned

    @property
    def reads(self) -> frozenset[str]:
        """Lower-case names of the relations a view reads (empty for a stream or table)."""
        return self.query.info.relations if self.query is not None else frozenset()


@dataclass(frozen=True)
class CatalogSink:
    """A declared sink; ``sink`` and ``options`` are ``None`` when its declaration failed;
    ``constraints`` its expectations as written (``CREATE SINK s (CONSTRAINT …)``);
    ``keyed`` its declaration when it has Flink's ``PRIMARY KEY``
    (:mod:`sqlstream.planning.changelog_sinks`)."""

    sink: plan.Sink | None
    options: ResolvedOptions | None
    constraints: tuple[ast.Expectation, ...] = ()
    keyed: ast.CreateSink | None = None


class _Field(Mapping):
    """Name → one field of each relation (``info``, ``columns``), read from the catalog when
    asked; relations whose field is ``None`` are left out."""

    def __init__(self, relations: dict[str, CatalogRelation], field: str) -> None:
        self._relations = relations
        self._field = field

    def __getitem__(self, name: str):
        value = getattr(self._relations[name], self._field)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self):
        return (n for n, r in self._relations.items() if getattr(r, self._field) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Catalog:
    """Relations, sinks and query names declared so far (names are case-insensitive)."""

    def __init__(self) -> None:
        self._relations: dict[str, CatalogRelation] = {}
        self._position: dict[str, int] = {}  # name → declaration order
        self._sinks: dict[str, CatalogSink] = {}
        self._queries: dict[str, object] = {}
        self._lineage: dict[str, Columns | None] = {}  # see lineage()

    def sizes(self) -> tuple[int, int, int, int]:
        """How many relations, declaration positions, sinks and query names it holds (the
        catalog only grows: see :meth:`prefix`)."""
        return len(self._relations), len(self._position), len(self._sinks), len(self._queries)

    def prefix(self, sizes: tuple[int, int, int, int]) -> Catalog:
        """A new catalog holding what this one held when :meth:`sizes` returned ``sizes``:
        names are only ever added (a name declared twice is refused, a poisoned one is
        kept), so that is the first entries of each table, in order."""
        copied = Catalog()
        for table, size in zip(
            ("_relations", "_position", "_sinks", "_queries"), sizes, strict=True
        ):
            setattr(copied, table, dict(itertools.islice(getattr(self, table).items(), size)))
        return copied

    # ---- relations
    def declare(self, name: ast.Name) -> None:
        """Check that ``name`` is new among streams, tables and views.

        Raises:
            UnknownNameError: ``SS204``, it is already declared.
        """
        first = self._relations.get(name.value.lower())
        if first is not None:
            raise UnknownNameError(
                f"'{name}' is already declared (line {first.declared_at.span.line})",
                name.span,
                code="SS204",
                hint="streams, tables and views share one namespace: rename one of them",
            )

    def add(self, relation: CatalogRelation) -> None:
        """Record ``relation`` (after :meth:`declare`)."""
        self._relations[relation.name.lower()] = relation
        self._position.setdefault(relation.name.lower(), len(self._position))

    def add_view(self, name: ast.Name, compiled: CompiledQuery) -> None:
        """Record a view defined by ``compiled`` (a ``CREATE VIEW``, the view of a ``CREATE
        STREAM … AS SELECT``, or a relation the compiler made for a deduplication): later
        statements see its streaming facts, columns and compiled query."""
        info = compiled.info
        self.add(
            CatalogRelation(
                name.value,
                "view",
                name,
                RelationInfo(
                    info.streaming,
                    info.watermarks,
                    info.aggregate,
                    info.watermarked_key,
                    info.session_window,
                ),
                compiled.columns,
                query=compiled,
            )
        )

    def poison(self, name: ast.Name, kind: str) -> None:
        """Know a relation whose declaration failed, unless it is known already."""
        self._relations.setdefault(
            name.value.lower(),
            CatalogRelation(name.value, kind, name, RelationInfo(True, poisoned=True)),
        )
        self._position.setdefault(name.value.lower(), len(self._position))

    def get(self, name: str) -> CatalogRelation | None:
        """The relation called ``name`` (any case), or ``None``."""
        return self._relations.get(name.lower())

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._relations

    def names(self, hidden: bool = True) -> list[str]:
        """Lower-case names of every relation, in declaration order; ``hidden=False``
        leaves out those the compiler made (``__…``: deduplication steps)."""
        return [n for n in self._relations if hidden or not n.startswith("__")]

    def infos(self) -> Mapping[str, RelationInfo]:
        """Lower-case name → :class:`~sqlstream.analysis.facts.RelationInfo`, for the analysis (a
        live view: no copy per query)."""
        return _Field(self._relations, "info")

    def lineage(self, name: str) -> Columns | None:
        """The meaning of each column of relation ``name`` over the columns its sources
        read (:mod:`sqlstream.analysis.lineage`: a stream's projection, a view's query
        through the views it reads), or ``None`` when unknown (read as it is). Kept per
        name: a relation never changes once declared."""
        key = name.lower()
        if key not in self._lineage:
            relation = self._relations.get(key)
            found: Columns | None = None
            if relation is not None and relation.source is not None:
                found = source_columns(relation.source, parse_expression)
            elif relation is not None and relation.query is not None:
                tree = relation.query.tree
                self._lineage[key] = None  # a view read while its meaning is made
                found = None if tree is None else Lineage(self.lineage).columns(tree, {})
            self._lineage[key] = found
        return self._lineage[key]

    def schemas(self) -> Mapping[str, Schema]:
        """Lower-case name → columns, for relations whose columns are known (a live view)."""
        return _Field(self._relations, "columns")

    def closure(self, names) -> list[CatalogRelation]:
        """The relations ``names`` stand for and every relation the views among them read,
        recursively, each once, in declaration order."""
        seen: set[str] = set()
        pending = [n.lower() for n in names]
        while pending:
            name = pending.pop()
            relation = self._relations.get(name)
            if name in seen or relation is None:
                continue
            seen.add(name)
            pending.extend(relation.reads)
        return [self._relations[n] for n in sorted(seen, key=self._position.__getitem__)]

    # ---- sinks and queries
    def sink(self, name: str) -> CatalogSink | None:
        """The sink called ``name`` (any case), or ``None`` if none is declared."""
        return self._sinks.get(name.lower())

    def sink_names(self) -> list[str]:
        """Lower-case names of every declared sink."""
        return list(self._sinks)

    def declare_sink(self, name: ast.Name) -> None:
        """Check that no sink is called ``name`` yet.

        Raises:
            UnknownNameError: ``SS204``, a sink of that name is already declared.
        """
        if name.value.lower() in self._sinks:
            raise UnknownNameError(
                f"sink '{name}' is already declared",
                name.span,
                code="SS204",
                hint="rename one of the sinks",
            )

    def add_sink(self, name: ast.Name, entry: CatalogSink) -> None:
        """Record a sink (after :meth:`declare_sink`)."""
        self._sinks[name.value.lower()] = entry

    def poison_sink(self, name: ast.Name) -> None:
        """Know a sink whose declaration failed, so its INSERT is not "unknown sink"."""
        self._sinks.setdefault(name.value.lower(), CatalogSink(None, None))

    def has_query(self, name: str) -> bool:
        """Whether a query of that name was claimed already."""
        return name.lower() in self._queries

    def claim_query_name(self, name: str, span: ast.Span) -> None:
        """Reserve a query name (one query per sink).

        Raises:
            UnknownNameError: ``SS204``, another query has that name.
        """
        if name.lower() in self._queries:
            raise UnknownNameError(
                f"a query named '{name}' already writes to this pipeline (one query per sink)",
                span,
                code="SS204",
                hint="give the sink its own CREATE SINK, or set query_name",
            )
        self._queries[name.lower()] = span
