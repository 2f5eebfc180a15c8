"""The expectations a ``.ssql`` text declares, read from its text with regular expressions
and a parenthesis count (not with the compiler under test): what ``check``, ``explain``,
``graph`` and the language server must show."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "translate" / "expectations.ssql"
"""A stream with four rules (counted, DROP ROW, FAIL UPDATE, over a computed column) and a
sink with two; compile it with ``--var dir=/data``."""

_HEAD = re.compile(r"CREATE\s+(STREAM|TABLE|SINK)\s+(\w+)", re.I)
_RULE = re.compile(r"CONSTRAINT\s+(\w+)\s+EXPECT\s*\(", re.I)
_CLAUSE = re.compile(r"\s*ON\s+VIOLATION\s+(DROP\s+ROW|FAIL\s+UPDATE)", re.I)


@dataclass(frozen=True)
class Written:
    """One ``CONSTRAINT`` as written: ``kind`` (``stream``, ``table``, ``sink``) and name
    of the relation holding it, the rule's name, condition (inside its parentheses),
    ``on_violation`` (``""``, ``ON VIOLATION DROP ROW``, ``ON VIOLATION FAIL UPDATE``),
    and the offsets of its name in the text."""

    kind: str
    relation: str
    name: str
    condition: str
    on_violation: str
    name_start: int
    name_end: int


def written(text: str) -> list[Written]:
    """Every ``CONSTRAINT`` of ``text``, in order (comments must not hold one)."""
    heads = [(m.start(), m.group(1).lower(), m.group(2)) for m in _HEAD.finditer(text)]
    found = []
    for match in _RULE.finditer(text):
        kind, relation = next((k, r) for s, k, r in reversed(heads) if s < match.start())
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        clause = _CLAUSE.match(text, end)
        on_violation = "ON VIOLATION " + " ".join(clause.group(1).upper().split()) if clause else ""
        found.append(
            Written(
                kind,
                relation,
                match.group(1),
                text[match.end() : end - 1].strip(),
                on_violation,
                match.start(1),
                match.end(1),
            )
        )
    return found


def written_in(path: Path) -> list[Written]:
    """:func:`written` of the file at ``path``."""
    return written(path.read_text(encoding="utf-8"))
