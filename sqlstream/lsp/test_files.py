"""Go to definition from a pipeline test file (``*.test.yaml``, docs/pipeline-tests.md) to
its pipeline: the names a test writes jump to where the ``.ssql`` file declares them.

* an expectation's name under a step's ``expectations:`` → its ``CONSTRAINT name EXPECT``
  (of a stream or a sink);
* a stream's name under a step's ``input:`` → its ``CREATE STREAM``;
* a table's name under a test's ``tables:`` → its ``CREATE TABLE``;
* a sink's name under a step's ``expect:`` or ``table:`` → its ``CREATE SINK`` (or the
  ``CREATE STREAM … AS`` that writes it);
* the ``pipeline:`` value → the start of the ``.ssql`` file.

The test file is read as ``sqlstream test`` reads it (ruamel.yaml's round-trip reader with
the limits of :mod:`sqlstream.testing.safe_yaml`), for the place of each key only; the
pipeline (the editor's unsaved text when it is open, else the file on disk) is parsed by
the compiler's parser, whose spans give the places of the names. No check, no compile,
nothing runs; a test file or pipeline that does not parse has no definitions. Names
compare as SQL names (case-insensitive).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as t

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend import ast
from sqlstream.frontend.parser import parse
from sqlstream.lsp.positions import Lines

__all__ = ["definition", "is_test_file", "is_yaml", "targets"]

SUFFIXES = (".test.yaml", ".test.yml")
"""What a pipeline test file's name ends with."""

_STEP_KEYS = {"input": "stream", "expect": "sink", "table": "sink", "expectations": "constraint"}
"""A step's keys whose mapping's keys are names, and what they name."""


def is_yaml(uri: str) -> bool:
    """Whether the document ``uri`` is YAML (``.yaml``, ``.yml``): never checked as a
    pipeline (an editor may send every YAML file to the server)."""
    return unquote(urlparse(uri).path).endswith((".yaml", ".yml"))


def is_test_file(uri: str) -> bool:
    """Whether the document ``uri`` is a pipeline test file (by its name)."""
    return unquote(urlparse(uri).path).endswith(SUFFIXES)


def targets(text: str) -> tuple[str | None, list[tuple[int, int, str, str]]]:
    """The pipeline a test file names and the names it writes.

    Args:
        text: the test file's text.

    Returns:
        ``(pipeline, names)``: the ``pipeline:`` value (``None`` when missing), and per
        name ``(start, end, kind, name)``: its character offsets in ``text``, ``kind``
        one of ``pipeline``, ``stream``, ``table``, ``sink``, ``constraint``. Empty when
        the text is no YAML a test file may be (:mod:`sqlstream.testing.safe_yaml`).
    """
    from sqlstream.testing import loading, safe_yaml

    try:
        safe_yaml.check_text(text)
        reader = loading.yaml()
        reader.Constructor = safe_yaml.Constructor
        document = reader.load(text)
    except Exception:  # noqa: BLE001 - any text an editor holds: no definitions
        return None, []
    if not hasattr(document, "lc"):
        return None, []
    starts = Lines(text).starts
    found: list[tuple[int, int, str, str]] = []

    def add(node, key, kind: str) -> None:
        line, column = node.lc.key(key)
        if line < len(starts) and isinstance(key, str):
            start = starts[line] + column
            start += text[start : start + 1] in ("'", '"')  # a quoted key
            found.append((start, start + len(key), kind, key))

    pipeline = document.get("pipeline")
    if isinstance(pipeline, str) and "pipeline" in document:
        line, column = document.lc.value("pipeline")
        if line < len(starts):
            start = starts[line] + column
            start += text[start : start + 1] in ("'", '"')
            found.append((start, start + len(pipeline), "pipeline", pipeline))
    for test in _mappings(document.get("tests")):
        for key in _keys(test.get("tables")):
            add(test["tables"], key, "table")
        for step in _mappings(test.get("steps")):
            for name, kind in _STEP_KEYS.items():
                for key in _keys(step.get(name)):
                    add(step[name], key, kind)
    return (pipeline if isinstance(pipeline, str) else None), found


def _mappings(node) -> Iterator:
    for item in node if isinstance(node, list) else ():
        if hasattr(item, "lc") and hasattr(item, "get"):
            yield item


def _keys(node) -> list:
    return list(node) if hasattr(node, "lc") and hasattr(node, "keys") else []


def declarations(script: ast.Script) -> dict[tuple[str, str], ast.Name]:
    """Where each name a test writes is declared: ``(kind, lower-case name)`` → the
    declared :class:`~sqlstream.frontend.ast.Name` (its span), the first declaration of
    a name."""
    found: dict[tuple[str, str], ast.Name] = {}
    for statement in script.statements:
        if isinstance(statement, ast.CreateStream):
            kinds = ("stream", "sink") if statement.query is not None else ("stream",)
        elif isinstance(statement, ast.CreateSink):
            kinds = ("sink",)
        elif isinstance(statement, ast.CreateTable):
            kinds = ("table",)
        else:
            continue
        for kind in kinds:
            found.setdefault((kind, statement.name.value.lower()), statement.name)
        for rule in getattr(statement, "constraints", ()) or ():
            found.setdefault(("constraint", rule.name.value.lower()), rule.name)
    return found


def definition(
    uri: str,
    text: str,
    position: t.Position,
    open_document: Callable[[str], object | None],
    variables: dict[str, str],
    encoding: str = "utf-16",
) -> t.Location | None:
    """The LSP answer to go to definition at ``position`` of the test file ``uri``.

    Args:
        uri: the test file's URI (``file:``; another scheme has no pipeline to find).
        text: the test file's text as the editor holds it.
        position: the cursor.
        open_document: the editor's open document of a URI (its ``source``), or ``None``.
        variables: the server's ``${…}`` values (the test file's ``variables:`` win).
        encoding: the unit LSP positions count (the server's negotiated encoding).

    Returns:
        The declaration's place in the pipeline, or ``None`` (off a name, a name the
        pipeline does not declare, a pipeline that cannot be read or parsed).
    """
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    lines = Lines(text, encoding)
    offset = lines.offset(position.line, position.character)
    pipeline, names = targets(text)
    hit = next(((k, n) for s, e, k, n in names if s <= offset <= e), None)
    if hit is None or pipeline is None:
        return None
    path = Path(unquote(parsed.path)).parent / pipeline
    target = path.resolve().as_uri()
    source = getattr(open_document(target), "source", None)
    if not isinstance(source, str):
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    kind, name = hit
    target_lines = Lines(source, encoding)
    if kind == "pipeline":
        return t.Location(uri=target, range=_range(target_lines, 0, 0))
    try:
        script = parse(source, {**variables, **_file_variables(text)}, str(path))
    except SqlStreamError:
        return None
    found = declarations(script).get((kind, name.lower()))
    if found is None:
        return None
    return t.Location(uri=target, range=_range(target_lines, found.span.start, found.span.end))


def _file_variables(text: str) -> dict[str, str]:
    """The test file's top-level ``variables:`` (values as text)."""
    from sqlstream.testing import loading, safe_yaml

    try:
        reader = loading.yaml()
        reader.Constructor = safe_yaml.Constructor
        given = reader.load(text).get("variables")
    except Exception:  # noqa: BLE001 - already read once by targets
        return {}
    return {str(k): str(v) for k, v in given.items()} if hasattr(given, "items") else {}


def _range(lines: Lines, start: int, end: int) -> t.Range:
    (l1, c1), (l2, c2) = lines.position(start), lines.position(end)
    return t.Range(start=t.Position(line=l1, character=c1), end=t.Position(line=l2, character=c2))
