"""The incremental re-check of the language server: after random edits to a file of many
statements, :func:`analyze` given the previous version's analysis finds exactly what it
finds from scratch (findings, statements with their query plans, declarations,
references), and after an edit near the end it re-plans only the statements after it.
No JVM."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstream.frontend.parser import parse, reparse
from sqlstream.ir.caches import CompileCaches
from sqlstream.ir.context import Cancelled
from sqlstream.lsp.analysis import analyze
from sqlstream.lsp.document_index import Analysis

VARIABLES = {"dir": "/data"}

BASE = """SET 'spark.sql.shuffle.partitions' = '2';
-- the readings; a comment with a ; in it
CREATE STREAM s (a INT, b STRING, ts TIMESTAMP,
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '${dir}/in', format = 'json');
CREATE TABLE dim (b STRING, label STRING) WITH (connector = 'files', path = '${dir}/dim', format = 'csv');
CREATE VIEW v AS SELECT a, b, ts FROM s WHERE a > 1;
CREATE SINK o WITH (connector = 'memory');
INSERT INTO o SELECT window_start, b, COUNT(*) AS n
FROM TUMBLE(v, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, b;
CREATE SINK o2 WITH (connector = 'console');
INSERT INTO o2 SELECT v.a, d.label FROM v JOIN dim d ON v.b = d.b;
CREATE VIEW once AS SELECT DISTINCT a, b, ts FROM s;
CREATE SINK o3 WITH (connector = 'files', path = '/tmp/o3', format = 'parquet');
INSERT INTO o3 SELECT b, COUNT(*) AS n FROM once GROUP BY b;
CREATE STREAM t (a INT, ts TIMESTAMP, c AS a * 2) WITH (connector = 'files', path = 'in2', format = 'parquet');
SELECT a, c FROM t WHERE c > 'x';
CREATE SINK o4 WITH (connector = 'memory');
EXECUTE STATEMENT SET BEGIN INSERT INTO o4 SELECT a FROM t; END;
CREATE VIEW w AS SELECT a, zz FROM s;
"""

SNIPPETS = [
    "",
    ";",
    "'",
    "a",
    " ",
    "\n",
    "--",
    "(",
    ")",
    "x",
    "1",
    "v",
    "WHERE a > 2",
    "CREATE VIEW u AS SELECT a FROM s;",
    "INSERT INTO o SELECT a FROM s;",
    "CREATE SINK o WITH (connector = 'memory');",
    "${dir}",
    "EMIT CHANGES",
    "SELECT b FROM v;",
    "DISTINCT ",
    "JOIN",
    "/*",
    "*/",
    "s",
]


def _key(analysis: Analysis):
    """What an editor is shown: diagnostics, outline and hovers (query plans), names."""
    return (
        [(f.code, f.severity, f.message, f.hint, f.span) for f in analysis.findings],
        analysis.statements,
        analysis.declarations,
        analysis.references,
        analysis.parsed,
    )


_EDITS = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 12), st.sampled_from(SNIPPETS)),
    min_size=1,
    max_size=3,
)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(edits=_EDITS)
def test_random_edits_give_what_a_check_from_scratch_gives(edits):
    text = BASE
    analysis = analyze(text, VARIABLES)
    for where, removed, inserted in edits:
        at = int(where * len(text))
        text = text[:at] + inserted + text[at + removed :]
        analysis = analyze(text, VARIABLES, previous=analysis)
        scratch = _without_remembered_parses(text)
        assert _key(analysis) == _key(scratch)
        assert _plan_key(analysis) == _plan_key(scratch)


def test_an_edit_near_the_end_replans_only_the_statements_after_it():
    first = analyze(BASE, VARIABLES)
    at = BASE.index("zz")
    edited = BASE[:at] + "b" + BASE[at + 2 :]
    again = analyze(edited, VARIABLES, previous=first)
    assert again.planner.reused == len(again.script.statements) - 1
    assert _key(again) == _key(analyze(edited, VARIABLES))
    assert not any(f.code == "SS205" and f.span.start >= at for f in again.findings)


def test_reparse_reuses_the_statements_before_the_edit_and_equals_a_parse():
    previous = parse(BASE, VARIABLES)
    at = BASE.index("SELECT a, c FROM t")
    edited = BASE[:at] + "SELECT a, c, a FROM t" + BASE[at + len("SELECT a, c FROM t") :]
    script = reparse(previous, edited, VARIABLES)
    whole = parse(edited, VARIABLES)
    assert script == whole and script.ends == whole.ends
    before = [s for s in previous.statements if s.span.end < at]
    # strict=False: ``before`` is the statements before the edit, a prefix of the script's
    assert all(new is old for new, old in zip(script.statements, before, strict=False))


def test_other_variables_reuse_nothing_they_change():
    first = analyze(BASE, VARIABLES)
    other = analyze(BASE, {"dir": "/elsewhere"}, previous=first)
    assert _key(other) == _key(analyze(BASE, {"dir": "/elsewhere"}))
    assert other.planner.reused < len(other.script.statements)


def test_a_query_after_an_edited_source_is_described_anew():
    first = analyze(BASE, VARIABLES)
    edited = BASE.replace("'${dir}/in'", "'${dir}/im'")  # same length: later spans stay
    again = analyze(edited, VARIABLES, previous=first)
    assert _key(again) == _key(analyze(edited, VARIABLES))
    query = next(s.query for s in again.statements if s.query and s.query["name"] == "o")
    assert [source["path"] for source in query["sources"]] == ["/data/im"]


def test_a_spark_version_set_at_the_end_rechecks_every_statement():
    first = analyze(BASE, VARIABLES)
    edited = BASE + "SET 'sqlstream.spark_version' = '4.0';\n"
    again = analyze(edited, VARIABLES, previous=first)
    assert again.planner.reused == 0
    assert _key(again) == _key(analyze(edited, VARIABLES))


def test_a_new_secret_at_the_end_rechecks_every_statement(monkeypatch):
    monkeypatch.setenv("SQLSTREAM_TEST_TOKEN", "in")  # also a word of the statements before
    first = analyze(BASE, VARIABLES)
    edited = BASE + (
        "CREATE SINK k WITH (connector = 'kafka', topic = 'x', "
        "bootstrap_servers = '${env:SQLSTREAM_TEST_TOKEN}');\n"
    )
    again = analyze(edited, VARIABLES, previous=first)
    assert again.planner.reused == 0
    assert _key(again) == _key(analyze(edited, VARIABLES))


DEPENDENT = """CREATE FUNCTION f2c(x DOUBLE) RETURNS DOUBLE RETURN (x - 32) / 1.8;
CREATE STREAM s (a INT, b STRING, f DOUBLE, ts TIMESTAMP,
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '${dir}/in', format = 'json',
  on_error = 'dead_letter', dead_letter_path = '${dir}/bad');
CREATE VIEW v AS SELECT a, b, f2c(f) AS c, ts FROM s WHERE a > 1;
CREATE VIEW w AS SELECT a, b, c, ts FROM v WHERE c > 0;
CREATE SINK o WITH (connector = 'memory');
INSERT INTO o SELECT a, b FROM v;
INSERT INTO o SELECT a, b FROM w;
CREATE STREAM d WITH (connector = 'files', path = '${dir}/d', format = 'parquet') AS
SELECT window_start, b, COUNT(*) AS n FROM TUMBLE(w, ts, INTERVAL '1' MINUTE)
GROUP BY window_start, window_end, b;
CREATE SINK o2 WITH (connector = 'console');
INSERT INTO o2 SELECT b, f2c(n) AS k FROM d;
SELECT a FROM w;
CREATE FUNCTION twice(x INT) RETURNS INT RETURN x * 2;
SELECT twice(a) AS t FROM v;
"""

DEPENDENT_SNIPPETS = [
    "",
    ";",
    "a",
    " ",
    "\n",
    "x",
    "1",
    "v",
    "w",
    "d",
    "o",
    "f2c",
    "twice",
    "CREATE VIEW v AS SELECT a FROM s;",
    "CREATE SINK o2 WITH (connector = 'memory');",
    "CREATE FUNCTION twice(x INT) RETURNS INT RETURN x;",
    "INSERT INTO o SELECT a, b FROM s;",
    "SELECT c FROM w;",
    "EMIT CHANGES",
    "${dir}",
    "--",
    "WHERE a > 2",
    "DISTINCT ",
]


def _without_remembered_parses(text: str) -> Analysis:
    """``analyze(text)`` from scratch with every store off
    (``CompileCaches()``): every SQL text parsed anew (the language server otherwise
    answers a text parsed before with a copy of its tree), every query's schema analysed,
    printed and rewritten anew: what ``check`` does."""
    return analyze(text, VARIABLES, caches=CompileCaches())


def _plan_key(analysis: Analysis):
    plan = analysis.plan
    if plan is None:
        return None
    return (
        plan.settings,
        plan.relations,
        plan.queries,
        plan.functions,
        plan.state_dir,
        plan.spark_version,
    )


_BAND = {"top": (0.0, 0.15), "middle": (0.4, 0.6), "end": (0.85, 1.0)}
_ANYWHERE = st.lists(
    st.tuples(
        st.sampled_from(sorted(_BAND)),
        st.floats(0, 1),
        st.integers(0, 8),
        st.sampled_from(DEPENDENT_SNIPPETS),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(edits=_ANYWHERE)
def test_edits_at_the_top_middle_and_end_of_dependent_statements_give_a_check_from_scratch(edits):
    """Views over views and streams, a derived stream, two INSERTs into one sink, functions,
    dead letters: each edit (near the top, in the middle or near the end) re-checked given
    the previous analysis equals a check from scratch, plans included."""
    text = DEPENDENT
    analysis = analyze(text, VARIABLES)
    assert not [f for f in analysis.findings if f.severity == "error"]
    for band, where, removed, inserted in edits:
        low, high = _BAND[band]
        at = int((low + where * (high - low)) * len(text))
        text = text[:at] + inserted + text[at + removed :]
        analysis = analyze(text, VARIABLES, previous=analysis)
        scratch = _without_remembered_parses(text)
        assert _key(analysis) == _key(scratch)
        assert _plan_key(analysis) == _plan_key(scratch)


def test_a_function_declared_before_the_edit_is_known_after_it():
    """The planner resumed after a ``CREATE FUNCTION`` resolves calls of it in the
    statements it plans again (the functions it keeps are those calls are resolved in)."""
    first = analyze(DEPENDENT, VARIABLES)
    old, new = "SELECT a FROM w;", "SELECT f2c(a) AS c FROM w;"
    at = DEPENDENT.index(old)
    edited = DEPENDENT[:at] + new + DEPENDENT[at + len(old) :]
    again = analyze(edited, VARIABLES, previous=first)
    assert again.planner.reused > 0
    assert not [f for f in again.findings if f.severity == "error"]
    assert _key(again) == _key(analyze(edited, VARIABLES))


def test_a_stopped_check_ends_before_the_next_statement_and_leaves_the_last_analysis_usable():
    caches = CompileCaches.for_language_server()
    first = analyze(BASE, VARIABLES, caches=caches)
    edited = BASE.replace("WHERE a > 1", "WHERE a > 2")  # the view v: statement 5 of 20
    asked: list[int] = []

    def stop() -> bool:  # a newer version arrives while the third statement is planned
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(Cancelled):
        analyze(edited, VARIABLES, previous=first, caches=caches, stop=stop)
    assert len(asked) == 4  # asked before each statement: three planned, the fourth not
    again = analyze(edited, VARIABLES, previous=first, caches=caches)
    assert _key(again) == _key(analyze(edited, VARIABLES))
