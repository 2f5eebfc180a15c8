"""One document checked and indexed: findings, declarations, references, queries.

:func:`analyze` runs what ``sqlstream check`` runs (the parser, then the planner over
every statement; no JVM) and keeps, besides the findings, what an editor asks about:
each declared stream, table, view, sink and user function (where, its columns and types;
a function's signature and language), each reference to one (in ``FROM``/``JOIN``, window
TVFs, ``relation.column``, ``INSERT INTO``, a call of the function),
the aliases of each statement, and each query's plan (output mode, trigger, stateful
operators, watermarks). Offsets are character offsets in the document's original text
(``${…}`` not substituted). When the statement grammar refuses the text, declarations and
statements are found by a lexical scan instead, so the outline and completion still work.

Given the analysis of the document's previous version, :func:`analyze` is incremental:
the statements before the last statement end ahead of the first edited character are
kept and the unchanged ones after the edit are built from their grammar trees
(:func:`sqlstream.frontend.parser.reparse`); the planner takes the earlier planner's state
after the statements the two versions share and plans only the rest
(``Planner(previous=…)``); and every compile answers from the language server's stores
(:meth:`~sqlstream.ir.caches.CompileCaches.for_language_server`: sqlglot's trees of query
texts parsed before, rewrites, schemas, printed SQL, computed-column types), which the
server keeps for each open document and passes to each analysis. The result is the same as from
scratch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from sqlstream.diagnostics.errors import CompileError, SqlStreamError
from sqlstream.frontend import ast
from sqlstream.frontend.limits import run_deep
from sqlstream.frontend.parser import parse, reparse
from sqlstream.ir import plan as p
from sqlstream.ir.caches import CompileCaches
from sqlstream.lowering.explain import describe_query
from sqlstream.lsp.names import (
    WORD,
    blank_strings,
    expression_calls,
    lexical_references,
    sql_references,
)
from sqlstream.planning.planner import Planner
from sqlstream.sql.parsing import check_sqlglot_build

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
    """Everything known of one version of a document (see the module docstring)."""

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


def analyze(
    text: str,
    variables: Mapping[str, object] | None = None,
    path: str | None = None,
    previous: Analysis | None = None,
    caches: CompileCaches | None = None,
    trust: bool = False,
    stop: Callable[[], bool] | None = None,
) -> Analysis:
    """Check and index ``text`` (see the module docstring); never raises for problems in
    the text. Runs in a thread with a deep stack, as :func:`sqlstream.api.compile` does.

    Args:
        text: the document's text.
        variables: values for ``${name}``.
        path: the document's path, or ``None``.
        previous: the analysis of an earlier version of the same document (any variables
            and path: what differs is not reused), to re-check only what the edit may
            change; ``None`` checks everything.
        caches: the stores to answer from and keep in (the server's, one per document);
            ``None``: those of ``previous``, else new ones
            (:meth:`~sqlstream.ir.caches.CompileCaches.for_language_server`).
        trust: the project's Python modules are imported (their code runs); ``False``:
            functions are read from their source (docs/editors.md#trust).
            (:meth:`~sqlstream.ir.caches.CompileCaches.for_language_server`). A new
            check of their stores begins (:meth:`~sqlstream.ir.caches.CompileCaches.next_check`).
        stop: asked before each statement is planned; when it returns true the check
            stops there (the language server's check of a version a newer edit replaced).

    Returns:
        The :class:`Analysis`; equal, finding for finding, to that without ``previous``.

    Raises:
        Cancelled: ``stop`` returned true (:class:`sqlstream.ir.context.Cancelled`).
    """
    if caches is None:
        caches = previous.caches if previous is not None else None
    if caches is None:
        caches = CompileCaches.for_language_server()
    caches.next_check()
    return run_deep(_analyze, text, dict(variables or {}), path, previous, caches, trust, stop)


MAX_RETRIES = 3
"""Times a text the statement grammar refuses is parsed again with the refused statements
blanked out, so that the others are still planned and indexed."""


def _analyze(
    text: str,
    variables: dict,
    path: str | None,
    previous: Analysis | None,
    caches: CompileCaches,
    trust: bool = False,
    stop: Callable[[], bool] | None = None,
) -> Analysis:
    check_sqlglot_build()
    refused: list[SqlStreamError] = []
    blanked: list[tuple[int, int]] = []
    work = text
    earlier = previous.script if previous is not None else None
    for _ in range(MAX_RETRIES + 1):
        try:
            script = (
                parse(work, variables, path, keep_trees=True)
                if earlier is None
                else reparse(earlier, work, variables, path)
            )
            break
        except SqlStreamError as error:
            found = error.findings if isinstance(error, CompileError) else [error]
            refused += found
            work, more = _blank_statements(work, [f.span for f in found if f.span is not None])
            blanked += more
            if not more:
                return _lexical(text, refused, previous, caches)
    else:
        return _lexical(text, refused, previous, caches)
    planner = Planner(
        script,
        path,
        previous=previous.planner if previous is not None else None,
        caches=caches,
        trust=trust,
        stop=stop,
        state_lineage=False,  # for the restart guard only: the server starts no query
    )
    plan, findings = planner.result()  # with errors, the queries planned: described all the same
    queries = _descriptions(plan, previous)
    index = _Indexer(planner, plan)
    for statement in script.statements:
        index.statement(statement, queries.get(statement.span.start))
    findings = sorted(refused + findings, key=lambda f: f.span.start if f.span else -1)
    analysis = Analysis(
        text,
        findings,
        index.statements,
        index.declarations,
        index.references,
        True,
        script,
        planner,
        plan,
        caches,
    )
    if blanked:  # the refused statements, as a lexical scan sees them
        lexical = _lexical(text, [])
        inside = [s for s in lexical.statements if any(a <= s.start < b for a, b in blanked)]
        analysis.statements = sorted(analysis.statements + inside, key=lambda s: s.start)
        analysis.references += [
            r
            for r in lexical.references
            if any(a <= r.start < b for a, b in blanked)
            and (not r.declaration or (r.namespace, r.name) not in analysis.declarations)
        ]
        for key, declared in lexical.declarations.items():
            if any(a <= declared.start < b for a, b in blanked):
                analysis.declarations.setdefault(key, declared)
    return analysis


def _descriptions(plan: p.Plan, previous: Analysis | None) -> dict[int, dict]:
    """Statement start → :func:`describe_query` of the first query of ``plan`` there. The
    description ``previous`` holds at the same start is reused when it was made from an
    equal query, with the same settings, secrets and source relations (all that
    ``describe_query`` reads)."""
    old_plan = previous.plan if previous is not None else None
    if (
        old_plan is None
        or old_plan.settings != plan.settings
        or _secret_values(old_plan) != _secret_values(plan)
    ):
        old_plan = None
    old_queries: dict[int, p.Query] = {}
    described: dict[int, dict] = {}
    if old_plan is not None and previous is not None:
        for query in old_plan.queries:
            old_queries.setdefault(query.span.start, query)
        described = {s.start: s.query for s in previous.statements if s.query is not None}
        old_sources = _sources(old_plan)
    sources = _sources(plan)
    queries: dict[int, dict] = {}
    for query in plan.queries:
        start = query.span.start
        if start in queries:
            continue
        before, reused = old_queries.get(start), described.get(start)
        if (
            reused is None
            or before != query
            or any(
                old_sources.get(s.relation) != sources.get(s.relation)
                for s in (query.state.sources if query.state is not None else ())
            )
        ):
            reused = describe_query(plan, query)
        queries[start] = reused
    return queries


def _secret_values(plan: p.Plan) -> set[str]:
    return {secret.value for secret in plan.source.secrets}


def _sources(plan: p.Plan) -> dict[str, p.SourceRelation]:
    return {r.name.lower(): r for r in plan.relations if isinstance(r, p.SourceRelation)}


def _blank_statements(text: str, spans) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with the statements holding ``spans`` replaced by spaces (new lines kept,
    so every offset, line and column stays), and the ``(start, end)`` of each."""
    ranges = []
    blank = blank_strings(text)
    for chunk in _STATEMENT.finditer(blank):
        start, end = chunk.start(), chunk.end()
        if (
            start < end
            and any(start <= span.start < end or (span.start == end == len(text)) for span in spans)
            and text[start:end].strip()
        ):
            ranges.append((start, end))
    for start, end in ranges:
        text = text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]
    return text, ranges


class _Indexer:
    """Declarations, references and statements of a parsed script, from its plan (partial
    when there were errors) and the catalog of the planner that made it."""

    def __init__(self, planner: Planner, plan: p.Plan) -> None:
        self.catalog = planner.catalog  # every declared name, a failed declaration's too
        self.sink_columns = {q.sink.name.lower(): q.columns for q in plan.queries}
        self.sources = {
            r.name.lower(): r for r in plan.relations if isinstance(r, p.SourceRelation)
        }
        self.functions = {f.name.lower(): f for f in plan.functions}
        self.caches = planner.context.caches
        self.statements: list[Statement] = []
        self.declarations: dict[tuple[str, str], Declaration] = {}
        self.references: list[Reference] = []

    def statement(self, node: ast.Statement, query: dict | None) -> None:
        span = (node.span.start, node.span.end)
        kind = {
            ast.SetStatement: "set",
            ast.CreateStream: "stream",
            ast.CreateTable: "table",
            ast.CreateView: "view",
            ast.CreateSink: "sink",
            ast.Insert: "insert",
            ast.Select: "select",
            ast.CreateFunction: "function",
            ast.CreateFlow: "flow",
        }[type(node)]
        name = getattr(node, "name", None) or getattr(node, "sink", None)
        if isinstance(node, (ast.CreateStream, ast.CreateTable, ast.CreateView)):
            self._declare("relation", node.name, kind, span, self._relation_detail(node))
        if isinstance(node, ast.CreateSink) or (
            isinstance(node, ast.CreateStream) and node.query is not None
        ):
            self._declare("sink", node.name, "sink", span, _options_detail(node.options))
        if isinstance(node, ast.Insert):
            self.references.append(
                Reference(node.sink.value.lower(), "sink", node.sink.span.start, node.sink.span.end)
            )
        if isinstance(node, ast.CreateFlow):  # its target and stream
            for ref, space in ((node.target, "sink"), (node.source, "relation")):
                self.references.append(
                    Reference(ref.value.lower(), space, ref.span.start, ref.span.end)
                )
        calls: list[Reference] = []  # (a function is known after its own statement)
        for expression in _expressions(node):
            calls += self._calls(expression, expression_calls(expression.text, self.caches))
        if isinstance(node, ast.CreateFunction):
            self._declare("function", node.name, "function", span, self._function_detail(node))
        self.references += calls
        aliases: dict[str, str] = {}
        text = getattr(node, "query", None)
        if text is not None:
            aliases = self._query_references(text)
        for option in getattr(node, "options", ()):
            if option.key.lower() == "dead_letter" and isinstance(option.value, str):
                start = option.value_span.start + 1  # inside the quotes
                self.references.append(
                    Reference(option.value.lower(), "sink", start, start + len(option.value))
                )
        self.statements.append(
            Statement(
                span[0], span[1], kind, str(name) if name is not None else None, aliases, query
            )
        )

    def _declare(self, namespace: str, name: ast.Name, kind: str, span, detail: str) -> None:
        key = name.value.lower()
        if namespace == "relation":
            entry = self.catalog.get(key)
            columns = entry.columns if entry is not None else None
        elif namespace == "sink":
            columns = self.sink_columns.get(key)
        else:
            columns = None
        self.declarations.setdefault(
            (namespace, key),
            Declaration(name.value, kind, name.span.start, name.span.end, span, columns, detail),
        )
        self.references.append(Reference(key, namespace, name.span.start, name.span.end, True))

    def _relation_detail(self, node) -> str:
        if isinstance(node, ast.CreateView):
            return "view"
        parts = [_options_detail(node.options)]
        source = self.sources.get(node.name.value.lower())
        if source is not None and source.watermark is not None:
            parts.append(f"watermark {source.watermark.column} - {source.watermark.delay}")
        return ", ".join(x for x in parts if x)

    def _function_detail(self, node: ast.CreateFunction) -> str:
        """``name(param TYPE, …) RETURNS TYPE — language``: as the planner resolved it
        (a Python function's types may come from its annotations), else as written."""
        function = self.functions.get(node.name.value.lower())
        if function is not None and function.span == node.span:
            parameters, returns = function.parameters, function.returns
            language = {"python": "Python UDF", "pandas": "pandas UDF"}.get(function.kind, "SQL")
            if function.reference:
                language += f" `{function.reference}`"
        else:
            parameters = tuple((str(n), t) for n, t in node.parameters or ())
            returns = node.returns or "?"
            language = (
                node.language.value.upper()
                if node.language is not None
                else ("SQL" if node.body is not None else "PYTHON")
            )
            if node.reference:
                language += f" `{node.reference}`"
        signature = ", ".join(f"{n} {t}" for n, t in parameters)
        return f"{node.name.value}({signature}) RETURNS {returns} — {language}"

    def _query_references(self, text: ast.SqlText) -> dict[str, str]:
        """Record the relation references and function calls of a query; return its
        aliases."""
        found, aliases, calls = sql_references(text.text, self.caches)
        for name, start, end in found:
            span = text.locate(start, end)
            self.references.append(Reference(name, "relation", span.start, span.end))
        self.references += self._calls(text, calls)
        return aliases

    def _calls(self, text: ast.SqlText, calls) -> list[Reference]:
        """The references of the calls (``(name, start, end)``, offsets in ``text``) of
        the user functions declared so far."""
        found = []
        for name, start, end in calls:
            if ("function", name) in self.declarations:
                span = text.locate(start, end)
                found.append(Reference(name, "function", span.start, span.end))
        return found


def _expressions(node: ast.Statement) -> list[ast.SqlText]:
    """The scalar expressions of a statement that may call a function: computed columns,
    the watermark, a SQL function's body."""
    found = [
        c.expression
        for c in getattr(node, "columns", None) or ()
        if isinstance(c, ast.ComputedColumn)
    ]
    watermark = getattr(node, "watermark", None)
    if watermark is not None:
        found.append(watermark.expression)
    if isinstance(node, ast.CreateFunction) and node.body is not None:
        found.append(node.body)
    return found


def _options_detail(options: tuple[ast.Option, ...]) -> str:
    by_key = {o.key.lower(): o.text for o in options}
    return " ".join(x for x in (by_key.get("connector"), by_key.get("format")) if x)


_STATEMENT = re.compile(r"[^;]*;?", re.S)
_DECLARE = re.compile(
    rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+(?:SYSTEM\s+)?)?"
    rf"(STREAM|TABLE|VIEW|SINK|FUNCTION)\s+"
    rf"(?:IF\s+NOT\s+EXISTS\s+)?({WORD})",
    re.IGNORECASE,
)
_INSERT = re.compile(rf"^\s*INSERT\s+INTO\s+({WORD})", re.IGNORECASE)


def _lexical(
    text: str,
    findings: list[SqlStreamError],
    previous: Analysis | None = None,
    caches: CompileCaches | None = None,
    trust: bool = False,
) -> Analysis:
    """The index of a text the statement grammar refused: statements split at ``;``
    (outside strings and comments), declarations and references found by their keywords.
    The script and planner of ``previous`` and the stores ``caches`` are carried on, for
    the next version."""
    blank = blank_strings(text)
    statements: list[Statement] = []
    declarations: dict[tuple[str, str], Declaration] = {}
    references: list[Reference] = []
    for chunk in _STATEMENT.finditer(blank):
        body = chunk.group(0)
        if not body.strip():
            continue
        lead = len(body) - len(body.lstrip())
        start, end = chunk.start() + lead, chunk.end()
        declared, inserted = _DECLARE.match(body), _INSERT.match(body)
        kind, name = "select", None
        if declared:
            kind, name = declared.group(1).lower(), declared.group(2).strip("`")
            namespace = kind if kind in ("sink", "function") else "relation"
            at = chunk.start() + declared.start(2)
            columns = _lexical_columns(body[declared.end() :]) if namespace == "relation" else None
            declarations.setdefault(
                (namespace, name.lower()),
                Declaration(name, kind, at, at + len(declared.group(2)), (start, end), columns),
            )
            references.append(
                Reference(name.lower(), namespace, at, at + len(declared.group(2)), True)
            )
        elif inserted:
            kind, name = "insert", inserted.group(1).strip("`")
            at = chunk.start() + inserted.start(1)
            references.append(Reference(name.lower(), "sink", at, at + len(inserted.group(1))))
        elif re.match(r"\s*SET\b", body, re.IGNORECASE):
            kind = "set"
        refs, aliases = lexical_references(body)
        references += [
            Reference(n, "relation", chunk.start() + s, chunk.start() + e)
            for n, s, e in refs
            if kind not in ("stream", "table", "sink", "function")
        ]
        statements.append(Statement(start, end, kind, name, aliases))
    return Analysis(
        text,
        findings,
        statements,
        declarations,
        references,
        False,
        previous.script if previous is not None else None,
        previous.planner if previous is not None else None,
        caches=caches,
    )


def _lexical_columns(rest: str) -> Columns | None:
    """The columns of a ``( name TYPE, … )`` list at the start of ``rest`` (strings and
    comments blanked), as written; a computed column's type is ``UNKNOWN``; ``None``
    without a list."""
    if not rest.lstrip().startswith("("):
        return None
    depth, current = 0, ""
    items: list[str] = []
    for char in rest[rest.index("(") :]:
        depth += char == "("
        depth -= char == ")"
        if depth == 0:
            items.append(current[1:] if not items else current)
            break
        if char == "," and depth == 1:
            items.append(current[1:] if not items else current)
            current = ""
            continue
        current += char
    columns = []
    for item in items:
        words = item.split()
        if len(words) < 2 or words[0].upper() == "WATERMARK":
            continue
        type_ = "UNKNOWN" if words[1].upper() == "AS" else " ".join(words[1:]).upper()
        columns.append((words[0].strip("`"), type_.split(" METADATA")[0]))
    return tuple(columns)
