"""Flink's changelog spelling (docs/cdc.md#flink-spelling): a sink with a ``PRIMARY KEY``,
written by an ``INSERT``.

In Flink a ``PRIMARY KEY (k) NOT ENFORCED`` makes a sink a table updated by key: an
``INSERT INTO`` it from a changelog source (``format = 'debezium-json'``) applies each
change to its key, a delete (``op = 'd'``) deleting it; from an append-only source each row
is an upsert by key. Here the two meanings are planned on the paths that already exist:

* **from a changelog** (the query reads a ``debezium-json`` stream alone): the same
  :class:`~sqlstream.frontend.ast.CreateFlow` as ``CREATE FLOW <sink> AS AUTO CDC INTO
  <sink> FROM STREAM(<stream>) KEYS (<primary key>) APPLY AS DELETE WHEN <op> = 'd'
  SEQUENCE BY <seq> COLUMNS <the sink's columns> STORED AS SCD TYPE 1``, planned by
  :class:`~sqlstream.planning.flows.FlowPlanning`, when the query selects the stream's
  columns as they are; with a ``WHERE``, expressions, renames or the declared types'
  ``CAST``s, the flow reads a view of one row per change instead, the ``WHERE`` in its
  delete condition (:mod:`sqlstream.planning.changelog_queries`: Flink's filter on each
  change). The sequence: the stream's ``METADATA FROM 'source.lsn'`` column when it
  declares one (the change's place in the database's log: unique and ordered, so an
  out-of-order arrival is put right); else the arrival order, as Flink applies a changelog
  (the applier numbers the changes: batch id, then place in the micro-batch). ``ts_ms`` is
  not taken: two changes of a key in one millisecond would tie, and a tie is decided for
  the delete, not for the later change.
* **from any other query**: the sink with ``mode = 'upsert'`` and ``key_columns`` the
  primary key (the last row of a key wins, as Flink's upsert), the query's columns cast to
  the declared types where they differ.

The declared types are checked by Spark's store assignment (``SS225``). What the spelling
cannot mean here is ``SS109`` at its place: the key on a sink that cannot update by key
(``files``, ``kafka``, …: Flink's ``kafka`` connector refuses a key too), a key without
``NOT ENFORCED`` (Flink refuses it), columns without a key, ``mode`` or ``key_columns``
beside the key, a query over a changelog that is not a function of one change or computes
its key, a changelog without its ``op``.
"""

from __future__ import annotations

import re

from sqlstream.connectors import resolve_options
from sqlstream.connectors.formats.debezium import DEBEZIUM
from sqlstream.diagnostics.errors import SqlStreamError, UnknownNameError, did_you_mean
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.planning.catalog import CatalogSink
from sqlstream.planning.changelog_queries import (
    DELETE_COLUMN,
    SEQUENCE_COLUMN,
    assignments,
    check_keys,
    item_spans,
    plain,
    projection,
    typed_query,
    view_sql,
)
from sqlstream.planning.compiler import compile_query
from sqlstream.planning.flows import CDC_TARGETS, _Whole

_FORMAT_KEYS = ("format", "value.format", "value_format")
"""The keys that name a stream's format: sqlstream's, Flink's (``value.format``), ksqlDB's."""
ARRIVAL = "CAST(0 AS BIGINT)"
"""The sequence the flow's query selects when the changes are ordered by arrival (the
applier replaces it: :func:`sqlstream.connectors.cdc.cdc_apply.arrival_sequence`)."""


class KeyedSinkError(SqlStreamError):
    """Flink's changelog spelling where it cannot mean a table updated by key (``SS109``)."""

    code = "SS109"


class ChangelogSinkPlanning:
    """The planner's ``CREATE SINK`` and the ``INSERT`` into a sink with a ``PRIMARY KEY``
    (mixed into :class:`~sqlstream.planning.planner.Planner`)."""

    def _CreateSink(self, statement: ast.CreateSink) -> None:
        planner = self  # the Planner this is mixed into
        catalog = planner.catalog  # type: ignore[attr-defined]
        catalog.declare_sink(statement.name)
        resolved = planner._options(statement.options, "sink", statement.name, statement.span)  # type: ignore[attr-defined]
        keyed = _check_keyed(statement, resolved)
        sink = planner._sink(statement.name.value, resolved, statement.span)  # type: ignore[attr-defined]
        entry = CatalogSink(sink, resolved, statement.constraints, keyed)
        catalog.add_sink(statement.name, entry)
        if statement.query is not None:
            planner._insert(statement.name, statement.query, statement.emit, statement.span)  # type: ignore[attr-defined]

    def _keyed_insert(self, entry: CatalogSink, query: ast.SqlText, emit, span) -> None:
        """``INSERT INTO`` a sink with a ``PRIMARY KEY``: an ``AUTO CDC`` flow from a
        changelog, else an upsert by key (this module's docstring).

        Raises:
            KeyedSinkError: ``SS109``, a second ``INSERT``, columns other than the sink's, a
                changelog read with other relations or through a view, a changelog without
                ``METADATA FROM 'op'``.
            ChangelogQueryError: ``SS109``, a query over a changelog that is not a function
                of one change or computes its key; ``SS225``, a column whose type the
                declared column cannot take (both paths).
        """
        planner = self
        declaration, resolved, sink = entry.keyed, entry.options, entry.sink
        assert declaration is not None and declaration.primary_key is not None
        assert resolved is not None and sink is not None  # (the caller's test)
        key = declaration.primary_key
        if planner.insert_counts[sink.name.lower()] > 1:  # type: ignore[attr-defined]
            raise KeyedSinkError(
                f"a second INSERT INTO {sink.name}: a sink with a PRIMARY KEY is one table "
                "updated by one query",
                span,
                hint="write one INSERT … SELECT … FROM a UNION ALL SELECT … FROM b",
            )
        name = resolved.get("query_name") or sink.name
        compiled = compile_query(query, planner.catalog, planner.context, name)  # type: ignore[attr-defined]
        changelog = _changelog(planner.script, planner.catalog, compiled)  # type: ignore[attr-defined]
        declared = [c.name.value for c in declaration.columns]
        written_columns = None if compiled.findings else compiled.columns  # else: reported
        if written_columns is not None and [n.lower() for n, _ in written_columns] != [
            d.lower() for d in declared
        ]:
            written = ", ".join(n for n, _ in written_columns)
            raise KeyedSinkError(
                f"the query writes ({written}) into {sink.name} ({', '.join(declared)}): the "
                "columns of a sink with a PRIMARY KEY are written by name, in its order",
                query.span,
                hint=f"select {', '.join(declared)} (name a computed column with AS)",
            )
        if changelog is None:
            options = (*declaration.options, *_upsert_options(key))
            source = planner.source  # type: ignore[attr-defined]
            upsert = resolve_options(options, source, "sink", declaration.name, declaration.span)
            upserting = planner._sink(sink.name, upsert, declaration.span)  # type: ignore[attr-defined]
            name = planner._query_name(sink.name, resolved, declaration.name.span)  # type: ignore[attr-defined]
            if written_columns is not None:  # the declared types: checked, widened by CASTs
                typed = [(c.name.value, c.type) for c in declaration.columns]
                spans = item_spans(compiled.tree, query, len(written_columns))
                casts = assignments(list(written_columns), typed, spans, sink.name)
                query = typed_query(query, written_columns, casts)
            compiled = planner._compile(query, name)  # type: ignore[attr-defined]
            planner._add_query(name, upserting, upsert, compiled, emit, span)  # type: ignore[attr-defined]
            return
        stream, reference = changelog
        if compiled.findings or written_columns is None:  # unknown names, types: reported
            for finding in compiled.findings:
                planner._record(finding)  # type: ignore[attr-defined]
            return
        version = planner.context.spark_version  # type: ignore[attr-defined]
        assert compiled.tree is not None  # (a compiled query keeps its tree)
        shape = projection(compiled.tree, query, written_columns, sink.name, version)
        metadata = {
            (c.key or c.name.value).lower(): c.name.value
            for c in stream.columns
            if isinstance(c, ast.MetadataColumn)
        }
        if "op" not in metadata:
            raise KeyedSinkError(
                f"the changes of '{stream.name}' carry no operation: a delete would be applied "
                "as an update",
                reference.span,
                hint=f"declare it on {stream.name}: op STRING METADATA FROM 'op'",
            )
        typed = [(c.name.value, c.type) for c in declaration.columns]
        casts = assignments(list(written_columns), typed, shape.spans, sink.name)
        stream_columns = {c.name.value.lower() for c in stream.columns}
        keys = [n.value for n in key.names]
        check_keys(shape, keys, typed, list(written_columns), stream_columns)
        whole = query.span
        lsn = metadata.get("source.lsn")
        source = ast.Name(stream.name.value, reference.span)
        delete = f"{quote(metadata['op'])} = 'd'"
        sequence = quote(lsn) if lsn is not None else ARRIVAL
        if not plain(shape, typed, casts):  # a view of one row per change, read by the flow
            view = _fresh_view(planner.catalog, name)  # type: ignore[attr-defined]
            text = _Whole(
                view_sql(shape, typed, casts, metadata["op"], lsn),
                whole.start,
                whole,
                query.source_map,
            )
            planner._view(ast.Name(view, whole), text, span)  # type: ignore[attr-defined]
            source, delete = ast.Name(view, reference.span), quote(DELETE_COLUMN)
            sequence = quote(SEQUENCE_COLUMN) if lsn is not None else ARRIVAL
        flow = ast.CreateFlow(
            name=ast.Name(name, declaration.name.span),
            target=ast.Name(sink.name, span),
            source=source,
            keys=key.names,
            delete_when=_Whole(delete, whole.start, whole, query.source_map),
            sequence=_Whole(sequence, whole.start, whole, query.source_map),
            columns=tuple(ast.Name(d, whole) for d in declared),
            except_columns=False,
            scd_type=1,
            scd_span=None,
            track=None,
            except_track=False,
            track_span=None,
            span=span,
        )
        planner._plan_flow(flow, arrival=lsn is None, keyed=True)  # type: ignore[attr-defined]


def _check_keyed(statement: ast.CreateSink, resolved) -> ast.CreateSink | None:
    """``statement`` when it declares a ``PRIMARY KEY`` Flink's way, ``None`` without one.

    Raises:
        KeyedSinkError: ``SS109``, columns without a key, a key without ``NOT ENFORCED`` or
            without columns, on a sink that cannot update by key, beside ``mode`` /
            ``key_columns``.
        UnknownNameError: ``SS201``, a key that is not a declared column.
    """
    key = statement.primary_key
    if key is None:
        if statement.columns:
            raise KeyedSinkError(
                "a sink's columns are its query's; declared, they go with a PRIMARY KEY "
                "(Flink's table updated by key)",
                statement.columns[0].span,
                hint="remove the column list, or add PRIMARY KEY (…) NOT ENFORCED",
            )
        return None
    keys = ", ".join(n.value for n in key.names)
    if key.enforced:
        raise KeyedSinkError(
            "a PRIMARY KEY here is not enforced (rows are replaced by key, not checked): "
            "write NOT ENFORCED, as Flink asks",
            key.span,
            hint=f"PRIMARY KEY ({keys}) NOT ENFORCED",
        )
    if not statement.columns:
        raise KeyedSinkError(
            "a PRIMARY KEY names columns of the sink's column list",
            key.span,
            hint=f"declare them: CREATE SINK {statement.name} ({keys} BIGINT, …, "
            f"PRIMARY KEY ({keys}) NOT ENFORCED) WITH (…)",
        )
    connector = resolved.spec.name
    if connector not in CDC_TARGETS:
        raise KeyedSinkError(
            f"a '{connector}' sink appends rows: it cannot be a table updated by PRIMARY KEY",
            key.span,
            hint="write into a 'postgres', 'iceberg' or 'delta' table; or remove the "
            "PRIMARY KEY to append every row",
        )
    given = [o for k, o in resolved.compiler.items() if k in ("mode", "key_columns")]
    if given:
        raise KeyedSinkError(
            f"'{given[0].key}' beside a PRIMARY KEY: the key says how rows are written",
            given[0].key_span,
            hint=f"remove '{given[0].key}' (the PRIMARY KEY is the upsert's key_columns)",
        )
    names = {c.name.value.lower() for c in statement.columns}
    for name in key.names:
        if name.value.lower() not in names:
            raise UnknownNameError(
                f"'{name}' is not a column of sink '{statement.name}'"
                + did_you_mean(name.value, [c.name.value for c in statement.columns]),
                name.span,
                hint="name a declared column in the PRIMARY KEY",
            )
    return statement


def _upsert_options(key: ast.PrimaryKey) -> tuple[ast.Option, ...]:
    """``mode = 'upsert', key_columns = '<key>'``, placed at the ``PRIMARY KEY``."""
    keys = ",".join(n.value for n in key.names)
    return tuple(
        ast.Option(k, v, key.span, key.span, key.span)
        for k, v in (("mode", "upsert"), ("key_columns", keys))
    )


def _changelog(script: ast.Script, catalog, compiled):
    """``(stream declaration, where the query names it)`` when ``compiled`` reads a
    ``debezium-json`` stream, else ``None``.

    Raises:
        KeyedSinkError: ``SS109``, a changelog read through a view or with another relation.
    """
    streams = {
        s.name.value.lower(): s
        for s in script.statements
        if isinstance(s, ast.CreateStream)
        and s.query is None
        and any(o.key.lower() in _FORMAT_KEYS and o.text.lower() == DEBEZIUM for o in s.options)
    }
    read = catalog.closure(compiled.info.relations)
    found = [r for r in read if r.name.lower() in streams]
    if not found:
        return None
    direct = [r for r in compiled.reads if r.name.lower() in streams]
    if len(read) > 1 or not direct:
        where = direct[0].span if direct else compiled.reads[0].span
        raise KeyedSinkError(
            f"a changelog ('{found[0].name}') is applied to a table with a PRIMARY KEY one "
            "change at a time, when the query reads it alone; here it is read with other "
            "relations, deduplicated or through a view",
            where,
            hint="select FROM the changelog stream itself; for a joined or deduplicated "
            "change stream, write CREATE VIEW … and CREATE FLOW … AS AUTO CDC INTO the "
            "sink FROM STREAM(view) (docs/cdc.md)",
        )
    return streams[direct[0].name.lower()], direct[0]


def _fresh_view(catalog, name: str) -> str:
    """``__<name>_changes`` (``_2``, … when taken): the view of one row per change that the
    flow of a computed changelog ``INSERT`` reads (a compiler's view: ``__``)."""
    stem = "__" + re.sub(r"\W", "_", name) + "_changes"
    candidate, number = stem, 1
    while candidate in catalog:
        number += 1
        candidate = f"{stem}_{number}"
    return candidate
