"""The Language Server Protocol over stdin/stdout (pygls 2, ``pygls.lsp.server``).

Documents are checked on the unsaved text: on open at once, on every change after
:data:`DEBOUNCE_SECONDS` without a further change (a newer change cancels the pending
check). Diagnostics carry the finding's exact range, severity, code and a
``codeDescription`` link to the code's page of the documentation (:data:`DOCS_URL`, or
the ``sqlstream.docsUrl`` setting). ``${…}`` values come from a ``--var`` file of
``NAME=VALUE`` lines and the ``sqlstream.variables`` setting (initialization options or
``workspace/configuration``; the setting wins). Features: hover, completion (triggered
by ``.``), go to definition, find references, document symbols, rename.

No code of the project runs unless the user trusts it (docs/editors.md#trust): ``lsp
--trust``, ``SQLSTREAM_TRUST=1``, or the client's ``initializationOptions`` ``{"trust":
true}`` (VS Code's extension sends it in a trusted workspace only; a workspace setting
cannot). Trusted, a module's standard output goes to standard error: the JSON-RPC stream
on standard output carries only the protocol (:func:`serve`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer

from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp import completion, features
from sqlstream.lsp.analysis import Analysis, analyze
from sqlstream.lsp.positions import Lines

DEBOUNCE_SECONDS = 0.15
"""Quiet time after a change before the document is checked again."""

CONFIGURATION_WAIT_SECONDS = 2.0
"""How long the first check of an opened document waits for the workspace's settings."""

DOCS_URL = "http://127.0.0.1:8000/codes/#{code}"
"""Where a finding code is documented (``{code}`` lower case, e.g. ``ss301``)."""

_KINDS = {
    "relation": t.CompletionItemKind.Class,
    "sink": t.CompletionItemKind.Interface,
    "column": t.CompletionItemKind.Field,
    "function": t.CompletionItemKind.Function,
    "keyword": t.CompletionItemKind.Keyword,
    "option": t.CompletionItemKind.Property,
    "connector": t.CompletionItemKind.Module,
    "snippet": t.CompletionItemKind.Snippet,
}
_SYMBOLS = {
    "set": t.SymbolKind.Property,
    "stream": t.SymbolKind.Event,
    "table": t.SymbolKind.Struct,
    "view": t.SymbolKind.Class,
    "sink": t.SymbolKind.Interface,
    "insert": t.SymbolKind.Method,
    "select": t.SymbolKind.Function,
    "function": t.SymbolKind.Function,
}


def read_var_file(path: str | None) -> dict[str, str]:
    """``NAME=VALUE`` lines of ``path`` (blank lines and ``#`` comments skipped)."""
    found = {}
    if path:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            name, sep, value = line.partition("=")
            if sep and name.strip() and not line.lstrip().startswith("#"):
                found[name.strip()] = value.strip()
    return found


class SqlStreamServer(LanguageServer):
    """The server: the documents' last analyses, the variables, pending checks, and the
    workspace's compile stores (:meth:`~sqlstream.ir.caches.CompileCaches.for_language_server`:
    one for every document, bounded; each check answers from them)."""

    def __init__(self, variables: dict[str, str], trust: bool = False) -> None:
        super().__init__(
            "sqlstream", "0.1.0", text_document_sync_kind=t.TextDocumentSyncKind.Incremental
        )
        self.file_variables = dict(variables)
        self.setting_variables: dict[str, str] = {}
        self.docs_url = DOCS_URL
        self.analyses: dict[str, tuple[int | None, Analysis, Lines]] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.caches = CompileCaches.for_language_server()
        self.configured = asyncio.Event()
        self.trust = trust

    @property
    def encoding(self) -> str:
        """The negotiated position encoding: ``utf-16`` (LSP's default), ``utf-8``, ``utf-32``."""
        try:
            return str(self.workspace.position_encoding or "utf-16")
        except (AttributeError, RuntimeError):
            return "utf-16"

    def apply_settings(self, settings) -> None:
        """Read ``{"variables": {…}, "docsUrl": "…"}`` (the ``sqlstream`` section)."""
        if not isinstance(settings, dict):
            return
        if "sqlstream" in settings and isinstance(settings["sqlstream"], dict):
            settings = settings["sqlstream"]
        variables = settings.get("variables")
        if isinstance(variables, dict):
            self.setting_variables = {str(k): str(v) for k, v in variables.items()}
        if isinstance(settings.get("docsUrl"), str):
            self.docs_url = settings["docsUrl"]

    def check(self, uri: str) -> Analysis:
        """Analyse the document's current text and publish its diagnostics."""
        document = self.workspace.get_text_document(uri)
        path = _path_of(uri)
        variables = {**self.file_variables, **self.setting_variables}
        known = self.analyses.get(uri)
        analysis = analyze(
            document.source,
            variables,
            path,
            previous=known[1] if known is not None else None,
            caches=self.caches,
            trust=self.trust,
        )
        lines = Lines(document.source, self.encoding)
        self.analyses[uri] = (document.version, analysis, lines)
        self.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(
                uri=uri,
                version=document.version,
                diagnostics=[self.diagnostic(f, lines) for f in analysis.findings],
            )
        )
        return analysis

    def diagnostic(self, finding, lines: Lines) -> t.Diagnostic:
        """One finding as an LSP diagnostic (a finding without a position: the first line)."""
        span = finding.span
        start, end = (span.start, max(span.end, span.start)) if span is not None else (0, 0)
        message = finding.message + (f"\nhint: {finding.hint}" if finding.hint else "")
        if finding.source is not None:
            message = finding.source.redact(message)
        return t.Diagnostic(
            range=_range(lines, start, end),
            message=message,
            source="sqlstream",
            severity=t.DiagnosticSeverity.Error
            if finding.severity == "error"
            else t.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=t.CodeDescription(
                href=self.docs_url.format(code=finding.code.lower())
            ),
        )

    def current(self, uri: str) -> tuple[Analysis, Lines]:
        """The analysis of the document's current text (checked now when it is stale)."""
        document = self.workspace.get_text_document(uri)
        known = self.analyses.get(uri)
        if known is None or known[0] != document.version or known[1].text != document.source:
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
            self.check(uri)
            known = self.analyses[uri]
        return known[1], known[2]


def _path_of(uri: str) -> str | None:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def _range(lines: Lines, start: int, end: int) -> t.Range:
    (l1, c1), (l2, c2) = lines.position(start), lines.position(end)
    return t.Range(start=t.Position(line=l1, character=c1), end=t.Position(line=l2, character=c2))


def build(variables: dict[str, str] | None = None, trust: bool = False) -> SqlStreamServer:
    """The server with every feature registered (not started); ``trust``: the project's
    Python modules are imported (else only when the client's ``initializationOptions``
    hold ``"trust": true``)."""
    server = SqlStreamServer(variables or {}, trust)

    @server.feature(t.INITIALIZED)
    async def initialized(ls: SqlStreamServer, params) -> None:
        try:
            config = await ls.workspace_configuration_async(
                t.ConfigurationParams(items=[t.ConfigurationItem(section="sqlstream")])
            )
        except Exception:  # noqa: BLE001 - a client without workspace/configuration
            ls.configured.set()
            return
        if config:
            ls.apply_settings(config[0])
        ls.configured.set()
        for uri in list(ls.analyses):
            ls.check(uri)

    @server.feature(t.INITIALIZE)
    def initialize(ls: SqlStreamServer, params: t.InitializeParams) -> None:
        options = params.initialization_options or {}
        ls.trust = ls.trust or (isinstance(options, dict) and options.get("trust") is True)
        ls.apply_settings(options)

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def changed_configuration(ls: SqlStreamServer, params) -> None:
        ls.apply_settings(params.settings)
        for uri in list(ls.analyses):
            ls.check(uri)

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: SqlStreamServer, params: t.DidOpenTextDocumentParams) -> None:
        # the first check with the workspace's variables, when the client sends them
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ls.configured.wait(), CONFIGURATION_WAIT_SECONDS)
        ls.check(params.text_document.uri)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: SqlStreamServer, params: t.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        previous = ls.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()

        async def later() -> None:
            await asyncio.sleep(DEBOUNCE_SECONDS)
            ls.pending.pop(uri, None)
            ls.check(uri)

        ls.pending[uri] = asyncio.ensure_future(later())

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SqlStreamServer, params: t.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.analyses.pop(uri, None)
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls: SqlStreamServer, params: t.HoverParams) -> t.Hover | None:
        analysis, lines = ls.current(params.text_document.uri)
        found = features.hover(
            analysis, lines.offset(params.position.line, params.position.character)
        )
        if found is None:
            return None
        text, start, end = found
        return t.Hover(
            contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text),
            range=_range(lines, start, end),
        )

    @server.feature(
        t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=[".", "(", "'"])
    )
    def complete(ls: SqlStreamServer, params: t.CompletionParams) -> t.CompletionList:
        analysis, lines = ls.current(params.text_document.uri)
        offset = lines.offset(params.position.line, params.position.character)
        items = []
        for item in completion.complete(analysis, offset):
            snippet = item["insert"] is not None and "$" in item["insert"]
            items.append(
                t.CompletionItem(
                    label=item["label"],
                    kind=_KINDS[item["kind"]],
                    detail=item["detail"] or None,
                    insert_text=item["insert"],
                    insert_text_format=t.InsertTextFormat.Snippet if snippet else None,
                )
            )
        return t.CompletionList(is_incomplete=False, items=items)

    @server.feature(t.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: SqlStreamServer, params: t.DefinitionParams) -> t.Location | None:
        analysis, lines = ls.current(params.text_document.uri)
        found = features.definition(
            analysis, lines.offset(params.position.line, params.position.character)
        )
        return (
            None
            if found is None
            else t.Location(uri=params.text_document.uri, range=_range(lines, *found))
        )

    @server.feature(t.TEXT_DOCUMENT_REFERENCES)
    def references(ls: SqlStreamServer, params: t.ReferenceParams) -> list[t.Location]:
        analysis, lines = ls.current(params.text_document.uri)
        offset = lines.offset(params.position.line, params.position.character)
        return [
            t.Location(uri=params.text_document.uri, range=_range(lines, s, e))
            for s, e in features.references(analysis, offset, params.context.include_declaration)
        ]

    @server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls: SqlStreamServer, params) -> list[t.DocumentSymbol]:
        analysis, lines = ls.current(params.text_document.uri)
        found = []
        for entry in features.symbols(analysis):
            name_range = _range(lines, entry["name_start"], entry["name_end"])
            children = [
                t.DocumentSymbol(
                    name=c["name"],
                    detail=c["detail"],
                    kind=t.SymbolKind.Field,
                    range=name_range,
                    selection_range=name_range,
                )
                for c in entry["children"]
            ]
            found.append(
                t.DocumentSymbol(
                    name=entry["name"],
                    detail=entry["detail"],
                    kind=_SYMBOLS[entry["kind"]],
                    range=_range(lines, entry["start"], entry["end"]),
                    selection_range=name_range,
                    children=children or None,
                )
            )
        return found

    @server.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: SqlStreamServer, params: t.PrepareRenameParams):
        analysis, lines = ls.current(params.text_document.uri)
        reference = analysis.reference_at(
            lines.offset(params.position.line, params.position.character)
        )
        if reference is None or features.declaration_of(analysis, reference) is None:
            return None
        return _range(lines, reference.start, reference.end)

    @server.feature(t.TEXT_DOCUMENT_RENAME)
    def rename(ls: SqlStreamServer, params: t.RenameParams) -> t.WorkspaceEdit:
        analysis, lines = ls.current(params.text_document.uri)
        edits = features.rename(
            analysis, lines.offset(params.position.line, params.position.character), params.new_name
        )
        if isinstance(edits, str):
            from pygls.exceptions import JsonRpcInvalidParams

            raise JsonRpcInvalidParams(edits)
        return t.WorkspaceEdit(
            changes={
                params.text_document.uri: [
                    t.TextEdit(range=_range(lines, s, e), new_text=text) for s, e, text in edits
                ]
            }
        )

    return server


def serve(var_file: str | None = None, trust: bool = False) -> None:
    """Run the server on stdin/stdout until the client exits (``trust``: see :func:`build`).

    The protocol is written to the standard output's binary stream taken here; the rest of
    the process's ``sys.stdout`` (a trusted module's ``print``) goes to standard error.
    """
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    build(read_var_file(var_file), trust).start_io(stdin, stdout)
