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


def _apply(kept: list[tuple], batches, batch_ids) -> list[tuple]:
    """The applier's step per batch: number by arrival above the kept changes of the
    batch's keys, merge, keep the winners."""
    for batch_id, batch in zip(batch_ids, batches, strict=True):
        keys = {r[0] for r in batch}
        kept_here = [c for c in kept if c[0] in keys]
        numbered = arrival_order(batch, 2, batch_id, kept_here)
        new_kept, _ = merge(kept_here + numbered, [0], 2, 3, 1, [0, 1], [])
        kept = [c for c in kept if c[0] not in keys] + new_kept
    return kept


def _table(kept: list[tuple]) -> set:
    return {(r[0], r[1]) for r in kept if not r[3]}


def test_merged_by_arrival_equals_applying_the_log_in_order():
    kept = _apply([], BATCHES, range(len(BATCHES)))
    assert _table(kept) == _flink(BATCHES) == {(1, "a3"), (2, "b2")}


def test_a_run_on_a_new_checkpoint_comes_after_what_was_applied():
    """Batch ids start again at 0 on a new checkpoint: its changes are numbered above the
    kept ones, so they still win, as they arrived later."""
    first = _apply([], BATCHES, [40, 41, 42])
    later = [[(1, "a4", 0, False), (2, "b", 0, True)], [(3, "c2", 0, False)]]
    kept = _apply(first, later, [0, 1])
    assert _table(kept) == _flink(BATCHES + later) == {(1, "a4"), (3, "c2")}


def test_a_replay_over_changes_that_hold_the_batch_gives_the_same_table():
    """A lakehouse target torn between its two commits replays the batch over kept
    changes that already hold it: numbered above them, the same winners."""
    kept = _apply([], BATCHES, [0, 1, 2])
    again = _apply(kept, BATCHES[2:], [2])
    assert _table(again) == _table(kept)
