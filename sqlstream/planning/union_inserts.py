"""Several ``INSERT INTO`` one sink (also in a Flink statement set) as one streaming query over
``UNION ALL`` of their bodies: Spark runs one query per sink (a second query writing the
same files or memory table would be a second writer with its own checkpoint).

The bodies become one query when they are compatible:

* the same columns: names (ignoring case) and types, in the same order (Spark's ``UNION
  ALL`` matches columns by position and names them after the first body);
* the same output mode (``EMIT`` or, without one, the mode each body alone gets) and the
  same trigger: one query has one of each.

Bodies that each aggregate are taken in every mode: Spark 4 runs a ``UNION ALL`` of two
streaming aggregations in append (windows on watermarked columns), update and complete
mode (measured on 4.3; its check refuses aggregations chained one after the other, not side
by side). Otherwise :func:`union_problem` says which body, column or mode differs, at that body's
``INSERT``, and shows the ``UNION ALL`` to write (``SS265``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlstream.diagnostics.errors import SemanticError
from sqlstream.frontend import ast
from sqlstream.planning.compiled_query import CompiledQuery

__all__ = ["InsertPart", "insert_counts", "union_problem"]

_MODE_WORDS: dict[str | None, str] = {
    "append": "append (EMIT FINAL)",
    "update": "update (EMIT CHANGES)",
    "complete": "complete (EMIT COMPLETE)",
}


@dataclass(frozen=True)
class InsertPart:
    """One ``INSERT`` into a sink that takes several.

    Attributes:
        compiled: its compiled body.
        emit: its ``EMIT`` clause, or ``None``.
        sink: the sink's name in the statement (its span points at the ``INSERT``).
        mode: the output mode the body gets alone (``None`` when none fits).
        span: the statement's span.
        poisoned: it reads a relation whose declaration failed (no query is planned).
    """

    compiled: CompiledQuery
    emit: ast.Emit | None
    sink: ast.Name
    mode: str | None
    span: ast.Span
    poisoned: bool = False


def insert_counts(statements) -> Counter:
    """Lower-case sink name → how many ``INSERT INTO`` (and ``CREATE SINK … AS``) write into it."""
    counts: Counter = Counter()
    for statement in statements:
        if isinstance(statement, ast.Insert):
            counts[statement.sink.value.lower()] += 1
        elif isinstance(statement, ast.CreateSink) and statement.query is not None:
            counts[statement.name.value.lower()] += 1
    return counts


def _body(part: InsertPart) -> str:
    text = " ".join(part.compiled.text.text.split())
    return text if len(text) <= 80 else text[:77].rstrip() + " …"


def union_all_text(parts: list[InsertPart]) -> str:
    """The single ``INSERT`` that writes what ``parts`` write (long bodies shortened; a body
    with ``WITH``, ``ORDER BY`` or ``LIMIT`` in parentheses)."""

    def shown(part: InsertPart) -> str:
        body = _body(part)
        upper = f" {body.upper()} "
        wrap = upper.lstrip().startswith("WITH ") or " ORDER BY " in upper or " LIMIT " in upper
        return f"({body})" if wrap else body

    return f"INSERT INTO {parts[0].sink.value} " + " UNION ALL ".join(shown(p) for p in parts)


def _ordinal(number: int) -> str:
    return {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(number, f"{number}th")


def _count(number: int) -> str:
    return f"{number} column{'' if number == 1 else 's'}"


def _columns(columns) -> str:
    return ", ".join(f"{n} {t}" for n, t in columns)


def union_problem(parts: list[InsertPart]) -> SemanticError | None:
    """Why the bodies of ``parts`` (in file order) cannot be one ``UNION ALL`` query, at the
    first body that differs from the first one; ``None`` when they can.

    Returns:
        An ``SS265`` :class:`SemanticError` positioned at the differing ``INSERT``'s sink
        name, or ``None``.
    """
    first = parts[0]
    sink = first.sink.value
    line = first.sink.span.line if first.sink.span is not None else "?"
    hint_tail = f"; one query writes them all: {union_all_text(parts)}"
    for index, part in enumerate(parts[1:], start=2):
        where = (
            f"the {_ordinal(index)} INSERT INTO {sink} cannot run in one query with the "
            f"first (line {line})"
        )
        mine, theirs = part.compiled.columns, first.compiled.columns
        why = hint = None
        if mine is not None and theirs is not None:
            if len(mine) != len(theirs):
                why = (
                    f"it writes {_count(len(mine))} ({_columns(mine)}), the first "
                    f"{_count(len(theirs))} ({_columns(theirs)})"
                )
                hint = "select the same columns in the same order"
            else:
                for position, ((name, kind), (first_name, first_kind)) in enumerate(
                    zip(mine, theirs, strict=True), start=1
                ):
                    if name.lower() != first_name.lower() or (
                        kind and first_kind and kind != first_kind
                    ):
                        why = (
                            f"its column {position} is {name} {kind}, the first's is "
                            f"{first_name} {first_kind}"
                        )
                        hint = (
                            f"name and type it as the first does: CAST(… AS {first_kind}) AS "
                            f"{first_name}"
                        )
                        break
        if why is None and part.mode != first.mode:
            why = (
                f"it is written in {_MODE_WORDS.get(part.mode, 'no')} mode, the first in "
                f"{_MODE_WORDS.get(first.mode, 'no')} mode"
            )
            hint = "give both the same EMIT"
        mine_trigger = part.emit.trigger if part.emit is not None else None
        first_trigger = first.emit.trigger if first.emit is not None else None
        if why is None and (mine_trigger and (mine_trigger.kind, mine_trigger.interval)) != (
            first_trigger and (first_trigger.kind, first_trigger.interval)
        ):
            why = "its EMIT trigger differs from the first's: one query has one trigger"
            hint = "give both the same EMIT … EVERY / ONCE / CONTINUOUS"
        if why is not None:
            return SemanticError(
                f"{where}: {why}", part.sink.span, code="SS265", hint=(hint or "") + hint_tail
            )
    return None
