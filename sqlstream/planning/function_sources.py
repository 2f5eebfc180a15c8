"""A Python ``CREATE FUNCTION`` planned without running user code (an untrusted project,
docs/operations.md#trust): typed from the ``def`` in the module's source, read with
Python's :mod:`ast` (:func:`sqlstream.connectors.user_code.read_function`), else from its
declared types, else not checked (``SS274``, a warning).

The reading gives what importing gives for a plain ``def`` (a trusted compile,
:mod:`sqlstream.planning.function_definitions`): its positional parameters and their
defaults, ``*args``, the annotations PySpark maps to Spark types
(:data:`sqlstream.planning.function_definitions.ANNOTATION_TYPES`, matched by name:
``int``, ``datetime.date``, ``Decimal``, ``Optional[str]``, ``str | None``, string
annotations), ``pandas.Series`` annotations (a pandas function), and PySpark's ``udf`` /
``pandas_udf`` decorators with a literal return type (``@udf('string')``,
``@udf(returnType=DoubleType())``). Any other decorator may replace the function: it is
not read.
"""

from __future__ import annotations

import ast

from sqlstream.analysis.schema import spark_type
from sqlstream.analysis.spark_types import UNKNOWN
from sqlstream.connectors.foreach_batch import checked_spec, split_function
from sqlstream.connectors.user_code import Definition, read_function
from sqlstream.diagnostics.errors import SemanticError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast as ssql
from sqlstream.ir.user_functions import UserFunction

__all__ = ["read_python_function", "split_reference"]

_NAMED_TYPES = {
    "bool": "BOOLEAN",
    "int": "BIGINT",
    "float": "DOUBLE",
    "str": "STRING",
    "bytes": "BINARY",
    "datetime": "TIMESTAMP",
    "datetime.datetime": "TIMESTAMP",
    "dt.datetime": "TIMESTAMP",
    "date": "DATE",
    "datetime.date": "DATE",
    "dt.date": "DATE",
    "Decimal": "DECIMAL(38,18)",
    "decimal.Decimal": "DECIMAL(38,18)",
}
"""Annotations by their text → Spark type (the names of ``ANNOTATION_TYPES``' classes)."""

_DATA_TYPES = {
    "StringType": "STRING",
    "DoubleType": "DOUBLE",
    "FloatType": "FLOAT",
    "LongType": "BIGINT",
    "IntegerType": "INT",
    "ShortType": "SMALLINT",
    "ByteType": "TINYINT",
    "BooleanType": "BOOLEAN",
    "DateType": "DATE",
    "TimestampType": "TIMESTAMP",
    "BinaryType": "BINARY",
}
"""PySpark's ``DataType`` classes a decorator may name → Spark type."""

_SERIES = ("pd.Series", "pandas.Series", "Series")


def _error(message: str, span, source: Source, hint: str) -> SemanticError:
    return SemanticError(message, span, source, hint=hint, code="SS272")


def split_reference(text: str) -> tuple[str, tuple[str, ...]] | None:
    """``'pkg.mod:fn'`` → ``('pkg.mod', ('fn',))``; Flink's ``'pkg.mod.fn'`` →
    ``('pkg.mod', ('fn',))`` (the last dot splits); ``None`` when malformed."""
    if ":" not in text:
        module, dot, attr = text.strip().rpartition(".")
        if not dot:
            return None
        text = f"{module}:{attr}"
    return split_function(text)


def read_python_function(
    statement: ssql.CreateFunction, source: Source, warnings: list[SqlStreamError]
) -> UserFunction:
    """The :class:`UserFunction` of a Python ``CREATE FUNCTION``, no user code run.

    Args:
        statement: the statement (``AS 'module:callable'``).
        source: the file (its path: where the module is looked for).
        warnings: ``SS274`` is appended when the function cannot be read.

    Raises:
        SqlStreamError: ``SS271`` a malformed reference; ``SS272`` a signature or
            annotations that do not fit, as a trusted compile reports them.
    """
    span = statement.reference_span
    assert statement.reference is not None and span is not None
    spec = split_reference(statement.reference) or checked_spec(
        statement.reference, span, source, "SS271", "AS 'udfs:normalize_carrier'"
    )
    module, attrs = spec
    definition = read_function(module, attrs, source.path)
    if definition is not None and all(_udf_decorator(d) for d in definition.decorators):
        return _from_definition(statement, definition, module, attrs, source)
    declared = statement.parameters is not None and statement.returns is not None
    if not declared:
        warnings.append(
            SemanticError(
                f"function '{statement.name}' is not checked: no code runs in an untrusted "
                f"project, and '{statement.reference}' is not a def found in the project's "
                "files",
                span,
                source,
                hint="declare its types (CREATE FUNCTION f(x STRING) RETURNS STRING "
                "LANGUAGE PYTHON AS …), or trust the project (--trust, SQLSTREAM_TRUST=1)",
                code="SS274",
            )
        )
    parameters = tuple((n.value, spark_type(t)) for n, t in statement.parameters or ())
    count = len(parameters) if statement.parameters is not None else None
    return UserFunction(
        statement.name.value,
        "python",
        parameters,
        spark_type(statement.returns) if statement.returns is not None else UNKNOWN,
        count or 0,
        count,
        statement.span,
        module=module,
        attrs=attrs,
        checked=declared,
    )


def _udf_decorator(node: ast.expr) -> str | None:
    """``udf`` or ``pandas_udf`` for PySpark's decorators (called or not), else ``None``."""
    name = ast.unparse(node.func if isinstance(node, ast.Call) else node).rsplit(".", 1)[-1]
    return name if name in ("udf", "pandas_udf") else None


def _from_definition(statement, definition: Definition, module, attrs, source) -> UserFunction:
    name, span, reference = statement.name, statement.reference_span, statement.reference
    high = None if definition.star else len(definition.positional)
    low = definition.required
    decorator = definition.decorators[0] if definition.decorators else None
    if decorator is not None:
        return _decorated(statement, definition, decorator, module, attrs, source, low, high)
    annotations = [*definition.annotations.values(), definition.returns]
    vectorized = any(a is not None and _is_series(a) for a in annotations)
    if statement.parameters is not None:
        count = len(statement.parameters)
        if count < low or (high is not None and count > high):
            takes = UserFunction(name.value, "python", (), "", low, high, span).arity_text()
            raise _error(
                f"'{reference}' takes {takes} argument(s), not the {count} declared",
                span,
                source,
                hint="declare as many parameters as the function takes",
            )
        parameters = tuple((n.value, spark_type(t)) for n, t in statement.parameters)
        low = high = count
    else:
        parameters = tuple(
            (
                p,
                _annotated(statement, definition.annotations.get(p), f"parameter '{p}'", source)
                if not vectorized
                else _pandas(statement, source),
            )
            for p in definition.positional
        )
    if statement.returns is not None:
        returns = spark_type(statement.returns)
    elif vectorized:
        returns = _pandas(statement, source)
    else:
        returns = _annotated(statement, definition.returns, "its return value", source)
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
        stamp=definition.stamp,
    )


def _decorated(statement, definition, decorator, module, attrs, source, low, high):
    """A ``def`` wrapped by ``udf``/``pandas_udf``: the decorator's return type (``udf``
    without one: PySpark's default, ``STRING``)."""
    kind = _udf_decorator(decorator)
    given = None
    if isinstance(decorator, ast.Call):
        given = next(
            (k.value for k in decorator.keywords if k.arg == "returnType"),
            decorator.args[0] if decorator.args else None,
        )
    returns = _data_type(given) if given is not None else ("STRING" if kind == "udf" else None)
    if returns is None:
        if statement.returns is None:
            raise _error(
                f"the return type of '{statement.reference}' is not a literal this reading sees",
                statement.reference_span,
                source,
                hint="declare it (RETURNS …), or trust the project (--trust)",
            )
        returns = spark_type(statement.returns)
    elif statement.returns is not None and spark_type(statement.returns) != returns:
        raise _error(
            f"RETURNS {statement.returns}, but '{statement.reference}' returns {returns}",
            statement.returns_span,
            source,
            hint="remove RETURNS: the function's own return type is used",
        )
    parameters = tuple((n.value, spark_type(t)) for n, t in statement.parameters or ())
    return UserFunction(
        statement.name.value,
        "pandas" if kind == "pandas_udf" else "python",
        parameters,
        returns,
        low,
        high,
        statement.span,
        module=module,
        attrs=attrs,
        wrapped=True,
        stamp=definition.stamp,
    )


def _data_type(node: ast.expr) -> str | None:
    """A decorator's return type: a DDL string (``'double'``) or ``DoubleType()``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            found = spark_type(node.value.upper())
        except SqlStreamError:
            return None
        return None if found == UNKNOWN else found
    if isinstance(node, ast.Call) and not node.args:
        return _DATA_TYPES.get(ast.unparse(node.func).rsplit(".", 1)[-1])
    return None


def _is_series(node: ast.expr) -> bool:
    return ast.unparse(node).split("[")[0].strip() in _SERIES


def _pandas(statement, source) -> str:
    raise _error(
        f"'{statement.reference}' is a pandas function: its annotations give no Spark type",
        statement.reference_span,
        source,
        hint=_declared(statement),
    )


def _declared(statement) -> str:
    return (
        f"declare the types: CREATE FUNCTION {statement.name.value}(x DOUBLE) RETURNS DOUBLE "
        f"LANGUAGE PYTHON AS '{statement.reference}'"
    )


def _optional(node: ast.expr) -> ast.expr:
    """``Optional[X]``, ``Union[X, None]``, ``X | None`` → ``X``."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        sides = [node.left, node.right]
        rest = [s for s in sides if not (isinstance(s, ast.Constant) and s.value is None)]
        return rest[0] if len(rest) == 1 else node
    if isinstance(node, ast.Subscript):
        head = ast.unparse(node.value).rsplit(".", 1)[-1]
        inner = node.slice
        if head == "Optional":
            return inner
        if head == "Union" and isinstance(inner, ast.Tuple) and len(inner.elts) == 2:
            rest = [e for e in inner.elts if not (isinstance(e, ast.Constant) and e.value is None)]
            return rest[0] if len(rest) == 1 else node
    return node


def _annotated(statement, node: ast.expr | None, what: str, source) -> str:
    """The Spark type of one annotation, as a trusted compile reads it.

    Raises:
        SemanticError: ``SS272``: no annotation, or one Spark has no type for.
    """
    found = _NAMED_TYPES.get(ast.unparse(_optional(node))) if node is not None else None
    if found is None:
        given = (
            "has no annotation"
            if node is None
            else f"is annotated {ast.unparse(node)}, which has no Spark type"
        )
        raise _error(
            f"{what} of '{statement.reference}' {given}",
            statement.reference_span,
            source,
            hint="annotate it with int, float, str, bool, bytes, datetime, date or "
            f"Decimal (def f(code: str) -> str), or {_declared(statement)}",
        )
    return spark_type(found)
