"""Declared relations: what ``CREATE STREAM`` / ``CREATE TABLE`` read, as a plan step.

:class:`SourceDeclaration` turns a declaration and its resolved connector options
(:mod:`sqlstream.connectors`) into a :class:`~sqlstream.ir.plan.SourceRelation`: the Spark
schema of the declared columns, the projection that adds metadata and computed columns
(typed with :func:`sqlstream.analysis.schema.expression_type`), the watermark (Spark guide,
*Handling Late Data and Watermarking*; ``DataFrame.withWatermark``) and the columns later
statements see.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlglot import exp

from sqlstream.analysis.facts import NONDETERMINISTIC, RelationInfo, function_name
from sqlstream.analysis.schema import UNKNOWN, Schema, expression_type, spark_type
from sqlstream.connectors import ResolvedOptions, lakehouse_source
from sqlstream.diagnostics.errors import (
    ForeignSpellingError,
    SemanticError,
    SqlStreamError,
    UnknownNameError,
    did_you_mean,
)
from sqlstream.frontend import ast
from sqlstream.frontend.literals import duration_problem
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.ir import plan
from sqlstream.ir.caches import CompileCaches
from sqlstream.ir.context import CompileContext
from sqlstream.planning.expectations import plan_expectations
from sqlstream.sql.foreign import is_proctime
from sqlstream.sql.parsing import node_offsets, parse_expression
from sqlstream.sql.rewrite import duration_text

TIMESTAMP_TYPES = {"TIMESTAMP", "TIMESTAMP_NTZ"}


def source_info(relation: plan.SourceRelation, caches: CompileCaches | None) -> RelationInfo:
    """What the streaming rules know of a declared source (:class:`RelationInfo`): whether
    it is a stream, its watermarked column and its processing-time columns — the computed
    columns whose value differs from run to run (``pt AS PROCTIME()``, ``current_timestamp()``,
    ``rand()``: :data:`~sqlstream.analysis.facts.NONDETERMINISTIC`), found in its projection.

    Args:
        relation: the source's plan step.
        caches: the compile context's stores (parses of the projection's expressions).
    """
    watermarks = frozenset({relation.watermark.column.lower()} if relation.watermark else ())
    processing_time = set()
    for item in relation.projection:
        try:
            tree = parse_expression(item, caches)
        except SqlStreamError:  # (the compiler's own text; a finding was recorded)
            continue
        if isinstance(tree, exp.Alias) and any(
            function_name(node) in NONDETERMINISTIC for node in tree.walk()
        ):
            processing_time.add(tree.alias.lower())
    return RelationInfo(
        not relation.bounded, watermarks, processing_time=frozenset(processing_time)
    )


class Record(Protocol):
    """Keeps a finding, with the query text it is positioned in (``None``: it has a span)."""

    def __call__(self, finding: SqlStreamError, text: ast.SqlText | None = None, /) -> None: ...


def parse_text(text: ast.SqlText, caches: CompileCaches | None = None) -> exp.Expr:
    """Parse an expression written in the file (a computed column, a watermark), through
    the compile context's stores ``caches`` (:func:`~sqlstream.sql.parsing.parse_expression`).

    Raises:
        SqlStreamError: ``SS102``, positioned in the file.
    """
    from sqlstream.planning.compiler import locate

    try:
        return parse_expression(text.text, caches)
    except SqlStreamError as error:
        raise locate(error, text) from None


# Flink's PROCTIME() as a computed column: Spark's processing time, the micro-batch's time.
_PROCESSING_TIME = "current_timestamp()"


def _computed_sql(column, caches: CompileCaches | None) -> str:
    """The Spark SQL of a computed column (``PROCTIME()`` → ``current_timestamp()``)."""
    if is_proctime(parse_text(column.expression, caches)):
        return _PROCESSING_TIME
    return column.expression.text


def _computed_type(
    text: ast.SqlText, visible: Schema, context: CompileContext
) -> tuple[str, list[SqlStreamError]]:
    """The type of the computed column ``text`` over the columns ``visible`` and its
    findings (offsets within ``text``), as :func:`expression_type` of its parse gives them.

    That depends on the text, the columns, the Spark minor judged for (its functions) and
    the user-defined functions (their arity and return type) only, so a type found without
    findings is kept under the first three while no function is defined, and given again
    without parsing: a file declares many streams with the same computed columns, and the
    language server checks the file again after each keystroke. Findings carry offsets the
    caller positions (it changes them), so what has findings is computed each time. The
    store is the context's ``caches.computed_types`` (``(expression text, visible columns,
    judged Spark minor)`` → type; one per ``check``, the language server's kept from check
    to check), emptied when it holds its limit of types.

    Raises:
        SqlStreamError: ``SS102`` (the text does not parse), positioned in the file.
    """
    caches = context.caches
    store = caches.computed_types if not context.functions else None
    key = (text.text, visible, context.spark_version)
    kept = store.get(key) if store is not None else None
    if kept is not None:
        return kept, []
    tree = parse_text(text, caches)
    if is_proctime(tree):
        tree = parse_expression(_PROCESSING_TIME, caches)
    kind, findings = expression_type(tree, visible, text.text, context)
    if store is not None and not findings:
        store.keep(key, kind)
    return kind, findings


class SourceDeclaration:
    """Builds the plan step of one ``CREATE STREAM`` / ``CREATE TABLE``.

    Args:
        record: receives findings that do not stop the plan (type and name findings of
            computed columns, a watermark on a column that is not a TIMESTAMP), with the
            text they are positioned in (or ``None`` when they carry a span).
        resolve_path: makes a relative ``path`` relative to the ``.ssql`` file's folder.
        unseal: puts secrets' values in a path for reading the files' header at compile
            time (:meth:`~sqlstream.diagnostics.source_text.Source.unseal`); the plan keeps
            the path with its tokens.
        context: the compile context (computed columns are typed for its Spark minor and
            user functions, through its stores).
    """

    def __init__(
        self,
        record: Record,
        resolve_path: Callable[[str | None], str | None],
        unseal: Callable[[str], str],
        context: CompileContext,
    ):
        self._context = context
        self._record = record
        self._resolve_path = resolve_path
        self._unseal = unseal

    def relation(self, statement, resolved: ResolvedOptions, bounded: bool) -> plan.SourceRelation:
        """The :class:`~sqlstream.ir.plan.SourceRelation` of ``statement``.

        Args:
            statement: a :class:`~sqlstream.frontend.ast.CreateStream` (``bounded=False``) or
                :class:`~sqlstream.frontend.ast.CreateTable` (``bounded=True``).
            resolved: its connector options.

        Raises:
            SqlStreamError: no schema where the connector fixes none (``SS203``), a column
                or metadata key the connector does not have (``SS201``), a bad watermark.
        """
        spec = resolved.spec.declared(
            statement, resolved, self._resolve_path, self._context.project, self._context.trust
        )
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
        for meta in metadata:
            key = (meta.key or meta.name.value).lower()
            if key not in spec.metadata:
                raise UnknownNameError(
                    f"connector '{spec.name}' has no metadata '{key}'"
                    + did_you_mean(key, spec.metadata)
                    + (f" (available: {', '.join(spec.metadata)})" if spec.metadata else ""),
                    meta.span,
                    hint="write METADATA FROM '<key>' with one of the connector's keys"
                    if spec.metadata
                    else f"connector '{spec.name}' has no metadata columns: remove it",
                )
        types = {c.name.value.lower(): c.type for c in physical + metadata}
        if spec.fixed_schema is not None:
            types.update({n.lower(): t for n, t in spec.fixed_schema if not physical})
        columns = self._columns(statement, spec.fixed_schema if not physical else None)
        computed_types = {c.name.value.lower(): UNKNOWN for c in computed}
        computed_types.update(
            {n.lower(): t for n, t in columns or () if n.lower() in computed_types}
        )
        watermark = self._watermark(statement, types, computed_types)
        fmt, path = resolved.source_target(self._resolve_path)
        fmt = lakehouse_source.read_format(spec.name, fmt, self._context.spark_version)
        read_as: dict[str, str]
        schema, options, read_as = None, resolved.spark, {}
        if spec.fixed_schema is None and physical:
            read, read_as, options = spec.bind_columns(
                resolved,
                physical,
                path and self._unseal(path),
                lambda error: self._record(error, None),
                self._context.project,
                self._context.trust,
            )
            schema = tuple(read)
        projection: tuple[str, ...] = ()
        if metadata or computed or (spec.fixed_schema is not None and physical) or read_as:
            items = []
            for column in statement.columns:
                if isinstance(column, ast.ColumnDef):
                    name = column.name.value
                    read_name = read_as.get(name, name)
                    items.append(
                        quote(name) if read_name == name else f"{quote(read_name)} AS {quote(name)}"
                    )
                elif isinstance(column, ast.MetadataColumn):
                    expr, _ = spec.metadata[(column.key or column.name.value).lower()]
                    items.append(f"CAST({expr} AS {column.type}) AS {quote(column.name.value)}")
                else:
                    items.append(
                        f"{_computed_sql(column, self._context.caches)} AS "
                        f"{quote(column.name.value)}"
                    )
            if not physical and spec.fixed_schema is None:
                items.insert(0, "*")
            elif not physical and spec.fixed_schema is not None:
                items[:0] = [quote(n) for n, _ in spec.fixed_schema]
            projection = tuple(items)
        return spec.planned(
            plan.SourceRelation(
                name=statement.name.value,
                bounded=bounded,
                connector=spec.name,
                format=fmt,
                path=path,
                options=options,
                read_columns=schema,
                infer_schema=infer,
                projection=projection,
                watermark=watermark,
                span=statement.span,
                columns=columns,
                watermark_first=bool(
                    projection and watermark and not metadata and watermark.column.lower() in types
                ),
                expectations=plan_expectations(
                    getattr(statement, "constraints", ()), columns, self._context, self._record
                ),
            ),
            statement,
        )

    def _columns(self, statement, fixed) -> Schema | None:
        """The columns a stream or table shows to queries, in order: the fixed connector
        columns (when none are declared), the declared, metadata and computed ones; ``None``
        when they are only known at run time (``infer_schema``). Computed columns are typed
        (and checked) over the others and the computed columns before them."""
        known = fixed is not None or any(isinstance(c, ast.ColumnDef) for c in statement.columns)
        columns: list[tuple[str, str]] = list(fixed or ())
        declared = [
            (c.name.value, spark_type(c.type))
            for c in statement.columns
            if not isinstance(c, ast.ComputedColumn)
        ]
        for column in statement.columns:
            if isinstance(column, ast.ComputedColumn):
                if not known:
                    parse_text(column.expression, self._context.caches)  # SS102 all the same
                    continue
                visible = tuple(declared + [c for c in columns if c not in declared])
                kind, findings = _computed_type(column.expression, visible, self._context)
                for finding in findings:
                    self._record(finding, column.expression)
                columns.append((column.name.value, kind))
            else:
                columns.append((column.name.value, spark_type(column.type)))
        return tuple(columns) if known else None

    def _watermark(
        self, statement, types: dict[str, str], computed: dict[str, str]
    ) -> plan.Watermark | None:
        definition: ast.WatermarkDef | None = getattr(statement, "watermark", None)
        if definition is None:
            return None
        column = definition.column.value
        key = column.lower()
        for computed_column in statement.columns:
            if (
                isinstance(computed_column, ast.ComputedColumn)
                and computed_column.name.value.lower() == key
                and is_proctime(parse_text(computed_column.expression, self._context.caches))
            ):
                raise ForeignSpellingError(
                    f"'{column}' is processing time (PROCTIME()); a watermark is on event time",
                    definition.column.span,
                    hint="put the watermark on a TIMESTAMP column of the data, WATERMARK FOR ts AS ts - "
                    "INTERVAL '5' SECONDS; processing-time columns need none (docs/compat.md)",
                )
        if key not in types and key not in computed:
            raise UnknownNameError(
                f"watermark column '{column}' is not a column of '{statement.name}'"
                + did_you_mean(column, list(types) + sorted(computed)),
                definition.column.span,
                hint="WATERMARK FOR names a TIMESTAMP column declared in this statement's column list",
            )
        # Spark: withWatermark on another type fails with "Event time must be defined on a
        # window or a timestamp" (EventTimeWatermark); recorded, so a lenient plan asks Spark.
        if key in types and types[key] not in TIMESTAMP_TYPES:
            self._record(
                SemanticError(
                    f"watermark column '{column}' has type {types[key]}; it must be a TIMESTAMP",
                    definition.column.span,
                    hint=f"declare {column} TIMESTAMP, or add a computed column "
                    f"CAST({column} AS TIMESTAMP) and put the watermark on it",
                )
            )
        if computed.get(key, UNKNOWN) not in (*TIMESTAMP_TYPES, UNKNOWN):
            self._record(
                SemanticError(
                    f"watermark column '{column}' is computed as {computed[key]}; it must be a TIMESTAMP",
                    definition.column.span,
                    hint=f"compute {column} AS CAST(… AS TIMESTAMP) or with to_timestamp(…)",
                )
            )
        expression = parse_text(definition.expression, self._context.caches)
        valid = (
            isinstance(expression, exp.Sub)
            and isinstance(expression.this, exp.Column)
            and expression.this.name.lower() == key
            and isinstance(expression.expression, exp.Interval)
        )
        if not valid:
            raise SemanticError(
                f"a watermark is written '{column} - INTERVAL …'",
                definition.expression.span,
                hint=f"for example: WATERMARK FOR {column} AS {column} - INTERVAL '1' MINUTE",
            )
        delay = duration_text(expression.expression)
        if delay is None:
            raise SemanticError(
                "the watermark delay must be a constant interval",
                definition.expression.span,
                hint="for example: INTERVAL '10' SECONDS",
            )
        problem = duration_problem(delay, "watermark")
        if problem:  # Spark: withWatermark fails when the query is defined
            offsets = node_offsets(expression.expression)
            raise SemanticError(
                f"the watermark delay is not a duration Spark accepts: {problem}",
                definition.expression.locate(*offsets) if offsets else definition.expression.span,
                hint="for example: INTERVAL '10' SECONDS",
            )
        return plan.Watermark(column, delay, definition.span)

    # ---- helpers: SQL
