"""The user's Python code a `.ssql` file names (``CREATE FUNCTION … AS 'module:fn'``, a
``foreach_batch`` sink's ``function``): found, read or imported, as the trust decision of
the compile context (:attr:`sqlstream.ir.context.CompileContext.trust`) allows.

Untrusted (the default of ``check``, ``translate``, ``explain``, ``graph``, loading a test
file and the language server), no user code runs: a module is found by its path alone
(:func:`module_file`: the pipeline's folder, then its parents up to the project's root
folder, never ``sys.path`` nor an installed package, and no parent package imported, as
``importlib.util.find_spec`` of a dotted name would) and its source is parsed with
Python's :mod:`ast` (:func:`read_function`). Trusted, the module is imported
(:func:`load_module`): found the same way, it is executed from its file — once per folder
and version of the file (its modification time and size), so two folders' ``udfs.py``
are two modules and an edited module is read again — else imported from ``sys.path``.
While user code runs at compile time, its standard output goes to standard error
(:func:`user_output`): the language server's JSON-RPC stream and ``check --format json``
stay clean.

Sources: Python reference *The import system* (``sys.modules``, finders and loaders);
``importlib.util.spec_from_file_location``; VS Code's *Workspace Trust*.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType

from sqlstream.ir.context import project_of

__all__ = [
    "MAX_SOURCE_BYTES",
    "Definition",
    "file_stamp",
    "load_module",
    "make_importable",
    "module_file",
    "project_roots",
    "read_function",
    "user_output",
]

MAX_SOURCE_BYTES = 8 * 1024 * 1024
"""A module's source read without running it at most (the limit of a `.ssql` file)."""

_STAMP = "__sqlstream_stamp__"


def project_roots(pipeline: str | None) -> list[str]:
    """The folders a module of the pipeline file ``pipeline`` is looked for in, in order:
    its folder, then each parent up to its project's root folder
    (:func:`~sqlstream.ir.context.project_of`: the nearest holding one of
    :data:`~sqlstream.ir.context.PROJECT_MARKERS`; only its folder when none does), symbolic
    links resolved; the current folder for a text without a path."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(pipeline)) if pipeline else ".")
    root = project_of(os.path.join(folder, "pipeline.ssql"))
    chain = [folder]
    while chain[-1] != root and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    return chain


def module_file(module: str, pipeline: str | None) -> str | None:
    """The source file of module ``module`` (``'pkg.mod'``) in :func:`project_roots`:
    ``pkg/mod.py`` or ``pkg/mod/__init__.py`` (a regular file, not a symbolic link out of
    the root), or ``None``. Nothing is imported."""
    parts = module.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    for root in project_roots(pipeline):
        for candidate in (
            os.path.join(root, *parts) + ".py",
            os.path.join(root, *parts, "__init__.py"),
        ):
            real = os.path.realpath(candidate)
            if os.path.isfile(real) and real.startswith(os.path.realpath(root) + os.sep):
                return candidate
    return None


def file_stamp(path: str) -> tuple[str, int, int] | None:
    """``(path, modification time in ns, size in bytes)`` of a file, ``None`` if gone."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return path, status.st_mtime_ns, status.st_size


def make_importable(pipeline: str | None) -> None:
    """Append the folder of the pipeline file ``pipeline`` to ``sys.path`` (once), so that
    a module beside it is imported when the pipeline runs (its program's
    ``importlib.import_module``) — code that runs, so only when trusted or running."""
    folder = os.path.abspath(os.path.dirname(pipeline)) if pipeline else None
    if folder and folder not in sys.path:
        sys.path.append(folder)


@contextlib.contextmanager
def user_output() -> Iterator[None]:
    """Send ``sys.stdout`` to ``sys.stderr`` while user code runs (its ``print`` at import
    must not reach a machine-read standard output)."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def load_module(module: str, pipeline: str | None) -> tuple[ModuleType, tuple | None]:
    """Import ``module`` for the pipeline file ``pipeline`` (trusted: its code runs, its
    standard output to standard error).

    A module found by :func:`module_file` is executed from that file under its name,
    unless ``sys.modules`` already holds it from the same file and version; it replaces
    ``sys.modules``' entry (so that the run's ``importlib.import_module`` finds it). Any
    other is imported as Python imports it (``sys.path``, the pipeline's folder appended).

    Returns:
        ``(module, stamp)``: the stamp (:func:`file_stamp`) of the file executed, or
        ``None`` for a module imported from ``sys.path``.

    Raises:
        Exception: whatever importing or executing the module raises.
    """
    path = module_file(module, pipeline)
    make_importable(pipeline)
    if path is None:
        with user_output():
            return importlib.import_module(module), None
    stamp = file_stamp(path)
    known = sys.modules.get(module)
    if (
        known is not None
        and os.path.realpath(getattr(known, "__file__", None) or "") == os.path.realpath(path)
        and getattr(known, _STAMP, stamp) == stamp
    ):
        return known, stamp
    is_package = os.path.basename(path) == "__init__.py"
    spec = importlib.util.spec_from_file_location(
        module,
        path,
        submodule_search_locations=[os.path.dirname(path)] if is_package else None,
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    loaded = importlib.util.module_from_spec(spec)
    setattr(loaded, _STAMP, stamp)
    sys.modules[module] = loaded
    try:
        with user_output():
            spec.loader.exec_module(loaded)
    except BaseException:
        if sys.modules.get(module) is loaded:
            del sys.modules[module]
        raise
    return loaded, stamp


@dataclass(frozen=True)
class Definition:
    """A function as its source defines it, read without running it.

    Attributes:
        path: the module's file.
        stamp: :func:`file_stamp` of the file read.
        positional: the positional parameters' names, in order.
        required: how many of them have no default.
        star: the function takes ``*args``.
        annotations: parameter name → its annotation (an :mod:`ast` expression; a string
            annotation parsed), for the annotated ones.
        returns: the return annotation, or ``None``.
        decorators: the decorators (:mod:`ast` expressions), outermost first.
    """

    path: str
    stamp: tuple | None
    positional: tuple[str, ...]
    required: int
    star: bool
    annotations: dict[str, ast.expr]
    returns: ast.expr | None
    decorators: tuple[ast.expr, ...]


def _annotation(node: ast.expr | None) -> ast.expr | None:
    """A string annotation (``'int'``) parsed as the expression it holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return node
    return node


def read_function(module: str, attrs: tuple[str, ...], pipeline: str | None) -> Definition | None:
    """The top-level ``def`` named ``attrs`` (one name) in ``module``'s source file
    (:func:`module_file`), parsed with :mod:`ast` (nothing imported or executed); ``None``
    when the file is not found, too large, not Python, or defines no such function
    (the last ``def`` of the name at the top level counts)."""
    path = module_file(module, pipeline)
    if path is None or len(attrs) != 1:
        return None
    try:
        if os.path.getsize(path) > MAX_SOURCE_BYTES:
            return None
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read(MAX_SOURCE_BYTES + 1), path)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == attrs[0]:
            found = node
        elif isinstance(node, (ast.Assign, ast.ClassDef, ast.Import, ast.ImportFrom)) and any(
            name == attrs[0] for name in _bound_names(node)
        ):
            found = None  # rebound to something this reading cannot see through
    if found is None:
        return None
    args = found.args
    positional = [*args.posonlyargs, *args.args]
    annotations = {
        a.arg: parsed
        for a in [*positional, *([args.vararg] if args.vararg else [])]
        if (parsed := _annotation(a.annotation)) is not None
    }
    return Definition(
        path,
        file_stamp(path),
        tuple(a.arg for a in positional),
        len(positional) - len(args.defaults),
        args.vararg is not None,
        annotations,
        _annotation(found.returns),
        tuple(found.decorator_list),
    )


def _bound_names(node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0]
