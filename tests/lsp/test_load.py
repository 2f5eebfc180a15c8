"""``sqlstream lsp`` under load, end to end: a real LSP client (pytest-lsp) starts the
server as a subprocess. Checks run in the server's worker thread, so a request is answered
while a long check runs; a burst of edits publishes the diagnostics of the last version
only; closing a document frees what the server held for it; a lone surrogate in the text
(valid JSON) still gives diagnostics and hovers. No JVM."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.support.long_files import mixed_file

URI = "file:///work/long.ssql"
TIMEOUT = 180  # seconds: generous for a loaded 2-core machine
Published = list[tuple[str, int | None, float, list[t.Diagnostic]]]


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "sqlstream.cli", "lsp"])
)
async def client(lsp_client: LanguageClient):
    features = lsp_client.protocol.fm.features
    default = features[t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]
    published: Published = []

    def record(*args: Any) -> Any:  # the client's handler, recording each notification
        params: t.PublishDiagnosticsParams = args[-1]
        published.append((params.uri, params.version, time.monotonic(), params.diagnostics))
        return default(*args)

    features[t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    lsp_client.published = published  # type: ignore[attr-defined]
    await lsp_client.initialize_session(
        t.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    yield
    await lsp_client.shutdown_session()


def _published(client: LanguageClient) -> Published:
    return client.published  # type: ignore[attr-defined,no-any-return]


async def _version_published(client: LanguageClient, version: int, uri: str = URI) -> float:
    """When the diagnostics of ``version`` of ``uri`` were published (waits for them)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        for found_uri, found, at, _ in _published(client):
            if found_uri == uri and found == version:
                return at
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for version {version} in {TIMEOUT} s")


def _open(client: LanguageClient, text: str, uri: str = URI) -> None:
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="ssql", version=1, text=text)
        )
    )


def _replace(client: LanguageClient, text: str, version: int, uri: str = URI) -> None:
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def _position(text: str, needle: str, inside: int = 0) -> t.Position:
    offset = text.index(needle) + inside
    line = text.count("\n", 0, offset)
    return t.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def _state(client: LanguageClient) -> dict[str, dict[str, Any]]:
    """URI → what the server holds for the document (``sqlstream/documents``)."""
    found = await client.protocol.send_request_async("sqlstream/documents", None)
    return {d.uri: d._asdict() for d in found.documents}


@pytest.mark.asyncio
async def test_a_hover_is_answered_while_a_long_check_runs(client: LanguageClient):
    small = mixed_file(10)
    _open(client, small)
    await _version_published(client, 1)
    _replace(client, mixed_file(3000), 2)  # a check of about 3,000 statements
    await asyncio.sleep(0.5)  # past the debounce: the check runs
    hover = await asyncio.wait_for(
        client.text_document_hover_async(
            t.HoverParams(
                text_document=t.TextDocumentIdentifier(uri=URI),
                position=_position(small, "FROM s WHERE a > 0", 5),
            )
        ),
        TIMEOUT,
    )
    answered = time.monotonic()
    assert hover is not None and "stream `s`" in hover.contents.value  # the last analysis
    assert not [p for p in _published(client) if p[1] == 2]  # the check has not ended
    assert await _version_published(client, 2) > answered
    hover = await client.text_document_hover_async(
        t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri=URI),
            position=_position(mixed_file(3000), "FROM TUMBLE(v700,", 13),
        )
    )
    assert hover is not None and "view `v700`" in hover.contents.value


@pytest.mark.asyncio
async def test_a_burst_of_edits_publishes_the_last_version_only(client: LanguageClient):
    text = mixed_file(2000)
    _open(client, text)
    await _version_published(client, 1)
    versions = range(2, 12)
    for version in versions:  # edits at the top: each re-plans every statement after it
        _replace(client, text.replace("WHERE a > 0;", f"WHERE a > {version};", 1), version)
        # past the debounce: a check of each version starts, and is stopped by the next
        await asyncio.sleep(0.3 if version % 2 else 0.02)
    last = text.replace("WHERE a > 0;", "WHERE zz > 0;", 1)
    _replace(client, last, 12)
    await _version_published(client, 12)
    await asyncio.sleep(1.0)  # nothing later comes
    after = [p for p in _published(client) if p[1] != 1]
    assert [p[1] for p in after] == [12]
    errors = [d for d in after[0][3] if d.severity == t.DiagnosticSeverity.Error]
    assert [(d.code, d.range.start) for d in errors] == [("SS205", _position(last, "zz > 0"))]
    assert not (await _state(client))[URI]["check"]


@pytest.mark.asyncio
async def test_closing_a_document_frees_what_the_server_held_for_it(client: LanguageClient):
    other = "file:///work/other.ssql"
    _open(client, mixed_file(40))
    _open(client, mixed_file(40), other)
    await _version_published(client, 1)
    await _version_published(client, 1, other)
    state = await _state(client)
    assert set(state) == {URI, other}
    assert state[URI]["open"] and state[URI]["version"] == 1 and state[URI]["answers"] > 0
    client.text_document_did_close(
        t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=URI))
    )
    state = await _state(client)
    assert set(state) == {other}  # nothing held for the closed document
    # closed while its first check runs: the check stops, nothing is kept or published
    before = len(_published(client))
    _open(client, mixed_file(3000))
    await asyncio.sleep(0.5)
    client.text_document_did_close(
        t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=URI))
    )
    await asyncio.sleep(0.5)
    state = await _state(client)
    assert set(state) == {other} and not state[other]["check"]
    assert [list(p[3]) for p in _published(client)[before:] if p[0] == URI] == [[]]  # the close


@pytest.mark.asyncio
async def test_a_lone_surrogate_still_gives_diagnostics_and_hover(client: LanguageClient):
    text = (
        "CREATE STREAM s (a INT, ts TIMESTAMP) WITH (connector = 'files', path = '/d',"
        " format = 'json');\n"
        "-- a note \ud800 from a JavaScript client\n"
        "SELECT '\udc00', b FROM s;\n"
    )
    _open(client, text)
    await _version_published(client, 1)
    found = client.diagnostics[URI]
    unknown = next(d for d in found if d.code == "SS205")
    assert unknown.range.start == _position(text, "b FROM")  # the surrogate: one unit
    hover = await client.text_document_hover_async(
        t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri=URI),
            position=_position(text, "FROM s;", 5),
        )
    )
    assert hover is not None and "stream `s`" in hover.contents.value
    assert hover.range.start == _position(text, "s;")
    client.text_document_did_change(  # a surrogate typed in: checked again
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[
                t.TextDocumentContentChangePartial(
                    range=t.Range(start=_position(text, "b FROM"), end=_position(text, "b FROM")),
                    text="\ud83d",
                )
            ],
        )
    )
    await _version_published(client, 2)
    unknown = next(d for d in client.diagnostics[URI] if d.code == "SS205")
    assert unknown.range.start == _position(text, "b FROM")  # now at the surrogate


@pytest.mark.asyncio
async def test_a_replaced_analysis_is_freed_without_a_full_collection(client: LanguageClient):
    """The first check frees nothing; a check that replaced an analysis frees the old one
    (its cycles broken in the worker thread), and hovers still answer from the new one."""
    text = mixed_file(40)
    _open(client, text)
    await _version_published(client, 1)
    await asyncio.sleep(1.0)  # a freeing would have been queued and run by now
    found = await client.protocol.send_request_async("sqlstream/documents", None)
    assert found.frees == 0
    edited = text.replace("WHERE a > 0;", "WHERE a > 1;", 1)
    _replace(client, edited, 2)
    await _version_published(client, 2)
    deadline = time.monotonic() + TIMEOUT
    while (
        found := await client.protocol.send_request_async("sqlstream/documents", None)
    ).frees < 1:
        assert time.monotonic() < deadline, "the replaced analysis was not freed"
        await asyncio.sleep(0.1)
    assert found.unlinked > 0
    for needle, inside, expected in (
        ("FROM TUMBLE(v7,", 13, "view `v7`"),
        ("FROM s WHERE", 5, "stream `s`"),
    ):
        hover = await client.text_document_hover_async(
            t.HoverParams(
                text_document=t.TextDocumentIdentifier(uri=URI),
                position=_position(edited, needle, inside),
            )
        )
        assert hover is not None and expected in hover.contents.value


async def _documents(client: LanguageClient) -> Any:
    return await client.protocol.send_request_async("sqlstream/documents", None)


@pytest.mark.asyncio
async def test_hovers_are_answered_while_replaced_analyses_of_a_long_file_are_freed(
    client: LanguageClient,
):
    """Issue 32: a full garbage collection after a re-check held every request for
    seconds (CPython's collector holds the GIL). Edits at the top of a 3,000-statement
    file: hovers sent from each check's diagnostics until its replaced analysis is freed
    are answered in a fraction of a check's time, and the server's memory does not grow
    by an analysis per edit."""
    before = (await _documents(client)).rss_bytes
    text = mixed_file(3000)
    _open(client, text)
    await _version_published(client, 1)
    first = (await _documents(client)).rss_bytes
    position = _position(text, "FROM TUMBLE(v700,", 13)
    checks: list[float] = []
    latencies: list[float] = []
    rss: list[int] = []
    for version in range(2, 7):
        frees = (await _documents(client)).frees
        sent = time.monotonic()
        _replace(client, text.replace("WHERE a > 0;", f"WHERE a > {version};", 1), version)
        checks.append(await _version_published(client, version) - sent)
        while True:  # hovers, one after the other, until the replaced analysis is freed
            start = time.monotonic()
            hover = await client.text_document_hover_async(
                t.HoverParams(text_document=t.TextDocumentIdentifier(uri=URI), position=position)
            )
            latencies.append(time.monotonic() - start)
            assert hover is not None and "view `v700`" in hover.contents.value
            state = await _documents(client)
            if state.frees > frees:
                break
            assert time.monotonic() - sent < TIMEOUT, "the replaced analysis was not freed"
        rss.append(state.rss_bytes)
    assert len(latencies) > 5  # hovers were sent while the freeing ran
    assert max(latencies) < min(checks) / 5, (latencies, checks)
    # one analysis: what the first check added; five edits without freeing add five
    assert rss[-1] - rss[0] < (first - before), (before, first, rss)
