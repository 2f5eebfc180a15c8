"""SQL: the sqlstream dialect of sqlglot and its rewrites to Spark SQL.

Enters: the raw text of a query body (with its span), and the compile context's stores
(:class:`~sqlstream.ir.caches.CompileCaches`) that parses, rewrites and printed SQL may be
answered from.
Leaves: a sqlglot tree in Spark's dialect after the ordered rewrites of
:data:`~sqlstream.sql.rewrite.REWRITES` (window TVFs → ``window()``, ``DISTINCT ON``,
``QUALIFY``, stream markers, …), and :func:`~sqlstream.sql.parsing.to_spark_sql`, which
prints a tree as the Spark SQL that runs; :func:`~sqlstream.sql.query_text.rewritten_query`
is the whole path of a query body's text. The nodes the dialect adds are
:mod:`~sqlstream.sql.expressions`; the fast walks, copies and keys of trees every later
stage uses are :mod:`~sqlstream.sql.tree_walks`.
"""
