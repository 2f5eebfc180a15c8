"""The stores a compile may answer from instead of computing again, owned by one
:class:`~sqlstream.ir.context.CompileContext`.

The language server checks a file again after each keystroke, with most statements' text
unchanged: it keeps one :class:`CompileCaches` per open document
(:meth:`CompileCaches.for_language_server`), passes it to every check of that document
(:meth:`CompileCaches.next_check` first) and drops it when the document is closed; each
store keeps at most a number of answers, evicting the least recently used
(:class:`BoundedCache`). ``check`` and
``compile`` make a fresh one per compile (:meth:`CompileCaches.for_compile`) in which only
the computed-column types are kept (a file declares many streams with the same computed
columns). Each store is consulted by the one function that owns its answers; an answer
depends only on its key, so a compile answered from the stores equals one without them
(``tests/planning/test_remembered_results.py``, ``tests/lsp/test_incremental.py``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

__all__ = [
    "BoundedCache",
    "CompileCaches",
    "LANGUAGE_SERVER_LIMIT",
    "COMPUTED_TYPES_LIMIT",
]

LANGUAGE_SERVER_LIMIT = 32_768
"""How many answers each of the language server's stores keeps for one document (about
10,000 statements' worth; the stores of a document are dropped when it is closed)."""

COMPUTED_TYPES_LIMIT = 4096
"""How many computed-column types a store keeps."""


class BoundedCache:
    """A store of answers by exact key, holding at most ``limit`` of them, least recently
    used first.

    A check asks for many keys in file order; when they are more than ``limit``, evicting
    the least recently used answer for each new one would evict the answers the next check
    asks for first, again and again, and keep none of them. So the store counts checks
    (:meth:`next_check`): an answer asked for or kept during the current check is never
    evicted for another of the same check (the new one is then not kept). The next check
    of an edited file finds the first ``limit`` answers of the last one.

    Keys are hashed once per :meth:`get` and :meth:`keep` besides the move to the end (the
    keys of trees are long tuples, which Python hashes anew each time).

    Args:
        limit: how many answers to keep (at least 1).
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.check = 0
        self.hits = 0  # answers given (for tests and benchmarks)
        self._entries: OrderedDict[Any, list] = OrderedDict()  # key -> [check, answer]

    def get(self, key, default=None):
        """The answer kept under ``key`` (now the most recently used), or ``default``."""
        entry = self._entries.get(key)
        if entry is None:
            return default
        self._entries.move_to_end(key)
        entry[0] = self.check
        self.hits += 1
        return entry[1]

    def keep(self, key, value) -> None:
        """Keep ``value`` under ``key`` (a key :meth:`get` did not find), first evicting the
        least recently used answer when the store is full; keep nothing when that answer
        was used in the current check."""
        if len(self._entries) >= self.limit:
            if next(iter(self._entries.values()))[0] == self.check:
                return
            self._entries.popitem(last=False)
        self._entries[key] = [self.check, value]

    def next_check(self) -> None:
        """Start a new check: the answers of the earlier ones may be evicted."""
        self.check += 1

    def clear(self) -> None:
        """Drop every answer."""
        self._entries.clear()

    def values(self) -> list:
        """The answers, least recently used first."""
        return [entry[1] for entry in self._entries.values()]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator:
        return iter(self._entries)

    def __contains__(self, key) -> bool:
        return key in self._entries

    def __repr__(self) -> str:
        return f"BoundedCache({len(self)} of {self.limit})"


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
        references: ``(kind, text)`` → the names and calls the language server indexes
            in a query or expression text (:mod:`sqlstream.lsp.names`).
    """

    parses: BoundedCache | None = None
    printed: BoundedCache | None = None
    rewrites: BoundedCache | None = None
    query_texts: BoundedCache | None = None
    schemas: BoundedCache | None = None
    computed_types: BoundedCache | None = None
    references: BoundedCache | None = None

    def stores(self) -> list[BoundedCache]:
        """The stores that are on."""
        return [s for f in fields(self) if (s := getattr(self, f.name)) is not None]

    def next_check(self) -> None:
        """Start a new check in every store (:meth:`BoundedCache.next_check`): what the
        earlier checks kept may now be evicted for what this one keeps."""
        for store in self.stores():
            store.next_check()

    def entries(self) -> int:
        """How many answers the stores hold in all."""
        return sum(len(store) for store in self.stores())

    @classmethod
    def for_compile(cls) -> CompileCaches:
        """The stores of one ``check`` / ``compile``: the computed-column types only."""
        return cls(computed_types=BoundedCache(COMPUTED_TYPES_LIMIT))

    @classmethod
    def for_language_server(cls, limit: int = LANGUAGE_SERVER_LIMIT) -> CompileCaches:
        """Every store on, each keeping at most ``limit`` answers (computed-column types:
        :data:`COMPUTED_TYPES_LIMIT`): the language server's, one per open document, kept
        from check to check."""
        return cls(
            parses=BoundedCache(limit),
            printed=BoundedCache(limit),
            rewrites=BoundedCache(limit),
            query_texts=BoundedCache(limit),
            schemas=BoundedCache(limit),
            computed_types=BoundedCache(COMPUTED_TYPES_LIMIT),
            references=BoundedCache(limit),
        )
