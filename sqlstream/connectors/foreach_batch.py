"""``connector = 'foreach_batch'``: each micro-batch handed to a Python function.

``function = 'package.module:callable'`` names a function (or any callable) that Spark's
``DataStreamWriter.foreachBatch`` calls on the driver with ``(DataFrame, batch_id)``: the
micro-batch's rows as a batch DataFrame and the batch id (a whole number, the same when
a batch is replayed after a failure). The query is written::

    (spark.sql(sql).writeStream
        .foreachBatch(importlib.import_module('package.module').callable)
        .outputMode(…) … .option('checkpointLocation', dir).queryName(name).start())

When the project is trusted (:attr:`sqlstream.ir.context.CompileContext.trust`: ``exec``,
``--trust``), the function is imported when the file is compiled, so a missing module
(``SS220``) or a signature that cannot take two positional arguments (``SS221``) is an
error at the option's value, not a failure at the first micro-batch; the module is found
beside the `.ssql` file or in its project (:func:`sqlstream.connectors.user_code.load_module`),
else as Python imports it (``sys.path``, the pipeline's folder appended). Untrusted, no
code runs: the module's source is read (:func:`sqlstream.connectors.user_code.read_function`)
and the ``def``'s parameters are checked (``SS221``); a function that reading cannot find
is not checked (``SS274``, a warning). Python
workers that a function's UDFs start use the same interpreter (``PYSPARK_PYTHON``,
:mod:`sqlstream.runtime.spark_session`).

Sources: Spark guide *Output Sinks* (Foreach and ForeachBatch); PySpark
``DataStreamWriter.foreachBatch``; Python ``importlib.import_module``,
``inspect.signature``.
"""

from __future__ import annotations

import inspect

from sqlstream.connectors.base import Connector, ResolvedOptions, ResolvePath
from sqlstream.connectors.user_code import load_module, read_function
from sqlstream.diagnostics.errors import OptionError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, Step

_EXAMPLE = "function = 'sinks:write_batch'"


def split_function(text: str) -> tuple[str, tuple[str, ...]] | None:
    """``'pkg.mod:obj.fn'`` → ``('pkg.mod', ('obj', 'fn'))``; ``None`` when malformed."""
    module, colon, attrs = text.strip().partition(":")
    names = tuple(a.strip() for a in attrs.split("."))
    parts = module.split(".") + list(names)
    if not colon or not all(part.isidentifier() for part in parts):
        return None
    return module, names


def function_chain(
    module: str, attrs: tuple[str, ...], call: tuple[tuple[str, object], ...] | None = None
) -> Chain:
    """The nested chain ``importlib.import_module(module).attr…`` (the last attribute called
    with keyword arguments ``call`` when given), evaluated by the binder."""
    steps = [Step("import_module", (module,))]
    steps += [Step(a, call=False) for a in attrs[:-1]]
    steps.append(Step(attrs[-1], kwargs=call) if call is not None else Step(attrs[-1], call=False))
    return Chain("importlib", tuple(steps))


def load_function(option: ast.Option, source: Source):
    """Import the callable that ``option`` (``function = 'module:attr'``) names
    (trusted: :func:`import_callable`).

    Returns:
        The callable.

    Raises:
        OptionError: ``SS220`` at the value: malformed, the module cannot be imported (or
            fails while importing), no such attribute, not callable.
    """
    return import_callable(
        option.text,
        option.value_span,
        source,
        "SS220",
        _EXAMPLE,
        "a function of (DataFrame, batch_id)",
    )


def import_callable(
    text: str,
    span,
    source: Source,
    code: str,
    example: str,
    what: str,
    spec: tuple[str, tuple[str, ...]] | None = None,
):
    """Import the callable ``text`` (``'module:attr'``) names; errors at ``span``.

    Args:
        text: the reference as written.
        span: where it was written.
        source: the file (its folder is appended to ``sys.path``, once, first).
        code: the finding code of every error.
        example: a correct reference, for the hint of a malformed one.
        what: what the callable should be, for the hint of a value that is not callable.
        spec: ``(module, attrs)`` already split from ``text``; else :func:`split_function`.

    Returns:
        The callable.

    Raises:
        OptionError: ``code`` at ``span``: malformed, the module cannot be imported (or
            fails while importing), no such attribute, not callable.
    """
    return import_reference(text, span, source, code, example, what, spec)[0]


def import_reference(
    text: str,
    span,
    source: Source,
    code: str,
    example: str,
    what: str,
    spec: tuple[str, tuple[str, ...]] | None = None,
):
    """:func:`import_callable`, returning ``(callable, stamp)``: the stamp of the module's
    file (:func:`sqlstream.connectors.user_code.load_module`), ``None`` for a module
    imported from ``sys.path``. The module's code runs: call it only when trusted."""
    spec = spec or checked_spec(text, span, source, code, example)
    module_name, attrs = spec
    try:
        value, stamp = load_module(module_name, source.path)
    except Exception as exc:  # noqa: BLE001 - any failure while importing user code
        raise OptionError(
            f"cannot import module '{module_name}': {type(exc).__name__}: {exc}",
            span,
            source,
            code=code,
            hint="the module must be importable from sys.path (PYTHONPATH, the "
            "current directory with python -m, or the pipeline's folder)",
        ) from None
    for index, attr in enumerate(attrs):
        if not hasattr(value, attr):
            where = ".".join((module_name, *attrs[:index]))
            raise OptionError(
                f"'{where}' has no attribute '{attr}'",
                span,
                source,
                code=code,
                hint="name a function the module defines",
            )
        value = getattr(value, attr)
    if not callable(value):
        raise OptionError(
            f"'{text}' is a {type(value).__name__}, not a function",
            span,
            source,
            code=code,
            hint=f"name {what}",
        )
    return value, stamp


def checked_spec(text: str, span, source: Source, code: str, example: str):
    """``(module, attrs)`` of a reference (:func:`split_function`).

    Raises:
        OptionError: ``code`` at ``span`` when ``text`` is not ``'package.module:callable'``.
    """
    spec = split_function(text)
    if spec is None:
        raise OptionError(
            f"'{text}' is not 'package.module:callable'",
            span,
            source,
            code=code,
            hint=f"write the module path, a colon and the function name, e.g. {example}",
        )
    return spec


def check_signature(function, option: ast.Option, source: Source) -> None:
    """Raises:
    OptionError: ``SS221`` at the value when ``function`` cannot be called with two
        positional arguments (``inspect.signature(function).bind(df, batch_id)``).
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: Spark will tell
        return
    try:
        signature.bind(object(), 0)
    except TypeError as exc:
        raise OptionError(
            f"function '{option.text}{signature}' cannot be called with "
            f"(DataFrame, batch_id): {exc}",
            option.value_span,
            source,
            code="SS221",
            hint="define it as def f(df, batch_id): …",
        ) from None


class ForeachBatch(Connector):
    """``foreachBatch(function)``: ``function`` required; every output mode; durable (the
    query gets a checkpoint, so a restart resumes and replays only an unfinished batch)."""

    name = "foreach_batch"
    sink_format = "foreachBatch"
    required = ("function",)
    own_options = ("function",)
    passes_options = False
    durable = True
    continuous_sink = False

    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Check the function's reference is ``'module:callable'``.

        Raises:
            OptionError: ``SS220`` at the value when it is not.
        """
        option = compiler["function"]
        checked_spec(option.text, option.value_span, source, "SS220", _EXAMPLE)

    def check_code(
        self, compiler: dict[str, ast.Option], source: Source, trust: bool
    ) -> tuple[OptionError, ...]:
        """Trusted: import the function and check its signature; untrusted: read its
        ``def`` from the module's source and check its parameters.

        Returns:
            ``SS274`` when untrusted and no ``def`` is found to read.

        Raises:
            OptionError: ``SS220`` / ``SS221`` (see :func:`load_function`,
                :func:`check_signature`).
        """
        option = compiler["function"]
        if trust:
            check_signature(load_function(option, source), option, source)
            return ()
        module, attrs = checked_spec(option.text, option.value_span, source, "SS220", _EXAMPLE)
        found = read_function(module, attrs, source.path)
        if found is None:
            return (
                OptionError(
                    f"function '{option.text}' is not checked: no code runs in an untrusted "
                    "project, and its def was not found in the project's files",
                    option.value_span,
                    source,
                    code="SS274",
                    hint="trust the project (--trust, SQLSTREAM_TRUST=1) to import it",
                ),
            )
        if found.required > 2 or (len(found.positional) < 2 and not found.star):
            raise OptionError(
                f"function '{option.text}({', '.join(found.positional)})' cannot be called "
                "with (DataFrame, batch_id)",
                option.value_span,
                source,
                code="SS221",
                hint="define it as def f(df, batch_id): …",
            )
        return ()

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, 'module:callable')``: no ``format`` call; the function's name."""
        return None, resolved.required("function").strip()

    def format_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """``foreachBatch(importlib.import_module(module).callable)``."""
        function = split_function(sink.path or "")
        assert function is not None  # checked when the sink was declared
        module, attrs = function
        return (Step("foreachBatch", (function_chain(module, attrs),)),)

    def start_step(self, sink: p.Sink) -> Step:
        """``start()``: the path names the function or table, not an output path."""
        return Step("start")
