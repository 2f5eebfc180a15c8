"""Intermediate representations shared by the later stages (data only, no behaviour).

:mod:`~sqlstream.ir.plan` is what the planner produces: the relations to read, the
temporary views to define and the queries to start, with the facts each query was checked
with. :mod:`~sqlstream.ir.calls` is what lowering produces: the program of binding calls
(PySpark calls as data) that ``translate`` prints and the binder runs.
"""
