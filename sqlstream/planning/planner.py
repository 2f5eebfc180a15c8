"""Planner: AST → :class:`~sqlstream.ir.plan.Plan`, a fold over the file's statements.

Each statement is handled in file order against the :class:`~sqlstream.planning.catalog.Catalog` of
what was declared before it: connector options are resolved (:mod:`sqlstream.connectors`), streams
and tables become source reads (:mod:`sqlstream.planning.declarations`), every query body goes
through the one compile path of :mod:`sqlstream.planning.compiler` (rewrite → schema → facts →
checks), and queries get their names and checkpoint locations (docs/dialect.md#checkpoints). Every
finding is positioned in the `.ssql` file; all of them are reported together.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePath

from sqlstream.connectors import ResolvedOptions, connector, resolve_options
from sqlstream.diagnostics.errors import (
    CompileError,
    OptionError,
    SemanticError,
    SqlStreamError,
    UnknownNameError,
    did_you_mean,
)
from sqlstream.frontend import ast
from sqlstream.frontend.limits import NestingError
from sqlstream.ir import plan, spark_versions
from sqlstream.ir.caches import CompileCaches
from sqlstream.ir.context import CompileContext, project_of
from sqlstream.ir.user_functions import UserFunction
from sqlstream.planning import expectations, malformed
from sqlstream.planning.catalog import Catalog, CatalogRelation, CatalogSink
from sqlstream.planning.changelog_sinks import ChangelogSinkPlanning
from sqlstream.planning.compiler import (
    CompiledQuery,
    check_query,
    compile_query,
    compile_union,
    locate,
)
from sqlstream.planning.dead_letters import dead_letter_query, reading_trigger
from sqlstream.planning.declarations import SourceDeclaration, source_info
from sqlstream.planning.flows import FlowPlanning
from sqlstream.planning.function_definitions import resolve_function
from sqlstream.planning.resume import mark, resume
from sqlstream.planning.settings import expand, problem, target_version
from sqlstream.planning.union_inserts import InsertPart, insert_counts, union_problem

DEFAULT_STATE_DIR = ".sqlstream/checkpoints"


class Planner(FlowPlanning, ChangelogSinkPlanning):
    """Builds a :class:`~sqlstream.ir.plan.Plan` from a :class:`~sqlstream.frontend.ast.Script`.

    Args:
        script: the parsed file.
        path: the file's path (names the pipeline; relative paths in ``path`` options and
            the default state directory are resolved against its folder), or ``None``.
        state_dir: ``--state-dir`` from the CLI or API; overrides ``SET 'sqlstream.state_dir'``.
        spark_version: the Spark major.minor to judge the file for (``check --spark-version``);
            overrides ``SET 'sqlstream.spark_version'``; default
            :func:`sqlstream.ir.spark_versions.default`.
        enforce: ``False`` records violations of streaming rules (SS3xx), schema findings
            and watermarks on non-timestamps as warnings and plans the query anyway (used
            to test the rules against Spark itself).
        previous: a planner that built an earlier version of the same file (an editor
            re-checking as the user types): :meth:`build` takes its state after the longest
            run of leading statements the two scripts share (equal, positions included)
            and plans only the statements after it (:meth:`_resume`). ``None``: plan all.
        caches: the stores the compile may answer from (the language server's, kept from
            check to check); ``None``: :meth:`~sqlstream.ir.caches.CompileCaches.for_compile`.
        trust: user modules are imported (:attr:`~sqlstream.ir.context.CompileContext.trust`).
        stop: asked before each statement; true raises ``Cancelled`` (a stale editor check).
        state_lineage: as :attr:`~sqlstream.ir.context.CompileContext.state_lineage`.

    ``context`` is the :class:`~sqlstream.ir.context.CompileContext` every rule is given:
    :attr:`spark_version`, :attr:`functions` (this planner's dict, added to at each
    ``CREATE FUNCTION``) and the caches. After :meth:`build` (or :meth:`result`),
    ``reused`` is the number of leading statements taken from ``previous`` (0 without it)
    and ``marks`` the sizes of the state after each statement.
    """

    def __init__(
        self,
        script: ast.Script,
        path: str | None = None,
        state_dir: str | None = None,
        enforce: bool = True,
        spark_version: str | None = None,
        previous: Planner | None = None,
        caches: CompileCaches | None = None,
        trust: bool = False,
        stop: Callable[[], bool] | None = None,
        state_lineage: bool = True,
    ):
        self.script = script
        self.spark_version = target_version(script, spark_version)
        self.source = script.source_map.source
        self.path = path
        self.base_dir = os.path.dirname(path) if path else ""
        self.state_dir_override = state_dir
        self.enforce = enforce
        self.functions: dict[str, UserFunction] = {}  # by lower-case name, in file order
        caches = caches if caches is not None else CompileCaches.for_compile()
        root = project_of(path) if path else None
        self.context = CompileContext(
            self.spark_version, self.functions, caches, trust, stop, root, state_lineage
        )
        self.catalog = Catalog()
        self.declarations = SourceDeclaration(
            self._record, self._resolve_path, self.source.unseal, self.context
        )
        self.settings: list[tuple[str, str]] = []
        self.setting_spans: list[tuple[str, ast.Span]] = []
        self.relations: list[plan.Relation] = []
        self.queries: list[plan.Query] = []  # default checkpoint locations are set by build()
        self.compiled: list[CompiledQuery] = []  # of the queries, checked
        self.findings: list[SqlStreamError] = []
        self.select_count = 0
        self.dead_letters: list[tuple[plan.SourceRelation, ResolvedOptions]] = []
        self.insert_counts = insert_counts(script.statements)
        self.insert_parts: dict[str, list[InsertPart]] = {}
        self.marks: list[tuple] = []  # the sizes of the state above after each statement
        self.reused = 0  # statements whose planning was taken from ``previous``
        self._previous = previous
        self._result: tuple[plan.Plan, list[SqlStreamError]] | None = None

    # ---- entry point
    def build(self) -> plan.Plan:
        """Return the plan, with its warnings in ``Plan.warnings``, judged for
        :attr:`spark_version` (:meth:`result` without errors).

        Raises:
            SqlStreamError: the only error found, or :class:`CompileError` holding all.
        """
        built, findings = self.result()
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            raise errors[0] if len(findings) == 1 else CompileError(findings)
        return built

    def result(self) -> tuple[plan.Plan, list[SqlStreamError]]:
        """Plan every statement (once: a second call returns the first answer) and return
        the plan and the findings, errors included, in file order.

        Every statement is planned even after an error in an earlier one (a name whose
        declaration failed is still known, so one mistake is reported once). With errors
        the plan is partial: it holds what the statements without an error planned (the
        language server describes those queries all the same); ``Plan.warnings`` holds the
        warnings either way.
        """
        if self._result is None:
            self._result = self._fold()
        return self._result

    def _fold(self) -> tuple[plan.Plan, list[SqlStreamError]]:
        self.reused = resume(self, self._previous)
        self._previous = None  # no chain of earlier versions kept alive
        for statement in self.script.statements[self.reused :]:
            self.context.check_stop()
            try:
                getattr(self, "_" + type(statement).__name__)(statement)
            except (SqlStreamError, RecursionError) as error:  # a RecursionError: a last
                # resort (the nesting limits should prevent it)
                if isinstance(error, RecursionError):
                    hint = "split it into views (CREATE VIEW)"
                    error = NestingError("this statement is too complex to compile", hint=hint)
                    error.span = statement.span
                self.findings.append(error.with_source(self.source))
                self._poison(statement)
            self.marks.append(mark(self))
        for relation, resolved in self.dead_letters:
            try:
                self._dead_letter_query(relation, resolved)
            except SqlStreamError as error:
                self.findings.append(error.with_source(self.source))
        rules = (self.relations, self.catalog, self.context, self._record)
        queries = expectations.expect_sinks(self.queries, *rules)  # sinks' CONSTRAINTs
        findings = sorted(self.findings, key=lambda f: f.span.start if f.span is not None else -1)
        state_dir = self._state_dir()
        name = PurePath(self.path).stem if self.path else "pipeline"
        built = plan.Plan(
            name=name,
            source=self.source,
            settings=tuple(self.settings),
            relations=tuple(self.relations),
            queries=tuple(self._finish_query(state_dir, name, query) for query in queries),
            state_dir=state_dir,
            spark_version=self.spark_version,
            setting_spans=tuple(self.setting_spans),
            warnings=tuple(f for f in findings if f.severity == "warning"),
            functions=tuple(self.functions.values()),
        )
        return built, findings

    def _poison(self, statement) -> None:
        """After a failed declaration, know its name anyway so later uses are not errors."""
        if isinstance(statement, (ast.CreateStream, ast.CreateTable, ast.CreateView)):
            kind = {ast.CreateTable: "table", ast.CreateView: "view"}.get(type(statement), "stream")
            self.catalog.poison(statement.name, kind)
        if isinstance(statement, ast.CreateSink) or (
            isinstance(statement, ast.CreateStream) and statement.query is not None
        ):
            self.catalog.poison_sink(statement.name)

    def _record(self, finding: SqlStreamError, text: ast.SqlText | None = None) -> None:
        """Record a finding that does not stop the plan (a rule, type or name finding), positioned
        in ``text`` if it has only offsets; a lenient planner makes it a warning (Spark is asked)."""
        if not self.enforce:
            finding.severity = "warning"
        if text is not None:
            finding = locate(finding, text)
        self.findings.append(finding.with_source(self.source))

    # ---- statements
    def _SetStatement(self, statement: ast.SetStatement) -> None:
        """Record the settings a ``SET`` stands for (:func:`sqlstream.planning.settings.expand`);
        an unknown ``sqlstream.*`` key stops the statement, a value Spark would refuse
        (``SS326``, ``SS327``) is a finding (a warning when not enforced, so Spark is asked)."""
        option = statement.option
        found = problem(option)
        if found is not None and found.code == "SS202":
            raise found
        if found is not None:
            self._record(found)
        for key, value in expand(option.key, option.text):
            self.settings.append((key, value))
            self.setting_spans.append((key, statement.span))

    def _CreateFunction(self, statement: ast.CreateFunction) -> None:
        """A user-defined function, known to the statements after it
        (:func:`sqlstream.planning.function_definitions.resolve_function`)."""
        function = resolve_function(statement, self.source, self.context, self.findings)
        self.functions[function.name.lower()] = function

    def _CreateStream(self, statement: ast.CreateStream) -> None:
        if statement.query is not None:
            self._derived_stream(statement)
            return
        self._declare_source(statement, "source", bounded=False)

    def _CreateTable(self, statement: ast.CreateTable) -> None:
        self._declare_source(statement, "table", bounded=True)

    def _declare_source(self, statement, role: str, bounded: bool) -> None:
        self.catalog.declare(statement.name)
        resolved = self._options(statement.options, role, statement.name, statement.span)
        relation = self.declarations.relation(statement, resolved, bounded)
        relation = malformed.plan_source(relation, statement, resolved, self.source, self._record)
        if relation.decoding is not None and relation.decoding.decoded_view:
            self.dead_letters.append((relation, resolved))
        self.relations.append(relation)
        self.catalog.add(
            CatalogRelation(
                statement.name.value,
                "table" if bounded else "stream",
                statement.name,
                source_info(relation, self.context.caches),
                relation.columns,
                source=relation,
            )
        )

    def _CreateView(self, statement: ast.CreateView) -> None:
        self.catalog.declare(statement.name)
        self._view(statement.name, statement.query, statement.span)

    def _view(self, name: ast.Name, text: ast.SqlText, span) -> CompiledQuery:
        compiled = self._compile(text, name.value)
        self.relations.append(
            plan.SqlView(name.value, compiled.sql, span, compiled.columns, compiled.reads)
        )
        self.catalog.add_view(name, compiled)
        return compiled

    def _Insert(self, statement: ast.Insert) -> None:
        name = statement.sink
        if statement.ksql_table and self.catalog.sink(name.value) is None:
            raise UnknownNameError(
                f"CREATE TABLE {name} AS SELECT writes its results into the sink '{name}', which "
                f"is not declared{did_you_mean(name.value, self.catalog.sink_names())}",
                name.span,
                hint=f"declare where the results go, before this statement: CREATE SINK {name} WITH "
                "(connector = …); or give the table its sink's options: CREATE TABLE "
                f"{name} WITH (connector = …) AS SELECT … (docs/compat.md)",
            )
        self._insert(statement.sink, statement.query, statement.emit, statement.span)

    def _Select(self, statement: ast.Select) -> None:
        self.select_count += 1
        name = f"select_{self.select_count}"
        resolved = self._options(
            (ast.Option("connector", "console", statement.span, statement.span, statement.span),),
            "sink",
            ast.Name(name, statement.span),
            statement.span,
        )
        sink = self._sink(name, resolved, statement.span)
        self.catalog.claim_query_name(name, statement.span)
        self._add_query(
            name,
            sink,
            resolved,
            self._compile(statement.query, name),
            statement.emit,
            statement.span,
        )

    def _derived_stream(self, statement: ast.CreateStream) -> None:
        """``CREATE STREAM name WITH (sink options) AS SELECT``: a view plus a query into the sink."""
        if statement.columns or statement.watermark:
            raise SemanticError(
                "CREATE STREAM … AS SELECT takes no column list: its columns are the query's",
                (statement.columns or [statement.watermark or statement])[0].span,
                hint="remove the column list; put a WATERMARK clause in the query (FROM t WATERMARK …)",
            )
        if not statement.options:
            raise OptionError(
                f"CREATE STREAM {statement.name} AS SELECT needs WITH (connector = …) naming "
                "where the stream is written",
                statement.span,
                hint="for a derived relation that is not written anywhere, use CREATE VIEW",
            )
        self.catalog.declare(statement.name)
        resolved = self._options(statement.options, "sink", statement.name, statement.span)
        sink = self._sink(statement.name.value, resolved, statement.span)
        self.catalog.add_sink(statement.name, CatalogSink(sink, resolved, statement.constraints))
        assert statement.query is not None  # (the caller's test: AS SELECT)
        compiled = self._view(statement.name, statement.query, statement.span)
        name = self._query_name(statement.name.value, resolved, statement.name.span)
        self._add_query(name, sink, resolved, compiled, statement.emit, statement.span)

    # ---- helpers
    def _options(self, options, role: str, owner: ast.Name, span) -> ResolvedOptions:
        """:func:`~sqlstream.connectors.resolve_options`, recording its warnings."""
        resolved = resolve_options(options, self.source, role, owner, span, self.context.trust)
        if role == "sink":
            malformed.check_sink_options(resolved, self.source)
        else:  # a source the target Spark cannot read (delta on 4.3: SS283)
            resolved.spec.check_source(resolved, self.source, self.spark_version)
        self.findings.extend(w.with_source(self.source) for w in resolved.warnings)
        return resolved

    def _resolve_path(self, value: str | None) -> str | None:
        if value is None or not self.base_dir:
            return value
        shown = self.source.unseal(value)  # a secret's value decides whether it is relative
        if "://" in shown or os.path.isabs(shown):
            return value
        joined = os.path.join(self.base_dir, value)
        return joined if shown != value else os.path.normpath(joined)

    def _compile(self, text: ast.SqlText, name: str) -> CompiledQuery:
        """:func:`~sqlstream.planning.compiler.compile_query` of the body of view or query ``name``,
        recording its schema findings; its plan steps (deduplications) join the plan's
        relations, before the view or query that reads them."""
        compiled = compile_query(text, self.catalog, self.context, name)
        self.relations.extend(compiled.steps)
        for finding in compiled.findings:
            self._record(finding)
        redact = self.source.redact
        secret_named = [n for n, _ in compiled.columns or () if redact(n) != n]
        secret_typed = [(n, t) for n, t in compiled.columns or () if t and redact(t) != t]
        if secret_named:  # Spark names an unaliased expression by its text
            self._record(
                SemanticError(
                    f"column '{secret_named[0]}' of '{name}' would be named after the value of a "
                    "secret (an expression without an alias is named by its text)",
                    text.span,
                    hint="give the expression an alias: … AS some_name",
                    code="SS241",
                )
            )
        elif secret_typed:  # named_struct('${env:K}', v), from_json(js, '${env:K} INT'), …
            self._record(
                SemanticError(
                    f"the type of column '{secret_typed[0][0]}' of '{name}' would contain the value "
                    f"of a secret ({secret_typed[0][1]}): a struct field named by it",
                    text.span,
                    hint="name the field with a plain string; keep secrets to values",
                    code="SS241",
                )
            )
        return compiled

    def _sink(self, name: str, resolved: ResolvedOptions, span) -> plan.Sink:
        fmt, path = resolved.sink_target(self._resolve_path)
        partition_by = tuple(
            p.strip() for p in (resolved.get("partition_by") or "").split(",") if p.strip()
        )
        target = (spark_versions.SETTING, self.spark_version)  # the target, as judged
        settings = {k.lower(): v for k, v in (*self.settings, target)}
        spec, reads = resolved.spec, (self._resolve_path, self.context.project, self.context.trust)
        options = resolved.spark + spec.sink_options(resolved, self._resolve_path, settings)
        sink_settings = spec.sink_settings(resolved, *reads)
        return plan.Sink(
            name, spec.name, fmt, path, options, partition_by, spec.durable, span, sink_settings
        )

    def _query_name(self, default: str, resolved: ResolvedOptions, span) -> str:
        name = resolved.get("query_name") or default
        if self.source.redact(name) != name:  # shown by check, Spark's UI, logs, progress
            given = resolved.options.get("query_name")
            raise OptionError(
                f"the query name '{name}' contains the value of a secret (${{env:…}}); a query "
                "name is shown by check, in Spark's UI, logs and progress",
                given.value_span if given is not None else span,
                hint="set query_name to a plain name",
                code="SS240",
            )
        self.catalog.claim_query_name(name, span)
        return name

    def _insert(self, sink_name: ast.Name, query: ast.SqlText, emit, span) -> None:
        entry = self.catalog.sink(sink_name.value)
        if entry is None:
            raise UnknownNameError(
                f"unknown sink '{sink_name}'{did_you_mean(sink_name.value, self.catalog.sink_names())}",
                sink_name.span,
                hint="declare it first with CREATE SINK … WITH (connector = …)",
            )
        if entry.sink is None or entry.options is None:  # its declaration failed: still check
            self._compile(query, sink_name.value)
            return
        if entry.keyed is not None:  # Flink's changelog spelling (planning/changelog_sinks.py)
            return self._keyed_insert(entry, query, emit, span)
        if self.insert_counts[entry.sink.name.lower()] > 1:
            self._insert_part(sink_name, entry, query, emit, span)
            return
        if entry.options.get("query_name") is None and self.catalog.has_query(entry.sink.name):
            raise UnknownNameError(
                f"a second INSERT INTO {sink_name}: Spark runs one query per sink",
                sink_name.span,
                code="SS204",
                hint=f"write one INSERT INTO {sink_name} SELECT … FROM a UNION ALL SELECT … "
                "FROM b (the same columns, in the same order); a Flink statement set's INSERTs into one "
                "table are written so too (docs/compat.md)",
            )
        name = self._query_name(entry.sink.name, entry.options, sink_name.span)
        self._add_query(name, entry.sink, entry.options, self._compile(query, name), emit, span)

    def _insert_part(
        self, sink_name: ast.Name, entry: CatalogSink, query: ast.SqlText, emit, span
    ) -> None:
        """One of several ``INSERT``s into one sink: compiled and kept; with the last one, the
        query over ``UNION ALL`` of them all (:mod:`sqlstream.planning.union_inserts`).

        Raises:
            SemanticError: ``SS265`` the bodies cannot be one query.
        """
        assert entry.sink is not None and entry.options is not None  # (the caller's test)
        compiled = self._compile(query, entry.sink.name)
        reads = self.catalog.closure(compiled.info.relations)
        poisoned = any(r.poisoned for r in reads)  # its mode cannot be known
        checked = None if poisoned else check_query(compiled, emit, entry.sink, reads, self.context)
        mode = None if checked is None else checked[0].output_mode
        parts = self.insert_parts.setdefault(entry.sink.name.lower(), [])
        parts.append(InsertPart(compiled, emit, sink_name, mode, span, poisoned))
        if len(parts) < self.insert_counts[entry.sink.name.lower()] or any(
            p.poisoned for p in parts
        ):
            return  # more to come, or one reads a relation whose declaration failed (reported)
        problem = union_problem(parts)
        if problem is not None:
            raise problem
        union = compile_union([p.compiled for p in parts], self.catalog, self.context)
        emit = next((p.emit for p in parts if p.emit is not None), None)
        name = self._query_name(entry.sink.name, entry.options, parts[0].sink.span)
        self._add_query(name, entry.sink, entry.options, union, emit, parts[0].span)

    def _add_query(
        self,
        name: str,
        sink: plan.Sink,
        resolved: ResolvedOptions,
        compiled: CompiledQuery,
        emit,
        span,
    ) -> None:
        reads = self.catalog.closure(compiled.info.relations)
        if any(r.poisoned for r in reads):
            return  # reads a relation whose declaration failed: its mode cannot be known
        compiled, findings = check_query(compiled, emit, sink, reads, self.context)
        for finding in findings:
            self._record(finding)
        mode, reason = compiled.output_mode, compiled.output_mode_reason
        if mode is None:
            if self.enforce:
                return
            mode, reason = "append", "not checked"
        assert reason is not None  # (inferred with the mode)
        for finding in resolved.spec.check_sink(
            resolved, compiled.columns, mode, self.source, self.spark_version
        ):
            self._record(finding)
        trigger = None
        if emit is not None and emit.trigger is not None:
            trigger = plan.Trigger(emit.trigger.kind, emit.trigger.interval)
        checkpoint = self._resolve_path(resolved.get("checkpoint_location"))
        self.compiled.append(compiled)
        self.queries.append(
            plan.Query(
                name,
                compiled.sql,
                sink,
                mode,
                reason,
                trigger,
                checkpoint,
                span,
                compiled.columns,
                compiled.state,
                compiled.reads,
            )
        )

    def _dead_letter_query(self, relation: plan.SourceRelation, resolved: ResolvedOptions) -> None:
        """The query writing the dead letters of ``relation`` (:mod:`sqlstream.planning.malformed`):
        into JSON files at ``dead_letter_path``, or into the sink named by ``dead_letter``
        (declared anywhere in the file); its trigger is that of the first query reading the
        source.

        Raises:
            SqlStreamError: ``SS254`` an unknown sink or one without append mode;
                ``SS204`` the sink already takes a query.
        """
        target = resolved.compiler.get("dead_letter")
        if target is None:
            option = resolved.compiler["dead_letter_path"]
            name = f"{relation.name}_dead_letters"
            sink = plan.Sink(
                name, "files", "json", self._resolve_path(option.text), (), (), True, option.span
            )
            self.catalog.claim_query_name(name, option.value_span)
            checkpoint = None
        else:
            entry = self.catalog.sink(target.text)
            if entry is None or entry.sink is None or entry.options is None:
                raise UnknownNameError(
                    f"dead_letter = '{target.text}' names no sink"
                    f"{did_you_mean(target.text, self.catalog.sink_names())}",
                    target.value_span,
                    code="SS254",
                    hint="declare it with CREATE SINK … WITH (connector = …)",
                )
            sink = entry.sink
            if "append" not in connector(sink.connector).sink_modes:
                raise OptionError(
                    f"sink '{sink.name}' cannot take dead letters: it has no append mode",
                    target.value_span,
                    code="SS254",
                    hint="name a sink that appends rows (files, kafka, …)",
                )
            name = self._query_name(sink.name, entry.options, target.value_span)
            checkpoint = self._resolve_path(entry.options.get("checkpoint_location"))
        trigger = reading_trigger(self.queries, relation)
        self.queries.append(dead_letter_query(relation, name, sink, trigger, checkpoint))

    def _state_dir(self) -> str:
        if self.state_dir_override:
            return self.state_dir_override
        for key, value in reversed(self.settings):
            if key.lower() == "sqlstream.state_dir":
                return self._resolve_path(value) or value
        return self._resolve_path(DEFAULT_STATE_DIR) or DEFAULT_STATE_DIR

    @staticmethod
    def _finish_query(state_dir: str, pipeline: str, query: plan.Query) -> plan.Query:
        """Give a query into a durable sink its default checkpoint location (docs/dialect.md#checkpoints)."""
        if query.checkpoint_location is None and query.sink.durable:
            return replace(query, checkpoint_location=os.path.join(state_dir, pipeline, query.name))
        return query


def build_plan(
    script: ast.Script,
    path: str | None = None,
    state_dir: str | None = None,
    enforce: bool = True,
    spark_version: str | None = None,
    trust: bool = False,
    state_lineage: bool = True,
) -> plan.Plan:
    """Build the :class:`~sqlstream.ir.plan.Plan` of a parsed file (see :class:`Planner`;
    ``state_lineage`` off for a compile that starts no query).

    Raises:
        SqlStreamError: the first problem found (unknown names, bad options, invalid SQL,
            an output mode Spark would refuse), with its position in the file.
    """
    return Planner(
        script, path, state_dir, enforce, spark_version, trust=trust, state_lineage=state_lineage
    ).build()
