"""The index of a parsed script: its statements, declarations and references, found by the
planner.

:class:`ScriptIndex` takes each statement of a script the grammar parsed, with the plan
(partial when there were errors) and the catalog of the planner that made it: a declared
name's columns are the catalog's, a sink's those its query writes, a function's signature as
the planner resolved it; the relations a query reads and the user functions it calls come
from the compiler's own rule (:mod:`sqlstream.lsp.names`).
"""

from __future__ import annotations

from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.lsp.document_index import Declaration, Reference, Statement
from sqlstream.lsp.names import expression_calls, sql_references
from sqlstream.planning.planner import Planner


class ScriptIndex:
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
        """Index ``node``, whose first query is described by ``query`` (or ``None``)."""
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
            self._declare("sink", node.name, "sink", span, options_detail(node.options))
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
        parts = [options_detail(node.options)]
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


def options_detail(options: tuple[ast.Option, ...]) -> str:
    """``<connector> <format>`` of a ``WITH`` list, as an outline shows it."""
    by_key = {o.key.lower(): o.text for o in options}
    return " ".join(x for x in (by_key.get("connector"), by_key.get("format")) if x)
