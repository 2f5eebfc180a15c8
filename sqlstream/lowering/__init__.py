"""Lowering: :class:`~sqlstream.ir.plan.Plan` → :class:`~sqlstream.ir.calls.Program`, and
the views of a plan a user reads.

Enters: a plan.
Leaves: the one program of binding calls (:func:`~sqlstream.lowering.lower.lower`), kept
with its plan and lowered once (:class:`~sqlstream.lowering.lowered.Lowered`, what
``compile`` returns), printed by ``translate`` (:mod:`~sqlstream.lowering.printer`, also as
a standalone PySpark script) and run by :mod:`sqlstream.runtime`; ``explain``'s
description of each query (:mod:`~sqlstream.lowering.explain`); the Spark packages a plan needs
(:mod:`~sqlstream.lowering.packages`) and the session configuration shared by a local
session, Spark Connect and the ejected script (:mod:`~sqlstream.lowering.session_config`).
Nothing here imports pyspark.
"""
