"""Planner: AST → :class:`~sqlstream.plan.Plan`.

Resolves names in file order (a statement sees what was declared before it), checks
connector options (:mod:`sqlstream.connectors`), hands every query body to sqlglot
(:mod:`sqlstream.dialect`, :mod:`sqlstream.rewrite`), propagates schemas from the declared
columns through every view and query (:mod:`sqlstream.schema`: unknown columns and
functions, type errors), picks output modes (:mod:`sqlstream.analysis`,
:mod:`sqlstream.checks`) and assigns query names and checkpoint locations (LANGUAGE.md §5).
Positions from sqlglot are mapped back to the `.ssql` file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import NamedTuple

from sqlglot import exp

from sqlstream import ast, plan
from sqlstream.analysis import QueryInfo, RelationInfo, analyze
from sqlstream.checks import Context, check_query, choose_mode
from sqlstream.connectors import ResolvedOptions, resolve_options
from sqlstream.dialect import node_offsets, parse_expression, parse_query, to_spark_sql
from sqlstream.errors import (
    CompileError,
    OptionError, SemanticError, SqlStreamError, StreamingError, UnknownNameError, did_you_mean,
)
from sqlstream.operators import Operators, collect_operators
from sqlstream.rewrite import duration_text, relation_names, rewrite
from sqlstream.schema import UNKNOWN, Schema, expression_type, query_schema, spark_type

COMPILER_SETTINGS = {"sqlstream.state_dir"}
DEFAULT_STATE_DIR = ".sqlstream/checkpoints"
TIMESTAMP_TYPES = {"TIMESTAMP", "TIMESTAMP_NTZ"}


class _Compiled(NamedTuple):
    """A query body after :meth:`Planner._compile_query`."""

    sql: str  # Spark SQL over the temporary views
    info: QueryInfo
    expression: exp.Expr  # the rewritten tree
    schema: Schema | None  # its output columns; None when they cannot be known


@dataclass
class _Scope:
    relations: dict[str, RelationInfo] = field(default_factory=dict)
    schemas: dict[str, Schema] = field(default_factory=dict)  # only relations whose columns are known
    spans: dict[str, ast.Name] = field(default_factory=dict)
    sinks: dict[str, tuple[plan.Sink, ResolvedOptions]] = field(default_factory=dict)
    query_names: dict[str, ast.Name | plan.Query] = field(default_factory=dict)


class Planner:
    """Builds a :class:`~sqlstream.plan.Plan` from a :class:`~sqlstream.ast.Script`.

    Args:
        script: the parsed file.
        path: the file's path (names the pipeline; relative paths in ``path`` options and
            the default state directory are resolved against its folder), or ``None``.
        state_dir: ``--state-dir`` from the CLI or API; overrides ``SET 'sqlstream.state_dir'``.
        enforce: ``False`` records violations of streaming rules (SS3xx), schema findings
            and watermarks on non-timestamps as warnings and plans the query anyway (used
            to test the rules against Spark itself).
    """

    def __init__(self, script: ast.Script, path: str | None = None, state_dir: str | None = None,
                 enforce: bool = True):
        self.script = script
        self.source = script.source_map.source
        self.path = path
        self.base_dir = os.path.dirname(path) if path else ""
        self.state_dir_override = state_dir
        self.scope = _Scope()
        self.settings: list[tuple[str, str]] = []
        self.setting_spans: list[tuple[str, ast.Span]] = []
        self.relations: list[plan.Relation] = []
        self.pending_queries: list[tuple] = []
        self.findings: list[SqlStreamError] = []
        self.select_count = 0
        self.enforce = enforce
        self.view_operators: dict[str, Operators] = {}
        self.source_connectors: dict[str, frozenset[str]] = {}
        self.node_texts: dict[int, ast.SqlText] = {}

    # ---- entry point
    def build(self) -> plan.Plan:
        """Return the plan, with its warnings in ``Plan.warnings``.

        Every statement is planned even after an error in an earlier one (a name whose
        declaration failed is still known, so one mistake is reported once).

        Raises:
            SqlStreamError: the only error found, or :class:`CompileError` holding all.
        """
        for statement in self.script.statements:
            try:
                getattr(self, "_" + type(statement).__name__)(statement)
            except SqlStreamError as error:
                self.findings.append(error.with_source(self.source))
                self._poison(statement)
        self.findings.sort(key=lambda f: f.span.start if f.span is not None else -1)
        errors = [f for f in self.findings if f.severity == "error"]
        if errors:
            raise errors[0] if len(self.findings) == 1 else CompileError(self.findings)
        state_dir = self._state_dir()
        name = PurePath(self.path).stem if self.path else "pipeline"
        queries = tuple(self._finish_query(state_dir, name, *q) for q in self.pending_queries)
        return plan.Plan(
            name=name,
            source=self.source,
            settings=tuple(self.settings),
            relations=tuple(self.relations),
            queries=queries,
            state_dir=state_dir,
            setting_spans=tuple(self.setting_spans),
            warnings=tuple(f for f in self.findings if f.severity == "warning"),
        )

    def warn(self, error: SqlStreamError) -> None:
        """Record a warning (it does not stop the plan)."""
        error.severity = "warning"
        self.findings.append(error.with_source(self.source))

    def _poison(self, statement) -> None:
        """After a failed declaration, know its name anyway so later uses are not errors."""
        name = getattr(statement, "name", None)
        if isinstance(statement, (ast.CreateStream, ast.CreateTable, ast.CreateView)):
            self.scope.relations.setdefault(name.value.lower(), RelationInfo(True, poisoned=True))
            self.scope.spans.setdefault(name.value.lower(), name)
        if isinstance(statement, ast.CreateSink) or (
            isinstance(statement, ast.CreateStream) and statement.query is not None
        ):
            self.scope.sinks.setdefault(name.value.lower(), None)

    # ---- statements
    def _SetStatement(self, statement: ast.SetStatement) -> None:
        option = statement.option
        key = option.key
        if key.lower().startswith("sqlstream.") and key.lower() not in COMPILER_SETTINGS:
            raise OptionError(
                f"unknown setting '{key}'{did_you_mean(key, COMPILER_SETTINGS)}",
                option.key_span, hint=f"compiler settings: {', '.join(sorted(COMPILER_SETTINGS))}",
            )
        self.settings.append((key, option.text))
        self.setting_spans.append((key, statement.span))

    def _CreateStream(self, statement: ast.CreateStream) -> None:
        if statement.query is not None:
            self._derived_stream(statement)
            return
        self._declare(statement.name)
        resolved = self._options(statement.options, self.source, "source", statement.name,
                                   statement.span)
        relation = self._source_relation(statement, resolved, bounded=False)
        self.relations.append(relation)
        watermarks = frozenset({relation.watermark.column.lower()} if relation.watermark else ())
        self.scope.relations[statement.name.value.lower()] = RelationInfo(True, watermarks)
        self.source_connectors[statement.name.value.lower()] = frozenset({relation.connector})

    def _CreateTable(self, statement: ast.CreateTable) -> None:
        self._declare(statement.name)
        resolved = self._options(statement.options, self.source, "table", statement.name,
                                   statement.span)
        self.relations.append(self._source_relation(statement, resolved, bounded=True))
        self.scope.relations[statement.name.value.lower()] = RelationInfo(False)

    def _CreateView(self, statement: ast.CreateView) -> None:
        self._declare(statement.name)
        compiled = self._compile_query(statement.query)
        self.relations.append(plan.SqlView(statement.name.value, compiled.sql, statement.span,
                                           compiled.schema))
        self._remember_view(statement.name.value, compiled, statement.query)

    def _remember_view(self, name: str, compiled: _Compiled, text: ast.SqlText) -> None:
        key = name.lower()
        self.scope.relations[key] = _relation_info(compiled.info)
        if compiled.schema is not None:
            self.scope.schemas[key] = compiled.schema
        self.view_operators[key] = self._operators(compiled.expression, compiled.info, text)
        self.source_connectors[key] = self._connectors_of(compiled.info.relations)

    def _CreateSink(self, statement: ast.CreateSink) -> None:
        key = statement.name.value.lower()
        if key in self.scope.sinks:
            raise UnknownNameError(f"sink '{statement.name}' is already declared",
                                   statement.name.span, code="SS204",
                                   hint="rename one of the sinks")
        resolved = self._options(statement.options, self.source, "sink", statement.name,
                                   statement.span)
        self.scope.sinks[key] = (self._sink(statement.name.value, resolved, statement.span), resolved)
        if statement.query is not None:
            self._insert(statement.name, statement.query, statement.emit, statement.span)

    def _Insert(self, statement: ast.Insert) -> None:
        self._insert(statement.sink, statement.query, statement.emit, statement.span)

    def _Select(self, statement: ast.Select) -> None:
        self.select_count += 1
        name = f"select_{self.select_count}"
        resolved = self._options(
            (ast.Option("connector", "console", statement.span, statement.span, statement.span),),
            self.source, "sink", ast.Name(name, statement.span), statement.span,
        )
        sink = self._sink(name, resolved, statement.span)
        self._add_query(name, sink, resolved, statement.query, statement.emit, statement.span,
                        name_span=statement.span)

    def _derived_stream(self, statement: ast.CreateStream) -> None:
        """``CREATE STREAM name WITH (sink options) AS SELECT``: a view plus a query into the sink."""
        if statement.columns or statement.watermark:
            raise SemanticError(
                "CREATE STREAM … AS SELECT takes no column list: its columns are the query's",
                statement.columns[0].span if statement.columns else statement.watermark.span,
                hint="remove the column list; put a WATERMARK clause in the query (FROM t WATERMARK …)",
            )
        if not statement.options:
            raise OptionError(
                f"CREATE STREAM {statement.name} AS SELECT needs WITH (connector = …) naming "
                "where the stream is written", statement.span,
                hint="for a derived relation that is not written anywhere, use CREATE VIEW",
            )
        self._declare(statement.name)
        resolved = self._options(statement.options, self.source, "sink", statement.name,
                                   statement.span)
        sink = self._sink(statement.name.value, resolved, statement.span)
        self.scope.sinks[statement.name.value.lower()] = (sink, resolved)
        compiled = self._compile_query(statement.query)
        self.relations.append(plan.SqlView(statement.name.value, compiled.sql, statement.span,
                                           compiled.schema))
        self._remember_view(statement.name.value, compiled, statement.query)
        self._add_query(statement.name.value, sink, resolved, statement.query, statement.emit,
                        statement.span, name_span=statement.name.span)

    def _options(self, *args) -> ResolvedOptions:
        """:func:`~sqlstream.connectors.resolve_options`, recording its warnings."""
        resolved = resolve_options(*args)
        for warning in resolved.warnings:
            self.warn(warning)
        return resolved

    # ---- helpers: declarations
    def _declare(self, name: ast.Name) -> None:
        key = name.value.lower()
        if key in self.scope.spans:
            first = self.scope.spans[key].span
            raise UnknownNameError(
                f"'{name}' is already declared (line {first.line})", name.span, code="SS204",
                hint="streams, tables and views share one namespace: rename one of them",
            )
        self.scope.spans[key] = name

    def _resolve_path(self, value: str | None) -> str | None:
        if value is None or "://" in value or os.path.isabs(value) or not self.base_dir:
            return value
        return os.path.normpath(os.path.join(self.base_dir, value))

    def _source_relation(self, statement, resolved: ResolvedOptions, bounded: bool) -> plan.SourceRelation:
        spec = resolved.spec
        infer = str(resolved.get("infer_schema", "false")).lower() == "true"
        physical = [c for c in statement.columns if isinstance(c, ast.ColumnDef)]
        metadata = [c for c in statement.columns if isinstance(c, ast.MetadataColumn)]
        computed = [c for c in statement.columns if isinstance(c, ast.ComputedColumn)]
        kind = "table" if bounded else "stream"
        if spec.fixed_schema is None and not physical and not infer:
            raise SemanticError(
                f"{kind} '{statement.name}' needs a schema: connector '{spec.name}' does not fix one",
                statement.name.span,
                hint="declare the columns, e.g. (carrier STRING, time_hour TIMESTAMP), "
                "or add infer_schema = true",
            )
        if spec.fixed_schema is not None and physical:
            fixed = {n.lower(): t for n, t in spec.fixed_schema}
            for column in physical:
                if column.name.value.lower() not in fixed:
                    raise UnknownNameError(
                        f"connector '{spec.name}' has no column '{column.name}'"
                        + did_you_mean(column.name.value, fixed)
                        + f" (its columns: {', '.join(n for n, _ in spec.fixed_schema)})",
                        column.name.span,
                        hint=f"'{spec.name}' fixes its schema: declare only its columns, or leave "
                        "the column list out",
                    )
        for column in metadata:
            key = (column.key or column.name.value).lower()
            if key not in spec.metadata:
                raise UnknownNameError(
                    f"connector '{spec.name}' has no metadata '{key}'"
                    + did_you_mean(key, spec.metadata)
                    + (f" (available: {', '.join(spec.metadata)})" if spec.metadata else ""),
                    column.span,
                    hint="write METADATA FROM '<key>' with one of the connector's keys"
                    if spec.metadata else f"connector '{spec.name}' has no metadata columns: remove it",
                )
        types = {c.name.value.lower(): c.type for c in physical + metadata}
        if spec.fixed_schema is not None:
            types.update({n.lower(): t for n, t in spec.fixed_schema if not physical})
        columns = self._columns(statement, spec.fixed_schema if not physical else None)
        if columns is not None:
            self.scope.schemas[statement.name.value.lower()] = columns
        computed_types = {c.name.value.lower(): UNKNOWN for c in computed}
        computed_types.update({n.lower(): t for n, t in columns or () if n.lower() in computed_types})
        watermark = self._watermark(statement, types, computed_types)
        schema = None
        if spec.fixed_schema is None and physical:
            schema = ", ".join(f"{_quote(c.name.value)} {c.type}" for c in physical)
        projection: tuple[str, ...] = ()
        if metadata or computed or (spec.fixed_schema is not None and physical):
            items = []
            for column in statement.columns:
                if isinstance(column, ast.ColumnDef):
                    items.append(_quote(column.name.value))
                elif isinstance(column, ast.MetadataColumn):
                    expr, _ = spec.metadata[(column.key or column.name.value).lower()]
                    items.append(f"CAST({expr} AS {column.type}) AS {_quote(column.name.value)}")
                else:
                    items.append(f"{column.expression.text} AS {_quote(column.name.value)}")
            if not physical and spec.fixed_schema is None:
                items.insert(0, "*")
            elif not physical:
                items[:0] = [_quote(n) for n, _ in spec.fixed_schema]
            projection = tuple(items)
        fmt = spec.source_format
        path = resolved.get("path")
        if spec.name == "files":
            fmt = resolved.get("format").lower()
            path = self._resolve_path(path)
        elif spec.name == "table":
            fmt, path = None, resolved.get("table")
        return plan.SourceRelation(
            name=statement.name.value, bounded=bounded, connector=spec.name, format=fmt,
            path=path, options=resolved.spark, schema=schema, infer_schema=infer,
            projection=projection, watermark=watermark, span=statement.span, columns=columns,
            watermark_first=bool(projection and watermark and not metadata
                                 and watermark.column.lower() in types),
        )

    def _columns(self, statement, fixed) -> Schema | None:
        """The columns a stream or table shows to queries, in order: the fixed connector
        columns (when none are declared), the declared, metadata and computed ones; ``None``
        when they are only known at run time (``infer_schema``). Computed columns are typed
        (and checked) over the others and the computed columns before them."""
        known = fixed is not None or any(isinstance(c, ast.ColumnDef) for c in statement.columns)
        columns: list[tuple[str, str]] = list(fixed or ())
        declared = [(c.name.value, spark_type(c.type)) for c in statement.columns
                    if not isinstance(c, ast.ComputedColumn)]
        for column in statement.columns:
            if isinstance(column, ast.ComputedColumn):
                tree = self._parse_expression(column.expression)
                if not known:
                    continue
                visible = tuple(declared + [c for c in columns if c not in declared])
                kind, findings = expression_type(tree, visible, sql=column.expression.text)
                for finding in findings:
                    self._record(finding, column.expression)
                columns.append((column.name.value, kind))
            else:
                columns.append((column.name.value, spark_type(column.type)))
        return tuple(columns) if known else None

    def _record(self, finding: SqlStreamError, text: ast.SqlText | None = None) -> None:
        """Record a finding that does not stop the plan (a rule, type or name finding),
        positioned in ``text`` if it has only offsets; a lenient planner records it as a
        warning, so Spark itself can be asked."""
        if not self.enforce:
            finding.severity = "warning"
        if text is not None:
            finding = self._locate(finding, text)
        self.findings.append(finding.with_source(self.source))

    def _watermark(self, statement, types: dict[str, str], computed: dict[str, str]) -> plan.Watermark | None:
        definition: ast.WatermarkDef | None = getattr(statement, "watermark", None)
        if definition is None:
            return None
        column = definition.column.value
        key = column.lower()
        if key not in types and key not in computed:
            raise UnknownNameError(
                f"watermark column '{column}' is not a column of '{statement.name}'"
                + did_you_mean(column, list(types) + sorted(computed)), definition.column.span,
                hint="WATERMARK FOR names a TIMESTAMP column declared in this statement's column list",
            )
        # Spark: withWatermark on another type fails with "Event time must be defined on a
        # window or a timestamp" (EventTimeWatermark); recorded, so a lenient plan asks Spark.
        if key in types and types[key] not in TIMESTAMP_TYPES:
            self._record(SemanticError(
                f"watermark column '{column}' has type {types[key]}; it must be a TIMESTAMP",
                definition.column.span,
                hint=f"declare {column} TIMESTAMP, or add a computed column "
                f"CAST({column} AS TIMESTAMP) and put the watermark on it",
            ))
        if computed.get(key, UNKNOWN) not in (*TIMESTAMP_TYPES, UNKNOWN):
            self._record(SemanticError(
                f"watermark column '{column}' is computed as {computed[key]}; it must be a TIMESTAMP",
                definition.column.span,
                hint=f"compute {column} AS CAST(… AS TIMESTAMP) or with to_timestamp(…)",
            ))
        expression = self._parse_expression(definition.expression)
        valid = (
            isinstance(expression, exp.Sub)
            and isinstance(expression.this, exp.Column)
            and expression.this.name.lower() == key
            and isinstance(expression.expression, exp.Interval)
        )
        if not valid:
            raise SemanticError(
                f"a watermark is written '{column} - INTERVAL …'", definition.expression.span,
                hint=f"for example: WATERMARK FOR {column} AS {column} - INTERVAL '1' MINUTE",
            )
        delay = duration_text(expression.expression)
        if delay is None:
            raise SemanticError(
                "the watermark delay must be a constant interval", definition.expression.span,
                hint="for example: INTERVAL '10' SECONDS",
            )
        return plan.Watermark(column, delay, definition.span)

    # ---- helpers: SQL
    def _parse_expression(self, text: ast.SqlText) -> exp.Expression:
        try:
            return parse_expression(text.text)
        except SqlStreamError as error:
            raise self._locate(error, text) from None

    @staticmethod
    def _locate(error: SqlStreamError, text: ast.SqlText) -> SqlStreamError:
        if error.span is None:
            start = getattr(error, "offset_start", None)
            end = getattr(error, "offset_end", None)
            error.span = text.locate(start, end) if start is not None else text.span
        return error

    def _compile_query(self, text: ast.SqlText) -> _Compiled:
        """Parse, check names, propagate the schema (its findings are recorded, the plan
        goes on), rewrite and analyse a query body.

        Raises:
            SqlStreamError: a syntax error, an unknown relation, a query that reads no stream.
        """
        try:
            expression = parse_query(text.text)
            for name, start, end in relation_names(expression):
                if name.lower() not in self.scope.relations:
                    raise UnknownNameError(
                        f"unknown relation '{name}'{did_you_mean(name, self.scope.relations)}",
                        text.locate(start, end),
                        hint="declare it with CREATE STREAM, CREATE TABLE or CREATE VIEW "
                        "before this statement",
                    )
            schema, findings = query_schema(expression, self.scope.schemas, sql=text.text)
            for finding in findings:
                self._record(finding, text)
            expression = rewrite(expression)
        except SqlStreamError as error:
            raise self._locate(error, text) from None
        info = analyze(expression, self.scope.relations)
        if not info.streaming:
            raise StreamingError(
                "this query reads no stream: it reads only tables", text.span,
                hint="a streaming query must read at least one CREATE STREAM relation",
            )
        return _Compiled(to_spark_sql(expression), info, expression, schema)

    # ---- helpers: sinks and queries
    def _sink(self, name: str, resolved: ResolvedOptions, span) -> plan.Sink:
        spec = resolved.spec
        fmt, path = spec.sink_format, None
        if spec.name == "files":
            fmt, path = resolved.get("format").lower(), self._resolve_path(resolved.get("path"))
        elif spec.name == "table":
            fmt, path = None, resolved.get("table")
        partition_by = tuple(
            p.strip() for p in (resolved.get("partition_by") or "").split(",") if p.strip()
        )
        return plan.Sink(name, spec.name, fmt, path, resolved.spark, partition_by,
                         spec.durable, span)

    def _insert(self, sink_name: ast.Name, query: ast.SqlText, emit, span) -> None:
        key = sink_name.value.lower()
        if key not in self.scope.sinks:
            raise UnknownNameError(
                f"unknown sink '{sink_name}'{did_you_mean(sink_name.value, self.scope.sinks)}",
                sink_name.span, hint="declare it first with CREATE SINK … WITH (connector = …)",
            )
        if self.scope.sinks[key] is None:  # its declaration failed: still check the query
            self._compile_query(query)
            return
        sink, resolved = self.scope.sinks[key]
        self._add_query(sink.name, sink, resolved, query, emit, span, name_span=sink_name.span)

    def _add_query(self, default_name, sink, resolved, query, emit, span, name_span) -> None:
        name = resolved.get("query_name") or default_name
        if name.lower() in self.scope.query_names:
            raise UnknownNameError(
                f"a query named '{name}' already writes to this pipeline (one query per sink)",
                name_span, code="SS204",
                hint="give the sink its own CREATE SINK, or set query_name",
            )
        self.scope.query_names[name.lower()] = name_span
        sql, info, expression, columns = self._compile_query(query)
        if any(self.scope.relations[r].poisoned for r in info.relations if r in self.scope.relations):
            return  # reads a relation whose declaration failed: its mode cannot be known
        ops = self._operators(expression, info, query)
        requested = emit.output_mode if emit else None
        mode, reason, findings = choose_mode(info, ops, requested, sink.connector,
                                             resolved.spec.sink_modes)
        trigger = None
        if emit is not None and emit.trigger is not None:
            trigger = plan.Trigger(emit.trigger.kind, emit.trigger.interval)
        if mode is not None:
            context = Context(info, ops, mode, requested is not None, sink.connector,
                              resolved.spec.sink_modes, trigger.kind if trigger else None,
                              self._connectors_of(info.relations))
            findings += check_query(context)
        for finding in findings:
            self._report(finding, query, emit)
        if mode is None:
            if self.enforce:
                return
            mode, reason = "append", "not checked"
        checkpoint = resolved.get("checkpoint_location")
        self.pending_queries.append(
            (name, sink, sql, mode, reason, trigger, self._resolve_path(checkpoint), span, columns)
        )

    def _operators(self, expression, info, text: ast.SqlText) -> Operators:
        """The query's operators plus those of the views it reads (Spark checks the whole
        plan); remembers where each node was written, for messages."""
        ops = collect_operators(expression, self.scope.relations)
        self._register_nodes(ops, text)
        inherited = [self.view_operators[r] for r in sorted(info.relations) if r in self.view_operators]
        for view in inherited:
            ops = ops.merged(view)
        return ops

    def _register_nodes(self, ops: Operators, text: ast.SqlText) -> None:
        nodes = [ops.limit, ops.order, ops.distinct, ops.window_function, ops.global_session]
        for node in nodes + [j.node for j in ops.joins]:
            if node is not None:
                self.node_texts.setdefault(id(node), text)

    def _connectors_of(self, relations) -> frozenset[str]:
        found: set[str] = set()
        for name in relations:
            found |= self.source_connectors.get(name, frozenset())
        return frozenset(found)

    def _report(self, finding, query: ast.SqlText, emit) -> None:
        """Record a rule finding at its position (lenient planners record errors as warnings)."""
        span = query.span
        if finding.node is not None:
            text = self.node_texts.get(id(finding.node), query)
            offsets = node_offsets(finding.node)
            span = text.locate(*offsets) if offsets else text.span
        elif finding.at == "emit" and emit is not None:
            span = emit.span
        self._record(StreamingError(finding.message, span, self.source, finding.hint,
                                    code=finding.code, severity=finding.severity))

    def _state_dir(self) -> str:
        if self.state_dir_override:
            return self.state_dir_override
        for key, value in reversed(self.settings):
            if key.lower() == "sqlstream.state_dir":
                return self._resolve_path(value)
        return self._resolve_path(DEFAULT_STATE_DIR) or DEFAULT_STATE_DIR

    def _finish_query(self, state_dir, pipeline, name, sink, sql, mode, reason, trigger,
                      checkpoint, span, columns) -> plan.Query:
        if checkpoint is None and sink.durable:
            checkpoint = os.path.join(state_dir, pipeline, name)
        return plan.Query(name, sql, sink, mode, reason, trigger, checkpoint, span, columns)


def _relation_info(info) -> RelationInfo:
    """What later statements need to know of a view defined by a query with ``info``."""
    return RelationInfo(info.streaming, info.watermarks, info.aggregate, info.watermarked_key,
                        info.session_window)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def build_plan(script: ast.Script, path: str | None = None, state_dir: str | None = None,
               enforce: bool = True) -> plan.Plan:
    """Build the :class:`~sqlstream.plan.Plan` of a parsed file (see :class:`Planner`).

    Raises:
        SqlStreamError: the first problem found (unknown names, bad options, invalid SQL,
            an output mode Spark would refuse), with its position in the file.
    """
    return Planner(script, path, state_dir, enforce).build()
