"""The text of ``sqlstream state``: the state a query keeps in its checkpoint, as
:mod:`sqlstream.runtime.state_reader` read it, in aligned tables (``rich`` renders them
when installed). No Spark call.
"""

from __future__ import annotations

from collections.abc import Sequence


def _cell(value, top: bool = True) -> str:
    """``a=1, w={start=…, end=…}``: a key or value struct on one line."""
    if isinstance(value, dict):
        text = ", ".join(f"{k}={_cell(v, False)}" for k, v in value.items())
        return text if top else "{" + text + "}"
    return "null" if value is None else str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], indent: str) -> list[str]:
    """Rows as an aligned text table (``rich`` renders it when installed)."""
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        return [
            indent + "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
            for line in [headers, *rows]
        ]
    table = Table(*headers, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for row in rows:
        table.add_row(*row)
    console = Console(width=200, no_color=True, force_terminal=False, highlight=False)
    with console.capture() as captured:
        console.print(table)
    return [indent + line.rstrip() for line in captured.get().splitlines() if line.strip()]


def render(states: Sequence) -> str:
    """The text ``sqlstream state`` prints: per query, the latest batch and watermark,
    each store with its rows per partition, and the first rows of state.

    Args:
        states: what :func:`sqlstream.runtime.state_reader.read` returns
            (:class:`~sqlstream.runtime.state_reader.QueryState` records).
    """
    out: list[str] = []
    for state in states:
        out.append(f"query {state.name} (line {state.line})")
        out.append(f"  checkpoint: {state.checkpoint_location} (read-only)")
        out.append(
            f"  latest committed batch: {state.latest_batch_id}, "
            f"watermark: {state.watermark or 'none'}"
        )
        if state.snapshot_batch_id is not None:
            out.append(
                f"  partition {state.partition} only, rebuilt from its snapshot of batch "
                f"{state.snapshot_batch_id} and the deltas up to batch "
                f"{state.latest_batch_id}"
            )
        for op in state.operators:
            kind = op["kind"] + (f" ({op['join_type']})" if op.get("join_type") else "")
            where = f" in view {op['relation']}" if op.get("relation") else ""
            aggs = f"; aggregates: {', '.join(op['aggregates'])}" if op.get("aggregates") else ""
            out.append(f"  {kind}{where}: keys {', '.join(op['keys'])}{aggs}")
        out.extend(
            _table(
                [
                    "operator",
                    "name",
                    "store",
                    "partitions",
                    "batches",
                    "rows",
                    "rows per partition",
                ],
                [
                    [
                        str(s.operator_id),
                        s.operator,
                        s.store,
                        str(s.partitions),
                        f"{s.min_batch_id}-{s.max_batch_id}",
                        str(s.rows),
                        " ".join(str(n) for _, n in s.rows_per_partition),
                    ]
                    for s in state.stores
                ],
                "  ",
            )
        )
        for store in state.stores:
            if not store.first_rows:
                continue
            out.append(
                f"  first {len(store.first_rows)} of {store.rows} rows of operator "
                f"{store.operator_id} ({store.store}), by key:"
            )
            if "change_type" in store.first_rows[0]:
                out.extend(
                    _table(
                        ["batch", "change", "partition", "key", "value"],
                        [
                            [
                                str(r["batch_id"]),
                                r["change_type"],
                                str(r["partition"]),
                                _cell(r["key"]),
                                _cell(r["value"]),
                            ]
                            for r in store.first_rows
                        ],
                        "    ",
                    )
                )
                continue
            out.extend(
                _table(
                    ["partition", "key", "value"],
                    [
                        [str(r["partition"]), _cell(r["key"]), _cell(r["value"])]
                        for r in store.first_rows
                    ],
                    "    ",
                )
            )
        if state.output_mode == "append" and any(
            o["kind"] == "aggregation" for o in state.operators
        ):
            out.append(
                "  append mode: a window is written once the watermark passes its end; "
                "the rows of state are the windows still open"
            )
        out.append("")
    return "\n".join(out)
