"""``sqlstream lsp`` end to end: a real LSP client (pytest-lsp) starts the server as a
subprocess and talks to it over stdin/stdout. No JVM."""

from __future__ import annotations

import asyncio
import sys

import pytest
import pytest_lsp
from lsprotocol import types as t
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import ROOT

WEATHER = ROOT / "examples" / "joins" / "weather.ssql"
URI = "file:///work/pipeline.ssql"


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


def _open(client: LanguageClient, text: str, uri: str = URI) -> None:
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id="ssql", version=1, text=text)
        )
    )


async def _diagnostics(client: LanguageClient, uri: str = URI) -> list[t.Diagnostic]:
    await asyncio.wait_for(client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), 30)
    return client.diagnostics[uri]


def _position(text: str, needle: str, inside: int = 0) -> t.Position:
    offset = text.index(needle) + inside
    line = text.count("\n", 0, offset)
    return t.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


BAD = (
    "CREATE STREAM s (a INT, ts TIMESTAMP) WITH (connector = 'files', path = '${dir}/in',"
    " format = 'json');\n"
    "CREATE SINK o WITH (connector = 'files', path = '/tmp/o', format = 'parquet');\n"
    "INSERT INTO o SELECT b, COUNT(*) AS n FROM s GROUP BY b;\n"
)


@pytest.mark.asyncio
async def test_diagnostics_have_exact_ranges_codes_and_links(client: LanguageClient):
    _open(client, BAD)
    found = await _diagnostics(client)
    codes = {d.code for d in found}
    assert "SS205" in codes  # unknown column b; ${dir} came from the workspace setting
    unknown = next(d for d in found if d.code == "SS205")
    assert unknown.range.start == _position(BAD, "b, COUNT")
    assert unknown.range.end.character == unknown.range.start.character + 1
    assert unknown.severity == t.DiagnosticSeverity.Error
    assert unknown.code_description.href.endswith("#ss205")
    assert unknown.source == "sqlstream"


@pytest.mark.asyncio
async def test_changes_are_checked_on_the_unsaved_text(client: LanguageClient):
    _open(client, BAD)
    await _diagnostics(client)
    fixed = BAD.replace(
        "SELECT b, COUNT(*) AS n FROM s GROUP BY b", "SELECT a, COUNT(*) AS n FROM s GROUP BY a"
    )
    start = _position(BAD, "INSERT")
    end = t.Position(line=start.line + 1, character=0)
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[
                t.TextDocumentContentChangePartial(
                    range=t.Range(start=start, end=end), text=fixed.splitlines(True)[2]
                )
            ],
        )
    )
    found = await _diagnostics(client)
    codes = [d.code for d in found]
    assert codes == ["SS305"]  # no output mode fits: files append-only, no watermark
    warning = [d for d in found if d.severity == t.DiagnosticSeverity.Warning]
    assert all(d.code.startswith("SS3") for d in warning)


@pytest.mark.asyncio
async def test_hover_relation_column_query_and_code(client: LanguageClient):
    text = WEATHER.read_text(encoding="utf-8")
    uri = WEATHER.as_uri()
    _open(client, text, uri)
    assert list(await _diagnostics(client, uri)) == []
    doc = t.TextDocumentIdentifier(uri=uri)
    relation = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=_position(text, "FROM flights AS f JOIN", 6))
    )
    assert "stream `flights`" in relation.contents.value
    assert "| `time_hour` | `TIMESTAMP` |" in relation.contents.value
    assert "watermark time_hour - 30 minute" in relation.contents.value
    column = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=_position(text, "w.temp,", 3))
    )
    assert column.contents.value == "column `temp` **DOUBLE** of `weather`"
    query = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=_position(text, "INSERT INTO flight_weather", 2))
    )
    value = query.contents.value
    assert "output mode **append**" in value and "availableNow" in value
    assert "stream_stream_join inner" in value and "`f.origin = w.origin`" in value
    assert "`flights.time_hour` delay 30 minute" in value
    _open(client, "-- see SS301\n", "file:///work/code.ssql")
    await _diagnostics(client, "file:///work/code.ssql")
    code = await client.text_document_hover_async(
        t.HoverParams(
            text_document=t.TextDocumentIdentifier(uri="file:///work/code.ssql"),
            position=t.Position(line=0, character=9),
        )
    )
    assert code.contents.value.startswith("**SS301** (error)")


@pytest.mark.asyncio
async def test_completion(client: LanguageClient):
    text = (
        "CREATE STREAM flights (carrier STRING, ts TIMESTAMP) WITH (connector = 'files', "
        "path = '/d', format = 'json', max);\n"
        "SELECT f. FROM flights AS f EMIT "
    )
    _open(client, text)
    await _diagnostics(client)

    async def labels(position: t.Position) -> list[str]:
        result = await client.text_document_completion_async(
            t.CompletionParams(text_document=t.TextDocumentIdentifier(uri=URI), position=position)
        )
        return [i.label for i in result.items]

    assert await labels(_position(text, "f. FROM", 2)) == ["carrier", "ts"]
    options = await labels(_position(text, "max)", 3))
    assert "max_files_per_trigger" in options and "connector" in options
    assert "bootstrap_servers" not in options  # a kafka option, not a files one
    emit = await labels(_position(text, "EMIT ", 5))
    assert {"FINAL", "CHANGES", "ONCE", "EVERY INTERVAL '1' MINUTE"} <= set(emit)
    anywhere = await labels(_position(text, "SELECT", 0))
    assert {"flights", "TUMBLE", "HOP", "SESSION", "window", "date_trunc"} <= set(anywhere)
    connectors = "CREATE STREAM x WITH (connector = "
    _open(client, connectors, "file:///work/c.ssql")
    await _diagnostics(client, "file:///work/c.ssql")
    result = await client.text_document_completion_async(
        t.CompletionParams(
            text_document=t.TextDocumentIdentifier(uri="file:///work/c.ssql"),
            position=t.Position(line=0, character=len(connectors)),
        )
    )
    assert {"files", "kafka", "rate", "postgres"} <= {i.label for i in result.items}


@pytest.mark.asyncio
async def test_definition_references_symbols_rename(client: LanguageClient):
    text = WEATHER.read_text(encoding="utf-8")
    uri = WEATHER.as_uri()
    _open(client, text, uri)
    await _diagnostics(client, uri)
    doc = t.TextDocumentIdentifier(uri=uri)
    use = _position(text, "FROM flights AS f JOIN", 6)
    definition = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=use)
    )
    assert definition.range.start == _position(text, "flights (")
    refs = await client.text_document_references_async(
        t.ReferenceParams(
            text_document=doc, position=use, context=t.ReferenceContext(include_declaration=True)
        )
    )
    assert len(refs) == 1 + 5  # the declaration and one FROM in each of the five queries
    sink = await client.text_document_definition_async(
        t.DefinitionParams(
            text_document=doc, position=_position(text, "INSERT INTO observed_flights", 13)
        )
    )
    assert sink.range.start == _position(text, "observed_flights WITH")
    outline = await client.text_document_document_symbol_async(
        t.DocumentSymbolParams(text_document=doc)
    )
    names = [s.name for s in outline]
    assert names[:3] == ["SET 'spark.sql.session.timeZone' = 'UTC'", "flights", "weather"]
    assert "INSERT INTO flight_weather" in names
    assert [c.name for c in outline[1].children][-1] == "time_hour"
    edit = await client.text_document_rename_async(
        t.RenameParams(text_document=doc, position=use, new_name="departures")
    )
    changes = edit.changes[uri]
    assert len(changes) == 6 and all(c.new_text == "departures" for c in changes)
    lines = text.splitlines()
    for change in changes:  # each edit replaces exactly the word flights
        line = lines[change.range.start.line]
        assert line[change.range.start.character : change.range.end.character] == "flights"


@pytest.mark.asyncio
async def test_user_functions_definition_references_hover_completion_rename(client: LanguageClient):
    udfs = ROOT / "examples" / "flights" / "udfs.ssql"
    text = udfs.read_text(encoding="utf-8")
    uri = udfs.as_uri()
    _open(client, text, uri)
    assert not await _diagnostics(
        client, uri
    )  # udfs.py beside the file is read (untrusted: not imported)
    doc = t.TextDocumentIdentifier(uri=uri)
    call = _position(text, "to_km(distance)) AS km", 1)
    definition = await client.text_document_definition_async(
        t.DefinitionParams(text_document=doc, position=call)
    )
    assert definition.range.start == _position(text, "to_km(miles")
    refs = await client.text_document_references_async(
        t.ReferenceParams(
            text_document=doc, position=call, context=t.ReferenceContext(include_declaration=True)
        )
    )
    assert [r.range.start for r in refs] == [  # the declaration, the SUM and the WHERE
        _position(text, "to_km(miles"),
        _position(text, "to_km(distance)) AS"),
        _position(text, "to_km(distance) > 200"),
    ]
    hover = await client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=_position(text, "delay_class(dep_delay) AS", 3))
    )
    assert hover.contents.value == (
        "**function** `delay_class(delay DOUBLE) RETURNS STRING`"
        "\n\nlanguage: Python UDF `udfs:delay_class`"
    )
    assert hover.range.start == _position(text, "delay_class(dep_delay) AS")
    completions = await client.text_document_completion_async(
        t.CompletionParams(text_document=doc, position=_position(text, "WHERE to_km", 6))
    )
    items = {i.label: i for i in completions.items}
    assert (
        items["hhmm_to_minutes"].detail
        == "hhmm_to_minutes(hhmm INT) RETURNS DOUBLE — pandas UDF `udfs:hhmm_to_minutes`"
    )
    assert items["hhmm_to_minutes"].kind == items["upper"].kind == t.CompletionItemKind.Function
    edit = await client.text_document_rename_async(
        t.RenameParams(text_document=doc, position=call, new_name="miles_to_km")
    )
    changes = edit.changes[uri]
    assert [c.range.start for c in changes] == [r.range.start for r in refs]
    lines = text.splitlines()
    for change in changes:
        line = lines[change.range.start.line]
        assert line[change.range.start.character : change.range.end.character] == "to_km"
        assert change.new_text == "miles_to_km"
