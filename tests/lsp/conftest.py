"""The language server's tests' client: ``sqlstream lsp`` started as a subprocess by a real
LSP client (pytest-lsp), initialized as VS Code does, shut down after the test. A module that
needs another client (workspace settings, recorded notifications) defines its own
``client`` fixture, which pytest takes over this one."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "sqlstream.cli", "lsp"])
)
async def client(lsp_client: LanguageClient):
    """The client of one server process, its session initialized (the test's requests and
    notifications go through ``lsp_client``)."""
    await lsp_client.initialize_session(
        t.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    yield
    await lsp_client.shutdown_session()
