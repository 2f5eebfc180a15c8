"""Names in a piece of Spark SQL, for the language server's index: the relations a query
reads (its table references, found by the compiler's one rule,
:func:`~sqlstream.sql.rewrite.relation_tables`; ``relation.column`` qualifiers) and their
aliases, and the calls of functions Spark does not know (user functions), with their offsets
in the text; a lexical scan where sqlglot cannot parse a query being typed. Results are
cached by text: between two keystrokes most statements are unchanged."""

from __future__ import annotations

import re

from sqlglot import exp

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir.caches import CompileCaches
from sqlstream.sql.parsing import parse_expression, parse_query
from sqlstream.sql.rewrite import relation_tables, table_reference


def call_offsets(tree: exp.Expr) -> list[tuple[str, int, int]]:
    """``(lower-case name, start, end)`` of each call of a function Spark does not know
    (sqlglot's ``Anonymous``: where user functions are) in ``tree``, in text order; the
    offsets are those of the name (inside backticks)."""
    calls = []
    for call in tree.find_all(exp.Anonymous):
        meta = call.meta if call._meta else {}
        if meta.get("start") is None or not call.name:
            continue
        start, end = meta["start"], meta["end"] + 1
        if isinstance(call.this, exp.Identifier) and call.this.quoted:
            start, end = start + 1, end - 1
        calls.append((call.name.lower(), start, end))
    return sorted(calls, key=lambda c: c[1])


def expression_calls(
    sql: str, caches: CompileCaches | None = None
) -> tuple[tuple[str, int, int], ...]:
    """The function calls (:func:`call_offsets`) of a scalar expression's text; none when
    it does not parse (through the compile stores ``caches``). Kept by text in their
    ``references`` store, as :func:`sql_references`."""
    store = caches.references if caches is not None else None
    cached = store.get(("calls", sql)) if store is not None else None
    if cached is None:
        try:
            cached = tuple(call_offsets(parse_expression(sql, caches)))
        except SqlStreamError:
            cached = ()
        if store is not None:
            store.keep(("calls", sql), cached)
    return cached


Found = tuple[tuple[str, int, int], ...]


def sql_references(
    sql: str, caches: CompileCaches | None = None
) -> tuple[Found, dict[str, str], Found]:
    """``(references, aliases, calls)`` of a query's text: ``(name, start, end)`` of each
    relation name (table references and ``relation.column`` qualifiers; offsets in
    ``sql``), alias → relation (both lower case), and the function calls
    (:func:`call_offsets`; none when sqlglot cannot parse the text). Kept by text in the
    ``references`` store of ``caches`` (between two keystrokes most statements are
    unchanged), the compile stores the parse goes through."""
    store = caches.references if caches is not None else None
    cached = store.get(("query", sql)) if store is not None else None
    if cached is not None:
        return cached
    try:
        tree = parse_query(sql, caches)
    except SqlStreamError:
        result = (*lexical_references(sql), ())
    else:
        refs, aliases = [], {}
        for table in relation_tables(tree):  # the compiler's rule (CTE names left out)
            name, start, end = table_reference(table)
            name = name.lower()
            aliases[(table.alias or table.name).lower()] = name
            if start >= 0:
                refs.append((name, start, end))
        for column in tree.find_all(exp.Column):
            qualifier = column.args.get("table")
            if (
                isinstance(qualifier, exp.Identifier)
                and qualifier.name.lower() in aliases
                and qualifier.name.lower() == aliases[qualifier.name.lower()]
            ):
                meta = qualifier.meta
                if meta.get("start") is not None:
                    refs.append((qualifier.name.lower(), meta["start"], meta["end"] + 1))
        result = (tuple(sorted(refs, key=lambda r: r[1])), aliases, tuple(call_offsets(tree)))
    if store is not None:
        store.keep(("query", sql), result)
    return result


WORD = r"`[^`]+`|[A-Za-z_]\w*"
_FROM = re.compile(
    rf"\b(?:FROM|JOIN|TUMBLE|HOP|CUMULATE|SESSION)\s*\(?\s*({WORD})"
    rf"(?:\s*(?:\([^()]*\))?\s*(?:AS\s+)?({WORD}))?",
    re.IGNORECASE,
)
_KEYWORDS = {
    "on",
    "where",
    "group",
    "join",
    "left",
    "right",
    "full",
    "inner",
    "cross",
    "using",
    "window",
    "order",
    "limit",
    "union",
    "emit",
    "having",
    "semi",
    "anti",
    "outer",
    "lateral",
    "natural",
    "for",
    "select",
    "tablesample",
    "pivot",
    "unpivot",
}


def lexical_references(sql: str):
    """References and aliases of a query sqlglot cannot parse (one being typed): the word
    after ``FROM``, ``JOIN`` or a window TVF's ``(``, and the alias after it."""
    refs, aliases = [], {}
    for match in _FROM.finditer(blank_strings(sql)):
        name = match.group(1).strip("`").lower()
        if name in _KEYWORDS or name == "select":
            continue
        refs.append((name, match.start(1), match.end(1)))
        alias = (match.group(2) or "").strip("`").lower()
        aliases[name] = name
        if alias and alias not in _KEYWORDS:
            aliases[alias] = name
    return tuple(refs), aliases


_STRING_OR_COMMENT = re.compile(r"'(?:[^'\\]|\\.)*'?|--[^\n]*|/\*.*?(?:\*/|\Z)", re.S)


def blank_strings(text: str) -> str:
    """``text`` with strings and comments replaced by spaces (offsets kept)."""
    return _STRING_OR_COMMENT.sub(lambda m: " " * len(m.group(0)), text)
