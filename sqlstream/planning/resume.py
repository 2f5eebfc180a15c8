"""Incremental planning: a :class:`~sqlstream.planning.planner.Planner` that starts from an
earlier planner's state after the statements the two scripts share (the language server
re-checks a file after each keystroke; ``check`` never passes an earlier planner).

The planner's lists and its catalog only grow while statements are folded, so the state
after a statement is recorded as their sizes (:func:`mark`) and taken back as prefixes
(:func:`resume`).
"""

from __future__ import annotations

import copy

from sqlstream.connectors.user_code import file_stamp
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend import ast


def mark(planner) -> tuple:
    """The sizes of the planner's state: every list and the catalog only grow while the
    statements are folded, so the state after a statement is a prefix of each."""
    return (
        len(planner.settings),
        len(planner.setting_spans),
        len(planner.relations),
        len(planner.queries),
        len(planner.compiled),
        len(planner.findings),
        len(planner.dead_letters),
        planner.select_count,
        planner.catalog.sizes(),
        tuple((sink, len(parts)) for sink, parts in planner.insert_parts.items()),
        len(planner.functions),
    )


def _stale(statement, previous) -> bool:
    """A ``CREATE FUNCTION`` whose module file changed since ``previous`` read it (its
    modification time or size): planned again, so an edited module is read again."""
    if not isinstance(statement, ast.CreateFunction):
        return False
    function = previous.functions.get(statement.name.value.lower())
    stamp = function.stamp if function is not None else None
    return stamp is not None and file_stamp(stamp[0]) != stamp


def resume(planner, previous) -> int:
    """Take ``previous``'s state after the leading statements its script shares with
    this one; return how many (0: none, or ``previous`` judged with other settings or
    trust); a function whose module file changed is planned again (:func:`_stale`).

    A statement is planned against what the statements before it declared, and
    against nothing after it (a dead letter's sink, which may be declared later, is
    looked up after the fold, by ``Planner._fold``): so the state after ``n`` equal
    statements is the same in both. Equal means equal AST nodes, spans included, so
    every finding kept is where it was. The findings kept are rebound to this file's
    text (the lines a rendering quotes)."""
    if (
        previous is None
        or not previous.marks
        or (
            previous.spark_version,
            previous.path,
            previous.state_dir_override,
            previous.enforce,
            previous.context.trust,
            {s.value for s in previous.source.secrets},
            previous.insert_counts,
        )
        != (
            planner.spark_version,
            planner.path,
            planner.state_dir_override,
            planner.enforce,
            planner.context.trust,
            {s.value for s in planner.source.secrets},
            planner.insert_counts,
        )
    ):
        return 0  # (an INSERT's plan depends on how many INSERTs its sink has in all)
    count = 0
    # strict=False: the edited script may have more or fewer statements (the common prefix)
    for old, new in zip(
        previous.script.statements[: len(previous.marks)], planner.script.statements, strict=False
    ):
        if (old is not new and old != new) or _stale(old, previous):
            break
        count += 1
    if count == 0:
        return 0
    (
        settings,
        setting_spans,
        relations,
        queries,
        compiled,
        findings,
        dead_letters,
        planner.select_count,
        catalog,
        parts,
        functions,
    ) = previous.marks[count - 1]
    kept = list(previous.functions.items())[:functions]
    planner.functions.clear()  # in place: ``build`` made this dict what calls resolve against
    planner.functions.update(kept)
    planner.insert_parts = {sink: previous.insert_parts[sink][:n] for sink, n in parts}
    planner.settings = previous.settings[:settings]
    planner.setting_spans = previous.setting_spans[:setting_spans]
    planner.relations = previous.relations[:relations]
    planner.queries = previous.queries[:queries]
    planner.compiled = previous.compiled[:compiled]
    planner.findings = [_rebound(planner, f, previous.source) for f in previous.findings[:findings]]
    planner.dead_letters = previous.dead_letters[:dead_letters]
    planner.catalog = previous.catalog.prefix(catalog)
    planner.marks = previous.marks[:count]
    return count


def _rebound(planner, finding: SqlStreamError, old) -> SqlStreamError:
    if finding.source is not old:
        return finding
    finding = copy.copy(finding)
    finding.source = planner.source
    return finding
