"""The index of a text the statement grammar refused, found by a lexical scan.

Statements are split at ``;`` (outside strings and comments); declarations and references
are found by their keywords (``CREATE STREAM name``, ``INSERT INTO name``, ``FROM``/``JOIN``),
a relation's columns from its ``( name TYPE, … )`` list as written. The outline and
completion work on it while the text does not parse.
"""

from __future__ import annotations

import re

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp.document_index import Analysis, Columns, Declaration, Reference, Statement
from sqlstream.lsp.names import WORD, blank_strings, lexical_references

STATEMENT = re.compile(r"[^;]*;?", re.S)
_DECLARE = re.compile(
    rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+(?:SYSTEM\s+)?)?"
    rf"(STREAM|TABLE|VIEW|SINK|FUNCTION)\s+"
    rf"(?:IF\s+NOT\s+EXISTS\s+)?({WORD})",
    re.IGNORECASE,
)
_INSERT = re.compile(rf"^\s*INSERT\s+INTO\s+({WORD})", re.IGNORECASE)


def lexical_analysis(
    text: str,
    findings: list[SqlStreamError],
    previous: Analysis | None = None,
    caches: CompileCaches | None = None,
    trust: bool = False,
) -> Analysis:
    """The index of a text the statement grammar refused: statements split at ``;``
    (outside strings and comments), declarations and references found by their keywords.
    The script and planner of ``previous`` and the stores ``caches`` are carried on, for
    the next version."""
    blank = blank_strings(text)
    statements: list[Statement] = []
    declarations: dict[tuple[str, str], Declaration] = {}
    references: list[Reference] = []
    for chunk in STATEMENT.finditer(blank):
        body = chunk.group(0)
        if not body.strip():
            continue
        lead = len(body) - len(body.lstrip())
        start, end = chunk.start() + lead, chunk.end()
        declared, inserted = _DECLARE.match(body), _INSERT.match(body)
        kind, name = "select", None
        if declared:
            kind, name = declared.group(1).lower(), declared.group(2).strip("`")
            namespace = kind if kind in ("sink", "function") else "relation"
            at = chunk.start() + declared.start(2)
            columns = lexical_columns(body[declared.end() :]) if namespace == "relation" else None
            declarations.setdefault(
                (namespace, name.lower()),
                Declaration(name, kind, at, at + len(declared.group(2)), (start, end), columns),
            )
            references.append(
                Reference(name.lower(), namespace, at, at + len(declared.group(2)), True)
            )
        elif inserted:
            kind, name = "insert", inserted.group(1).strip("`")
            at = chunk.start() + inserted.start(1)
            references.append(Reference(name.lower(), "sink", at, at + len(inserted.group(1))))
        elif re.match(r"\s*SET\b", body, re.IGNORECASE):
            kind = "set"
        refs, aliases = lexical_references(body)
        references += [
            Reference(n, "relation", chunk.start() + s, chunk.start() + e)
            for n, s, e in refs
            if kind not in ("stream", "table", "sink", "function")
        ]
        statements.append(Statement(start, end, kind, name, aliases))
    return Analysis(
        text,
        findings,
        statements,
        declarations,
        references,
        False,
        previous.script if previous is not None else None,
        previous.planner if previous is not None else None,
        caches=caches,
    )


def lexical_columns(rest: str) -> Columns | None:
    """The columns of a ``( name TYPE, … )`` list at the start of ``rest`` (strings and
    comments blanked), as written; a computed column's type is ``UNKNOWN``; ``None``
    without a list."""
    if not rest.lstrip().startswith("("):
        return None
    depth, current = 0, ""
    items: list[str] = []
    for char in rest[rest.index("(") :]:
        depth += char == "("
        depth -= char == ")"
        if depth == 0:
            items.append(current[1:] if not items else current)
            break
        if char == "," and depth == 1:
            items.append(current[1:] if not items else current)
            current = ""
            continue
        current += char
    columns = []
    for item in items:
        words = item.split()
        if len(words) < 2 or words[0].upper() == "WATERMARK":
            continue
        type_ = "UNKNOWN" if words[1].upper() == "AS" else " ".join(words[1:]).upper()
        columns.append((words[0].strip("`"), type_.split(" METADATA")[0]))
    return tuple(columns)
