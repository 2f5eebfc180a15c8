"""``sqlstream lsp`` given edits no editor should send (the second probe of issue 32): a
change whose range lies past the end of the document, or ends before it starts, a change to
a document never opened, a version that goes back, and requests at positions past the
end. A real client (pytest-lsp) starts the server as a subprocess; the server stays up,
answers every request, and publishes the diagnostics of the text it holds. No JVM."""

from __future__ import annotations

import asyncio
import time

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

URI = "file:///work/hostile.ssql"
TEXT = (
    "CREATE STREAM s (a INT, ts TIMESTAMP) WITH (connector = 'files', path = '/d',"
    " format = 'json');\n"
    "CREATE SINK o WITH (connector = 'console');\n"
    "INSERT INTO o SELECT a FROM s;\n"
)
FAR = 10**9  # a line and a character past any document (LSP's uinteger allows 2^31 - 1)


def _change(client: LanguageClient, version: int, start: t.Position, end: t.Position, text: str):
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[
                t.TextDocumentContentChangePartial(range=t.Range(start=start, end=end), text=text)
            ],
        )
    )


async def _diagnostics_of(client: LanguageClient, version: int) -> list[t.Diagnostic]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if client.diagnostics.get(URI) is not None and _versions(client).get(URI) == version:
            return client.diagnostics[URI]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no diagnostics for version {version}")


def _versions(client: LanguageClient) -> dict[str, int | None]:
    return client.versions  # type: ignore[attr-defined,no-any-return]


async def _hover(client: LanguageClient, line: int, character: int) -> t.Hover | None:
    return await asyncio.wait_for(
        client.text_document_hover_async(
            t.HoverParams(
                text_document=t.TextDocumentIdentifier(uri=URI),
                position=t.Position(line=line, character=character),
            )
        ),
        60,
    )


@pytest.mark.asyncio
async def test_edits_out_of_range_leave_a_working_server(client: LanguageClient):
    versions: dict[str, int | None] = {}
    client.versions = versions  # type: ignore[attr-defined]
    default = client.protocol.fm.features[t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(*args):
        params: t.PublishDiagnosticsParams = args[-1]
        versions[params.uri] = params.version
        return default(*args)

    client.protocol.fm.features[t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    # a change to a document never opened: nothing published, nothing raised
    _change(client, 1, t.Position(0, 0), t.Position(0, 0), "x")
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=URI, language_id="ssql", version=1, text=TEXT)
        )
    )
    assert not [d for d in await _diagnostics_of(client, 1) if d.severity == 1]
    # inserted far past the end: clamped to the end (as VS Code's model clamps positions)
    _change(client, 2, t.Position(FAR, FAR), t.Position(FAR, FAR), "SELECT zz FROM s;\n")
    errors = [d for d in await _diagnostics_of(client, 2) if d.severity == 1]
    assert [d.code for d in errors] == ["SS205"]  # zz: the text held ends with the insert
    # a range that ends before it starts, and one past the end of a line
    _change(client, 3, t.Position(3, 10), t.Position(0, 0), "")
    await _diagnostics_of(client, 3)
    _change(client, 4, t.Position(0, FAR), t.Position(1, FAR), "")
    await _diagnostics_of(client, 4)
    # a version that goes back is still applied and checked
    _change(client, 2, t.Position(0, 0), t.Position(FAR, 0), TEXT)
    assert not [d for d in await _diagnostics_of(client, 2) if d.severity == 1]
    # requests at positions past the end answer (nothing there), the server stays up
    assert await _hover(client, FAR, FAR) is None
    assert await _hover(client, 0, FAR) is None
    for request in (
        client.text_document_definition_async,
        client.text_document_references_async,
    ):
        params_type = (
            t.DefinitionParams
            if request == client.text_document_definition_async
            else t.ReferenceParams
        )
        extra = (
            {"context": t.ReferenceContext(include_declaration=True)}
            if params_type is t.ReferenceParams
            else {}
        )
        found = await asyncio.wait_for(
            request(
                params_type(
                    text_document=t.TextDocumentIdentifier(uri=URI),
                    position=t.Position(line=FAR, character=FAR),
                    **extra,
                )
            ),
            60,
        )
        assert not found
    hover = await _hover(client, 2, len("INSERT INTO o SELECT a FROM s"))
    assert hover is not None and "stream `s`" in hover.contents.value
