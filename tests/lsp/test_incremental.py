"""The incremental re-check of the language server: after random edits to a file of many
statements, :func:`analyze` given the previous version's analysis finds exactly what it
finds from scratch (findings, statements with their query plans, declarations,
references), and after an edit near the end it re-plans only the statements after it.
No JVM."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlstream.frontend.parser import parse, reparse
from sqlstream.lsp.analysis import Analysis, analyze

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

SNIPPETS = ["", ";", "'", "a", " ", "\n", "--", "(", ")", "x", "1", "v", "WHERE a > 2",
            "CREATE VIEW u AS SELECT a FROM s;", "INSERT INTO o SELECT a FROM s;",
            "CREATE SINK o WITH (connector = 'memory');", "${dir}", "EMIT CHANGES",
            "SELECT b FROM v;", "DISTINCT ", "JOIN", "/*", "*/", "s"]


def _key(analysis: Analysis):
    """What an editor is shown: diagnostics, outline and hovers (query plans), names."""
    return ([(f.code, f.severity, f.message, f.hint, f.span) for f in analysis.findings],
            analysis.statements, analysis.declarations, analysis.references, analysis.parsed)


_EDITS = st.lists(st.tuples(st.floats(0, 1), st.integers(0, 12), st.sampled_from(SNIPPETS)),
                  min_size=1, max_size=3)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(edits=_EDITS)
def test_random_edits_give_what_a_check_from_scratch_gives(edits):
    text = BASE
    analysis = analyze(text, VARIABLES)
    for where, removed, inserted in edits:
        at = int(where * len(text))
        text = text[:at] + inserted + text[at + removed:]
        analysis = analyze(text, VARIABLES, previous=analysis)
        assert _key(analysis) == _key(analyze(text, VARIABLES))


def test_an_edit_near_the_end_replans_only_the_statements_after_it():
    first = analyze(BASE, VARIABLES)
    at = BASE.index("zz")
    edited = BASE[:at] + "b" + BASE[at + 2:]
    again = analyze(edited, VARIABLES, previous=first)
    assert again.planner.reused == len(again.script.statements) - 1
    assert _key(again) == _key(analyze(edited, VARIABLES))
    assert not any(f.code == "SS205" and f.span.start >= at for f in again.findings)


def test_reparse_reuses_the_statements_before_the_edit_and_equals_a_parse():
    previous = parse(BASE, VARIABLES)
    at = BASE.index("SELECT a, c FROM t")
    edited = BASE[:at] + "SELECT a, c, a FROM t" + BASE[at + len("SELECT a, c FROM t"):]
    script = reparse(previous, edited, VARIABLES)
    whole = parse(edited, VARIABLES)
    assert script == whole and script.ends == whole.ends
    before = [s for s in previous.statements if s.span.end < at]
    assert all(new is old for new, old in zip(script.statements, before))


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
    edited = BASE + ("CREATE SINK k WITH (connector = 'kafka', topic = 'x', "
                     "bootstrap_servers = '${env:SQLSTREAM_TEST_TOKEN}');\n")
    again = analyze(edited, VARIABLES, previous=first)
    assert again.planner.reused == 0
    assert _key(again) == _key(analyze(edited, VARIABLES))
