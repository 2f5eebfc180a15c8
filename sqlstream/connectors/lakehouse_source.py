"""``iceberg`` and ``delta`` *sources* on the Python path: where no Spark package of the
format runs (Delta on Spark 4.3, Iceberg on 4.2 and 4.3 — and on every minor until Iceberg's
JVM path is built), a ``CREATE STREAM … WITH (connector = 'delta' | 'iceberg', …)`` is read by
a Python data source of sqlstream's (:mod:`sqlstream.runtime.lakehouse_reader`, PySpark's
Python Data Source API, streaming since PySpark 4.0), registered on the session by the
program. The calls ``translate`` prints::

    spark.dataSource.register(
        importlib.import_module('sqlstream.runtime.lakehouse_reader').DeltaSource)
    df = (spark.readStream.format('sqlstream_delta').schema('`id` BIGINT, …')
        .option('stream', 'events').option('path', '/abs/lake/events').load())

Offsets are the table's versions (Delta) or snapshot ids (Iceberg); each micro-batch reads
the rows *appended* by the commits between its two offsets — the first one, without
``starting_version``, the whole table as of its end — as Spark's Delta source does. A commit
that changes or deletes rows fails the query (``SS550``, at the stream) unless
``skip_change_commits = true`` (Delta's ``skipChangeCommits``) skips it.

This module is the compile-time half: the choice of path (:func:`read_format`), the
reader's options (:func:`reader_options`; their rules, shared with the sinks, are
:func:`.lakehouse.check_role` and :func:`.lakehouse_offsets.check_rates`), the declared
columns against the table's schema when the table exists in the project
(:func:`check_columns`: ``SS295``, ``SS296``), the read steps (:func:`read_steps`) and, at run time, the reader's failure as a positioned error
(:func:`source_failure`). No pyspark here.

Sources: PySpark API reference, *Python Data Source* (``DataSource.streamReader``,
``DataSourceStreamReader``, ``DataSourceRegistration.register``); Delta Lake guide *Table
streaming reads and writes* (``startingVersion``, ``skipChangeCommits``, "the Delta table
as a source" fails on updates and deletes); Iceberg's Spark guide *Structured Streaming*
(appends read, overwrite and delete snapshots refused unless skipped).
"""

from __future__ import annotations

import os
import re

from sqlstream.connectors import lakehouse, lakehouse_jvm, lakehouse_offsets
from sqlstream.connectors.base import ResolvedOptions
from sqlstream.connectors.call_sequence import schema_ddl
from sqlstream.connectors.foreach_batch import function_chain
from sqlstream.diagnostics.errors import (
    OptionError,
    QueryFailedError,
    SqlStreamError,
    UnknownNameError,
)
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, ChainOrigin, Step
from sqlstream.ir.context import inside

READER_MODULE = "sqlstream.runtime.lakehouse_reader"
FORMATS = {"delta": "sqlstream_delta", "iceberg": "sqlstream_iceberg"}
"""Connector → the name its Python data source is registered under."""
SOURCES = {"delta": "DeltaSource", "iceberg": "IcebergSource"}
"""Connector → the ``DataSource`` class of :data:`READER_MODULE`."""
MARK = "SQLSTREAM_SOURCE"
"""What the reader's errors start with: ``[SQLSTREAM_SOURCE <code> <stream>] <message>``."""
_FAILED = re.compile(r"\[" + MARK + r" (SS\d{3}) ([^\]]+)\] (.*?)(?=\s+SQLSTATE|\n|$)")


JVM_SOURCES: dict[str, dict[str, tuple[str, ...]]] = {
    "delta": lakehouse_jvm.DELTA_PACKAGES,
    "iceberg": lakehouse_jvm.ICEBERG_PACKAGES,
}
"""Connector → the Spark minors whose package of the format reads it (the JVM path)."""


def read_format(connector: str, fmt: str | None, spark_version: str) -> str | None:
    """The format a source of ``connector`` is read with on Spark ``spark_version`` (a
    major.minor): the Python data source's name (:data:`FORMATS`) where no Spark package of
    the format runs (:data:`JVM_SOURCES`), else ``fmt`` (the package's own reader)."""
    if connector in FORMATS and spark_version not in JVM_SOURCES[connector]:
        return FORMATS[connector]
    return fmt


def is_python(relation: p.SourceRelation) -> bool:
    """Whether ``relation`` is read by sqlstream's Python data source."""
    return relation.format in FORMATS.values()


def reader_options(resolved: ResolvedOptions) -> tuple[tuple[str, str], ...]:
    """The reader's ``starting_version`` and ``skip_change_commits`` options and its rate
    limits (:func:`.lakehouse_offsets.rate_options`, by Spark's names), as given."""
    pairs = ((k, resolved.get(k)) for k in lakehouse.SOURCE_OPTIONS)
    given = tuple((k, v.strip().lower()) for k, v in pairs if v is not None)
    return given + lakehouse_offsets.rate_options(resolved)


# ---- the declared columns against the table's schema (compile time, no JVM) ---------------

_DELTA_TYPES = {
    "long": "BIGINT",
    "integer": "INT",
    "short": "SMALLINT",
    "byte": "TINYINT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
    "boolean": "BOOLEAN",
    "binary": "BINARY",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "timestamp_ntz": "TIMESTAMP_NTZ",
}
"""Delta's primitive type names (the protocol's *Primitive Types*) → Spark SQL's."""
_ICEBERG_TYPES = {
    "long": "BIGINT",
    "int": "INT",
    "float": "FLOAT",
    "double": "DOUBLE",
    "string": "STRING",
    "boolean": "BOOLEAN",
    "binary": "BINARY",
    "date": "DATE",
    "timestamptz": "TIMESTAMP",
    "timestamp": "TIMESTAMP_NTZ",
}
"""Iceberg's primitive type names (the spec's *Primitive Types*) → Spark SQL's."""
_SYNONYMS = {"INTEGER": "INT", "LONG": "BIGINT", "SHORT": "SMALLINT", "BYTE": "TINYINT"}


def _sql_type(text: str, names: dict[str, str]) -> str | None:
    """A table's type name as Spark SQL's, ``None`` for a type not compared (nested)."""
    text = text.strip().lower()
    if text.startswith("decimal"):
        return "DECIMAL" + text[len("decimal") :].replace(" ", "")
    return names.get(text)


def _declared_type(text: str) -> str:
    upper = re.sub(r"\s+", "", text.upper())
    return _SYNONYMS.get(upper, upper)


def delta_schema(path: str) -> list[tuple[str, str | None]] | None:
    """``(name, Spark SQL type or None)`` of the Delta table at ``path``, ``None`` when
    there is none (delta-rs reads its log)."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(path)
    except TableNotFoundError:
        return None
    return [
        (f.name, _sql_type(str(getattr(f.type, "type", "")), _DELTA_TYPES))
        for f in table.schema().fields
    ]


def iceberg_schema(
    table: str, warehouse: str, catalog: str, uri: str
) -> list[tuple[str, str | None]] | None:
    """``(name, Spark SQL type or None)`` of an Iceberg table in the SQL catalog at ``uri``,
    ``None`` when the catalog or the table does not exist."""
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    if uri.startswith("sqlite:///") and not os.path.exists(uri[len("sqlite:///") :]):
        return None  # opening it would create it
    location = "file://" + warehouse if "://" not in warehouse else warehouse
    try:
        loaded = SqlCatalog(catalog, uri=uri, warehouse=location).load_table(
            tuple(part.strip().strip("`") for part in table.split("."))
        )
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    fields = loaded.schema().fields
    return [(f.name, _sql_type(str(f.field_type), _ICEBERG_TYPES)) for f in fields]


def check_columns(
    statement, table: list[tuple[str, str | None]] | None, what: str, source: Source | None = None
) -> None:
    """The declared columns of ``statement`` against ``table`` (its ``(name, type)``
    pairs; ``None``: not known, nothing checked). ``what`` names the table in messages.

    Raises:
        UnknownNameError: ``SS295`` a declared column the table does not have.
        OptionError: ``SS296`` a declared column the table has with another type.
    """
    if table is None:
        return
    found: list[SqlStreamError] = []
    report = found.append
    columns = [c for c in statement.columns if isinstance(c, ast.ColumnDef)]
    types = {name.lower(): kind for name, kind in table}
    names = ", ".join(f"{n} {t or '…'}" for n, t in table)
    for column in columns:
        name = column.name.value
        if name.lower() not in types:
            report(
                UnknownNameError(
                    f"{what} has no column '{name}' (its columns: {names})",
                    column.name.span,
                    source,
                    code="SS295",
                    hint="declare the table's columns by their names in the table",
                )
            )
            continue
        kind = types[name.lower()]
        if kind is not None and _declared_type(column.type) != kind:
            report(
                OptionError(
                    f"column '{name}' is {kind} in {what}, declared {column.type}",
                    column.name.span,
                    source,
                    code="SS296",
                    hint=f"declare {name} {kind}, and convert it in the query if needed",
                )
            )
    if found:
        raise found[0]


def readable(path: str, project: str | None, trusted: bool) -> bool:
    """Whether compile time may read the table at ``path`` (an absolute local folder — a
    file's relative paths are resolved against its folder — inside ``project``, its
    ``.sqlstream`` folder included, unless ``trusted``)."""
    if "://" in path or not os.path.isabs(path):
        return False
    if trusted or project is None:
        return True
    own = os.path.join(os.path.realpath(project), ".sqlstream")
    real = os.path.realpath(path)
    if os.path.commonpath([real, own]) == own:  # the default warehouse
        parts = os.path.relpath(real, own).split(os.sep)
        return not any(p.startswith(".") and p != "." for p in parts)
    return inside(path, project)


# ---- lowering -------------------------------------------------------------------------------


def register_chain(relation: p.SourceRelation) -> Chain:
    """``spark.dataSource.register(importlib.import_module(READER_MODULE).<Source>)``: the
    Python data source of ``relation``'s connector on the session (PySpark
    ``DataSourceRegistration.register``), before the read."""
    what: ChainOrigin = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
    cls = function_chain(READER_MODULE, (SOURCES[relation.connector],))
    return Chain("spark", (Step("dataSource", call=False), Step("register", (cls,))), **what)


def read_steps(relation: p.SourceRelation) -> tuple[Step, ...]:
    """The read through the Python data source: ``format('sqlstream_<connector>')``,
    ``schema(ddl)`` (the declared columns), ``option('stream', name)``, the relation's
    options (the reader's), ``load()``."""
    steps = [Step("format", (relation.format,))]
    ddl = schema_ddl(relation)
    if ddl is not None:
        steps.append(Step("schema", (ddl,)))
    options = (("stream", relation.name), *relation.options)
    steps += [Step("option", (k, v)) for k, v in options]
    steps.append(Step("load"))
    return tuple(steps)


# ---- run time: the reader's failure, positioned ----------------------------------------------


def source_failure(trace: str, plan: p.Plan, query: p.Query) -> QueryFailedError | None:
    """The error of ``query`` when a lakehouse source's reader stopped it (its message marked
    with :data:`MARK`: ``SS550`` a commit that is not an append, ``SS551`` a table the
    reader cannot read), positioned at the stream's statement; else ``None``."""
    found = _FAILED.search(trace)
    if found is None:
        return None
    code, stream, message = found.groups()
    relation = next(
        (r for r in plan.relations if isinstance(r, p.SourceRelation) and r.name == stream), None
    )
    hint = (
        "a streaming source reads appends only: add skip_change_commits = true to skip "
        "commits that change or delete rows, or start on a new checkpoint location after "
        "the change (starting_version = the next version, for Delta)"
        if code == "SS550"
        else "check the table's path or name, and that the declared columns are the table's"
    )
    return QueryFailedError(
        f"query '{query.name}' failed: stream '{stream}': {message}",
        relation.span if relation is not None else query.span,
        plan.source,
        hint=hint,
        code=code,
    )
