"""The language server and the project's code (docs/editors.md#trust), through a real LSP
client (pytest-lsp) talking to ``sqlstream lsp`` as a subprocess: untrusted, opening a
file imports no module (no marker file) and functions are typed from their source;
trusted (``initializationOptions: {"trust": true}``), the module is imported, its
``print`` does not break the JSON-RPC stream, two folders' ``udfs.py`` are two modules
and an edited module is read again."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import ROOT
from tests.support.user_modules import project

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "sqlstream.cli", "lsp"])

UDFS = """\
print("Content-Length: 9\\r\\n\\r\\n{broken}")


def f(x: str) -> {returns}:
    return x
"""
PIPELINE = """\
CREATE FUNCTION f AS 'udfs:f' LANGUAGE PYTHON;
CREATE STREAM s (a STRING) WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK o WITH (connector = 'console');
INSERT INTO o SELECT f(a) AS b FROM s;
"""


async def _start(client: LanguageClient, options: dict | None) -> None:
    await client.initialize_session(
        t.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options=options,
        )
    )


@pytest_lsp.fixture(config=SERVER)
async def untrusted(lsp_client: LanguageClient):
    await _start(lsp_client, None)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def trusted(lsp_client: LanguageClient):
    await _start(lsp_client, {"trust": True})
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(
                uri=uri, language_id="ssql", version=1, text=path.read_text()
            )
        )
    )
    return uri


async def _diagnostics(client: LanguageClient, uri: str) -> list[t.Diagnostic]:
    while True:
        await asyncio.wait_for(
            client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 30
        )
        if uri in client.diagnostics:
            return list(client.diagnostics.pop(uri))


async def _hover(client: LanguageClient, uri: str, text: str, needle: str) -> str:
    offset = text.index(needle)
    line = text.count("\n", 0, offset)
    character = offset - (text.rfind("\n", 0, offset) + 1)
    hover = await client.text_document_hover_async(
        t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            position=t.Position(line=line, character=character),
        )
    )
    return hover.contents.value


@pytest.mark.asyncio
async def test_untrusted_opening_a_file_imports_nothing(untrusted: LanguageClient, tmp_path):
    pipeline = project(tmp_path)
    uri = _open(untrusted, pipeline)
    assert await _diagnostics(untrusted, uri) == []
    assert not (tmp_path / "MARKER").exists()
    text = pipeline.read_text()
    value = await _hover(untrusted, uri, text, "shout(a)")
    assert "shout(text STRING) RETURNS STRING" in value  # from the annotations, read


@pytest.mark.asyncio
async def test_trusted_the_module_is_imported_and_the_stream_stays_valid(
    trusted: LanguageClient, tmp_path
):
    pipeline = project(tmp_path)
    uri = _open(trusted, pipeline)
    assert await _diagnostics(trusted, uri) == []
    assert (tmp_path / "MARKER").read_text() == "imported"
    value = await _hover(trusted, uri, pipeline.read_text(), "shout(a)")
    assert "shout(text STRING) RETURNS STRING" in value  # answered after the print


@pytest.mark.asyncio
async def test_two_folders_and_an_edited_module(trusted: LanguageClient, tmp_path):
    uris, texts = {}, {}
    for name, returns in (("first", "str"), ("second", "int")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "udfs.py").write_text(UDFS.replace("{returns}", returns))
        (folder / "p.ssql").write_text(PIPELINE)
        texts[name] = PIPELINE
        uris[name] = _open(trusted, folder / "p.ssql")
        assert await _diagnostics(trusted, uris[name]) == []
    first = await _hover(trusted, uris["first"], PIPELINE, "f(a)")
    second = await _hover(trusted, uris["second"], PIPELINE, "f(a)")
    assert "RETURNS STRING" in first and "RETURNS BIGINT" in second
    (tmp_path / "first" / "udfs.py").write_text(UDFS.replace("{returns}", "float"))
    trusted.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uris["first"], version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=PIPELINE + "-- x\n")],
        )
    )
    assert await _diagnostics(trusted, uris["first"]) == []
    edited = await _hover(trusted, uris["first"], PIPELINE, "f(a)")
    assert "RETURNS DOUBLE" in edited  # the CREATE FUNCTION's text is unchanged


def _read_frame(stream) -> dict:
    """One JSON-RPC message, read strictly: ``Content-Length`` header, a blank line, a
    JSON body (a stray ``print`` on the server's stdout fails here)."""
    headers = {}
    while True:
        line = stream.readline()
        assert line, "the server closed its stdout"
        if line == b"\r\n":
            break
        name, _, value = line.decode("ascii").partition(":")
        headers[name.strip().lower()] = value.strip()
    return json.loads(stream.read(int(headers["content-length"])))


def test_the_json_rpc_stream_carries_only_the_protocol(tmp_path):
    """``sqlstream lsp --trust`` as a raw process: every byte of its stdout is a frame."""
    pipeline = project(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "sqlstream.cli", "lsp", "--trust"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    timer = threading.Timer(60, server.kill)
    timer.start()

    def send(message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        server.stdin.flush()

    try:
        send({"id": 1, "method": "initialize", "params": {"capabilities": {}}})
        assert _read_frame(server.stdout)["id"] == 1
        send({"method": "initialized", "params": {}})
        document = {"uri": pipeline.as_uri(), "languageId": "ssql", "version": 1}
        send(
            {
                "method": "textDocument/didOpen",
                "params": {"textDocument": {**document, "text": pipeline.read_text()}},
            }
        )
        while True:
            message = _read_frame(server.stdout)
            if message.get("method") == "textDocument/publishDiagnostics":
                break
        assert message["params"]["diagnostics"] == []
        assert (tmp_path / "MARKER").exists()  # imported: its print went to stderr
        send({"id": 2, "method": "shutdown"})
        while _read_frame(server.stdout).get("id") != 2:
            pass
        send({"method": "exit"})
        assert server.wait(30) == 0
        assert b"Content-Length: 7" in server.stderr.read()
    finally:
        timer.cancel()
        server.kill()
