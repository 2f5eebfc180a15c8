"""User functions (``CREATE FUNCTION``) in the language server's index and answers: their
calls are references (in queries, computed columns, watermarks and other functions'
bodies, any case, in backticks), go to definition, find references, rename, hover with the
signature and language, completion beside Spark's built-ins, the outline. No JVM."""

from __future__ import annotations

import re

from sqlstream.lsp import completion, features
from sqlstream.lsp.analysis import analyze
from sqlstream.lsp.lexical_index import lexical_analysis
from tests.conftest import ROOT

UDFS = ROOT / "examples" / "flights" / "udfs.ssql"

TEXT = """SELECT f2c(1.0) AS early;
CREATE FUNCTION f2c(x DOUBLE) RETURNS DOUBLE RETURN (x - 32) / 1.8;
CREATE STREAM s (a INT, f DOUBLE, ts TIMESTAMP, c AS f2c(f),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '/in', format = 'json');
CREATE FUNCTION g(y DOUBLE) RETURNS DOUBLE RETURN F2C(y) + 1;
SELECT f2c(f) AS f2c, g(a), `f2c`(a), upper('x') AS u FROM s WHERE f2c(f) > 0;
"""

NO_STREAM = "this query reads no stream: it reads only tables"


def _calls(text: str, name: str) -> list[int]:
    """Offsets of ``name(`` (any case, maybe in backticks) after its CREATE FUNCTION."""
    lower = text.lower()
    declared = re.search(rf"function {name}\b", lower).start() + 9
    found, at = [], declared
    while (at := lower.find(name, at + 1)) >= 0:
        if lower[at + len(name) :].lstrip("`").startswith("("):
            found.append(at)
    return [declared] + found


def test_calls_after_the_declaration_are_its_references_in_text_order():
    analysis = analyze(TEXT)
    assert [f.message for f in analysis.findings] == [NO_STREAM]  # (the first SELECT)
    refs = [
        (r.start, r.declaration)
        for r in analysis.references
        if r.name == "f2c" and r.namespace == "function"
    ]
    expected = _calls(TEXT, "f2c")
    assert [s for s, _ in refs] == expected  # not the call before it, not the alias f2c
    assert [d for _, d in refs] == [True] + [False] * (len(expected) - 1)
    assert [TEXT[s : s + 3] for s, _ in refs] == ["f2c", "f2c", "F2C", "f2c", "f2c", "f2c"]
    assert not [r for r in analysis.references if r.name == "upper"]


def test_definition_references_and_rename_from_a_call():
    analysis = analyze(TEXT)
    call = TEXT.index("f2c(f) AS") + 1
    declared = TEXT.index("FUNCTION f2c") + 9
    assert features.definition(analysis, call) == (declared, declared + 3)
    uses = features.references(analysis, call)
    assert [s for s, _ in uses] == _calls(TEXT, "f2c")
    assert features.references(analysis, call, include_declaration=False) == uses[1:]
    edits = features.rename(analysis, call, "to_c")
    renamed = TEXT
    for start, end, new in sorted(edits, reverse=True):
        renamed = renamed[:start] + new + renamed[end:]
    assert renamed == TEXT.replace("CTION f2c(", "CTION to_c(").replace(
        "AS f2c(f)", "AS to_c(f)"
    ).replace("F2C(", "to_c(").replace("SELECT f2c(f)", "SELECT to_c(f)").replace(
        "`f2c`(", "`to_c`("
    ).replace("WHERE f2c(", "WHERE to_c(")
    after = analyze(renamed)
    assert [f.message for f in after.findings] == [NO_STREAM]
    assert [s for s, _ in features.references(after, renamed.index("to_c"))] == _calls(
        renamed, "to_c"
    )
    assert features.rename(analysis, call, "upper") == "'upper' is a Spark function"
    assert features.rename(analysis, call, "g") == "'g' is already declared"


def test_hover_on_a_call_shows_the_signature_and_language():
    analysis = analyze(TEXT)
    text, start, end = features.hover(analysis, TEXT.index("g(a)"))
    assert text == "**function** `g(y DOUBLE) RETURNS DOUBLE`\n\nlanguage: SQL"
    assert TEXT[start:end] == "g"


def test_python_functions_show_the_types_the_planner_resolved():
    text = UDFS.read_text(encoding="utf-8")
    analysis = analyze(text, path=str(UDFS))
    assert not analysis.findings
    details = {d.name: d.detail for (ns, _), d in analysis.declarations.items() if ns == "function"}
    assert details == {  # delay_class's types come from its annotations (delay: float) -> str
        "carrier_group": "carrier_group(code STRING) RETURNS STRING — Python UDF `udfs:carrier_group`",
        "delay_class": "delay_class(delay DOUBLE) RETURNS STRING — Python UDF `udfs:delay_class`",
        "hhmm_to_minutes": "hhmm_to_minutes(hhmm INT) RETURNS DOUBLE — pandas UDF `udfs:hhmm_to_minutes`",
        "to_km": "to_km(miles DOUBLE) RETURNS DOUBLE — SQL",
    }
    computed = text.index("hhmm_to_minutes(dep_time)")
    text_, start, _ = features.hover(analysis, computed + 2)
    assert start == computed and "pandas UDF `udfs:hhmm_to_minutes`" in text_
    for name in details:
        assert [
            s for s, _ in features.references(analysis, text.index(f"FUNCTION {name}") + 9)
        ] == _calls(text, name)


def test_completion_offers_user_functions_beside_spark_builtins():
    analysis = analyze(TEXT)
    items = {i["label"]: i for i in completion.complete(analysis, TEXT.index("FROM s WHERE"))}
    assert items["f2c"] == {
        "label": "f2c",
        "kind": "function",
        "insert": "f2c($1)",
        "detail": "f2c(x DOUBLE) RETURNS DOUBLE — SQL",
    }
    assert items["g"]["detail"] == "g(y DOUBLE) RETURNS DOUBLE — SQL"
    assert items["upper"]["kind"] == "function"


def test_the_outline_shows_functions_with_their_signature():
    analysis = analyze(TEXT)
    functions = [s for s in features.symbols(analysis) if s["kind"] == "function"]
    assert [(s["name"], s["detail"], TEXT[s["name_start"] : s["name_end"]]) for s in functions] == [
        ("f2c", "f2c(x DOUBLE) RETURNS DOUBLE — SQL", "f2c"),
        ("g", "g(y DOUBLE) RETURNS DOUBLE — SQL", "g"),
    ]


def test_a_function_that_does_not_resolve_shows_what_was_written():
    text = (
        "CREATE FUNCTION nope(code STRING) RETURNS STRING LANGUAGE PYTHON AS 'no_such_module:f';\n"
    )
    analysis = analyze(text, trust=True)
    assert [f.code for f in analysis.findings] == ["SS271"]
    declared = analysis.declarations[("function", "nope")]
    assert declared.detail == "nope(code STRING) RETURNS STRING — PYTHON `no_such_module:f`"
    # untrusted: nothing imported; the declared types are used, undeclared ones not checked
    assert analyze(text).findings == []
    untyped = analyze("CREATE FUNCTION nope AS 'no_such_module:f' LANGUAGE PYTHON;\n")
    assert [(f.code, f.severity) for f in untyped.findings] == [("SS274", "warning")]


def test_a_text_the_grammar_refuses_still_declares_its_functions():
    analysis = lexical_analysis(
        "CREATE TEMPORARY FUNCTION f2c(x DOUBLE) RETURNS DOUBLE RETURN x;\nCREATE VIEW v AS SELEC",
        [],
    )
    declared = analysis.declarations[("function", "f2c")]
    assert (declared.kind, declared.columns) == ("function", None)
    assert [s.kind for s in analysis.statements] == ["function", "view"]
