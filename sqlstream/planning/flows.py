"""``CREATE FLOW … AS AUTO CDC INTO …`` (docs/cdc.md#auto-cdc) planned as one streaming query.

The flow reads its stream (``FROM STREAM(s)``) and writes, per micro-batch, the changes it
carries into the target sink through the change applier
(:mod:`sqlstream.connectors.cdc.cdc_apply`). The query the plan holds selects the target's
columns, the sequence and whether the change is a delete::

    SELECT `id`, `name`, `city`, (seq) AS `__sqlstream_sequence`,
           coalesce((op = 'd'), false) AS `__sqlstream_delete`
    FROM `customer_changes`
    WHERE <key and sequence not NULL>      -- else raise_error (on_error = 'fail')

What the flow means is Spark 4.3's ``AUTO CDC`` (declarative pipelines; Databricks'
``APPLY CHANGES``); what the applier does with it is in :mod:`sqlstream.connectors.cdc.cdc_apply`.
The target's settings carry the flow (``auto_cdc``: its keys, columns, SCD type, tracked
columns, as JSON) for the connector's lowering. Rules checked here, without a JVM: the
stream exists and is streaming (``SS294``), keys and columns are its columns (``SS201``),
the sequence is an orderable type and the delete condition a ``BOOLEAN`` (``SS291``), the
target can take row-level changes (``SS292``), ``SCD TYPE`` is 1 or 2 and ``TRACK HISTORY``
goes with type 2 (``SS293``).
"""

from __future__ import annotations

import json
from dataclasses import replace

from sqlstream.analysis.schema import UNKNOWN, expression_type
from sqlstream.diagnostics.errors import SqlStreamError, UnknownNameError, did_you_mean
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.frontend.literals import string_literal as literal

SEQUENCE, DELETE = "__sqlstream_sequence", "__sqlstream_delete"
CDC_TARGETS = ("postgres", "jdbc", "iceberg", "delta")
"""Connectors whose sink takes row-level changes (``iceberg`` and ``delta`` join when their
connectors have an applier target)."""
_UNORDERED = ("ARRAY", "MAP", "STRUCT", "VARIANT", "BINARY", "BOOLEAN")


class FlowError(SqlStreamError):
    """An ``AUTO CDC`` flow that cannot run (SS291–SS294)."""

    code = "SS291"


class _Whole(ast.SqlText):
    """The generated query of a flow: every finding in it is at the flow statement."""

    def locate(self, start: int, end: int | None = None) -> ast.Span:
        return self.span


class FlowPlanning:
    """The planner's ``CREATE FLOW`` (mixed into :class:`~sqlstream.planning.planner.Planner`,
    whose catalog, compile path and query list it uses)."""

    def _CreateFlow(self, statement: ast.CreateFlow) -> None:
        self._plan_flow(statement)

    def _plan_flow(
        self, statement: ast.CreateFlow, arrival: bool = False, keyed: bool = False
    ) -> None:
        """Plan ``statement`` as a query whose ``foreachBatch`` applies its changes.

        Args:
            statement: the flow as written, or as the planner spells Flink's changelog
                ``INSERT`` into a sink with a ``PRIMARY KEY``
                (:mod:`sqlstream.planning.changelog_sinks`).
            arrival: the changes are ordered by their arrival, not by a column: the applier
                numbers them (batch id, place in the batch), ``sequence`` is not read.
            keyed: the flow is that ``INSERT`` (one ``INSERT`` into the sink is its own).
        """
        planner = self  # the Planner this is mixed into
        catalog = planner.catalog  # type: ignore[attr-defined]
        relation = catalog.get(statement.source.value)
        if relation is None:
            raise UnknownNameError(
                f"unknown stream '{statement.source}'"
                + did_you_mean(statement.source.value, catalog.names(hidden=False)),
                statement.source.span,
                hint="declare it first with CREATE STREAM … WITH (format = 'debezium-json', …)",
            )
        if relation.poisoned:
            return
        if not relation.info.streaming:
            raise FlowError(
                f"'{statement.source}' is a {relation.kind} read once, not a stream: AUTO CDC "
                "applies a stream of changes",
                statement.source.span,
                code="SS294",
                hint="read the change log with CREATE STREAM",
            )
        columns = relation.columns
        if columns is None:
            raise FlowError(
                f"the columns of '{statement.source}' are known only at run time",
                statement.source.span,
                code="SS294",
                hint="declare the stream's columns (no infer_schema)",
            )
        types = {n.lower(): (n, t) for n, t in columns}
        target_columns = self._flow_columns(statement, types)
        self._flow_expression(statement.sequence, columns, "sequence")
        if statement.delete_when is not None:
            kind = self._flow_expression(statement.delete_when, columns, "delete")
            if kind not in ("BOOLEAN", UNKNOWN):
                raise FlowError(
                    f"APPLY AS DELETE WHEN is {kind}, not a condition (BOOLEAN)",
                    statement.delete_when.span,
                    hint="for example: APPLY AS DELETE WHEN op = 'd'",
                )
        for key in statement.keys:
            kind = types[key.value.lower()][1]
            if kind.split("<")[0].split("(")[0] in _UNORDERED:
                raise FlowError(
                    f"key column '{key}' is {kind}: keys are compared and ordered",
                    key.span,
                    hint="key by atomic columns (numbers, strings, dates, timestamps)",
                )
        tracked = self._flow_tracked(statement, target_columns)
        entry = catalog.sink(statement.target.value)
        if entry is None:
            raise UnknownNameError(
                f"unknown sink '{statement.target}'"
                + did_you_mean(statement.target.value, catalog.sink_names()),
                statement.target.span,
                hint="declare the table first: CREATE SINK name WITH (connector = 'postgres', …)",
            )
        if entry.sink is None or entry.options is None:
            return
        sink, resolved = entry.sink, entry.options
        if sink.connector not in CDC_TARGETS:
            raise FlowError(
                f"sink '{statement.target}' ({sink.connector}) cannot take row-level changes: "
                "AUTO CDC updates and deletes rows by key",
                statement.target.span,
                code="SS292",
                hint="apply the changes to a 'postgres', 'iceberg' or 'delta' table; write the "
                "change events themselves with INSERT INTO",
            )
        inserts = planner.insert_counts[sink.name.lower()] - keyed  # type: ignore[attr-defined]
        written = inserts > 0 or any(
            q.sink.name.lower() == sink.name.lower()
            for q in planner.queries  # type: ignore[attr-defined]
        )
        if written:
            raise FlowError(
                f"sink '{statement.target}' is written by another query: the flow replaces its "
                "rows by key, and another writer's rows would be replaced or kept at random",
                statement.target.span,
                code="SS292",
                hint="give the flow a table of its own (a CREATE SINK for it)",
            )
        given = [o for k, o in resolved.compiler.items() if k in ("mode", "key_columns")]
        if given:
            raise FlowError(
                f"'{given[0].key}' on the target of an AUTO CDC flow: the flow's KEYS say how "
                "rows are replaced",
                given[0].key_span,
                code="SS292",
                hint=f"remove '{given[0].key}' from sink '{statement.target}'",
            )
        flow = {
            "keys": [types[k.value.lower()][0] for k in statement.keys],
            "columns": target_columns,
            "scd_type": statement.scd_type,
            "tracked": tracked,
            "sequence": SEQUENCE,
            "delete": DELETE,
            **({"arrival": True} if arrival else {}),
        }
        sink = replace(  # the applier replaces rows by the flow's keys: no mode of the sink's
            sink,
            options=tuple((k, v) for k, v in sink.options if k not in ("mode", "key_columns")),
            settings=(*sink.settings, ("auto_cdc", json.dumps(flow))),
        )
        text = self._flow_query(statement, relation, target_columns)
        name = statement.name.value
        catalog.claim_query_name(name, statement.name.span)
        compiled = planner._compile(text, name)  # type: ignore[attr-defined]
        planner._add_query(name, sink, resolved, compiled, None, statement.span)  # type: ignore[attr-defined]

    # ---- helpers
    def _flow_columns(self, statement: ast.CreateFlow, types: dict) -> list[str]:
        """The target's columns, in the stream's order: ``COLUMNS a, b`` (the keys added
        first when left out), every column but ``* EXCEPT (…)``, or every column.

        Raises:
            UnknownNameError: ``SS201``, a key or listed column the stream does not have.
            FlowError: ``SS291``, a key left out by ``EXCEPT``.
        """
        listed = (*statement.keys, *(statement.columns or ()), *(statement.track or ()))
        for name in listed:
            if name.value.lower() not in types:
                raise UnknownNameError(
                    f"'{name}' is not a column of stream '{statement.source}'"
                    + did_you_mean(name.value, [n for n, _ in types.values()]),
                    name.span,
                    hint=f"its columns: {', '.join(n for n, _ in types.values())}",
                )
        keys = [k.value.lower() for k in statement.keys]
        if statement.columns is None:
            chosen = list(types)
        elif statement.except_columns:
            left = {c.value.lower() for c in statement.columns}
            for key in statement.keys:
                if key.value.lower() in left:
                    raise FlowError(
                        f"key column '{key}' is left out by COLUMNS * EXCEPT",
                        next(c.span for c in statement.columns if c.value.lower() in keys),
                        hint="the target keeps its key columns: remove it from EXCEPT",
                    )
            chosen = [n for n in types if n not in left]
        else:
            named = {c.value.lower() for c in statement.columns}
            chosen = [n for n in types if n in named or n in keys]
        return [types[n][0] for n in chosen]

    def _flow_expression(self, text: ast.SqlText, columns, what: str) -> str:
        """The type of the sequence or delete condition over the stream's columns; its
        findings recorded at their place.

        Raises:
            FlowError: ``SS291``, a sequence that is not orderable.
        """
        planner = self
        kind, findings = expression_type(text.text, columns, None, planner.context)  # type: ignore[attr-defined]
        for finding in findings:
            planner._record(finding, text)  # type: ignore[attr-defined]
        if what == "sequence" and kind.split("<")[0].split("(")[0] in _UNORDERED:
            raise FlowError(
                f"SEQUENCE BY is {kind}: the sequence orders the changes of a key",
                text.span,
                hint="sequence by a number, a string, a date or a timestamp "
                "(e.g. METADATA FROM 'source.lsn' or 'ts_ms')",
            )
        return kind

    def _flow_tracked(self, statement: ast.CreateFlow, target: list[str]) -> list[str]:
        """The columns whose change opens a version (SCD type 2): ``TRACK HISTORY ON a, b``,
        every non-key target column but ``* EXCEPT (…)``, or every non-key column.

        Raises:
            FlowError: ``SS293``, a type other than 1 or 2, ``TRACK HISTORY`` with type 1, a
                tracked column that the target does not keep.
        """
        if statement.scd_type not in (1, 2):
            assert statement.scd_span is not None  # (written: the default is 1)
            raise FlowError(
                "STORED AS SCD TYPE is 1 or 2",
                statement.scd_span,
                code="SS293",
                hint="SCD TYPE 1 keeps the latest row of each key, SCD TYPE 2 every version",
            )
        if statement.track is not None and statement.scd_type != 2:
            assert statement.track_span is not None  # (the clause is written)
            raise FlowError(
                "TRACK HISTORY goes with STORED AS SCD TYPE 2: type 1 keeps no history",
                statement.track_span,
                code="SS293",
                hint="write STORED AS SCD TYPE 2 before it, or remove it",
            )
        keys = {k.value.lower() for k in statement.keys}
        kept = {c.lower(): c for c in target}
        for name in statement.track or ():
            if name.value.lower() not in kept:
                raise FlowError(
                    f"tracked column '{name}' is not a column of the target",
                    name.span,
                    code="SS293",
                    hint=f"the target's columns: {', '.join(target)}",
                )
        others = [c for c in target if c.lower() not in keys]
        if statement.track is None:
            return others if statement.scd_type == 2 else []
        named = {n.value.lower() for n in statement.track}
        if statement.except_track:
            return [c for c in others if c.lower() not in named]
        return [c for c in others if c.lower() in named]

    def _flow_query(self, statement: ast.CreateFlow, relation, columns: list[str]) -> ast.SqlText:
        """The query of the flow (this module's docstring), as a text positioned at the
        statement. Rows with a ``NULL`` key or sequence are malformed: the stream's
        ``on_error`` ``fail`` (its default) stops the query with ``raise_error``, ``drop``
        and ``dead_letter`` leave them out."""
        delete = (
            f"coalesce(({statement.delete_when.text}), false)"
            if statement.delete_when is not None
            else "false"
        )
        nulls = " OR ".join(
            [f"{quote(k.value)} IS NULL" for k in statement.keys]
            + [f"({statement.sequence.text}) IS NULL"]
        )
        decoding = relation.source.decoding if relation.source is not None else None
        if decoding is None:
            message = literal(
                f"malformed: a change of '{statement.source}' with a NULL key or sequence "
                f"(flow {statement.name})"
            )
            where = f"CASE WHEN {nulls} THEN raise_error({message}) ELSE true END"
        else:
            where = f"NOT ({nulls})"
        sql = (
            f"SELECT {', '.join(quote(c) for c in columns)}, "
            f"({statement.sequence.text}) AS {quote(SEQUENCE)}, {delete} AS {quote(DELETE)} "
            f"FROM {quote(statement.source.value)} WHERE {where}"
        )
        span = statement.span
        return _Whole(sql, span.start, span, statement.sequence.source_map)
