"""Reading a test file's YAML within limits: what `sqlstream test` accepts from a file it
was pointed at (a pull request's test file, in CI), refused at its line and column.

* Only a regular file of at most :data:`MAX_TEST_FILE_BYTES` is read (never a FIFO or a
  device: :func:`sqlstream.frontend.limits.read_small_file`), and a symbolic link only when
  its target stays in the test file's project.
* Brackets (``[``, ``{``) nest at most :data:`MAX_NESTING` levels and a line's indentation
  is at most :data:`MAX_INDENT` characters, checked in the text before it is parsed; the
  values, aliases expanded, nest at most :data:`MAX_NESTING` levels and number at most
  :data:`MAX_VALUES` (an alias "bomb", a few lines that expand to billions of values, is
  refused at the first collection past the bound, without being expanded).
* Tags other than YAML's core ones (``!!python/object``, ``!foo``, ``!!binary``,
  ``!!set``) are refused; an integer has at most :data:`MAX_INTEGER_DIGITS` digits; a
  timestamp that is no date (``2013-13-45``) is refused; merge keys (``<<: *base``) work.

Every refusal is a :class:`~sqlstream.diagnostics.errors.SqlStreamError`: ``SS101`` (not
YAML, at the place the parser stopped) or ``SS104`` (past a limit).
"""

from __future__ import annotations

import re
from typing import Any

from ruamel.yaml.constructor import ConstructorError, RoundTripConstructor

MAX_TEST_FILE_BYTES = 1024 * 1024
"""The largest test file read (bytes)."""
MAX_NESTING = 64
"""Levels of brackets in the text, and of collections in the values (aliases expanded)."""
MAX_INDENT = 256
"""Characters of indentation (and of ``- ``, ``? ``, ``: `` indicators) before a line's text."""
MAX_VALUES = 1_000_000
"""Values (scalars and collections) of a test file, aliases expanded."""
MAX_INTEGER_DIGITS = 100
"""Digits of an integer in a test file."""
MAX_ROWS = 10_000
"""Rows given for one stream, table or sink in a step (or in a test's ``tables``)."""

_BRACKETS = re.compile(r"[\[\]{}]")
_INDENT = re.compile(r"^(?:[ \t]|[-?:](?=[ \t]))*", re.M)


class LimitProblem(Exception):
    """Past a limit: ``message`` at ``(line, column)`` (0-based)."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.line, self.column = line, column


def check_text(text: str) -> None:
    """Refuse a text nested past the limits before the YAML parser sees it (its scanner and
    composer would recurse, or take time quadratic in the depth).

    Brackets are counted everywhere (also in quoted text), so a count can only be higher
    than the YAML's nesting: a string holding 64 unclosed ``[`` is refused too.

    Raises:
        LimitProblem: brackets deeper than :data:`MAX_NESTING`, or a line indented more
            than :data:`MAX_INDENT` characters (at the bracket or line).
    """
    depth = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_NESTING:
                line = text.count("\n", 0, match.start())
                column = match.start() - (text.rfind("\n", 0, match.start()) + 1)
                raise LimitProblem(
                    f"brackets nested deeper than {MAX_NESTING} levels", line, column
                )
        else:
            depth = max(0, depth - 1)
    for match in _INDENT.finditer(text):
        if match.end() - match.start() > MAX_INDENT:
            line = text.count("\n", 0, match.start())
            raise LimitProblem(
                f"a line indented more than {MAX_INDENT} characters (nesting that deep is "
                "not read)",
                line,
                MAX_INDENT,
            )


def check_values(document: Any) -> None:
    """Refuse a loaded document whose values, aliases expanded, nest deeper than
    :data:`MAX_NESTING` or number more than :data:`MAX_VALUES`, or that holds itself.

    Each distinct collection is measured once (an alias is the same Python object as its
    anchor), so a bomb costs the size of its text, not of its expansion.

    Raises:
        LimitProblem: at the first collection past a bound (its own line and column).
    """
    if not isinstance(document, (dict, list)):
        return
    sizes: dict[int, tuple[int, int]] = {}  # id -> (values, height), aliases expanded
    deep = f"values nested deeper than {MAX_NESTING} levels (aliases expanded)"
    bomb = f"more than {MAX_VALUES:,} values, aliases expanded (an alias bomb?)"
    # the path from the document down: [collection, its children, next child, values, height,
    # (line, column)]; the ids on it are the collections being measured
    stack: list[list[Any]] = [[document, _children(document), 0, 1, 0, _where(document, (0, 0))]]
    on_path = {id(document)}
    while stack:
        frame = stack[-1]
        node, items, index, _, height, place = frame
        if index < len(items):
            frame[2] += 1
            child = items[index]
            if not isinstance(child, (dict, list)):
                frame[3] += 1
            elif id(child) in sizes:  # an alias of a collection measured already
                count, below = sizes[id(child)]
                if len(stack) + below > MAX_NESTING:
                    raise LimitProblem(deep, *place)
                frame[3] += count
                frame[4] = max(height, below)
            elif id(child) in on_path:
                raise LimitProblem("a value that holds itself (an alias inside its anchor)", *place)
            else:
                if len(stack) >= MAX_NESTING:
                    raise LimitProblem(deep, *_where(child, place))
                on_path.add(id(child))
                stack.append([child, _children(child), 0, 1, 0, _where(child, place)])
                continue
            if frame[3] > MAX_VALUES:
                raise LimitProblem(bomb, *place)
            continue
        stack.pop()
        on_path.discard(id(node))
        sizes[id(node)] = (frame[3], height + 1)
        if stack:
            parent = stack[-1]
            parent[3] += frame[3]
            parent[4] = max(parent[4], height + 1)
            if parent[3] > MAX_VALUES:
                raise LimitProblem(bomb, *place)


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [value for pair in node.items() for value in pair]
    return list(node)


def _where(node: Any, fallback: tuple[int, int]) -> tuple[int, int]:
    lc = getattr(node, "lc", None)
    if lc is not None and lc.line is not None:
        return lc.line, lc.col
    return fallback


def _refuse(what: str):
    def construct(self: Any, node: Any, *args: Any) -> Any:
        raise ConstructorError(None, None, f"{what} {node.tag!r} is not supported", node.start_mark)

    return construct


class Constructor(RoundTripConstructor):
    """Round-trip construction (comments, order and positions kept) that refuses what a
    test file has no use for, at its place (a ``ConstructorError``: ``SS101``)."""

    def construct_yaml_int(self, node: Any) -> Any:
        digits = sum(char.isdigit() for char in str(node.value))
        if digits > MAX_INTEGER_DIGITS:
            raise ConstructorError(
                None,
                None,
                f"an integer of {digits:,} digits (at most {MAX_INTEGER_DIGITS})",
                node.start_mark,
            )
        return super().construct_yaml_int(node)

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        try:
            return super().construct_yaml_timestamp(node, values)
        except (ValueError, OverflowError) as error:
            raise ConstructorError(
                None,
                None,
                f"{node.value!r} is not a date or time ({error}); quote it to give a string",
                node.start_mark,
            ) from None

    construct_unknown = _refuse("the tag")
    construct_undefined = _refuse("the tag")
    construct_yaml_binary = _refuse("the tag")
    construct_yaml_omap = _refuse("the tag")
    construct_yaml_pairs = _refuse("the tag")
    construct_yaml_set = _refuse("the tag")


Constructor.add_constructor("tag:yaml.org,2002:int", Constructor.construct_yaml_int)
Constructor.add_constructor("tag:yaml.org,2002:timestamp", Constructor.construct_yaml_timestamp)
for _tag in ("binary", "omap", "pairs", "set"):
    Constructor.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse("the tag"))
Constructor.add_constructor(None, _refuse("the tag"))
