"""The editor's requests answered from a document's last analysis: hover, completion,
definition, references, document symbols and rename.

:func:`register` adds a handler per request to the server; each takes the document's last
finished analysis (:meth:`~sqlstream.lsp.document_checks.SqlStreamServer.current`: none
before its first check ends), asks :mod:`sqlstream.lsp.features` or
:mod:`sqlstream.lsp.completion` (plain offsets and values) and turns the answer into the
protocol's types.

Source: the Language Server Protocol 3.17 (``textDocument/hover``, ``completion``,
``definition``, ``references``, ``documentSymbol``, ``prepareRename``, ``rename``).
"""

from __future__ import annotations

from lsprotocol import types as t

from sqlstream.lsp import completion, features, test_files
from sqlstream.lsp.document_checks import SqlStreamServer, text_range
from sqlstream.lsp.document_index import Analysis
from sqlstream.lsp.positions import Lines

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


_PositionParams = (
    t.HoverParams
    | t.CompletionParams
    | t.DefinitionParams
    | t.ReferenceParams
    | t.PrepareRenameParams
    | t.RenameParams
)
"""The requests at a position of a document (each has ``text_document`` and ``position``)."""


def _at(ls: SqlStreamServer, params: _PositionParams) -> tuple[Analysis, Lines, int] | None:
    """The document's last analysis, its lines and the offset of the request's position, or
    ``None`` before the document's first check ends."""
    known = ls.current(params.text_document.uri)
    if known is None:  # not checked yet
        return None
    analysis, lines = known
    return analysis, lines, lines.offset(params.position.line, params.position.character)


def register(server: SqlStreamServer) -> None:
    """Register the handlers of the editor's requests on ``server``."""

    @server.feature(t.TEXT_DOCUMENT_HOVER)
    def hover(ls: SqlStreamServer, params: t.HoverParams) -> t.Hover | None:
        at = _at(ls, params)
        if at is None:
            return None
        analysis, lines, offset = at
        found = features.hover(analysis, offset)
        if found is None:
            return None
        text, start, end = found
        return t.Hover(
            contents=t.MarkupContent(kind=t.MarkupKind.Markdown, value=text),
            range=text_range(lines, start, end),
        )

    @server.feature(
        t.TEXT_DOCUMENT_COMPLETION, t.CompletionOptions(trigger_characters=[".", "(", "'"])
    )
    def complete(ls: SqlStreamServer, params: t.CompletionParams) -> t.CompletionList:
        at = _at(ls, params)
        if at is None:
            return t.CompletionList(is_incomplete=False, items=[])
        analysis, lines, offset = at
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
        at = _at(ls, params)
        if at is None:
            return None
        analysis, lines, offset = at
        found = features.definition(analysis, offset)
        return (
            None
            if found is None
            else t.Location(uri=params.text_document.uri, range=text_range(lines, *found))
        )

    @server.feature(t.TEXT_DOCUMENT_REFERENCES)
    def references(ls: SqlStreamServer, params: t.ReferenceParams) -> list[t.Location]:
        at = _at(ls, params)
        if at is None:
            return []
        analysis, lines, offset = at
        return [
            t.Location(uri=params.text_document.uri, range=text_range(lines, s, e))
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
            name_range = text_range(lines, entry["name_start"], entry["name_end"])
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
                    range=text_range(lines, c["start"], c["end"]),
                    selection_range=text_range(lines, c["name_start"], c["name_end"]),
                )
                for c in entry["children"]
            ]
            found.append(
                t.DocumentSymbol(
                    name=entry["name"],
                    detail=entry["detail"],
                    kind=_SYMBOLS[entry["kind"]],
                    range=text_range(lines, entry["start"], entry["end"]),
                    selection_range=name_range,
                    children=children or None,
                )
            )
        return found

    @server.feature(t.TEXT_DOCUMENT_PREPARE_RENAME)
    def prepare_rename(ls: SqlStreamServer, params: t.PrepareRenameParams):
        at = _at(ls, params)
        if at is None:
            return None
        analysis, lines, offset = at
        reference = analysis.reference_at(offset)
        if reference is None or features.declaration_of(analysis, reference) is None:
            return None
        return text_range(lines, reference.start, reference.end)

    @server.feature(t.TEXT_DOCUMENT_RENAME)
    def rename(ls: SqlStreamServer, params: t.RenameParams) -> t.WorkspaceEdit:
        at = _at(ls, params)
        if at is None:
            return t.WorkspaceEdit()
        analysis, lines, offset = at
        edits = features.rename(analysis, offset, params.new_name)
        if isinstance(edits, str):
            from pygls.exceptions import JsonRpcInvalidParams

            raise JsonRpcInvalidParams(edits)
        return t.WorkspaceEdit(
            changes={
                params.text_document.uri: [
                    t.TextEdit(range=text_range(lines, s, e), new_text=text) for s, e, text in edits
                ]
            }
        )
