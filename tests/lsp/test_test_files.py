"""Go to definition from a pipeline test file (``*.test.yaml``) to its pipeline, end to end
through a real LSP client (pytest-lsp; the server a subprocess, no JVM): an expectation's
name to its ``CONSTRAINT``, a stream, table or sink name to its ``CREATE``, ``pipeline:``
to the file; the pipeline's unsaved text when it is open; no diagnostics for a test file.
The places expected are found in the files' text here, not by the server's code."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.conftest import ROOT

QUALITY = ROOT / "examples" / "quality" / "flights_quality.test.yaml"
LOOKUPS = ROOT / "examples" / "joins" / "lookups.test.yaml"


def _open(client: LanguageClient, path: Path, text: str, language: str = "yaml") -> None:
    client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(
                uri=path.as_uri(), language_id=language, version=1, text=text
            )
        )
    )


def _position(text: str, offset: int) -> t.Position:
    line = text.count("\n", 0, offset)
    return t.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


async def _definition(client: LanguageClient, path: Path, text: str, offset: int):
    return await client.text_document_definition_async(
        t.DefinitionParams(
            text_document=t.TextDocumentIdentifier(uri=path.as_uri()),
            position=_position(text, offset),
        )
    )


def _declared(text: str, pattern: str) -> tuple[t.Position, t.Position]:
    """The place of the name group of ``pattern`` in ``text`` (its first match)."""
    match = re.search(pattern, text)
    assert match, pattern
    return _position(text, match.start("name")), _position(text, match.end("name"))


@pytest.mark.asyncio
async def test_expectation_stream_and_sink_names_jump_to_their_declarations(
    client: LanguageClient,
):
    text = QUALITY.read_text(encoding="utf-8")
    ssql = QUALITY.with_name("flights_quality.ssql")
    pipeline = ssql.read_text(encoding="utf-8")
    _open(client, QUALITY, text)
    where = text.index("expectations:")
    cases = [
        # (offset in the test file, the declaration's pattern in the pipeline)
        (text.index("sane_delay", where) + 3, r"CONSTRAINT\s+(?P<name>sane_delay)\s+EXPECT"),
        (
            text.index("at_most_25_an_hour", where),
            r"CONSTRAINT\s+(?P<name>at_most_25_an_hour)\s+EXPECT",
        ),
        (text.index("flights:") + 1, r"CREATE STREAM\s+(?P<name>flights)\b"),
        (text.index("hourly:") + 6, r"CREATE SINK\s+(?P<name>hourly)\b"),
    ]
    for offset, pattern in cases:
        found = await _definition(client, QUALITY, text, offset)
        assert isinstance(found, t.Location), pattern
        assert found.uri == ssql.as_uri()
        start, end = _declared(pipeline, pattern)
        assert (found.range.start, found.range.end) == (start, end), pattern
    # the pipeline: value opens the file at its start
    found = await _definition(client, QUALITY, text, text.index("flights_quality.ssql") + 2)
    assert found.uri == ssql.as_uri() and found.range.start == t.Position(line=0, character=0)
    # off a name, on a value: nothing
    assert await _definition(client, QUALITY, text, text.index("EWR")) is None
    assert await _definition(client, QUALITY, text, text.index("- name:") + 3) is None
    # a test file is not checked as a pipeline: no diagnostics are published for it
    await asyncio.sleep(1)
    assert QUALITY.as_uri() not in client.diagnostics


@pytest.mark.asyncio
async def test_a_table_name_jumps_to_its_create_table(client: LanguageClient):
    text = LOOKUPS.read_text(encoding="utf-8")
    pipeline = LOOKUPS.with_name("lookups.ssql").read_text(encoding="utf-8")
    _open(client, LOOKUPS, text)
    for table in ("airlines", "planes", "airports"):
        found = await _definition(client, LOOKUPS, text, text.index(f"{table}:") + 1)
        assert isinstance(found, t.Location), table
        start, end = _declared(pipeline, rf"CREATE TABLE\s+(?P<name>{table})\b")
        assert (found.range.start, found.range.end) == (start, end)
    found = await _definition(client, LOOKUPS, text, text.index("with_planes:") + 2)
    start, end = _declared(pipeline, r"CREATE SINK\s+(?P<name>with_planes)\b")
    assert (found.range.start, found.range.end) == (start, end)


@pytest.mark.asyncio
async def test_the_pipelines_unsaved_text_is_used_and_unknown_names_have_none(
    client: LanguageClient, tmp_path: Path
):
    pipeline = QUALITY.with_name("flights_quality.ssql").read_text(encoding="utf-8")
    ssql = tmp_path / "flights_quality.ssql"
    ssql.write_text(pipeline, encoding="utf-8")
    test = tmp_path / "flights_quality.test.yaml"
    # a quoted key, and a constraint the pipeline does not declare
    text = QUALITY.read_text(encoding="utf-8").replace(
        "known_origin: 0", '"known_origin": 0, not_declared: 0'
    )
    test.write_text(text, encoding="utf-8")
    edited = "-- two lines\n-- added in the editor, not saved\n" + pipeline
    _open(client, ssql, edited, "ssql")
    _open(client, test, text)
    found = await _definition(client, test, text, text.index('"known_origin"') + 2)
    start, end = _declared(edited, r"CONSTRAINT\s+(?P<name>known_origin)\s+EXPECT")
    assert found.uri == ssql.as_uri()
    assert (found.range.start, found.range.end) == (start, end)
    assert await _definition(client, test, text, text.index("not_declared") + 1) is None
