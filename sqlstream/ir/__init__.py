"""Intermediate representations shared by the later stages, and what a compile is judged by.

:mod:`~sqlstream.ir.plan` is what the planner produces: the relations to read, the
temporary views to define and the queries to start, with the facts each query was checked
with. :mod:`~sqlstream.ir.calls` is what lowering produces: the program of binding calls
(PySpark calls as data) that ``translate`` prints and the binder runs.
:mod:`~sqlstream.ir.context` is the compile context the planner hands every rule
explicitly: the target Spark minor (:mod:`~sqlstream.ir.spark_versions`, the supported
versions and the default one), the user functions defined so far
(:mod:`~sqlstream.ir.user_functions`, the record of each ``CREATE FUNCTION``) and the stores
a compile may answer from (:mod:`~sqlstream.ir.caches`, the language server's kept from
check to check).
"""
