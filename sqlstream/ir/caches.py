"""The stores a compile may answer from instead of computing again, owned by one
:class:`~sqlstream.ir.context.CompileContext`.

The language server checks a file again after each keystroke, with most statements' text
unchanged: it keeps one :class:`CompileCaches` per workspace
(:meth:`CompileCaches.for_language_server`) and passes it to every check. ``check`` and
``compile`` make a fresh one per compile (:meth:`CompileCaches.for_compile`) in which only
the computed-column types are kept (a file declares many streams with the same computed
columns). Each store is consulted by the one function that owns its answers; an answer
depends only on its key, so a compile answered from the stores equals one without them
(``tests/planning/test_remembered_results.py``, ``tests/lsp/test_incremental.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BoundedCache", "CompileCaches", "LANGUAGE_SERVER_LIMIT", "COMPUTED_TYPES_LIMIT"]

LANGUAGE_SERVER_LIMIT = 8192
"""How many answers each of the language server's stores keeps."""

COMPUTED_TYPES_LIMIT = 4096
"""How many computed-column types a store keeps."""


class BoundedCache(dict):
    """A store of answers by exact key, holding at most ``limit`` of them: all are dropped
    when a new one would pass it.

    Args:
        limit: how many answers to keep (at least 1).
    """

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def keep(self, key, value) -> None:
        """Keep ``value`` under ``key``, first dropping every answer when the store is full."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value


@dataclass(frozen=True)
class CompileCaches:
    """The stores of a compile context; ``None`` is a store that is off (its owner
    neither asks nor keeps).

    Attributes:
        parses: ``(kind, text)`` → the sqlglot tree of a query or expression text
            (:func:`sqlstream.sql.parsing.parse_query`, ``parse_expression``; answered
            with a copy).
        printed: :func:`~sqlstream.sql.tree_walks.tree_key` → the Spark SQL printed for a
            tree (:func:`sqlstream.sql.parsing.to_spark_sql`).
        rewrites: ``tree_key`` → the rewritten tree (:func:`sqlstream.sql.rewrite.rewrite_parsed`).
        query_texts: query text → its relation names and rewritten tree
            (:func:`sqlstream.sql.query_text.rewritten_query`).
        schemas: ``(tree shape, relations' schemas, text, Spark minor)`` → the columns of a
            query without findings (:func:`sqlstream.analysis.schema.query_schema`).
        computed_types: ``(expression text, visible columns, Spark minor)`` → the type of
            a computed column without findings (:mod:`sqlstream.planning.declarations`).
        references: query text → the relation names, aliases and function calls the
            language server indexes in it (:func:`sqlstream.lsp.names.sql_references`).
        expression_calls: expression text → the function calls in it
            (:func:`sqlstream.lsp.names.expression_calls`).
    """

    parses: BoundedCache | None = None
    printed: BoundedCache | None = None
    rewrites: BoundedCache | None = None
    query_texts: BoundedCache | None = None
    schemas: BoundedCache | None = None
    computed_types: BoundedCache | None = None
    references: BoundedCache | None = None
    expression_calls: BoundedCache | None = None

    @classmethod
    def for_compile(cls) -> CompileCaches:
        """The stores of one ``check`` / ``compile``: the computed-column types only."""
        return cls(computed_types=BoundedCache(COMPUTED_TYPES_LIMIT))

    @classmethod
    def for_language_server(cls, limit: int = LANGUAGE_SERVER_LIMIT) -> CompileCaches:
        """Every store on, each keeping at most ``limit`` answers (computed-column types:
        :data:`COMPUTED_TYPES_LIMIT`): the language server's, kept from check to check."""
        return cls(
            parses=BoundedCache(limit),
            printed=BoundedCache(limit),
            rewrites=BoundedCache(limit),
            query_texts=BoundedCache(limit),
            schemas=BoundedCache(limit),
            references=BoundedCache(limit),
            expression_calls=BoundedCache(limit),
            computed_types=BoundedCache(COMPUTED_TYPES_LIMIT),
        )
