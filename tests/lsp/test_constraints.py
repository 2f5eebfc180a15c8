"""Expectations in the editor, end to end through a real LSP client (pytest-lsp; the server
a subprocess, no JVM): hover on a constraint's name, the constraints in the outline under
their stream or sink, ``DROP ROW``/``FAIL UPDATE`` offered after ``ON VIOLATION``."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.support.written_constraints import FIXTURE, written

URI = FIXTURE.as_uri()
TEXT = FIXTURE.read_text(encoding="utf-8")


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "sqlstream.cli", "lsp"])
)
async def client(lsp_client: LanguageClient):
    lsp_client.set_configuration({"variables": {"dir": "/data"}}, section="sqlstream")
    await lsp_client.initialize_session(
        t.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, text: str, uri: str = URI) -> list[t.Diagnostic]:
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="ssql", version=1, text=text)
        )
    )
    await asyncio.wait_for(client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 30)
    return client.diagnostics[uri]


def _position(text: str, offset: int) -> t.Position:
    line = text.count("\n", 0, offset)
    return t.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def _hover(client: LanguageClient, text: str, offset: int, uri: str = URI) -> t.Hover:
    return await client.text_document_hover_async(
        t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri=uri), position=_position(text, offset)
        )
    )


@pytest.mark.asyncio
async def test_hover_on_a_constraint_name(client: LanguageClient):
    assert list(await _open(client, TEXT)) == []
    for rule in written(TEXT):
        hover = await _hover(client, TEXT, rule.name_start + 1)
        value = hover.contents.value
        assert value.startswith(f"**expectation `{rule.name}`** on {rule.kind} `{rule.relation}`")
        assert f"- condition: `{rule.condition}`" in value
        action = rule.on_violation.removeprefix("ON VIOLATION ") or "count"
        assert f"- on violation: **{action}**" in value
        observation = "flights" if rule.kind == "stream" else "hourly_out"
        assert f"in the progress of `hourly_out` (observation `expect:{observation}`)" in value
        assert "batch_progress" in value and "not checked" not in value
        assert hover.range.start == _position(TEXT, rule.name_start)
        assert hover.range.end == _position(TEXT, rule.name_end)
    query = await _hover(client, TEXT, TEXT.index("INSERT INTO") + 2)
    assert "- expectations on sink `hourly_out`: `at_most_25_an_hour`, `has_delay` (drop)" in (
        query.contents.value
    )


@pytest.mark.asyncio
async def test_hover_on_a_refused_constraint_says_so(client: LanguageClient):
    text = TEXT.replace("EXPECT (NOT delayed)", "EXPECT (carrier)")  # a STRING: SS230
    uri = "file:///work/refused.ssql"
    found = await _open(client, text, uri)
    assert [d.code for d in found] == ["SS230"]
    value = (await _hover(client, text, text.index("mostly_on_time") + 1, uri)).contents.value
    assert "- condition: `carrier`" in value and "not checked as written" in value


@pytest.mark.asyncio
async def test_outline_lists_constraints_under_their_stream_or_sink(client: LanguageClient):
    await _open(client, TEXT)
    outline = await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=t.TextDocumentIdentifier(uri=URI))
    )
    shown = [
        (symbol.name, child.name, child.detail, child.selection_range.start)
        for symbol in outline
        for child in symbol.children or ()
        if child.kind == t.SymbolKind.Boolean
    ]
    assert shown == [
        (
            r.relation,
            r.name,
            f"EXPECT ({r.condition})" + (f" {r.on_violation}" if r.on_violation else ""),
            _position(TEXT, r.name_start),
        )
        for r in written(TEXT)
    ]
    columns = [c.name for c in outline[0].children if c.kind == t.SymbolKind.Field]
    assert columns[0] == "carrier"  # the columns stay, before the constraints


@pytest.mark.asyncio
async def test_completion_after_on_violation(client: LanguageClient):
    text = TEXT.replace("ON VIOLATION DROP ROW,", "ON VIOLATION ,", 1)
    uri = "file:///work/typing.ssql"
    await _open(client, text, uri)
    result = await client.text_document_completion_async(
        t.CompletionParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            position=_position(text, text.index("ON VIOLATION ,") + len("ON VIOLATION ")),
        )
    )
    assert [i.label for i in result.items] == ["DROP ROW", "FAIL UPDATE"]


@pytest.mark.asyncio
async def test_a_stream_as_select_checks_its_rules_on_the_rows_written(client: LanguageClient):
    text = (
        "CREATE STREAM s (v BIGINT) WITH (connector = 'files', path = '/in', format = 'json');\n"
        "CREATE STREAM t (CONSTRAINT big EXPECT (w > 1) ON VIOLATION FAIL UPDATE)\n"
        "  WITH (connector = 'files', path = '/out', format = 'json') AS SELECT v AS w FROM s;\n"
    )
    uri = "file:///work/as_select.ssql"
    assert list(await _open(client, text, uri)) == []
    value = (await _hover(client, text, text.index("big") + 1, uri)).contents.value
    assert value.startswith("**expectation `big`** on sink `t` (checked on each row written)")
    assert "- on violation: **FAIL UPDATE**" in value
    assert "in the progress of `t` (observation `expect:t`)" in value
    assert "not checked" not in value
