"""What the language server knows of one version of a document: the records of its analysis.

An :class:`Analysis` (made by :func:`sqlstream.lsp.analysis.analyze`) holds the findings,
each :class:`Statement`, each :class:`Declaration` of a stream, table, view, sink or user
function, and each :class:`Reference` to one; offsets are character offsets in the
document's original text (``${…}`` not substituted). The script, planner, plan and stores
that made it are kept for the next version's analysis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir.caches import CompileCaches
from sqlstream.planning.planner import Planner

Columns = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Declaration:
    """A declared name.

    Attributes:
        name: as declared.
        kind: ``stream``, ``table``, ``view``, ``sink`` or ``function``.
        start, end: offsets of the name in the text.
        statement: ``(start, end)`` offsets of the declaring statement.
        columns: ``(name, type)`` pairs (a sink: those its query writes), or ``None``.
        detail: one line (connector, watermark; a function's signature and language) for
            outlines, completions and hovers.
    """

    name: str
    kind: str
    start: int
    end: int
    statement: tuple[int, int]
    columns: Columns | None = None
    detail: str = ""


@dataclass(frozen=True)
class Reference:
    """A name written in the text: ``name`` lower case, ``namespace`` ``relation``,
    ``sink`` or ``function`` (a call of a user function, in a query, a computed column, a
    watermark or a SQL function's body), ``start``/``end`` its offsets, ``declaration``
    true where it is declared."""

    name: str
    namespace: str
    start: int
    end: int
    declaration: bool = False


@dataclass(frozen=True)
class Statement:
    """One statement: ``start``/``end`` offsets, ``kind`` (``set``, ``stream``, ``table``,
    ``view``, ``sink``, ``insert``, ``select``, ``function``), ``name`` (or ``None``), ``aliases``
    (alias or relation name, lower case → relation name, lower case) and the ``query`` plan
    it starts (``describe_query`` dict, or ``None``)."""

    start: int
    end: int
    kind: str
    name: str | None
    aliases: Mapping[str, str] = field(default_factory=dict)
    query: dict | None = None


@dataclass
class Analysis:
    """Everything known of one version of a document (see :mod:`sqlstream.lsp.analysis`)."""

    text: str
    findings: list[SqlStreamError]
    statements: list[Statement]
    declarations: dict[tuple[str, str], Declaration]  # (namespace, lower name) -> declaration
    references: list[Reference]
    parsed: bool
    script: ast.Script | None = field(default=None, repr=False, compare=False)
    """The script parsed (``None`` when the grammar refused the text): for the next version."""
    planner: Planner | None = field(default=None, repr=False, compare=False)
    """The :class:`~sqlstream.planning.planner.Planner` that planned it, or ``None``."""
    plan: p.Plan | None = field(default=None, repr=False, compare=False)
    """The plan its queries were described from, or ``None``."""
    caches: CompileCaches | None = field(default=None, repr=False, compare=False)
    """The stores its compile answered from (handed on to the next version's analysis)."""

    def statement_at(self, offset: int) -> Statement | None:
        """The statement around ``offset`` (its ``;`` included), or ``None``."""
        for statement in self.statements:
            if statement.start <= offset <= statement.end:
                return statement
        return None

    def reference_at(self, offset: int) -> Reference | None:
        """The reference (or declaration) whose name covers ``offset``, or ``None``."""
        for reference in self.references:
            if reference.start <= offset <= reference.end:
                return reference
        return None

    def relation(self, name: str) -> Declaration | None:
        """The stream, table or view called ``name`` (any case), or ``None``."""
        return self.declarations.get(("relation", name.lower()))
