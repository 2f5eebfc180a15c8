"""``CREATE FUNCTION`` → :class:`~sqlstream.ir.user_functions.UserFunction`
(docs/dialect.md#create-function): the planning of a function definition.

A Python function is imported when the file is compiled and the project is trusted
(``exec``, ``--trust``: :attr:`sqlstream.ir.context.CompileContext.trust`), as
``foreach_batch`` functions are (:func:`sqlstream.connectors.foreach_batch.import_reference`):
a missing module or callable is ``SS271`` at the ``AS`` string. Untrusted, its module's
source is read instead (:mod:`sqlstream.planning.function_sources`), the same rules applied. Its argument count comes
from ``inspect.signature``; its types are declared, or (Flink's form) read from the
callable's annotations (:data:`ANNOTATION_TYPES`, PySpark's own mapping of Python values:
``pyspark.sql.types._infer_type``), else ``SS272``. It is vectorised (a pandas UDF, Spark
guide *Pandas UDFs*) when its annotations are ``pandas.Series`` — PySpark's
``pandas_udf`` type hints — or when the module already wrapped it with
``pyspark.sql.functions.pandas_udf``/``udf`` (then registered as it is).

A SQL function is Spark's temporary SQL function (``CREATE TEMPORARY FUNCTION … RETURN``,
Spark 4.0 and later: measured in streaming queries on 4.0.5 and 4.3.0); its body is typed
here over its parameters, so its calls are typed by ``check``.
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import types
import typing
from dataclasses import replace

from sqlstream.analysis.schema import expression_type, known_functions, spark_type
from sqlstream.connectors.foreach_batch import import_reference
from sqlstream.diagnostics.errors import SemanticError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir.context import CompileContext
from sqlstream.ir.user_functions import UserFunction
from sqlstream.planning.function_sources import read_python_function, split_reference
from sqlstream.sql.parsing import parse_expression

__all__ = ["ANNOTATION_TYPES", "resolve_function", "split_reference"]

ANNOTATION_TYPES = {  # Python annotation → Spark SQL type (PySpark: _type_mappings)
    bool: "BOOLEAN",
    int: "BIGINT",
    float: "DOUBLE",
    str: "STRING",
    bytes: "BINARY",
    datetime.datetime: "TIMESTAMP",
    datetime.date: "DATE",
    decimal.Decimal: "DECIMAL(38,18)",
}
_EXAMPLE = "AS 'udfs:normalize_carrier'"


def _error(message: str, span, source: Source, hint: str, code: str = "SS270") -> SemanticError:
    return SemanticError(message, span, source, hint=hint, code=code)


def resolve_function(
    statement: ast.CreateFunction,
    source: Source,
    context: CompileContext,
    warnings: list[SqlStreamError] | None = None,
) -> UserFunction:
    """The :class:`UserFunction` of one ``CREATE FUNCTION``.

    Args:
        statement: the statement.
        source: the file (messages; its folder is where a Python module is looked for).
        context: the compile context: the Spark minor judged for (its built-in functions),
            the functions defined before it (a SQL function's body may call them), and
            the trust decision: a Python module is imported only when ``context.trust``,
            else its source is read (:mod:`sqlstream.planning.function_sources`).
        warnings: where ``SS274`` (an untrusted function not checked) is appended.

    Raises:
        SqlStreamError: ``SS270`` not a function sqlstream runs (see the code), ``SS271``
            the module or callable cannot be imported, ``SS272`` the signature does not fit,
            ``SS208`` and others: the SQL body's own findings — each at its position.
    """
    name = statement.name
    defined = context.functions
    if name.value.lower() in known_functions(context.spark_version):
        raise _error(
            f"'{name}' is one of Spark's built-in functions",
            name.span,
            source,
            hint="give the function another name",
        )
    if name.value.lower() in defined:
        raise _error(
            f"function '{name}' is defined twice (line {defined[name.value.lower()].span.line})",
            name.span,
            source,
            hint="give one of them another name",
        )
    language = statement.language.value if statement.language else None
    if language not in (None, "PYTHON", "SQL"):
        assert statement.language is not None
        raise _error(
            f"LANGUAGE {language}: sqlstream runs Python and SQL functions",
            statement.language.span,
            source,
            hint=f"write it in Python ({_EXAMPLE} LANGUAGE PYTHON) or as a SQL "
            "function (RETURNS type RETURN expression)",
        )
    if statement.reference is not None and statement.body is not None:
        raise _error(
            "a function is either Python (AS 'module:callable') or SQL (RETURN …), not both",
            statement.body.span,
            source,
            hint="remove one of the two",
        )
    if statement.body is not None or language == "SQL":
        return _sql_function(statement, source, context)
    if statement.reference is None:
        raise _error(
            f"CREATE FUNCTION {name} names no function",
            statement.span,
            source,
            hint=f"name a Python callable: {_EXAMPLE} LANGUAGE PYTHON; or write a SQL "
            f"function: CREATE FUNCTION {name}(x DOUBLE) RETURNS DOUBLE RETURN …",
        )
    if not context.trust:
        return read_python_function(statement, source, warnings if warnings is not None else [])
    return _python_function(statement, source)


def _sql_function(
    statement: ast.CreateFunction, source: Source, context: CompileContext
) -> UserFunction:
    name = statement.name
    if statement.body is None:
        raise _error(
            f"SQL function {name} has no body",
            statement.span,
            source,
            hint=f"CREATE FUNCTION {name}(x DOUBLE) RETURNS DOUBLE RETURN x * 2",
        )
    if statement.parameters is None or statement.returns is None:
        raise _error(
            f"SQL function {name} needs its parameter list and RETURNS type",
            name.span,
            source,
            hint=f"CREATE FUNCTION {name}(x DOUBLE) RETURNS DOUBLE RETURN …",
        )
    parameters = tuple((n.value, spark_type(t)) for n, t in statement.parameters)
    try:
        tree = parse_expression(statement.body.text, context.caches)
    except SqlStreamError as error:
        raise _at(error, statement.body) from None
    _, findings = expression_type(tree, parameters, statement.body.text, context)
    if findings:
        if findings[0].code == "SS205":
            findings[0].hint = "the body of a SQL function sees only its parameters: " + ", ".join(
                n for n, _ in parameters
            )
        raise _at(findings[0], statement.body)
    return UserFunction(
        name.value,
        "sql",
        parameters,
        spark_type(statement.returns),
        len(parameters),
        len(parameters),
        statement.span,
        body=statement.body.text,
    )


def _at(error: SqlStreamError, text: ast.SqlText) -> SqlStreamError:
    if error.span is None:
        start = getattr(error, "offset_start", None)
        error.span = (
            text.locate(start, getattr(error, "offset_end", None))
            if start is not None
            else text.span
        )
    return error


def _python_function(statement: ast.CreateFunction, source: Source) -> UserFunction:
    name, span = statement.name, statement.reference_span
    assert statement.reference is not None and span is not None  # AS 'module:function'
    spec = split_reference(statement.reference)
    function, stamp = import_reference(
        statement.reference, span, source, "SS271", _EXAMPLE, "a function", spec=spec
    )
    assert spec is not None  # (import_callable refuses a malformed reference)
    module, attrs = spec
    if hasattr(function, "evalType") and hasattr(function, "returnType"):
        return replace(_wrapped(statement, function, module, attrs, source), stamp=stamp)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        raise _error(
            f"'{statement.reference}' has no signature Python can read",
            span,
            source,
            code="SS272",
            hint="name a function defined with def",
        ) from None
    low, high = _arity(signature)
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - annotations that do not evaluate: read them raw
        hints = {n: p.annotation for n, p in signature.parameters.items()}
        hints["return"] = signature.return_annotation
    vectorized = any(_is_series(h) for h in hints.values())
    if statement.parameters is not None:
        count = len(statement.parameters)
        if count < low or (high is not None and count > high):
            takes = UserFunction(name.value, "python", (), "", low, high, span).arity_text()
            raise _error(
                f"'{statement.reference}' takes {takes} argument(s), not the {count} declared",
                span,
                source,
                code="SS272",
                hint="declare as many parameters as the function takes",
            )
        parameters = tuple((n.value, spark_type(t)) for n, t in statement.parameters)
        low = high = count
    else:
        parameters = _annotated_parameters(statement, signature, hints, vectorized, source)
    if statement.returns is not None:
        returns = spark_type(statement.returns)
    else:
        returns = _annotated_type(
            statement,
            hints.get("return", inspect.Signature.empty),
            "its return value",
            vectorized,
            source,
        )
    return UserFunction(
        name.value,
        "pandas" if vectorized else "python",
        parameters,
        returns,
        low,
        high,
        statement.span,
        module=module,
        attrs=attrs,
        stamp=stamp,
    )


def _wrapped(statement, function, module, attrs, source) -> UserFunction:
    """A callable the module wrapped with PySpark's ``udf``/``pandas_udf``: its return type
    is the wrapper's (``UserDefinedFunction.returnType``); 200 is PySpark's
    ``PythonEvalType.SQL_SCALAR_PANDAS_UDF``."""
    wrapped = getattr(function, "func", None)
    low, high = _arity(inspect.signature(wrapped)) if callable(wrapped) else (0, None)
    return_type = function.returnType
    returns = (
        spark_type(return_type.simpleString().upper())
        if hasattr(return_type, "simpleString")
        else spark_type(str(return_type))
    )
    if statement.returns is not None and spark_type(statement.returns) != returns:
        raise _error(
            f"RETURNS {statement.returns}, but '{statement.reference}' returns {returns}",
            statement.returns_span,
            source,
            code="SS272",
            hint="remove RETURNS: the function's own return type is used",
        )
    parameters = tuple((n.value, spark_type(t)) for n, t in statement.parameters or ())
    kind = "pandas" if function.evalType == 200 else "python"
    return UserFunction(
        statement.name.value,
        kind,
        parameters,
        returns,
        low,
        high,
        statement.span,
        module=module,
        attrs=attrs,
        wrapped=True,
    )


def _arity(signature: inspect.Signature) -> tuple[int, int | None]:
    """The fewest and most positional arguments ``signature`` binds (``None``: ``*args``)."""
    low, high = 0, 0
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            return low, None
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            high += 1
            if parameter.default is parameter.empty:
                low += 1
    return low, high


def _is_series(annotation) -> bool:
    """``pandas.Series`` (the class, or its name in a string annotation)."""
    if isinstance(annotation, str):
        return annotation.split("[")[0].strip() in ("pd.Series", "pandas.Series", "Series")
    return getattr(annotation, "__name__", None) == "Series" and str(
        getattr(annotation, "__module__", "")
    ).startswith("pandas")


def _annotated_parameters(statement, signature, hints, vectorized, source):
    return tuple(
        (
            p.name,
            _annotated_type(
                statement,
                hints.get(p.name, p.annotation),
                f"parameter '{p.name}'",
                vectorized,
                source,
            ),
        )
        for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


def _annotated_type(statement, annotation, what: str, vectorized: bool, source) -> str:
    """The Spark type of one annotation (``Optional[X]`` is ``X``).

    Raises:
        SemanticError: ``SS272`` at the ``AS`` string: no annotation, or one Spark has no
            type for (a pandas function has no element type: its types are declared).
    """
    name = statement.name.value
    declared = (
        f"declare the types: CREATE FUNCTION {name}(x DOUBLE) RETURNS DOUBLE "
        f"LANGUAGE PYTHON AS '{statement.reference}'"
    )
    if vectorized:
        raise _error(
            f"'{statement.reference}' is a pandas function: its annotations give no Spark type",
            statement.reference_span,
            source,
            code="SS272",
            hint=declared,
        )
    args = typing.get_args(annotation)
    if (
        typing.get_origin(annotation) in (typing.Union, types.UnionType)
        and len(args) == 2
        and type(None) in args
    ):
        annotation = next(a for a in args if a is not type(None))
    found = ANNOTATION_TYPES.get(annotation)
    if found is None:
        given = (
            "has no annotation"
            if annotation is inspect.Signature.empty
            else f"is annotated {getattr(annotation, '__name__', annotation)!s}, which has no Spark type"
        )
        raise _error(
            f"{what} of '{statement.reference}' {given}",
            statement.reference_span,
            source,
            code="SS272",
            hint="annotate it with int, float, str, bool, bytes, datetime, date or "
            f"Decimal (def f(code: str) -> str), or {declared}",
        )
    return spark_type(found)
