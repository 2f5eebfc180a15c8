"""The language server's documents: each one's last analysis, its checks and its stores.

:class:`SqlStreamServer` holds, per document, the last finished analysis (requests are
answered from it while a newer version is checked), the pending check, and the compile
stores (bounded, least recently used answers evicted:
:class:`~sqlstream.ir.caches.BoundedCache`). Checks run one at a time in a worker thread,
off the event loop; a check whose document has a newer version (or was closed) stops
before its next statement and its result is dropped. A replaced or closed analysis is
freed in the worker thread without a full garbage collection (:mod:`sqlstream.lsp.freeing`).
A finding becomes a diagnostic with its exact range, severity, code and a
``codeDescription`` link to the code's page (:data:`DOCS_URL`). Text is analysed with each
lone surrogate replaced by U+FFFD (:func:`scrubbed`), so positions are unchanged.

Source: the Language Server Protocol 3.17 (``textDocument/publishDiagnostics``,
``Diagnostic.codeDescription``); pygls 2's ``LanguageServer``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import re
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
from sqlstream.lsp import test_files
from sqlstream.lsp.analysis import analyze
from sqlstream.lsp.document_index import Analysis
from sqlstream.lsp.freeing import free_replaced
from sqlstream.lsp.positions import Lines

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
            range=text_range(lines, start, end),
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


def text_range(lines: Lines, start: int, end: int) -> t.Range:
    """The LSP range of the offsets ``start`` to ``end`` of the text of ``lines``."""
    (l1, c1), (l2, c2) = lines.position(start), lines.position(end)
    return t.Range(start=t.Position(line=l1, character=c1), end=t.Position(line=l2, character=c2))
