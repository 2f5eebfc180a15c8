"""The applier's merge (:func:`sqlstream.connectors.cdc.cdc_apply.merge`) without Spark: the
cases a random log rarely draws, worked out by hand from AUTO CDC's meaning (the runs
against PostgreSQL and a batch oracle are ``test_auto_cdc_spark.py``)."""

from __future__ import annotations

from sqlstream.connectors.cdc.cdc_apply import merge

# rows: (id, city, note, seq, delete); the target's columns: id, city, note
KEY, SEQ, DELETE, VALUES = [0], 3, 4, [0, 1, 2]


def _scd1(changes):
    return sorted(merge(changes, KEY, SEQ, DELETE, 1, VALUES, [])[1])


def _scd2(changes, tracked=(1,)):
    return sorted(merge(changes, KEY, SEQ, DELETE, 2, VALUES, list(tracked))[1], key=repr)


def test_scd1_the_highest_sequence_wins_whatever_the_order():
    changes = [
        (1, "Lyon", "b", 13, False),
        (1, "Paris", "a", 10, False),
        (1, "Nice", "c", 12, False),
    ]
    assert _scd1(changes) == [(1, "Lyon", "b")]


def test_scd1_a_tombstone_keeps_older_updates_out_and_a_newer_change_recreates():
    deleted = [(1, "Paris", "a", 10, False), (1, "Paris", "a", 20, True)]
    assert _scd1(deleted + [(1, "Oslo", "x", 15, False)]) == []
    kept, _ = merge(deleted, KEY, SEQ, DELETE, 1, VALUES, [])
    assert kept == [(1, "Paris", "a", 20, True)]  # the tombstone is what is kept
    assert _scd1(kept + [(1, "Oslo", "x", 15, False)]) == []  # across micro-batches too
    assert _scd1(kept + [(1, "Oslo", "x", 21, False)]) == [(1, "Oslo", "x")]


def test_a_delete_wins_over_an_update_of_the_same_sequence():
    assert _scd1([(1, "Paris", "a", 10, True), (1, "Oslo", "b", 10, False)]) == []
    assert _scd2([(1, "Paris", "a", 10, True), (1, "Oslo", "b", 10, False)]) == []


def test_scd2_untracked_changes_update_the_version_in_place():
    changes = [
        (1, "Paris", "a", 10, False),
        (1, "Paris", "b", 11, False),
        (1, "Lyon", "b", 12, False),
    ]
    assert _scd2(changes) == [(1, "Lyon", "b", 12, None), (1, "Paris", "b", 10, 12)]
    # every column tracked: each change opens a version
    assert len(_scd2(changes, tracked=(1, 2))) == 3


def test_scd2_a_late_change_is_put_at_its_place_and_a_delete_closes_the_version():
    log = [(1, "Paris", "a", 10, False), (1, "Nice", "a", 30, False), (1, "Paris", "a", 40, True)]
    assert _scd2(log) == [(1, "Nice", "a", 30, 40), (1, "Paris", "a", 10, 30)]
    late = log + [(1, "Rome", "a", 20, False)]
    assert _scd2(late) == [
        (1, "Nice", "a", 30, 40),
        (1, "Paris", "a", 10, 20),
        (1, "Rome", "a", 20, 30),
    ]
    recreated = late + [(1, "Oslo", "a", 50, False)]
    assert (1, "Oslo", "a", 50, None) in _scd2(recreated)
