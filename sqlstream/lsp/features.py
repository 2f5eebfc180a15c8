"""Answers to an editor's requests, from an :class:`~sqlstream.lsp.document_index.Analysis`.

Hover (a finding code's text; a relation's kind, columns and types; a column's type; a
query's output mode and why, trigger, stateful operators with their keys, watermarks, as
``sqlstream explain`` reports them; a user function's signature and language), go to
definition, find references, document symbols and rename of a stream, table, view, sink or
user function (``CREATE FUNCTION``; its calls are references). Every function takes character offsets and
returns plain values (offsets, Markdown); :mod:`sqlstream.lsp.requests` turns them into
LSP messages.
"""

from __future__ import annotations

import re

from sqlstream.analysis.spark_types import known_functions
from sqlstream.diagnostics.codes import CODES
from sqlstream.ir import spark_versions
from sqlstream.lsp import constraints
from sqlstream.lsp.document_index import Analysis, Declaration, Reference

_WORD = re.compile(r"[A-Za-z_][\w$]*")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")


def word_at(text: str, offset: int) -> tuple[str, int, int] | None:
    """``(word, start, end)`` of the identifier around ``offset`` (``None`` off a word)."""
    for match in _WORD.finditer(text, max(0, offset - 200), min(len(text), offset + 200)):
        if match.start() <= offset <= match.end():
            return match.group(0), match.start(), match.end()
    return None


def declaration_of(analysis: Analysis, reference: Reference) -> Declaration | None:
    """Where the name ``reference`` stands for is declared, or ``None``."""
    found = analysis.declarations.get((reference.namespace, reference.name))
    if found is None and reference.namespace == "sink":  # CREATE STREAM … AS: also a relation
        found = analysis.declarations.get(("relation", reference.name))
    return found


def definition(analysis: Analysis, offset: int) -> tuple[int, int] | None:
    """``(start, end)`` of the declaration of the name at ``offset``, or ``None``."""
    reference = analysis.reference_at(offset)
    found = declaration_of(analysis, reference) if reference else None
    return (found.start, found.end) if found else None


def references(
    analysis: Analysis,
    offset: int,
    include_declaration: bool = True,
) -> list[tuple[int, int]]:
    """``(start, end)`` of every use of the name at ``offset`` (its declaration too when
    ``include_declaration``), in text order; empty off a name."""
    reference = analysis.reference_at(offset)
    if reference is None:
        return []
    return [
        (r.start, r.end)
        for r in analysis.references
        if r.name == reference.name
        and r.namespace == reference.namespace
        and (include_declaration or not r.declaration)
    ]


def rename(analysis: Analysis, offset: int, new_name: str) -> list[tuple[int, int, str]] | str:
    """The edits ``(start, end, text)`` that rename the stream, table, view, sink or user
    function at ``offset`` to ``new_name`` everywhere (a function: its ``CREATE FUNCTION``
    and every call of it), or a sentence saying why not (not on a name, a name that is not
    an identifier, one already declared, or a function name Spark already has: a call of
    it would call Spark's)."""
    reference = analysis.reference_at(offset)
    if reference is None or declaration_of(analysis, reference) is None:
        return "rename works on the name of a declared stream, table, view, sink or function"
    if not _IDENTIFIER.match(new_name):
        return f"'{new_name}' is not a name (letters, digits and _, not starting with a digit)"
    if reference.namespace == "function" and new_name.lower() in known_functions(
        spark_versions.default()
    ):
        return f"'{new_name}' is a Spark function"
    if (
        reference.namespace,
        new_name.lower(),
    ) in analysis.declarations and new_name.lower() != reference.name:
        return f"'{new_name}' is already declared"
    return [(start, end, new_name) for start, end in references(analysis, offset)]


SYMBOL_KINDS = ("set", "stream", "table", "view", "sink", "insert", "select", "function")


def symbols(analysis: Analysis) -> list[dict]:
    """The outline: one ``{"name", "kind", "detail", "start", "end", "name_start",
    "name_end", "children"}`` per statement (``kind`` one of :data:`SYMBOL_KINDS`;
    ``children`` the columns of a declared relation, ``{"name", "detail"}``, then the
    expectations of a stream or sink, ``{"name", "detail", "kind": "constraint", "start",
    "end", "name_start", "name_end"}`` with ``detail`` ``EXPECT (…) [ON VIOLATION …]``)."""
    outline = []
    rules: dict[int, list[dict]] = {}
    for rule in constraints.constraints(analysis):
        statement_at = analysis.statement_at(rule.start)
        if statement_at is not None:
            rules.setdefault(statement_at.start, []).append(
                {
                    "name": rule.name,
                    "detail": rule.line,
                    "kind": "constraint",
                    "start": rule.start,
                    "end": rule.end,
                    "name_start": rule.name_start,
                    "name_end": rule.name_end,
                }
            )
    for statement in analysis.statements:
        name = statement.name or statement.kind.upper()
        namespace = {"sink": "sink", "insert": "sink", "function": "function"}.get(
            statement.kind, "relation"
        )
        declared = analysis.declarations.get((namespace, (statement.name or "").lower()))
        name_start, name_end = statement.start, min(statement.end, statement.start + 1)
        detail = statement.kind
        if statement.kind in ("stream", "table", "view", "sink", "function") and declared:
            name_start, name_end, detail = declared.start, declared.end, declared.detail or detail
        if statement.kind == "insert":
            name = f"INSERT INTO {statement.name}"
        if statement.kind == "set":
            name = analysis.text[statement.start : statement.end].strip().rstrip(";")[:60]
        if statement.query:
            detail = f"{statement.query['output_mode']} → {statement.query['sink']['name']}"
        children = []
        if declared and declared.columns and statement.kind != "insert":
            children = [{"name": c, "detail": t} for c, t in declared.columns]
        if statement.kind in ("stream", "sink"):
            children += rules.get(statement.start, [])
        outline.append(
            {
                "name": name,
                "kind": statement.kind,
                "detail": detail,
                "start": statement.start,
                "end": statement.end,
                "name_start": name_start,
                "name_end": name_end,
                "children": children,
            }
        )
    return outline


def _columns_table(columns) -> str:
    if columns is None:
        return "columns known only when the pipeline runs (`infer_schema`, `SELECT *` of such)"
    rows = "\n".join(f"| `{n}` | `{t}` |" for n, t in columns)
    return f"| column | type |\n| --- | --- |\n{rows}"


def _function_hover(declared: Declaration) -> str:
    """``declared.detail`` (``name(param TYPE, …) RETURNS TYPE — language``) as Markdown."""
    signature, _, language = declared.detail.partition(" — ")
    return (
        f"**function** `{signature}`\n\nlanguage: {language}"
        if language
        else f"**function** `{signature}`"
    )


def _code_hover(code: str) -> str | None:
    record = CODES.get(code.upper())
    if record is None:
        return None
    return f"**{record.code}** ({record.severity}): {record.title}\n\n{record.doc}"


def query_markdown(described: dict) -> str:
    """A query's ``describe_query`` dict as Markdown: output mode and why, trigger and why,
    stateful operators with their keys, watermarks, sink, and the expectations of the
    streams it reads and of its sink (names, with ``drop`` or ``fail`` when they act)."""
    trigger = described["trigger"]
    lines = [
        f"**query `{described['name']}`** → sink `{described['sink']['name']}` "
        f"({described['sink']['connector']})",
        "",
        f"- output mode **{described['output_mode']}**: {described['output_mode_reason']}",
        f"- trigger **{trigger['call'] or 'default'}**: {trigger['reason']}",
    ]
    if described["operators"]:
        for operator in described["operators"]:
            where = f" (in view `{operator['relation']}`)" if operator["relation"] else ""
            join = f" {operator['join_type']}" if operator["join_type"] else ""
            keys = ", ".join(f"`{k}`" for k in operator["keys"]) or "(none)"
            lines.append(f"- stateful: **{operator['kind']}{join}**{where}, state keys {keys}")
    else:
        lines.append("- stateless: no state kept across micro-batches")
    marks = (
        "; ".join(
            f"`{w['relation']}.{w['column']}` delay {w['delay']}" for w in described["watermarks"]
        )
        or "none"
    )
    lines.append(f"- watermarks: {marks}")
    if described["global_watermark"]:
        lines.append(
            f"- global watermark: the **{described['global_watermark']['policy']}** "
            "of them (`spark.sql.streaming.multipleWatermarkPolicy`)"
        )
    guarded = [
        (f"stream `{s['relation']}`", s.get("expectations", [])) for s in described["sources"]
    ]
    guarded.append(
        (f"sink `{described['sink']['name']}`", described["sink"].get("expectations", []))
    )
    for where, rules in guarded:
        if rules:
            names = ", ".join(
                f"`{r['name']}`" + (f" ({r['action']})" if r["action"] != "keep" else "")
                for r in rules
            )
            lines.append(f"- expectations on {where}: {names}")
    return "\n".join(lines)


def scope_columns(
    analysis: Analysis,
    offset: int,
    qualifier: str | None = None,
) -> list[tuple[str, str, str]]:
    """``(column, type, relation)`` of the relations in scope at ``offset``: those the
    statement there reads (or, with ``qualifier``, the one that alias or name stands for),
    and a declared relation's own columns inside its declaration."""
    statement = analysis.statement_at(offset)
    if statement is None:
        return []
    names = list(dict.fromkeys(statement.aliases.values()))
    if qualifier is not None:
        target = statement.aliases.get(qualifier.lower(), qualifier.lower())
        names = [target]
    elif statement.kind in ("stream", "table", "view") and statement.name:
        names.append(statement.name.lower())
    found = []
    for name in names:
        declared = analysis.relation(name)
        if declared is None:
            continue
        for column, type_ in declared.columns or ():
            found.append((column, type_, declared.name))
    return found


def hover(analysis: Analysis, offset: int) -> tuple[str, int, int] | None:
    """``(markdown, start, end)`` for the hover at ``offset``, or ``None``."""
    rule = constraints.hover(analysis, offset)
    if rule is not None:
        return rule
    word = word_at(analysis.text, offset)
    if word and re.fullmatch(r"SS\d{3}", word[0], re.IGNORECASE):
        text = _code_hover(word[0])
        if text:
            return text, word[1], word[2]
    reference = analysis.reference_at(offset)
    if reference is not None:
        declared = declaration_of(analysis, reference)
        if declared is not None and declared.kind == "function":
            return _function_hover(declared), reference.start, reference.end
        if declared is not None:
            head = f"**{declared.kind} `{declared.name}`**" + (
                f" — {declared.detail}"
                if declared.detail and declared.detail != declared.kind
                else ""
            )
            what = "columns it is written" if declared.kind == "sink" else "columns"
            body = (
                _columns_table(declared.columns)
                if declared.columns is not None or declared.kind != "sink"
                else "(no query writes it yet)"
            )
            return f"{head}\n\n{what}:\n\n{body}", reference.start, reference.end
    statement = analysis.statement_at(offset)
    if word is not None and statement is not None:
        text = analysis.text
        qualifier = None
        before = text[: word[1]].rstrip()
        if before.endswith("."):
            match = re.search(r"([A-Za-z_]\w*)\s*\.\Z", before)
            qualifier = match.group(1) if match else None
        matches = [
            c for c in scope_columns(analysis, offset, qualifier) if c[0].lower() == word[0].lower()
        ]
        if matches:
            lines = [f"column `{c}` **{t}** of `{r}`" for c, t, r in matches]
            return "\n\n".join(lines), word[1], word[2]
    if statement is not None and statement.query is not None:
        return query_markdown(statement.query), statement.start, statement.end
    return None
