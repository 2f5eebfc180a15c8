"""The types of computed columns kept across compiles
(``sqlstream.planning.declarations._computed_type``): a compile that finds them kept gives
the findings and the plan a compile with an empty store gives, for every program of the
tests and examples; the judged Spark minor and the functions defined are part of what a
type depends on. No JVM."""

from __future__ import annotations

from dataclasses import replace

import sqlstream
from sqlstream.planning import declarations
from tests.conftest import PROGRAMS, program_variables

HEAD = "CREATE SINK out WITH (connector = 'console');\n"


def _stream(name: str, computed: str) -> str:
    return (
        f"CREATE STREAM {name} (a INT, b STRING, ts TIMESTAMP, c AS {computed}, "
        f"WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
        f"WITH (connector = 'files', path = 'in', format = 'json');\n"
    )


def _outcome(text: str, variables=None, spark_version=None):
    findings, plan = sqlstream.check_plan(text, variables, spark_version=spark_version)
    # errors compare by identity: the plan's warnings are compared as the findings are
    return (
        [(f.code, f.severity, f.message, f.span) for f in findings],
        None if plan is None else replace(plan, warnings=()),
    )


def test_kept_types_give_what_an_empty_store_gives_for_every_program():
    texts = [(p.read_text("utf-8-sig"), p) for p in PROGRAMS]
    cold, kept = [], 0
    for text, _ in texts:
        declarations._COMPUTED_TYPES.clear()
        cold.append(_outcome(text, program_variables(text)))
        kept += len(declarations._COMPUTED_TYPES)
    declarations._COMPUTED_TYPES.clear()
    for text, _ in texts:  # every type of every program kept now
        _outcome(text, program_variables(text))
    assert kept > 20 and len(declarations._COMPUTED_TYPES) > 20
    for (text, path), expected in zip(texts, cold, strict=True):
        assert _outcome(text, program_variables(text)) == expected, path


def test_a_kept_type_is_given_again_without_findings_and_findings_are_not_kept():
    declarations._COMPUTED_TYPES.clear()
    text = (
        HEAD
        + _stream("s", "a * 2")
        + _stream("t", "nope(a)")
        + "INSERT INTO out SELECT c FROM s;\n"
    )
    first = _outcome(text)
    assert [code for code, *_ in first[0]] == ["SS206"]
    assert list(declarations._COMPUTED_TYPES.values()) == ["INT"]  # `nope(a)` not kept
    assert _outcome(text) == first
    assert first[1] is None


def test_the_judged_spark_minor_is_part_of_the_key():
    text = (
        HEAD + _stream("s", "jaro_winkler_similarity(b, b)") + "INSERT INTO out SELECT c FROM s;\n"
    )
    for order in (("4.3", "4.0"), ("4.0", "4.3")):
        declarations._COMPUTED_TYPES.clear()
        outcomes = {version: _outcome(text, spark_version=version) for version in order}
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
    declarations._COMPUTED_TYPES.clear()
    findings, _ = _outcome(defined)
    assert not [f for f in findings if f[1] == "error"] and not declarations._COMPUTED_TYPES
    assert "SS206" in [code for code, *_ in _outcome(unknown)[0]]
    declarations._COMPUTED_TYPES.clear()
    plain = HEAD + _stream("s", "upper(b)") + "INSERT INTO out SELECT c FROM s;\n"
    _outcome(plain)
    assert list(declarations._COMPUTED_TYPES.values()) == ["STRING"]
    shadowing = (
        HEAD
        + "CREATE FUNCTION upper(x STRING) RETURNS INT RETURN length(x);\n"
        + _stream("s", "upper(b)")
        + "INSERT INTO out SELECT c FROM s;\n"
    )
    assert _outcome(shadowing) == (declarations._COMPUTED_TYPES.clear() or _outcome(shadowing))
