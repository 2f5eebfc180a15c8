"""Lark tree → AST: :class:`TreeBuilder` turns the statement grammar's tree into the frozen
nodes of :mod:`sqlstream.frontend.ast`, each with its :class:`~sqlstream.diagnostics.source_text.Span`
(from its first and last token). Query bodies and column expressions are kept as
:class:`~sqlstream.frontend.ast.SqlText` for sqlglot.
"""

from __future__ import annotations

from lark import Tree

from sqlstream.diagnostics.errors import ForeignSpellingError, ParseError, SemanticError
from sqlstream.frontend import ast
from sqlstream.frontend.clause_builder import ClauseBuilder, unquote_string
from sqlstream.frontend.flow_builder import build_flow, sink_columns
from sqlstream.frontend.grammar import kept_children


class TreeBuilder(ClauseBuilder):
    """Turns Lark trees of statements into AST nodes (one ``_<rule>`` method per statement
    rule of the grammar); the clauses they share are :class:`ClauseBuilder`'s."""

    # -- statements
    def statement(self, node: Tree):
        return getattr(self, f"_{node.data}")(node)

    def _set_stmt(self, node: Tree) -> ast.SetStatement:
        return ast.SetStatement(self.option(node), self.span(node))

    def _create_stream(self, node: Tree) -> ast.CreateStream:
        columns, watermark = self.columns(self.find(node, "column_list"))
        query, emit = self.as_query(self.find(node, "as_query"))
        return ast.CreateStream(
            name=self.name(self.find(node, "name")),
            columns=columns,
            watermark=watermark,
            options=self.options(self.find(node, "with_clause")),
            if_not_exists=self.find(node, "if_not_exists") is not None,
            query=query,
            emit=emit,
            span=self.span(node),
            has_schema=self.find(node, "column_list") is not None,
            constraints=self.constraints(self.find(node, "column_list")),
        )

    def _create_table(self, node: Tree) -> ast.CreateTable | ast.CreateSink | ast.Insert:
        column_list = self.find(node, "column_list")
        if self.find(node, "as_query") is not None:
            return self._ksql_table_as(node, column_list)
        if self.find(node, "with_clause") is None:
            raise self.error(
                ParseError,
                "CREATE TABLE needs WITH (connector = …)",
                self.find(node, "name"),
                hint="e.g. CREATE TABLE airlines (carrier STRING, name STRING) WITH (connector = "
                "'files', path = 'data/airlines.csv', format = 'csv', header = true)",
            )
        columns, watermark = self.columns(column_list)
        if self.constraints(column_list):
            raise SemanticError(
                "a TABLE takes no CONSTRAINT … EXPECT: expectations are on streams and sinks",
                self.constraints(column_list)[0].span,
                self.source,
                hint="declare it with CREATE STREAM, or put the rule on the sink written",
                code="SS110",
            )
        if watermark is not None:
            raise self.error(
                SemanticError,
                "a TABLE is bounded and cannot have a WATERMARK",
                column_list,
                hint="declare it with CREATE STREAM to read it as a stream",
            )
        return ast.CreateTable(
            name=self.name(self.find(node, "name")),
            columns=columns,
            options=self.options(self.find(node, "with_clause")),
            if_not_exists=self.find(node, "if_not_exists") is not None,
            span=self.span(node),
            has_schema=column_list is not None,
        )

    def _ksql_table_as(self, node: Tree, column_list: Tree | None) -> ast.CreateSink | ast.Insert:
        """ksqlDB's ``CREATE TABLE t [WITH (…)] AS SELECT … [EMIT CHANGES | FINAL]``: a query
        whose results update the table ``t``. Here that is a query writing into the sink ``t``:
        with ``WITH (…)`` it declares the sink (as ``CREATE SINK t WITH (…) AS …``), without it
        it writes into a sink ``t`` declared before (as ``INSERT INTO t …``). Without a mode
        it is ``EMIT CHANGES`` (update mode), as a ksqlDB table is a changelog.

        Raises:
            ForeignSpellingError: ``SS260``, a column list (the columns are the query's).
        """
        name = self.name(self.find(node, "name"))
        if column_list is not None:
            raise self.error(
                ForeignSpellingError,
                f"CREATE TABLE {name.value} … AS SELECT takes its columns "
                "from the query, not from a column list",
                column_list,
                hint="drop the column list, or name the columns in the SELECT list (… AS name)",
            )
        query, emit = self.as_query(self.find(node, "as_query"))
        assert query is not None  # found above: the statement has AS SELECT …
        span = self.span(node)
        if emit is None:
            emit = ast.Emit("update", None, name.span)
        elif emit.output_mode is None:
            emit = ast.Emit("update", emit.trigger, emit.span)
        with_clause = self.find(node, "with_clause")
        if with_clause is not None:
            return ast.CreateSink(name, self.options(with_clause), query, emit, span)
        return ast.Insert(name, query, emit, span, ksql_table=True)

    def _create_view(self, node: Tree) -> ast.CreateView:
        return ast.CreateView(
            self.name(self.find(node, "name")), self.sql(self.find(node, "query")), self.span(node)
        )

    def _create_sink(self, node: Tree) -> ast.CreateSink:
        query, emit = self.as_query(self.find(node, "as_query"))
        columns, primary_key = sink_columns(self, self.find(node, "constraint_list"))
        return ast.CreateSink(
            name=self.name(self.find(node, "name")),
            options=self.options(self.find(node, "with_clause")),
            query=query,
            emit=emit,
            span=self.span(node),
            constraints=self.constraints(self.find(node, "constraint_list")),
            columns=columns,
            primary_key=primary_key,
        )

    def _insert_stmt(self, node: Tree) -> ast.Insert:
        return ast.Insert(
            self.name(self.find(node, "name")),
            self.sql(self.find(node, "query")),
            self.emit(self.find(node, "emit")),
            self.span(node),
        )

    def _create_flow(self, node: Tree) -> ast.CreateFlow:
        """``CREATE FLOW … AS AUTO CDC INTO …`` (:func:`~sqlstream.frontend.flow_builder.build_flow`)."""
        return build_flow(self, node)

    def _statement_set(self, node: Tree) -> tuple[ast.Insert, ...]:
        """Flink's ``EXECUTE STATEMENT SET BEGIN … END``: its INSERTs, each its own query."""
        return tuple(
            self._insert_stmt(child)
            for child in node.children
            if isinstance(child, Tree) and child.data == "insert_stmt"
        )

    def _create_function(self, node: Tree) -> ast.CreateFunction:
        """``CREATE FUNCTION``: its clauses, each at most once; whether they make a Python
        or a SQL function is the planner's to judge
        (:mod:`sqlstream.planning.function_definitions`)."""
        clauses: dict[str, Tree] = {}
        for child in node.children:
            if isinstance(child, Tree) and child.data.startswith("function_"):
                if child.data in clauses:
                    raise self.error(
                        ParseError,
                        f"{str(child.children[0]).upper()} is given twice in this CREATE FUNCTION",
                        child,
                        hint="keep one of the two",
                    )
                clauses[child.data] = child
        params = clauses.get("function_params")
        parameters = (
            None
            if params is None
            else tuple(
                (self.name(kept_children(p)[0]), self.type(kept_children(p)[1]))
                for p in params.children
                if isinstance(p, Tree)
            )
        )
        returns = clauses.get("function_returns")
        language = clauses.get("function_language")
        reference = clauses.get("function_reference")
        body = clauses.get("function_return")
        reference_token = kept_children(reference)[0] if reference is not None else None
        return ast.CreateFunction(
            name=self.name(self.find(node, "name")),
            parameters=parameters,
            returns=self.type(kept_children(returns)[0]) if returns is not None else None,
            returns_span=self.span(kept_children(returns)[0]) if returns is not None else None,
            language=(
                ast.Name(
                    str(kept_children(language)[0]).upper(), self.span(kept_children(language)[0])
                )
                if language is not None
                else None
            ),
            reference=unquote_string(str(reference_token)) if reference_token else None,
            reference_span=self.span(reference_token) if reference_token else None,
            body=self.sql(kept_children(body)[0]) if body is not None else None,
            span=self.span(node),
        )

    def _select_stmt(self, node: Tree) -> ast.Select:
        return ast.Select(
            self.sql(self.find(node, "query")), self.emit(self.find(node, "emit")), self.span(node)
        )

    def as_query(self, node: Tree | None) -> tuple[ast.SqlText | None, ast.Emit | None]:
        if node is None:
            return None, None
        return self.sql(self.find(node, "query")), self.emit(self.find(node, "emit"))
