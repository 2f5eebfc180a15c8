"""Avro schemas of Kafka values (``avro_schema``, used by :mod:`sqlstream.connectors.kafka`):
the schema read from inline JSON or an ``.avsc`` file, the Spark SQL type of each field as
``from_avro`` decodes it, and the binary encoding of a record of nulls.

Sources: Spark's "Apache Avro Data Source Guide" (*Supported types for Avro -> Spark SQL
conversion*, Spark's ``SchemaConverters.toSqlType``); the Avro specification (*Binary
Encoding*).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlstream.analysis.spark_types import spark_type
from sqlstream.diagnostics.errors import OptionError, SqlStreamError
from sqlstream.frontend import ast
from sqlstream.frontend.limits import read_small_file
from sqlstream.frontend.literals import quote_identifier
from sqlstream.ir.context import inside

__all__ = ["avro_columns", "load_schema", "null_record", "quotable"]

_AVRO_PRIMITIVES = {
    "boolean": "BOOLEAN",
    "int": "INT",
    "long": "BIGINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "bytes": "BINARY",
    "string": "STRING",
    "fixed": "BINARY",
    "enum": "STRING",
}
_AVRO_LOGICAL = {
    "date": "DATE",
    "timestamp-millis": "TIMESTAMP",
    "timestamp-micros": "TIMESTAMP",
    "local-timestamp-millis": "TIMESTAMP_NTZ",
    "local-timestamp-micros": "TIMESTAMP_NTZ",
}


def load_schema(
    option: ast.Option,
    resolve_path: Callable[[str], str | None],
    project: str | None = None,
    trusted: bool = False,
) -> dict:
    """The Avro schema of ``avro_schema``: inline JSON (text starting with ``{``) or the path
    of an ``.avsc`` file (relative to the ``.ssql`` file's folder: ``resolve_path`` maps the
    path as written to the one to open, ``None`` for a path it leaves as is).

    Args:
        option: the ``avro_schema`` option.
        resolve_path: the planner's path resolution (relative to the ``.ssql`` file).
        project: the folder the schema file must lie in unless ``trusted``
            (:attr:`sqlstream.ir.context.CompileContext.project`, checked with
            :func:`~sqlstream.ir.context.inside`: symbolic links resolved, no hidden
            folder); ``None``: a text compiled without a file, no boundary.
        trusted: the user trusts the project: the file may lie anywhere.

    Returns:
        The schema as JSON data (a ``record`` with its ``fields``).

    Raises:
        OptionError: ``SS211``: the file is outside the project (not read, nothing of it
            quoted), cannot be read, the text is not JSON, or the schema is not an Avro
            ``record``.
    """
    text = option.text.strip()
    if not text.startswith("{"):
        path = resolve_path(text) or text
        if project is not None and not trusted and not inside(path, project):
            raise OptionError(
                f"the Avro schema file '{option.text}' is outside the pipeline's project "
                "(its folder tree): it is not read unless the project is trusted",
                option.value_span,
                code="SS211",
                hint="put the .avsc file in the project, give the schema's JSON, or trust "
                "the project (--trust, SQLSTREAM_TRUST=1; docs/operations.md#trust)",
            )
        try:  # a regular file of a bounded size: a FIFO or /dev/zero would never return
            text = read_small_file(path).decode("utf-8")
        except (OSError, ValueError) as error:  # ValueError: a NUL in the path, not UTF-8
            raise OptionError(
                f"cannot read the Avro schema file '{option.text}': "
                f"{getattr(error, 'strerror', None) or error}",
                option.value_span,
                code="SS211",
                hint="give the path of an .avsc file (relative to the .ssql file) "
                "or the schema's JSON",
            ) from None
    try:
        schema = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise OptionError(
            f"the Avro schema is not JSON: {error}",
            option.value_span,
            code="SS211",
            hint="an Avro schema is a JSON object with type 'record' and its fields",
        ) from None
    if (
        not isinstance(schema, dict)
        or schema.get("type") != "record"
        or not isinstance(schema.get("fields"), list)
    ):
        raise OptionError(
            "the Avro schema is not a record with fields",
            option.value_span,
            code="SS211",
            hint='{"type": "record", "name": "flight", "fields": '
            '[{"name": "origin", "type": "string"}, …]}',
        )
    return schema


def null_record(schema: dict) -> bytes | None:
    """The Avro binary encoding of a record of ``schema`` with only nulls (per field the
    zig-zag varint of ``null``'s union branch; Avro specification, *Binary Encoding*), or
    ``None`` when a field cannot be null."""
    out = bytearray()
    for field in schema["fields"]:
        kind = field["type"]
        if kind == "null":
            continue
        if not isinstance(kind, list) or "null" not in kind:
            return None
        index = kind.index("null") * 2  # zig-zag of a non-negative int
        while index > 0x7F:
            out.append((index & 0x7F) | 0x80)
            index >>= 7
        out.append(index)
    return bytes(out)


def quotable(
    option: ast.Option, resolve_path: Callable[[str], str | None], project: str | None
) -> bool:
    """Whether a message may quote the schema of ``avro_schema`` (its field names and
    types): inline JSON, a text compiled without a project, or a file inside ``project``;
    not a file outside it (read only when trusted, as a CSV header is)."""
    text = option.text.strip()
    return text.startswith("{") or project is None or inside(resolve_path(text) or text, project)


def avro_columns(
    schema: dict, option: ast.Option | None, quoted: bool = True
) -> tuple[tuple[str, str], ...]:
    """``(field, Spark type)`` pairs of an Avro record, as ``from_avro`` decodes it
    (``option``: the ``avro_schema`` option the error points at; ``None`` for a schema
    already checked; ``quoted``: the error may name the field and its type, see
    :func:`quotable`).

    Raises:
        OptionError: ``SS211``: a field type Spark cannot decode (or sqlstream cannot type).
    """
    columns = []
    for field in schema["fields"]:
        try:
            columns.append((field["name"], spark_type(_avro_type(field["type"]))))
        except (KeyError, TypeError, ValueError, RecursionError, SqlStreamError) as error:
            named = field.get("name", "?") if isinstance(field, dict) else repr(field)
            raise OptionError(
                f"Avro field {named}: type not understood ({error})"
                if quoted
                else "an Avro field's type is not understood (a file outside the project: "
                "not quoted)",
                option.value_span if option else None,
                code="SS211",
                hint="use Avro's primitive, record, array, map, enum, fixed types and "
                "unions with null",
            ) from None
    return tuple(columns)


def _avro_type(avro) -> str:
    if isinstance(avro, str):
        if avro in _AVRO_PRIMITIVES:
            return _AVRO_PRIMITIVES[avro]
        raise ValueError(f"named type {avro!r}")
    if isinstance(avro, list):
        members = [m for m in avro if m != "null"]
        if len(members) == 1:
            return _avro_type(members[0])
        return (
            "STRUCT<"
            + ", ".join(f"member{i}: {_avro_type(m)}" for i, m in enumerate(members))
            + ">"
        )
    kind, logical = avro["type"], avro.get("logicalType")
    if logical == "decimal" and kind in ("bytes", "fixed"):
        return f"DECIMAL({avro['precision']}, {avro.get('scale', 0)})"
    if logical in _AVRO_LOGICAL and kind in ("int", "long"):
        return _AVRO_LOGICAL[logical]
    if kind == "record":
        return (
            "STRUCT<"
            + ", ".join(
                f"{quote_identifier(f['name'])}: {_avro_type(f['type'])}" for f in avro["fields"]
            )
            + ">"
        )
    if kind == "array":
        return f"ARRAY<{_avro_type(avro['items'])}>"
    if kind == "map":
        return f"MAP<STRING, {_avro_type(avro['values'])}>"
    return _avro_type(kind)
