"""CSV columns bound by name: the header of the files a CSV stream or table reads.

Spark's CSV reader is positional when it is given a schema: with ``header = true`` it
skips each file's first line and gives the n-th field to the n-th column of the schema,
whatever the header says (``enforceSchema`` defaults to ``true``: "the specified or
inferred schema will be forcibly applied to datasource files, and headers in CSV files
will be ignored"; with ``false`` Spark checks the header against the schema's field
names and fails on a mismatch). sqlstream binds declared columns by name (docs/connectors.md#csv-columns-by-name), so at
compile time the header of the first file Spark will read is read here, and the source
is read with every header column in file order (declared ones with their declared type,
the others ``STRING``), then a projection selects the declared columns. Later files are
checked by Spark (``enforceSchema = false``): with CSV column pruning (Spark's default,
``spark.sql.csv.parser.columnPruning.enabled``) it compares, in each file's header, the
names at the positions of the columns the query reads — the declared ones — so a file
where one of them is elsewhere, renamed or missing stops the query, and one whose other
columns differ is read with every declared column in its place: never by position into
another column. Without pruning Spark compares the whole header. Under ``on_error =
'drop'`` or ``'dead_letter'`` the files are decoded by :mod:`sqlstream.planning.malformed`,
which checks each file's whole header itself. Source: Spark's
*CSV Files* data source option page (``header``, ``enforceSchema``, ``sep``, ``quote``,
``escape``, ``encoding``) and the file source of the *Structured Streaming Programming
Guide* (files are read in order of modification time; names starting with ``_`` or
``.`` are skipped).
"""

from __future__ import annotations

import bz2
import csv
import fnmatch
import glob
import gzip
import itertools
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from sqlstream.diagnostics.errors import (
    SemanticError,
    SqlStreamError,
    UnknownNameError,
    did_you_mean,
)
from sqlstream.ir.context import inside

# Compressions Python reads without an extra library (Spark picks the codec by extension).
_OPENERS: dict[str, Callable[..., IO[str]]] = {".gz": gzip.open, ".bz2": bz2.open}
_UNREADABLE = (".zst", ".lz4", ".snappy", ".deflate", ".xz", ".zip")
MAX_ENTRIES = 100_000
"""Folder entries (files and folders) the compile-time read of a header may visit, in the
expansion of a glob and the walk of folders together."""
MAX_SECONDS = 2.0
"""Wall-clock seconds the listing of a header's files may take."""
_MAX_LINE = (
    1024 * 1024
)  # characters: a longer first line (a file with no line break) is not read whole
_MAX_LINES = 1000  # comment lines skipped before the header


class _Exceeded(Exception):
    """The listing went past :data:`MAX_ENTRIES` entries or :data:`MAX_SECONDS`."""


class _Budget:
    """What one listing may still visit: entries and time."""

    def __init__(self) -> None:
        self.entries = 0
        self.deadline = time.monotonic() + MAX_SECONDS

    def tick(self) -> None:
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise _Exceeded(f"more than {MAX_ENTRIES:,} files and folders")
        if self.entries % 64 == 0 and time.monotonic() > self.deadline:
            raise _Exceeded(f"listing them takes longer than {MAX_SECONDS:g} s")


@dataclass(frozen=True)
class Header:
    """The first record of a CSV file.

    Attributes:
        file: the file it was read from (absolute or as listed).
        names: its fields, in file order (the column names when ``header = true``).
    """

    file: str
    names: tuple[str, ...]
    quotable: bool = True


def first_record(
    path: str, options: dict[str, str], project: str | None = None, trusted: bool = False
) -> Header | str:
    """Read the first record of the first non-empty file Spark's file source would read
    under ``path``: one physical line of it at most, after comment lines.

    Bounded: the glob expansion and the folder walk together visit at most
    :data:`MAX_ENTRIES` entries within :data:`MAX_SECONDS`; only regular files are read
    (never a FIFO or a device).

    Args:
        path: the ``load()`` path: a file, a folder (its files, or every file below it
            with ``recursiveFileLookup``) or a glob pattern.
        options: Spark options by lower-case name (``sep``/``delimiter``, ``quote``,
            ``escape``, ``encoding``/``charset``, ``pathglobfilter``,
            ``recursivefilelookup``, ``comment``).
        project: the folder the pipeline's reads stay in (:func:`~sqlstream.ir.context.inside`); ``None``: no
            boundary (a text compiled without a file).
        trusted: read outside ``project`` too; the header of such a file is read but not
            quotable (:attr:`Header.quotable` false: messages name no field of it).

    Returns:
        The :class:`Header`, or a sentence saying why there is none (no files yet, a
        remote path, a path outside the project, too many files, a compression Python
        cannot read, an unreadable file). The sentence quotes no content. Never raises.
    """
    if "://" in path and not path.startswith("file:"):
        return f"the path is not a local folder ({path.split('://')[0]}://)"
    path = path[5:] if path.startswith("file:") else path
    confined = project is not None and not trusted
    if confined and not inside(_static_prefix(path), project or ""):
        return (
            "the path is outside the pipeline's project (its folder tree): its files are "
            "not read unless the project is trusted"
        )
    try:
        files = _files(path, options, _Budget())
    except _Exceeded as error:
        return f"its files were not all listed ({error})"
    except (OSError, ValueError) as error:
        return f"its files cannot be listed ({getattr(error, 'strerror', None) or error})"
    if confined:
        files = [f for f in files if inside(f, project or "")]
    if not files:
        return "there are no files at the path yet"
    for file in files:
        if file.lower().endswith(_UNREADABLE):
            return f"{os.path.basename(file)} is compressed in a format sqlstream cannot read"
        try:
            record = _read_first(file, options)
        except (OSError, ValueError, LookupError, csv.Error, EOFError) as error:
            return f"{os.path.basename(file)} cannot be read ({error})"
        if record is not None:
            quotable = project is None or inside(file, project)
            return Header(file, tuple(record), quotable)
    return "every file at the path is empty"


def _static_prefix(path: str) -> str:
    """The folders of ``path`` before its first glob character (``path`` without one)."""
    parts = path.split(os.sep)
    for index, part in enumerate(parts):
        if glob.has_magic(part):
            return os.sep.join(parts[:index]) or (os.sep if path.startswith(os.sep) else ".")
    return path


def _expand(pattern: str, budget: _Budget) -> list[str]:
    """``glob.glob(pattern)`` (no ``**`` recursion, hidden names only for a pattern
    starting with ``.``), one folder level at a time, each entry visited counted."""
    parts = pattern.split(os.sep)
    current = [os.sep if pattern.startswith(os.sep) else ""]
    for index, part in enumerate(parts):
        if not part:
            continue
        last = index == len(parts) - 1
        found: list[str] = []
        for base in current:
            if not glob.has_magic(part):
                candidate = os.path.join(base, part) if base else part
                budget.tick()
                if os.path.lexists(candidate):
                    found.append(candidate)
                continue
            try:
                with os.scandir(base or ".") as entries:
                    for entry in entries:
                        budget.tick()
                        if entry.name.startswith(".") and not part.startswith("."):
                            continue
                        if not fnmatch.fnmatchcase(entry.name, part):
                            continue
                        if last or entry.is_dir():
                            found.append(os.path.join(base, entry.name) if base else entry.name)
            except (NotADirectoryError, FileNotFoundError, PermissionError):
                continue
        current = sorted(found)
    return current


def _files(path: str, options: dict[str, str], budget: _Budget) -> list[str]:
    """The data files under ``path`` in the order Spark's file source reads them: by
    modification time, then name. Regular, non-empty files only."""
    roots = _expand(path, budget) if glob.has_magic(path) else [path]
    recursive = options.get("recursivefilelookup", "false").lower() == "true"
    pattern = options.get("pathglobfilter")
    found: list[str] = []
    for root in roots:
        if os.path.isfile(root):
            found.append(root)
            continue
        if not os.path.isdir(root):
            continue
        for folder, dirs, names in os.walk(root):
            for _ in dirs:
                budget.tick()
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))] if recursive else []
            for name in names:
                budget.tick()
                if name.startswith(("_", ".")) or (pattern and not fnmatch.fnmatch(name, pattern)):
                    continue
                found.append(os.path.join(folder, name))
    sized = []
    for file in found:
        try:
            info = os.stat(file)
        except OSError:  # a broken link, or gone since it was listed
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > 0:  # never a FIFO or a device
            sized.append((info.st_mtime, file))
    return [file for _, file in sorted(sized)]


def _read_first(file: str, options: dict[str, str]) -> list[str] | None:
    """The first record of ``file`` (comment lines skipped), or ``None`` when it has none."""
    encoding = options.get("encoding") or options.get("charset") or "utf-8"
    if encoding.lower().replace("-", "") == "utf8":
        encoding = "utf-8-sig"  # a byte-order mark is not part of the first name
    opener: Callable[..., IO[str]] = _OPENERS.get(os.path.splitext(file)[1].lower(), open)
    sep = options.get("sep") or options.get("delimiter") or ","
    quote = options.get("quote", '"') or "\0"
    escape = options.get("escape", "\\") or None
    comment = options.get("comment")
    with opener(file, "rt", encoding=encoding, newline="") as stream:
        lines = (line for line in _lines(stream) if not (comment and line.startswith(comment)))
        line = next(itertools.islice(lines, 1), None)  # one line: an open quote reads no further
        if line is None:
            return None
        if len(sep) != 1:  # Spark accepts a multi-character separator; csv does not
            return line.rstrip("\r\n").split(sep)
        reader = csv.reader(
            [line],
            delimiter=sep,
            quotechar=quote[0],
            escapechar=escape[0] if escape else None,
            doublequote=True,
        )
        return next(reader, None)


def _lines(stream):
    """The lines of ``stream``, each read with a bound: a line over :data:`_MAX_LINE`
    characters raises ``ValueError`` (so a 2 GB file without a line break is not read), and
    so does a line past the first :data:`_MAX_LINES` (comment lines skipped)."""
    count = 0
    while line := stream.readline(_MAX_LINE + 1):
        if len(line) > _MAX_LINE:
            raise ValueError(f"a line is longer than {_MAX_LINE:,} characters")
        count += 1
        if count > _MAX_LINES:
            raise ValueError(f"no record in its first {_MAX_LINES:,} lines")
        yield line


@dataclass(frozen=True)
class Binding:
    """Declared columns bound to the columns of a header.

    Attributes:
        schema: ``(name, type)`` of every header column in file order, as the source
            reads them: a declared column's type, ``STRING`` for the others; names are the
            header's, or ``_c<i>`` for an empty or repeated one.
        read_as: for each declared column, in declared order, the name it is read under
            (``None``: not in the header, or in it twice; see ``problems``).
        problems: for each declared column that cannot be bound, ``(index, message)``.
        exact: every name of ``schema`` is the header's (no ``_c<i>``).
    """

    schema: tuple[tuple[str, str], ...]
    read_as: tuple[str | None, ...]
    problems: tuple[tuple[int, str], ...]
    exact: bool


def bind(declared: list[tuple[str, str]], header: Header) -> Binding:
    """Bind ``declared`` ``(name, type)`` columns to ``header`` by name: the exact name
    first, else the one header name equal ignoring case (Spark resolves columns ignoring
    case by default, ``spark.sql.caseSensitive``)."""
    names = header.names
    lower = [n.lower() for n in names]
    read_names = []
    for i, name in enumerate(names):
        unique = name.strip() and lower.count(name.lower()) == 1
        read_names.append(name if unique else f"_c{i}")
    types = ["STRING"] * len(names)
    read_as: list[str | None] = []
    problems: list[tuple[int, str]] = []
    listed = ", ".join(names) if header.quotable else "a file outside the project: not quoted"
    for index, (name, kind) in enumerate(declared):
        hits = [i for i, n in enumerate(names) if n == name] or [
            i for i, n in enumerate(lower) if n == name.lower()
        ]
        if len(hits) != 1:
            where = "twice in" if hits else "not in"
            problems.append(
                (
                    index,
                    f"column '{name}' is {where} the header of "
                    f"{os.path.basename(header.file)} ({listed})"
                    + ("" if hits or not header.quotable else did_you_mean(name, names)),
                )
            )
            read_as.append(None)
            continue
        types[hits[0]] = kind
        read_as.append(read_names[hits[0]])
    return Binding(
        tuple(zip(read_names, types, strict=True)),
        tuple(read_as),
        tuple(problems),
        exact=read_names == list(names),
    )


def declared_columns(
    columns: list,
    path: str | None,
    options: tuple[tuple[str, str], ...],
    report: Callable[[SqlStreamError], None],
    project: str | None = None,
    trusted: bool = False,
) -> tuple[tuple[tuple[str, str], ...], dict[str, str], tuple[tuple[str, str], ...]]:
    """How a CSV source reads its declared columns (docs/connectors.md#csv-columns-by-name): ``(schema, read_as,
    options)`` as :meth:`sqlstream.connectors.base.Connector.bind_columns` returns them.

    With ``header = true``: the schema of every header column in file order and, by
    declared name, the column each declared one is read from (the projection selects
    them), plus ``enforceSchema = false``: Spark then checks each file's header (with column
    pruning, the names at the positions of the columns read, which are never a ``_c<i>``),
    so a later file whose declared columns are elsewhere fails instead of giving wrong
    values. A declared column not in the header is ``SS242``. When no header
    can be read (no files yet, a remote path): the declared schema with ``enforceSchema =
    false``, so Spark fails a file whose header does not name the declared columns in
    order instead of reading it by position. With ``header = false``: the declared schema,
    and ``SS243`` when the files have another number of fields. An ``enforceSchema`` the
    user set is kept.

    Args:
        columns: the declared :class:`~sqlstream.frontend.ast.ColumnDef` s, in declared order.
        path: the ``load()`` path (``None``: no header is read).
        options: the source's Spark options, ``(name, value)`` as written.
        report: receives ``SS242`` / ``SS243`` (they do not stop the plan).
        project: the folder the header is read in (:func:`first_record`).
        trusted: the header may be read outside ``project``.
    """
    declared = tuple((c.name.value, c.type) for c in columns)
    spark = {k.lower(): str(v) for k, v in options}
    found = first_record(path, spark, project, trusted) if path else "the source has no path"
    check = () if "enforceschema" in spark else (("enforceSchema", "false"),)
    if spark.get("header", "false").lower() != "true":
        if isinstance(found, Header) and len(found.names) != len(columns):
            report(
                SemanticError(
                    f"{len(columns)} columns are declared and {os.path.basename(found.file)} has "
                    f"{len(found.names)}: without a header, CSV columns are read by position",
                    columns[0].span,
                    code="SS243",
                    hint="declare every column of the files, in file order",
                )
            )
        return declared, {}, options
    if not isinstance(found, Header):  # no files yet: Spark checks every header
        return declared, {}, options + check
    binding = bind(list(declared), found)
    for index, message in binding.problems:
        report(
            UnknownNameError(
                message,
                columns[index].name.span,
                code="SS242",
                hint="with header = true, declared columns are matched by name: use the "
                "header's spelling",
            )
        )
    if binding.problems:
        return declared, {}, options
    read_as = {
        name: read
        for (name, _), read in zip(declared, binding.read_as, strict=True)
        if read is not None  # (None only beside a problem)
    }
    if [n for n, _ in binding.schema] == list(read_as) and read_as == {n: n for n in read_as}:
        read_as = {}  # every column declared, in file order: no projection needed
    return binding.schema, read_as, options + check
