"""The keys sqlstream sets in a sqlglot node's ``meta``: what a rewrite or a pass records on
a node for a later one to read. Constants only, in a module of their own, so that a reader
imports the key and not the stage that sets it.
"""

from __future__ import annotations

LOOKUP = "sqlstream_lookup"
"""On a ``Join`` written as a lookup join (:func:`sqlstream.sql.rewrite.lookup_joins`): its
``AS OF`` time as SQL, for the rule SS336 (:mod:`sqlstream.analysis.checks`)."""

LOOKUP_TIME = "sqlstream_lookup_time"
"""The same time as a tree, for the schema's name checks (:mod:`sqlstream.analysis.schema`)."""

REWRITTEN_FROM = "sqlstream_rewritten_from"
"""On a node a rewrite made: the syntax it replaced (``QUALIFY``, ``DISTINCT ON``, …), so
that messages name what the user wrote."""

DEDUP_REFUSED = "sqlstream_dedup_refused"
"""On a ``ROW_NUMBER`` window that looks like a deduplication but cannot be one: why
(:mod:`sqlstream.analysis.dedup` and the compiler set it, the rule SS325 reports it)."""
