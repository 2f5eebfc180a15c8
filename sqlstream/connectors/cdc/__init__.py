"""Changes applied to a table by key (``CREATE FLOW … AS AUTO CDC``, docs/cdc.md#auto-cdc):
the micro-batch applier and its merge, independent of the target
(:mod:`~sqlstream.connectors.cdc.cdc_apply`), and the targets that take row-level changes
(``postgres``: :mod:`~sqlstream.connectors.cdc.postgres_cdc`). Not connectors themselves:
the ``foreachBatch`` functions a connector's lowering names when its sink is a flow's target.
"""

from __future__ import annotations

import json
from typing import Any

from sqlstream.connectors.foreach_batch import function_chain
from sqlstream.ir.calls import Step

APPLIER_MODULE = "sqlstream.connectors.cdc.cdc_apply"


def applier_step(
    flow_json: str, module: str, target: str, options: tuple[tuple[str, Any], ...]
) -> Step:
    """The ``foreachBatch`` step of a sink that is the target of an ``AUTO CDC`` flow::

        foreachBatch(importlib.import_module('sqlstream.connectors.cdc.cdc_apply').CdcApplier(
            target=importlib.import_module(<module>).<target>(…options…),
            keys=[…], columns=[…], scd_type=1, tracked=[…][, arrival=True]))

    Args:
        flow_json: the sink's settings' ``auto_cdc`` (JSON from
            :mod:`sqlstream.planning.flows`: ``keys``, ``columns``, ``scd_type``,
            ``tracked``, ``arrival``).
        module, target: the target table class (e.g. ``…cdc.postgres_cdc``,
            ``PostgresCdcTable``), called with ``options`` (keyword arguments).
    """
    flow = json.loads(flow_json)
    call = (
        ("target", function_chain(module, (target,), call=options)),
        ("keys", tuple(flow["keys"])),
        ("columns", tuple(flow["columns"])),
        ("scd_type", flow["scd_type"]),
        ("tracked", tuple(flow["tracked"])),
        *((("arrival", True),) if flow.get("arrival") else ()),
    )
    return Step("foreachBatch", (function_chain(APPLIER_MODULE, ("CdcApplier",), call=call),))
