"""A query body's text → its tree after every rewrite, through the compile context's stores.

:func:`rewritten_query` is the sql stage's whole path for the body of a view or query:
parse, the caller's checks of what the parse reads, ksqlDB's windows completed, the
ordered rewrites. Each store it passes through is consulted by the function that owns it
(:func:`~sqlstream.sql.parsing.parse_query`, :func:`~sqlstream.sql.rewrite.rewrite_parsed`,
:func:`~sqlstream.sql.rewrite.kept_query`), when the context has it on.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from sqlstream.ir.caches import CompileCaches
from sqlstream.sql.expressions import WindowTVF
from sqlstream.sql.ksql_windows import ksql_windows
from sqlstream.sql.parsing import parse_query
from sqlstream.sql.rewrite import keep_query, kept_query, relation_names, rewrite_parsed
from sqlstream.sql.tree_walks import find_all

__all__ = ["rewritten_query"]

Names = list[tuple[str, int, int]]


def rewritten_query(
    sql: str,
    caches: CompileCaches | None,
    read: Callable[[exp.Expr | None, Names], None],
    event_time: Callable[[str], tuple[str | None, str | None] | None],
) -> exp.Expr:
    """The tree of the query text ``sql`` after every rewrite, for a caller that uses it
    alone (nothing else holds a node of it).

    1. parse (:func:`~sqlstream.sql.parsing.parse_query`);
    2. ``read(tree, names)``: the caller's checks of the parsed tree and of the relations it
       reads (:func:`~sqlstream.sql.rewrite.relation_names`: ``(name, start, end)``,
       offsets in ``sql``), before any rewrite; it raises to refuse the query;
    3. ksqlDB's ``WINDOW`` clauses completed with the event time of the relation they read
       (``event_time``, :func:`~sqlstream.sql.ksql_windows.ksql_windows`);
    4. the rewrites (:func:`~sqlstream.sql.rewrite.rewrite_parsed`).

    With ``caches.query_texts`` on, the names and the rewritten tree of a text are kept
    (not for a query with a ksqlDB window: its completion reads the caller's relations),
    and a text kept before is answered, without parsing, after ``read(None, names)``, with
    a copy of its tree.

    Raises:
        SqlStreamError: a syntax error (``SS102``), what ``read`` raises, an invalid window
            TVF or ksqlDB window, with offsets in ``sql``.
    """
    kept = kept_query(sql, caches)
    if kept is not None:
        names, tree = kept
        read(None, names)
        return tree
    tree = parse_query(sql, caches)
    names = relation_names(tree) if isinstance(tree, (exp.Query, exp.Values)) else []
    read(tree, names)
    ksql = any("ksql" in (n._meta or ()) for n in find_all(tree, WindowTVF))
    tree = ksql_windows(tree, event_time)
    tree = rewrite_parsed(tree, caches)  # the parsed tree is not used again
    if not ksql:
        keep_query(sql, names, tree, caches)
    return tree
