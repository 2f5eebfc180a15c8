"""The compile stores (:mod:`sqlstream.ir.caches`): bounded, least recently used answers
evicted, and an edit at the top of a file longer than a store still answered from it for
most of what the last check kept. No JVM."""

from __future__ import annotations

from sqlstream.ir.caches import BoundedCache, CompileCaches
from sqlstream.lsp.analysis import analyze
from tests.support.long_files import mixed_file


def _check(store: BoundedCache, keys) -> int:
    """One check asking for ``keys`` in order (keeping each one it misses); its hits."""
    store.next_check()
    before = store.hits
    for key in keys:
        if store.get(key) is None:
            store.keep(key, f"answer of {key}")
    return store.hits - before


def test_least_recently_used_answer_is_evicted():
    store = BoundedCache(3)
    for key in "abc":
        store.keep(key, key.upper())
    store.next_check()
    assert store.get("a") == "A"  # now the most recently used
    store.keep("d", "D")  # evicts b, the least recently used
    assert list(store) == ["c", "a", "d"]
    assert store.get("b") is None and len(store) == 3


def test_a_check_longer_than_the_store_keeps_its_first_answers_for_the_next():
    keys = list(range(1000))
    store = BoundedCache(400)
    assert _check(store, keys) == 0
    assert list(store) == keys[:400]  # not the last 400, which the next check asks last
    edited = ["edited", *keys[1:]]  # an edit at the top: the first key changes
    assert _check(store, edited) == 399  # clear-all or plain LRU stores: 0
    assert len(store) == 400
    assert _check(store, edited) == 400  # the same text again: every answer kept


def test_an_edit_at_the_top_of_a_long_file_reuses_most_of_the_last_check():
    text = mixed_file(400)
    caches = CompileCaches.for_language_server(limit=200)  # fewer than the file asks for
    first = analyze(text, caches=caches)
    assert not [f for f in first.findings if f.severity == "error"]
    assert all(len(store) <= 200 for store in caches.stores())
    parses = caches.parses
    assert parses is not None
    edited = text.replace("WHERE a > 0;", "WHERE a >= 0;", 1)
    hits = parses.hits
    second = analyze(edited, previous=first, caches=caches)
    assert parses.hits - hits >= 150  # most of the 200 parses kept answer the second check
    fresh = analyze(edited)  # the same as a check from scratch with stores of its own
    assert [f.message for f in second.findings] == [f.message for f in fresh.findings]
    assert second.statements == fresh.statements


def test_the_entries_of_all_stores():
    caches = CompileCaches.for_language_server(limit=10)
    assert caches.entries() == 0
    analyze(mixed_file(20), caches=caches)
    assert 0 < caches.entries() <= 10 * len(caches.stores())
    assert CompileCaches().stores() == []
