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
``codeDescription`` link to the code's page of the documentation (:data:`~sqlstream.lsp.document_checks.DOCS_URL`, or
the ``sqlstream.docsUrl`` setting). ``${…}`` values come from a ``--var`` file of
``NAME=VALUE`` lines and the ``sqlstream.variables`` setting (initialization options or
``workspace/configuration``; the setting wins). Features: hover, completion (triggered
by ``.``), go to definition, find references, document symbols, rename; and the request
``sqlstream/documents`` (:data:`~sqlstream.lsp.document_checks.DOCUMENTS_REQUEST`) describing the server's per-document
state.

No code of the project runs unless the user trusts it (docs/editors.md#trust): ``lsp
--trust``, ``SQLSTREAM_TRUST=1``, or the client's ``initializationOptions`` ``{"trust":
true}`` (VS Code's extension sends it in a trusted workspace only; a workspace setting
cannot). Trusted, a module's standard output goes to standard error: the JSON-RPC stream
on standard output carries only the protocol (:func:`serve`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as t

from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp import requests
from sqlstream.lsp.document_checks import DOCUMENTS_REQUEST, SqlStreamServer

DEBOUNCE_SECONDS = 0.15
"""Quiet time after a change before the document is checked again."""

CONFIGURATION_WAIT_SECONDS = 2.0
"""How long the first check of an opened document waits for the workspace's settings."""


def read_var_file(path: str | None) -> dict[str, str]:
    """``NAME=VALUE`` lines of ``path`` (blank lines and ``#`` comments skipped)."""
    found = {}
    if path:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            name, sep, value = line.partition("=")
            if sep and name.strip() and not line.lstrip().startswith("#"):
                found[name.strip()] = value.strip()
    return found


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

    requests.register(server)
    return server


def serve(var_file: str | None = None, trust: bool = False) -> None:
    """Run the server on stdin/stdout until the client exits (``trust``: see :func:`build`).

    The protocol is written to the standard output's binary stream taken here; the rest of
    the process's ``sys.stdout`` (a trusted module's ``print``) goes to standard error.
    """
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    build(read_var_file(var_file), trust).start_io(stdin, stdout)
