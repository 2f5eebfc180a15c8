"""The types of computed columns kept in a compile context's store
(``computed_types`` of :class:`~sqlstream.ir.caches.CompileCaches`, read by
``sqlstream.planning.declarations._computed_type``; one per ``check``, the language server's
kept across checks): a compile that finds them kept gives the findings and the plan a
compile with an empty store gives, for every program of the tests and examples; the judged
Spark minor and the functions defined are part of what a type depends on. No JVM."""

from __future__ import annotations

from dataclasses import replace

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend.parser import parse
from sqlstream.ir.caches import CompileCaches
from sqlstream.planning.planner import Planner
from tests.conftest import PROGRAMS, program_variables

HEAD = "CREATE SINK out WITH (connector = 'console');\n"


def _stream(name: str, computed: str) -> str:
    return (
        f"CREATE STREAM {name} (a INT, b STRING, ts TIMESTAMP, c AS {computed}, "
        f"WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
        f"WITH (connector = 'files', path = 'in', format = 'json');\n"
    )


def _outcome(text: str, variables=None, spark_version=None, caches=None):
    """The findings and plan of a compile answered from ``caches`` (``None``: a store of
    its own, as ``check``'s)."""
    try:
        script = parse(text, variables)
    except SqlStreamError as error:  # refused before planning: no store is read
        return [(error.code, error.severity, error.message, error.span)], None
    plan, findings = Planner(script, spark_version=spark_version, caches=caches).result()
    # errors compare by identity: the plan's warnings are compared as the findings are
    return (
        [(f.code, f.severity, f.message, f.span) for f in findings],
        replace(plan, warnings=()),
    )


def test_kept_types_give_what_an_empty_store_gives_for_every_program():
    texts = [(p.read_text("utf-8-sig"), p) for p in PROGRAMS]
    cold, kept = [], 0
    for text, _ in texts:
        store = CompileCaches.for_compile()
        cold.append(_outcome(text, program_variables(text), caches=store))
        kept += len(store.computed_types)
    store = CompileCaches.for_compile()
    for text, _ in texts:  # every type of every program kept now
        _outcome(text, program_variables(text), caches=store)
    assert kept > 20 and len(store.computed_types) > 20
    for (text, path), expected in zip(texts, cold, strict=True):
        assert _outcome(text, program_variables(text), caches=store) == expected, path


def test_a_kept_type_is_given_again_without_findings_and_findings_are_not_kept():
    store = CompileCaches.for_compile()
    text = (
        HEAD
        + _stream("s", "a * 2")
        + _stream("t", "nope(a)")
        + "INSERT INTO out SELECT c FROM s;\n"
    )
    first = _outcome(text, caches=store)
    assert [code for code, *_ in first[0]] == ["SS206"]
    assert list(store.computed_types.values()) == ["INT"]  # `nope(a)` not kept
    assert _outcome(text, caches=store) == first


def test_the_judged_spark_minor_is_part_of_the_key():
    text = (
        HEAD + _stream("s", "jaro_winkler_similarity(b, b)") + "INSERT INTO out SELECT c FROM s;\n"
    )
    for order in (("4.3", "4.0"), ("4.0", "4.3")):
        store = CompileCaches.for_compile()
        outcomes = {version: _outcome(text, None, version, store) for version in order}
        assert "SS206" in [code for code, *_ in outcomes["4.0"][0]]  # 4.3 added the function
        assert "SS206" not in [code for code, *_ in outcomes["4.3"][0]]


def test_nothing_is_kept_or_given_while_a_function_is_defined():
    stream = _stream("s", "to_f(a)")
    unknown = HEAD + stream + "INSERT INTO out SELECT c FROM s;\n"
    defined = (
        HEAD
        + "CREATE FUNCTION to_f(x INT) RETURNS STRING RETURN CAST(x AS STRING);\n"
        + stream
        + "INSERT INTO out SELECT c FROM s;\n"
    )
    store = CompileCaches.for_compile()
    findings, _ = _outcome(defined, caches=store)
    assert not [f for f in findings if f[1] == "error"] and not store.computed_types
    assert "SS206" in [code for code, *_ in _outcome(unknown, caches=store)[0]]
    store = CompileCaches.for_compile()
    plain = HEAD + _stream("s", "upper(b)") + "INSERT INTO out SELECT c FROM s;\n"
    _outcome(plain, caches=store)
    assert list(store.computed_types.values()) == ["STRING"]
    shadowing = (
        HEAD
        + "CREATE FUNCTION upper(x STRING) RETURNS INT RETURN length(x);\n"
        + _stream("s", "upper(b)")
        + "INSERT INTO out SELECT c FROM s;\n"
    )
    assert _outcome(shadowing, caches=store) == _outcome(shadowing)  # kept, and a store of its own
