"""Changes ordered by arrival (Flink's changelog spelling, docs/cdc.md#flink-spelling): the
applier numbers each change by batch id and place in the batch, and the merge of
``cdc_apply`` then applies them as Flink applies a changelog to a keyed table: the later
change of a key wins, a delete followed by a create re-creates the row."""

from __future__ import annotations

import pytest

from sqlstream.connectors.cdc.cdc_apply import arrival_order, arrival_sequence, merge

# (id, name, sequence, delete)
BATCHES = [
    [(1, "a", 0, False), (2, "b", 0, False), (1, "a2", 0, False)],
    [(2, "b", 0, True), (1, "a3", 0, False)],
    [(2, "b2", 0, False), (3, "c", 0, False), (3, "c", 0, True)],
]


def _flink(batches) -> set:
    """A changelog applied in arrival order, by a dict: Flink's upsert/delete by key."""
    table: dict = {}
    for batch in batches:
        for key, name, _, delete in batch:
            if delete:
                table.pop(key, None)
            else:
                table[key] = (key, name)
    return set(table.values())


def test_arrival_sequences_grow_across_and_within_batches():
    numbers = [arrival_sequence(b, i) for b in range(3) for i in (0, 1, 2**32 - 1)]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    with pytest.raises(ValueError):
        arrival_sequence(0, 2**32)


def test_merged_by_arrival_equals_applying_the_log_in_order():
    kept: list[tuple] = []
    for batch_id, batch in enumerate(BATCHES):
        numbered = arrival_order(batch, 2, batch_id)
        keys = {r[0] for r in numbered}
        kept_here = [c for c in kept if c[0] in keys]
        new_kept, rows = merge(kept_here + numbered, [0], 2, 3, 1, [0, 1], [])
        kept = [c for c in kept if c[0] not in keys] + new_kept
    table = {r[0]: (r[0], r[1]) for r in kept if not r[3]}
    assert set(table.values()) == _flink(BATCHES) == {(1, "a3"), (2, "b2")}
