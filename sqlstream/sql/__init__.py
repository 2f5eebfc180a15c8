"""SQL: the sqlstream dialect of sqlglot and its rewrites to Spark SQL.

Enters: the raw text of a query body (with its span).
Leaves: a sqlglot tree in Spark's dialect after the ordered rewrites of
:data:`~sqlstream.sql.rewrite.REWRITES` (window TVFs → ``window()``, ``DISTINCT ON``,
``QUALIFY``, stream markers, …), and :func:`~sqlstream.sql.parsing.to_spark_sql`, which
prints a tree as the Spark SQL that runs.
"""
