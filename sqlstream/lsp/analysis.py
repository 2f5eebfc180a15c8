"""One document checked and indexed: findings, declarations, references, queries.

:func:`analyze` runs what ``sqlstream check`` runs (the parser, then the planner over
every statement; no JVM) and keeps, besides the findings, what an editor asks about:
each declared stream, table, view, sink and user function (where, its columns and types;
a function's signature and language), each reference to one (in ``FROM``/``JOIN``, window
TVFs, ``relation.column``, ``INSERT INTO``, a call of the function),
the aliases of each statement, and each query's plan (output mode, trigger, stateful
operators, watermarks). Offsets are character offsets in the document's original text
(``${…}`` not substituted). When the statement grammar refuses the text, declarations and
statements are found by a lexical scan instead (:mod:`sqlstream.lsp.lexical_index`), so the
outline and completion still work; otherwise they are indexed from the plan
(:mod:`sqlstream.lsp.script_index`). The result is an
:class:`~sqlstream.lsp.document_index.Analysis`.

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

from sqlstream.diagnostics.errors import CompileError, SqlStreamError
from sqlstream.frontend.limits import run_deep
from sqlstream.frontend.parser import parse, reparse
from sqlstream.ir import plan as p
from sqlstream.ir.caches import CompileCaches
from sqlstream.lowering.explain import describe_query
from sqlstream.lsp.document_index import Analysis
from sqlstream.lsp.lexical_index import STATEMENT, lexical_analysis
from sqlstream.lsp.names import blank_strings
from sqlstream.lsp.script_index import ScriptIndex
from sqlstream.planning.planner import Planner
from sqlstream.sql.parsing import check_sqlglot_build


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
                return lexical_analysis(text, refused, previous, caches)
    else:
        return lexical_analysis(text, refused, previous, caches)
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
    index = ScriptIndex(planner, plan)
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
        lexical = lexical_analysis(text, [])
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
    for chunk in STATEMENT.finditer(blank):
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
