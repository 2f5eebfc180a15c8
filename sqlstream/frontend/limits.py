"""Limits that keep any input from crashing or stalling the compiler: nesting depth, file
size, and a deep stack.

sqlglot's parser, ``qualify`` and generator, and parts of the analysis, recurse once or
more per level of nesting, so Python's default recursion limit (1,000 frames) would end a
query of about 48 nested parentheses in a ``RecursionError``. Spark accepts deeper
queries than that, so the compiler runs in a thread of its own with a large stack and a
raised recursion limit (:func:`run_deep`), and refuses, with a positioned ``SS103``, only
what is deeper than :data:`MAX_NESTING` (parentheses and ``CASE … END`` together; nested
types) or :data:`MAX_SUBQUERY_NESTING` (:func:`check_nesting`), depths Spark 4.1 itself
refuses (``FAILED_TO_PARSE_TOO_COMPLEX``; measured on Spark 4.1.4: 300 nested parentheses
parse, 400 do not; 150 nested subqueries parse, 200 do not; a schema of 300 nested
``STRUCT``s fails). Within these limits every nesting of every expression kind compiles in
well under 5 s (``tests/frontend/test_robustness.py`` bounds each one). Files are read
through :func:`read_small_file`: regular files of at most :data:`MAX_FILE_BYTES`
(:func:`read_file`: a `.ssql` file's text).
"""

from __future__ import annotations

import gc
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.diagnostics.source_text import Source, Span

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "MAX_SUBQUERY_NESTING",
    "NestingError",
    "check_nesting",
    "nesting_error",
    "read_file",
    "read_small_file",
    "run_deep",
]

# Parentheses (expressions, subqueries, calls) and nested types (ARRAY<…>, STRUCT<…>):
# deeper than Spark 4.1 accepts in every form measured, so no program Spark runs is refused.
MAX_NESTING = 1000
# Subqueries (a parenthesis opening SELECT, WITH, FROM, VALUES or TABLE) within each other:
# Spark 4.1 parses 150 and refuses 200. sqlglot's qualify and scope passes and some of the
# analysis take time quadratic in this depth (measured: 256 nested IN subqueries 3.3 s per
# compile, 160 about 1.3 s), so the limit is 160, above what Spark was measured to parse.
MAX_SUBQUERY_NESTING = 160
# A file the compiler reads (a .ssql file, an .avsc schema): larger ones are refused before
# they are read (a .ssql file of 10,000 statements is about 1 MiB).
MAX_FILE_BYTES = 8 * 1024 * 1024
STACK_BYTES = 512 * 1024 * 1024  # reserved, not committed: pages are used as the stack grows
RECURSION_LIMIT = (
    250_000  # frames: 1,000 parentheses need 20,000–40,000 (measured), 160 subqueries fewer
)

T = TypeVar("T")


class NestingError(SqlStreamError):
    """Parentheses or nested types deeper than :data:`MAX_NESTING`."""

    code = "SS103"


# A string, quoted identifier or comment (skipped), or a parenthesis (group 1), or a word
# (group 2: a subquery starts when it follows an opening parenthesis; CASE opens a level
# that END closes; ARRAY, MAP and STRUCT followed by "<" open a nested type), or an angle
# bracket (group 3: ">" closes a nested type).
_TOKENS = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/|([()])|([A-Za-z_]\w*)|([<>])",
    re.S,
)
_QUERY_WORDS = {"select", "with", "from", "values", "table"}
_TYPE_WORDS = {"array", "map", "struct"}
_LEVELS = {"(": "parentheses", "case": "CASE expressions"}


def check_nesting(
    text: str,
    span: Callable[[int, int], Span],
    limit: int = MAX_NESTING,
    subquery_limit: int = MAX_SUBQUERY_NESTING,
) -> None:
    """Refuse text whose parentheses and ``CASE … END`` nest deeper than ``limit`` together,
    or whose nested types (``ARRAY<…>``, ``MAP<…>``, ``STRUCT<…>``) nest deeper than ``limit``, or whose subqueries nest deeper than ``subquery_limit``
    (strings, quoted names and comments are skipped; unbalanced parentheses are left to the
    parsers).

    Args:
        text: the text the parsers will see (variables substituted).
        span: maps ``(start, end)`` offsets of ``text`` to a :class:`Span` of the file.
        limit: the deepest nesting of parentheses and CASE accepted.
        subquery_limit: the deepest nesting of subqueries accepted.

    Raises:
        NestingError: ``SS103`` at the first parenthesis, CASE or ``<`` past a limit.
    """
    if text.count("(") + text.count("<") + text.lower().count("case") <= subquery_limit:
        return
    opened: list[str] = []  # per open level: "(", "query" (a subquery's "(") or "case"
    subqueries = 0
    after_open = None  # the match of a "(" that no word followed yet
    types = 0  # nested types open
    type_word = False  # the previous token is ARRAY, MAP or STRUCT
    for match in _TOKENS.finditer(text):
        paren, word, angle = match.group(1), match.group(2), match.group(3)
        opening = None
        if word is not None:
            lowered = word.lower()
            if after_open is not None and lowered in _QUERY_WORDS:
                opened[-1] = "query"
                subqueries += 1
                if subqueries > subquery_limit:
                    raise nesting_error(
                        "subqueries", span(after_open.start(), match.end()), subquery_limit
                    )
            elif lowered == "case":
                opening = "case"
            elif lowered == "end" and opened and opened[-1] == "case":
                opened.pop()
            after_open = None
        elif paren == "(":
            opening = "("
            after_open = match
        elif paren == ")":
            after_open = None
            while opened and opened[-1] == "case":  # an unclosed CASE: closed by the ")"
                opened.pop()
            if opened and opened.pop() == "query":
                subqueries -= 1
        elif angle == "<" and type_word:
            types += 1
            if types > limit:
                raise nesting_error("nested types", span(match.start(), match.end()), limit)
        elif angle == ">" and types:
            types -= 1
        type_word = word is not None and word.lower() in _TYPE_WORDS
        if opening is not None:
            opened.append(opening)
            if len(opened) > limit:
                raise nesting_error(_LEVELS[opening], span(match.start(), match.end()), limit)


def nesting_error(what: str, span: Span | None, limit: int = MAX_NESTING) -> NestingError:
    """The ``SS103`` error for ``what`` (``"parentheses"``, ``"nested types"``) at ``span``."""
    return NestingError(
        f"{what} nest deeper than {limit} levels",
        span,
        hint="Spark refuses such statements as too complex (FAILED_TO_PARSE_TOO_COMPLEX); "
        "split the query into views",
    )


def read_small_file(path: str | os.PathLike, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file ``path``, refusing what would block or never end.

    A FIFO would block the open until a writer comes, ``/dev/zero`` never ends and a 2 GB
    (sparse) file takes minutes: only a regular file of at most ``limit`` bytes is read
    (checked before the read, and again by reading at most ``limit + 1`` bytes).

    Raises:
        OSError: the operating system's error, or one whose ``strerror`` says that the path
            is a directory, not a regular file, or larger than ``limit`` bytes.
        ValueError: the path holds a NUL character.
    """
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "Is a directory", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise OSError(0, "not a regular file (a FIFO, device or socket)", str(path))
    too_large = OSError(0, f"larger than {limit:,} bytes (the compiler's limit)", str(path))
    if info.st_size > limit:
        raise too_large
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise too_large
    return data


def read_file(path: str | os.PathLike, limit: int = MAX_FILE_BYTES) -> str:
    """The text of a `.ssql` file: UTF-8, a leading byte-order mark dropped. The one reader
    of pipeline files (:func:`sqlstream.read_file`, ``sqlstream test``'s pipelines) and of
    test files (with their own ``limit``, in bytes).

    Raises:
        SqlStreamError: ``SS002``: the file cannot be read (the operating system's reason;
            a directory, a FIFO or device, a file over :data:`MAX_FILE_BYTES`:
            :func:`read_small_file`), or it is not UTF-8 (positioned at the first byte that
            is not, whose offset the message gives).
    """
    try:
        data = read_small_file(path, limit)
    except OSError as exc:
        raise SqlStreamError(f"cannot read {path}: {exc.strerror or exc}", code="SS002") from None
    except ValueError as exc:  # a NUL character in the path
        raise SqlStreamError(f"cannot read {path!r}: {exc}", code="SS002") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
        text = data[bom:].decode("utf-8", errors="replace")
        offset = len(data[bom : exc.start].decode("utf-8", errors="replace"))
        source = Source(text, str(path))
        raise SqlStreamError(
            f"{path} is not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset "
            f"{exc.start} cannot be decoded",
            source.span(offset, offset + 1),
            source,
            hint="save the file as UTF-8 (for example: iconv -f latin1 -t utf-8 FILE)",
            code="SS002",
        ) from None


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


COMPILE_THREAD = "sqlstream-compile"
"""The name of the threads :func:`run_deep` runs the compiler in."""


class _NotWhileCompiling(logging.Filter):
    """Drops the log records of a library sqlstream calls (sqlglot) made on a compile
    thread: sqlglot logs the text it could not translate ("unsupported …", a JSON path), which
    can hold a secret, while sqlstream reports every problem of a program itself, as a
    positioned finding. Records of other threads (a tool's own use of sqlglot) pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return threading.current_thread().name != COMPILE_THREAD


logging.getLogger("sqlglot").addFilter(_NotWhileCompiling())


def _start(target: Callable[[], None]) -> threading.Thread | None:
    """Start ``target`` in a daemon thread with a :data:`STACK_BYTES` stack (a smaller one
    where the system refuses that much); ``None`` when no thread can be started."""
    for size in (STACK_BYTES, STACK_BYTES // 8):
        with _lock:
            previous = threading.stack_size()
            try:
                threading.stack_size(size)
                worker = threading.Thread(target=target, name=COMPILE_THREAD, daemon=True)
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
    outcome: dict[str, T] = {}
    failure: dict[str, BaseException] = {}
    go = threading.Event()

    def target() -> None:
        go.wait()
        try:
            outcome["value"] = function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
            failure["error"] = error

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
    if "error" in failure:
        error = failure["error"]
        raise error.with_traceback(error.__traceback__)
    return outcome["value"]
