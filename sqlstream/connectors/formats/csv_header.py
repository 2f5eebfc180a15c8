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
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from sqlstream.diagnostics.errors import (
    SemanticError,
    SqlStreamError,
    UnknownNameError,
    did_you_mean,
)

# Compressions Python reads without an extra library (Spark picks the codec by extension).
_OPENERS: dict[str, Callable[..., IO[str]]] = {".gz": gzip.open, ".bz2": bz2.open}
_UNREADABLE = (".zst", ".lz4", ".snappy", ".deflate", ".xz", ".zip")
_MAX_FILES = 100_000
_MAX_LINE = (
    1024 * 1024
)  # characters: a longer first line (a file with no line break) is not read whole


@dataclass(frozen=True)
class Header:
    """The first record of a CSV file.

    Attributes:
        file: the file it was read from (absolute or as listed).
        names: its fields, in file order (the column names when ``header = true``).
    """

    file: str
    names: tuple[str, ...]


def first_record(path: str, options: dict[str, str]) -> Header | str:
    """Read the first record of the first non-empty file Spark's file source would read
    under ``path``.

    Args:
        path: the ``load()`` path: a file, a folder (its files, or every file below it
            with ``recursiveFileLookup``) or a glob pattern.
        options: Spark options by lower-case name (``sep``/``delimiter``, ``quote``,
            ``escape``, ``encoding``/``charset``, ``pathglobfilter``,
            ``recursivefilelookup``, ``comment``).

    Returns:
        The :class:`Header`, or a sentence saying why there is none (no files yet, a
        remote path, a compression Python cannot read, an unreadable file). Never raises.
    """
    if "://" in path and not path.startswith("file:"):
        return f"the path is not a local folder ({path.split('://')[0]}://)"
    path = path[5:] if path.startswith("file:") else path
    try:
        files = _files(path, options)
    except (OSError, ValueError) as error:
        return f"its files cannot be listed ({getattr(error, 'strerror', None) or error})"
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
            return Header(file, tuple(record))
    return "every file at the path is empty"


def _files(path: str, options: dict[str, str]) -> list[str]:
    """The data files under ``path`` in the order Spark's file source reads them: by
    modification time, then name."""
    roots = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
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
            dirs[:] = [d for d in dirs if not d.startswith(("_", "."))] if recursive else []
            for name in names:
                if name.startswith(("_", ".")) or (pattern and not fnmatch.fnmatch(name, pattern)):
                    continue
                found.append(os.path.join(folder, name))
            if len(found) > _MAX_FILES:  # a huge tree (e.g. "/" with recursiveFileLookup)
                raise OSError(f"more than {_MAX_FILES:,} files")
    found = [f for f in found if os.path.getsize(f) > 0]
    return sorted(found, key=lambda f: (os.path.getmtime(f), f))


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
        if len(sep) != 1:  # Spark accepts a multi-character separator; csv does not
            line = next(lines, None)
            return None if line is None else line.rstrip("\r\n").split(sep)
        reader = csv.reader(
            lines,
            delimiter=sep,
            quotechar=quote[0],
            escapechar=escape[0] if escape else None,
            doublequote=True,
        )
        return next(reader, None)


def _lines(stream):
    """The lines of ``stream``, each read with a bound: a line over :data:`_MAX_LINE`
    characters raises ``ValueError`` (so a 2 GB file without a line break is not read)."""
    while line := stream.readline(_MAX_LINE + 1):
        if len(line) > _MAX_LINE:
            raise ValueError(f"a line is longer than {_MAX_LINE:,} characters")
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
    listed = ", ".join(names)
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
                    + ("" if hits else did_you_mean(name, names)),
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
    """
    declared = tuple((c.name.value, c.type) for c in columns)
    spark = {k.lower(): str(v) for k, v in options}
    found = first_record(path, spark) if path else "the source has no path"
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
