"""A sink's whole current table after a step of a pipeline test (``table: {sink: rows}``,
docs/pipeline-tests.md), from what the test's capture received so far.

What the sink would hold, by its kind: the target of an ``AUTO CDC`` flow holds the
changes applied (:func:`sqlstream.connectors.cdc.cdc_apply.merge`, the applier's own merge, over
every change received; SCD 2 with ``__START_AT`` / ``__END_AT``); a query in complete mode
the last result; a ``postgres`` sink in upsert mode the last row of each key; any other
sink every row written.
"""

from __future__ import annotations

import json

from sqlstream.connectors.cdc.cdc_apply import END_AT, START_AT, arrival_order, merge
from sqlstream.ir import plan as p
from sqlstream.testing import values
from sqlstream.testing.capture import Capture


def current_table(
    query: p.Query, capture: Capture
) -> tuple[list[tuple], list[tuple[str, values.Type]]]:
    """``(rows, columns)`` of the table that ``query``'s sink holds after the micro-batches
    ``capture`` received (rows as :func:`values.normal` tuples in the order of
    ``columns``, ``(name, type)``)."""
    rows = [row for batch in capture.order for row in capture.batches[batch]]
    columns = list(capture.columns)
    settings = dict(query.sink.settings)
    flow = settings.get("auto_cdc")
    if flow is not None:
        cdc = json.loads(flow)
        at = {n.lower(): i for i, (n, _) in enumerate(columns)}
        seq = at[cdc["sequence"].lower()]
        if cdc.get("arrival"):  # numbered as the applier numbers them
            rows = [
                row
                for number, batch in enumerate(capture.order)
                for row in arrival_order(list(capture.batches[batch]), seq, number)
            ]
        _, table = merge(
            rows,
            [at[k.lower()] for k in cdc["keys"]],
            seq,
            at[cdc["delete"].lower()],
            cdc["scd_type"],
            [at[c.lower()] for c in cdc["columns"]],
            [at[c.lower()] for c in cdc["tracked"]],
        )
        shown = [columns[at[c.lower()]] for c in cdc["columns"]]
        if cdc["scd_type"] == 2:
            shown += [(START_AT, columns[seq][1]), (END_AT, columns[seq][1])]
        return table, shown
    if query.output_mode == "complete":
        return (list(capture.batches[capture.order[-1]]) if capture.order else []), columns
    options = dict(query.sink.options)
    if options.get("mode") == "upsert" and options.get("key_columns"):
        at = {n.lower(): i for i, (n, _) in enumerate(columns)}
        keys = [at[k.strip().lower()] for k in options["key_columns"].split(",")]
        latest = {tuple(r[i] for i in keys): r for r in rows}
        return list(latest.values()), columns
    return rows, columns
