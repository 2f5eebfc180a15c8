"""Limits that keep any input from crashing the compiler: nesting depth and a deep stack.

sqlglot's parser, ``qualify`` and generator, and parts of the analysis, recurse once or
more per level of nesting, so Python's default recursion limit (1,000 frames) would end a
query of about 48 nested parentheses in a ``RecursionError``. Spark accepts deeper
queries than that, so the compiler runs in a thread of its own with a large stack and a
raised recursion limit (:func:`run_deep`), and refuses, with a positioned ``SS103``, only
what is deeper than :data:`MAX_NESTING` (:func:`check_nesting`), a depth Spark 4.1 itself
refuses (``FAILED_TO_PARSE_TOO_COMPLEX``; measured on Spark 4.1.4: 300 nested parentheses
parse, 400 do not; 150 nested subqueries parse, 200 do not; a schema of 300 nested
``STRUCT``s fails).
"""

from __future__ import annotations

import gc
import re
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.diagnostics.source_text import Span

__all__ = ["MAX_NESTING", "MAX_SUBQUERY_NESTING", "NestingError", "check_nesting", "nesting_error",
           "run_deep"]

# Parentheses (expressions, subqueries, calls) and nested types (ARRAY<…>, STRUCT<…>):
# deeper than Spark 4.1 accepts in every form measured, so no program Spark runs is refused.
MAX_NESTING = 1000
# Subqueries (a parenthesis opening SELECT, WITH, FROM, VALUES or TABLE) within each other:
# Spark 4.1 refuses 200; some analysis passes take time quadratic in this depth.
MAX_SUBQUERY_NESTING = 256
STACK_BYTES = 512 * 1024 * 1024  # reserved, not committed: pages are used as the stack grows
RECURSION_LIMIT = 250_000  # frames: 1,000 parentheses need 20,000–40,000 (measured), 256 subqueries fewer

T = TypeVar("T")


class NestingError(SqlStreamError):
    """Parentheses or nested types deeper than :data:`MAX_NESTING`."""

    code = "SS103"


# A string, quoted identifier or comment (skipped), or a parenthesis (group 1), or a word
# (group 2: a subquery starts when it follows an opening parenthesis).
_TOKENS = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|([()])|([A-Za-z_]\w*)", re.S)
_QUERY_WORDS = {"select", "with", "from", "values", "table"}


def check_nesting(text: str, span: Callable[[int, int], Span], limit: int = MAX_NESTING,
                  subquery_limit: int = MAX_SUBQUERY_NESTING) -> None:
    """Refuse text whose parentheses nest deeper than ``limit``, or whose subqueries nest
    deeper than ``subquery_limit`` (strings, quoted names and comments are skipped;
    unbalanced parentheses are left to the parsers).

    Args:
        text: the text the parsers will see (variables substituted).
        span: maps ``(start, end)`` offsets of ``text`` to a :class:`Span` of the file.
        limit: the deepest nesting of parentheses accepted.
        subquery_limit: the deepest nesting of subqueries accepted.

    Raises:
        NestingError: ``SS103`` at the first parenthesis past a limit.
    """
    if text.count("(") <= subquery_limit:
        return
    opened: list[bool] = []  # per open parenthesis: whether it opens a subquery
    subqueries = 0
    after_open = None  # the match of a "(" that no word followed yet
    for match in _TOKENS.finditer(text):
        paren, word = match.group(1), match.group(2)
        if word is not None:
            if after_open is not None and word.lower() in _QUERY_WORDS:
                opened[-1] = True
                subqueries += 1
                if subqueries > subquery_limit:
                    raise nesting_error("subqueries", span(after_open.start(), match.end()),
                                        subquery_limit)
            after_open = None
        elif paren == "(":
            opened.append(False)
            after_open = match
            if len(opened) > limit:
                raise nesting_error("parentheses", span(match.start(), match.end()), limit)
        elif paren == ")":
            after_open = None
            if opened and opened.pop():
                subqueries -= 1
        else:
            continue  # a comment, string or quoted name: a "(" before it opens no subquery


def nesting_error(what: str, span: Span | None, limit: int = MAX_NESTING) -> NestingError:
    """The ``SS103`` error for ``what`` (``"parentheses"``, ``"nested types"``) at ``span``."""
    return NestingError(
        f"{what} nest deeper than {limit} levels", span,
        hint="Spark refuses such statements as too complex (FAILED_TO_PARSE_TOO_COMPLEX); "
        "split the query into views",
    )


_lock = threading.Lock()
_active = 0
_saved_limit = 0
_saved_thresholds = (0, 0, 0)
# While compiling, the oldest generation of the garbage collector is not collected: the
# compiler's trees stay alive to the end, so each full collection scans a heap that only
# grows and finds little (measured: 6–11 % of the compile time of 1,000–10,000 statements;
# the same peak memory). Young garbage (copies of trees) is still collected. Python
# ``gc.set_threshold``: a third threshold this high postpones full collections.
_NO_FULL_COLLECTION = 10**9


def _start(target: Callable[[], None]) -> threading.Thread | None:
    """Start ``target`` in a daemon thread with a :data:`STACK_BYTES` stack (a smaller one
    where the system refuses that much); ``None`` when no thread can be started."""
    for size in (STACK_BYTES, STACK_BYTES // 8):
        with _lock:
            previous = threading.stack_size()
            try:
                threading.stack_size(size)
                worker = threading.Thread(target=target, name="sqlstream-compile", daemon=True)
                worker.start()
                return worker
            except (RuntimeError, ValueError, MemoryError):
                continue
            finally:
                threading.stack_size(previous)
    return None


def run_deep(function: Callable[..., T], *args, **kwargs) -> T:
    """Call ``function(*args, **kwargs)`` in a thread with a :data:`STACK_BYTES` stack and a
    recursion limit of at least :data:`RECURSION_LIMIT`; return what it returns.

    The recursion limit and the garbage collector's thresholds are the interpreter's
    (shared by every thread): while at least one such call runs, the limit is raised and
    full collections are postponed; both are restored after the last one.

    Raises:
        BaseException: whatever ``function`` raised, re-raised in the caller's thread.
    """
    global _active, _saved_limit, _saved_thresholds
    outcome: dict[str, object] = {}
    go = threading.Event()

    def target() -> None:
        go.wait()
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            outcome["error"] = error

    worker = _start(target)
    if worker is None:  # no thread can be started: here, with the usual stack and limit
        return function(*args, **kwargs)
    with _lock:
        if _active == 0:
            _saved_limit, _saved_thresholds = sys.getrecursionlimit(), gc.get_threshold()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
            gc.set_threshold(*_saved_thresholds[:2], _NO_FULL_COLLECTION)
        _active += 1
    go.set()
    try:
        worker.join()
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                sys.setrecursionlimit(_saved_limit)
                gc.set_threshold(*_saved_thresholds)
    if "error" in outcome:
        error = outcome["error"]
        raise error.with_traceback(error.__traceback__)  # type: ignore[union-attr]
    return outcome["value"]  # type: ignore[return-value]
