"""Changes applied to a table by key (``CREATE FLOW … AS AUTO CDC``, docs/cdc.md#auto-cdc):
the micro-batch applier and its merge, independent of the target
(:mod:`~sqlstream.connectors.cdc.cdc_apply`), and the targets that take row-level changes
(``postgres``: :mod:`~sqlstream.connectors.cdc.postgres_cdc`). Not connectors themselves:
the ``foreachBatch`` functions a connector's lowering names when its sink is a flow's target.
"""
