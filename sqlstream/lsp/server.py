"""The Language Server Protocol over stdin/stdout (pygls 2, ``pygls.lsp.server``).

Documents are checked on the unsaved text: on open at once, on every change after
:data:`DEBOUNCE_SECONDS` without a further change (a newer change cancels the pending
check). Checks run one at a time in a worker thread, off the event loop, so requests are
answered meanwhile from each document's last finished analysis; a check whose document
has a newer version (or was closed) stops before its next statement and its result is
dropped. Each open document has its own compile stores (bounded, least recently used
answers evicted: :class:`~sqlstream.ir.caches.BoundedCache`); closing it drops them and
its analysis. A replaced or closed analysis is freed in the worker thread without a full
garbage collection (:mod:`sqlstream.lsp.freeing`). Text is analysed with each lone surrogate (valid JSON, e.g. from a
JavaScript client, but no character) replaced by U+FFFD, one UTF-16 unit as well, so
positions are unchanged. Diagnostics carry the finding's exact range, severity, code and a
``codeDescription`` link to the code's page of the documentation (:data:`DOCS_URL`, or
the ``sqlstream.docsUrl`` setting). ``${…}`` values come from a ``--var`` file of
``NAME=VALUE`` lines and the ``sqlstream.variables`` setting (initialization options or
``workspace/configuration``; the setting wins). Features: hover, completion (triggered
by ``.``), go to definition, find references, document symbols, rename; and the request
``sqlstream/documents`` (:data:`DOCUMENTS_REQUEST`) describing the server's per-document
state.

No code of the project runs unless the user trusts it (docs/editors.md#trust): ``lsp
--trust``, ``SQLSTREAM_TRUST=1``, or the client's ``initializationOptions`` ``{"trust":
true}`` (VS Code's extension sends it in a trusted workspace only; a workspace setting
cannot). Trusted, a module's standard output goes to standard error: the JSON-RPC stream
on standard output carries only the protocol (:func:`serve`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import re
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as t
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from sqlstream.ir.caches import CompileCaches
from sqlstream.ir.context import Cancelled
from sqlstream.lsp import completion, features, test_files
from sqlstream.lsp.analysis import Analysis, analyze
from sqlstream.lsp.freeing import free_replaced
from sqlstream.lsp.positions import Lines

DEBOUNCE_SECONDS = 0.15
"""Quiet time after a change before the document is checked again."""

CONFIGURATION_WAIT_SECONDS = 2.0
"""How long the first check of an opened document waits for the workspace's settings."""

DOCS_URL = "http://127.0.0.1:8000/codes/#{code}"
"""Where a finding code is documented (``{code}`` lower case, e.g. ``ss301``)."""

DOCUMENTS_REQUEST = "sqlstream/documents"
"""A request (no parameters) answered with what the server holds per document:
``{"documents": [{"uri", "open", "version" (of its last analysis, or null), "answers"
(kept in its compile stores, or null), "check" (one pending or running)}, …],
"frees": <replaced or closed analyses freed so far>, "unlinked": <objects unlinked by
them>, "free_seconds": <how long the last freeing took>}``, a document the server holds
nothing for left out. For tests and for seeing what it holds."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_LOG = logging.getLogger(__name__)

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


def scrubbed(text: str) -> str:
    """``text`` with each lone surrogate (``"\\ud800"`` in JSON: a code unit, not a
    character) replaced by U+FFFD: the same number of characters and of UTF-16 units, so
    every offset and LSP position is unchanged."""
    return _SURROGATE.sub("\ufffd", text)


class SqlStreamServer(LanguageServer):
    """The server: the documents' last analyses, the variables, pending checks, the
    worker thread that runs them (one check at a time) and the compile stores of each
    open document (:meth:`~sqlstream.ir.caches.CompileCaches.for_language_server`:
    bounded; each check of the document answers from them)."""

    def __init__(self, variables: dict[str, str], trust: bool = False) -> None:
        super().__init__(
            "sqlstream", "0.1.0", text_document_sync_kind=t.TextDocumentSyncKind.Incremental
        )
        self.file_variables = dict(variables)
        self.setting_variables: dict[str, str] = {}
        self.docs_url = DOCS_URL
        self.analyses: dict[str, tuple[int | None, Analysis, Lines]] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.stores: dict[str, CompileCaches] = {}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlstream-check")
        self.configured = asyncio.Event()
        self.trust = trust
        self.frees = 0  # replaced analyses freed (see free)
        self.free_seconds = 0.0  # how long the last freeing took
        self.unlinked = 0  # objects unlinked by them

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
            self.setting_variables = {
                scrubbed(str(k)): scrubbed(str(v)) for k, v in variables.items()
            }
        if isinstance(settings.get("docsUrl"), str):
            self.docs_url = settings["docsUrl"]

    def document(self, uri: str) -> TextDocument | None:
        """The open document ``uri``, or ``None`` (closed, or never opened)."""
        return self.workspace.text_documents.get(unquote(uri))

    def schedule(self, uri: str, delay: float = 0.0, settings_wait: float = 0.0) -> None:
        """Check ``uri`` after ``delay`` seconds (and after the workspace's settings came,
        waiting at most ``settings_wait`` seconds), replacing a check pending for it. A
        YAML file (a test file) is not checked: a test file answers go to definition."""
        if test_files.is_yaml(uri):
            return
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.pending[uri] = asyncio.ensure_future(self._check_later(uri, delay, settings_wait))

    async def _check_later(self, uri: str, delay: float, settings_wait: float) -> None:
        task = asyncio.current_task()
        try:
            if settings_wait:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.configured.wait(), settings_wait)
            if delay:
                await asyncio.sleep(delay)
            await self.check(uri)
        finally:
            if self.pending.get(uri) is task:
                del self.pending[uri]

    async def check(self, uri: str) -> Analysis | None:
        """Analyse the document's current text in the worker thread and publish its
        diagnostics; ``None`` when a newer version came (or the document was closed)
        before the check ended: its result is dropped, nothing is published."""
        document = self.document(uri)
        if document is None:
            return None
        version = document.version
        source = document.source

        def stale() -> bool:  # a newer version, closed, or the server shutting down
            return (
                self.document(uri) is not document
                or document.version != version
                or bool(getattr(self.protocol, "_shutdown", False))
            )

        variables = {**self.file_variables, **self.setting_variables}
        loop = asyncio.get_running_loop()
        try:
            done = await loop.run_in_executor(
                self.worker, self._analyze, uri, scrubbed(source), variables, stale
            )
        except Cancelled:
            return None
        except Exception:  # noqa: BLE001 - an internal error: logged, the server goes on
            _LOG.exception("checking %s failed", uri)
            return None
        if done is None or stale():
            return None
        analysis, lines, diagnostics = done
        replaced = self.analyses.get(uri)
        self.analyses[uri] = (version, analysis, lines)
        self.text_document_publish_diagnostics(
            t.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )
        if replaced is not None:
            self.free(replaced[1])
        return analysis

    def free(self, replaced: object) -> None:
        """Queue the freeing of ``replaced`` (an analysis no longer used) in the worker
        thread, after the checks queued: :func:`~sqlstream.lsp.freeing.free_replaced`
        breaks the reference cycles of what only it reaches (sqlglot's trees link each
        node to its parent), in Python code the event loop's thread interrupts every few
        milliseconds, so reference counting frees it and no full garbage collection
        (which holds the GIL for seconds on a long file) is needed. What the current
        analyses and the compile stores reach is left as it is. Then ``gc.freeze()``
        moves the objects alive into the permanent generation, so CPython's automatic
        collections no longer walk the live analyses (frozen objects are still freed by
        reference counting)."""
        live: list[object] = [known[1] for known in self.analyses.values()]
        live += self.stores.values()
        self.worker.submit(self._free, replaced, live)

    def _free(self, replaced: object, live: list[object]) -> None:
        if getattr(self.protocol, "_shutdown", False):  # exiting: nothing to free for
            return
        start = time.monotonic()
        gc.freeze()  # no automatic full collection over the heap while this runs
        self.unlinked += free_replaced(replaced, live)
        del replaced, live
        gc.freeze()
        self.frees += 1
        self.free_seconds = time.monotonic() - start

    def _analyze(
        self, uri: str, text: str, variables: dict[str, str], stale: Callable[[], bool]
    ) -> tuple[Analysis, Lines, list[t.Diagnostic]] | None:
        """In the worker thread: the analysis of ``text`` (given the document's last one,
        answering from its stores), its lines and its diagnostics; ``None`` when stale."""
        caches = self.stores.get(uri)
        if caches is None or stale():
            return None
        known = self.analyses.get(uri)
        analysis = analyze(
            text,
            variables,
            _path_of(uri),
            previous=known[1] if known is not None else None,
            caches=caches,
            trust=self.trust,
            stop=stale,
        )
        lines = Lines(text, self.encoding)
        gc.freeze()  # the new analysis: not walked by the automatic collections (see free)
        return analysis, lines, [self.diagnostic(f, lines) for f in analysis.findings]

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

    def current(self, uri: str) -> tuple[Analysis, Lines] | None:
        """The document's last finished analysis and its lines (of the text it analysed:
        a request is answered from it while a newer version is being checked), or
        ``None`` before the first check of the document ends."""
        known = self.analyses.get(uri)
        return None if known is None else (known[1], known[2])

    def close(self, uri: str) -> None:
        """Forget ``uri``: its pending check, analysis and stores (a running check of it
        stops before its next statement: the document is gone)."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        known = self.analyses.pop(uri, None)
        self.stores.pop(uri, None)
        if known is not None:
            self.free(known[1])

    def state(self) -> dict[str, Any]:
        """What :data:`DOCUMENTS_REQUEST` answers."""
        uris = set(self.workspace.text_documents) | set(self.analyses)
        uris |= set(self.stores) | set(self.pending)
        return {
            "documents": [
                {
                    "uri": uri,
                    "open": uri in self.workspace.text_documents,
                    "version": self.analyses[uri][0] if uri in self.analyses else None,
                    "answers": self.stores[uri].entries() if uri in self.stores else None,
                    "check": uri in self.pending,
                }
                for uri in sorted(uris)
            ],
            "frees": self.frees,
            "unlinked": self.unlinked,
            "free_seconds": self.free_seconds,
            "rss_bytes": _rss_bytes(),
        }


def _rss_bytes() -> int | None:
    """The process's resident memory in bytes (Linux's ``/proc/self/statm``), or ``None``."""
    try:
        resident = Path("/proc/self/statm").read_text().split()[1]
    except (OSError, IndexError):
        return None
    return int(resident) * os.sysconf("SC_PAGE_SIZE")


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
            ls.schedule(uri)

    @server.feature(t.INITIALIZE)
    def initialize(ls: SqlStreamServer, params: t.InitializeParams) -> None:
        options = params.initialization_options or {}
        ls.trust = ls.trust or (isinstance(options, dict) and options.get("trust") is True)
        ls.apply_settings(options)

    @server.feature(t.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def changed_configuration(ls: SqlStreamServer, params) -> None:
        ls.apply_settings(params.settings)
        for uri in list(ls.stores):
            ls.schedule(uri)

    @server.feature(t.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: SqlStreamServer, params: t.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.analyses.pop(uri, None)
        ls.stores[uri] = CompileCaches.for_language_server()
        # the first check with the workspace's variables, when the client sends them
        ls.schedule(uri, settings_wait=CONFIGURATION_WAIT_SECONDS)

    @server.feature(t.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: SqlStreamServer, params: t.DidChangeTextDocumentParams) -> None:
        # a check of the older version running now stops before its next statement
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(t.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: SqlStreamServer, params: t.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.close(uri)
        ls.text_document_publish_diagnostics(t.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(DOCUMENTS_REQUEST)
    def documents(ls: SqlStreamServer, params: Any) -> dict[str, Any]:
        return ls.state()

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls: SqlStreamServer, params: t.HoverParams) -> t.Hover | None:
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return None
        analysis, lines = known
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
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return t.CompletionList(is_incomplete=False, items=[])
        analysis, lines = known
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
        test_file = ls.document(params.text_document.uri)
        if test_file is not None and test_files.is_test_file(params.text_document.uri):
            return test_files.definition(
                params.text_document.uri,
                test_file.source,
                params.position,
                ls.document,
                {**ls.file_variables, **ls.setting_variables},
                ls.encoding,
            )
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return None
        analysis, lines = known
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
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return []
        analysis, lines = known
        offset = lines.offset(params.position.line, params.position.character)
        return [
            t.Location(uri=params.text_document.uri, range=_range(lines, s, e))
            for s, e in features.references(analysis, offset, params.context.include_declaration)
        ]

    @server.feature(t.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbols(ls: SqlStreamServer, params) -> list[t.DocumentSymbol]:
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return []
        analysis, lines = known
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
                if c.get("kind") != "constraint"
                else t.DocumentSymbol(  # an expectation: its own place; its condition is BOOLEAN
                    name=c["name"],
                    detail=c["detail"],
                    kind=t.SymbolKind.Boolean,
                    range=_range(lines, c["start"], c["end"]),
                    selection_range=_range(lines, c["name_start"], c["name_end"]),
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
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return None
        analysis, lines = known
        reference = analysis.reference_at(
            lines.offset(params.position.line, params.position.character)
        )
        if reference is None or features.declaration_of(analysis, reference) is None:
            return None
        return _range(lines, reference.start, reference.end)

    @server.feature(t.TEXT_DOCUMENT_RENAME)
    def rename(ls: SqlStreamServer, params: t.RenameParams) -> t.WorkspaceEdit:
        known = ls.current(params.text_document.uri)
        if known is None:  # not checked yet
            return t.WorkspaceEdit()
        analysis, lines = known
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
