"""No input crashes or hangs the compiler (issue 12, items 1–3).

* Deep nesting: parentheses, subqueries, nested types, chained CTEs and views, long
  ``AND`` chains compile, or past :mod:`sqlstream.frontend.limits` give a positioned ``SS103`` —
  never Python's ``RecursionError``; through the API and the CLI.
* Encodings: a byte-order mark is accepted; a file that is not UTF-8 is ``SS002`` at the
  first bad byte, with its byte offset.
* Literals Spark refuses (intervals, durations, trigger intervals, timestamps and dates,
  number options) are positioned findings.
* Fuzzing (:mod:`tests.support.fuzzing`, ``hypothesis`` with a fixed seed and a bounded budget):
  grammar-built programs and mutations of the corpus, as text and as bytes; only
  ``SqlStreamError`` escapes, spans lie in the input, ``check`` and ``translate`` agree.
  A longer run: ``python tools/fuzz.py`` (see ``bench/README.md``).

* Time (issue 19): every kind of expression (calls, CAST, IF, CASE, NOT, lambdas, struct,
  array and map constructors, scalar/IN/EXISTS subqueries, nested types) nested to its limit,
  in every place (select list, WHERE, a view, a computed column, FROM), compiles in at most
  :data:`tests.support.fuzzing.SECONDS` (5 s) per ``check`` and per ``translate`` — a bound
  against exponential or quadratic blow-up, not a benchmark (``bench/compile_scaling.py``
  measures speed).
* Statements the grammar takes for a query that are not one (``(SELECT …) AS x;``,
  ``TABLE t``), NUL bytes after them, and the command line on paths that cannot be read
  (directories, FIFOs, ``/dev/zero``, a 2 GB sparse file) or written (``-o``).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlstream
from sqlstream.cli import main
from sqlstream.frontend.limits import MAX_FILE_BYTES, MAX_NESTING, MAX_SUBQUERY_NESTING
from tests.support.fuzzing import (
    NESTING_PLACES,
    NESTING_SHAPES,
    SUBQUERY_SHAPES,
    assert_cli_robust,
    assert_file_robust,
    assert_robust,
    byte_mutants,
    cli_invocations,
    cli_paths,
    mutants,
    nested,
    nestings,
    nul_after_prefix,
    programs,
    statement_parens,
)

HEAD = (
    "CREATE STREAM s (a INT, b STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)\n"
    "WITH (connector = 'files', path = 'in', format = 'json');\n"
    "CREATE SINK o WITH (connector = 'console');\n"
)


def codes(text: str) -> list[str]:
    return [f.code for f in assert_robust(text)]


def only_finding(text: str, code: str):
    findings = [f for f in assert_robust(text) if f.severity == "error"]
    assert [f.code for f in findings] == [code], [f.render() for f in findings]
    return findings[0]


# ---- nesting -----------------------------------------------------------------------------


def parens(n: int) -> str:
    return HEAD + "INSERT INTO o SELECT " + "(" * n + "a" + ")" * n + " AS x FROM s;\n"


def subqueries(n: int) -> str:
    return HEAD + "INSERT INTO o SELECT a FROM " + "(SELECT a FROM " * n + "s" + ")" * n + ";\n"


def nested_type(kind: str, n: int) -> str:
    opening = {"array": "ARRAY<", "struct": "STRUCT<f: ", "map": "MAP<STRING, "}[kind]
    return (
        f"CREATE STREAM s (a {opening * n}INT{'>' * n}, b INT) "
        "WITH (connector = 'files', path = 'in', format = 'json');\nSELECT b FROM s;\n"
    )


def test_the_compile_thread_restores_the_interpreters_limits():
    import gc
    import sys

    from sqlstream.frontend.limits import RECURSION_LIMIT, run_deep

    before = sys.getrecursionlimit(), gc.get_threshold()
    during = run_deep(lambda: (sys.getrecursionlimit(), gc.get_threshold()))
    assert during[0] >= RECURSION_LIMIT and during[1][:2] == before[1][:2] and during[1][2] > 10**6
    assert (sys.getrecursionlimit(), gc.get_threshold()) == before


def test_parentheses_up_to_the_limit_compile():
    assert codes(parens(MAX_NESTING)) == []
    assert (
        codes(
            HEAD.replace("WATERMARK", "c AS " + "(" * 500 + "a" + ")" * 500 + ", WATERMARK")
            + "INSERT INTO o SELECT c FROM s;"
        )
        == []
    )


def test_parentheses_past_the_limit_are_ss103_at_the_parenthesis():
    text = parens(MAX_NESTING + 1)
    error = only_finding(text, "SS103")
    assert text[error.span.start] == "(" and "1000" in error.message
    assert error.span.line == 4
    assert "INSERT INTO o SELECT (((" in error.render()  # the line, and a caret under it


def test_subqueries_up_to_what_spark_parses_compile_and_past_the_limit_are_ss103():
    assert codes(subqueries(150)) == []  # Spark 4.1 parses 150, refuses 200
    text = subqueries(MAX_SUBQUERY_NESTING + 1)
    error = only_finding(text, "SS103")
    assert text[error.span.start : error.span.end].upper() == "(SELECT"


@pytest.mark.parametrize("kind", ["array", "struct", "map"])
def test_nested_types_up_to_the_limit_compile_and_past_it_are_ss103(kind):
    assert codes(nested_type(kind, MAX_NESTING)) == []
    error = only_finding(nested_type(kind, MAX_NESTING + 1), "SS103")
    assert error.span.line == 1 and "CREATE STREAM s (a " in error.render()


def test_chained_ctes_views_and_long_and_chains_compile():
    body = "WITH c0 AS (SELECT a, ts FROM s)" + "".join(
        f", c{i} AS (SELECT a, ts FROM c{i - 1})" for i in range(1, 300)
    )
    assert codes(HEAD + f"INSERT INTO o {body} SELECT a FROM c299;") == []
    views = "".join(
        f"CREATE VIEW v{i} AS SELECT a, ts FROM {'s' if i == 0 else f'v{i - 1}'};\n"
        for i in range(300)
    )
    assert codes(HEAD + views + "INSERT INTO o SELECT a FROM v299;") == []
    terms = " AND ".join(f"a <> {i}" for i in range(3000))
    compiled = sqlstream.compile(HEAD + f"INSERT INTO o SELECT a FROM s WHERE {terms};")
    assert compiled.plan.queries[0].sql.endswith(f"WHERE {terms}")  # printed as written


def test_a_call_sqlglot_cannot_build_is_a_syntax_error():  # found by the fuzzer
    error = only_finding(HEAD + "INSERT INTO o SELECT a FROM s WHERE date_trunc();", "SS102")
    assert error.span.line == 4


def test_a_parenthesised_expression_where_a_query_belongs_is_a_syntax_error():  # the fuzzer's
    text = " (connector = 'files', path = 'x', format = 'csv');\nSELECT a FROM s;\n"
    error = only_finding(HEAD + text, "SS102")
    assert error.span.line == 4


def test_a_self_referencing_cte_does_not_recurse_forever():
    assert_robust(HEAD + "INSERT INTO o WITH s AS (SELECT a, ts FROM s) SELECT a FROM s;")


def test_deep_nesting_through_the_cli(tmp_path):
    deep, too_deep = tmp_path / "deep.ssql", tmp_path / "too_deep.ssql"
    deep.write_text(parens(600), encoding="utf-8")
    too_deep.write_text(parens(MAX_NESTING + 5), encoding="utf-8")
    runner = CliRunner()
    for command in ("check", "translate"):
        result = runner.invoke(main, [command, str(deep)])
        assert result.exit_code == 0, result.output
        result = runner.invoke(main, [command, str(too_deep)])
        assert result.exit_code == 1 and "SS103" in result.output
        assert "internal error" not in result.output


# ---- time: every expression kind nested to its limit -----------------------------------


def limit_depth(shape: str) -> int:
    """The deepest nesting of ``shape`` within the limits (each level opens one parenthesis,
    CASE or subquery; the select list adds none)."""
    if shape in SUBQUERY_SHAPES:
        return MAX_SUBQUERY_NESTING
    opening = NESTING_SHAPES[shape][0]
    per_level = opening.count("(") - opening.count(")") + opening.upper().count("CASE ")
    return (MAX_NESTING - 2) // max(per_level, 1)


@pytest.mark.parametrize("shape", sorted(NESTING_SHAPES))
def test_every_expression_kind_nested_to_its_limit_compiles_within_the_bound(shape):
    findings = assert_robust(nested(shape, limit_depth(shape)))  # each compile <= 5 s
    assert "SS103" not in [f.code for f in findings]


@pytest.mark.parametrize(
    "place", [p for p in NESTING_PLACES if p not in ("FROM subqueries", "type as a select item")]
)
def test_every_expression_kind_nested_in_every_place_within_the_bound(place):
    for shape in sorted(NESTING_SHAPES):
        assert_robust(nested(shape, 60, place))


def test_subqueries_in_from_to_the_limit_and_types_as_select_items_within_the_bound():
    assert codes(nested("parentheses", MAX_SUBQUERY_NESTING, "FROM subqueries")) == []
    text = nested("parentheses", MAX_NESTING, "type as a select item")
    assert only_finding(text, "SS102").span.line == 3


def test_case_and_nested_types_past_the_limit_are_ss103():
    text = nested("CASE", MAX_NESTING + 1)
    error = only_finding(text, "SS103")
    assert text[error.span.start : error.span.end].upper() == "CASE" and "CASE" in error.message
    text = nested("cast to nested type", MAX_NESTING + 1)
    error = only_finding(text, "SS103")
    assert text[error.span.start] == "<" and "nested types" in error.message
    text = nested("scalar subquery", MAX_SUBQUERY_NESTING + 1)
    assert only_finding(text, "SS103").span.line == 3


@pytest.mark.parametrize(
    "item, at",
    [
        ("ARRAY<ARRAY<INT>>", "ARRAY"),
        ("a, MAP<STRING, INT>", "MAP"),
        ("STRUCT<f: INT>(1)", "STRUCT"),
        ("ARRAY<INT>(1, 2)", "ARRAY"),
        ("a + ARRAY<INT>", "ARRAY"),
    ],
)
def test_a_type_where_a_value_belongs_is_ss102_at_the_type(item, at):
    text = HEAD + f"INSERT INTO o SELECT {item} FROM s;"
    error = only_finding(text, "SS102")
    assert text[error.span.start : error.span.end] == at and "data type" in error.message


def test_types_in_casts_and_constructor_calls_still_compile():
    assert (
        codes(
            HEAD
            + "INSERT INTO o SELECT CAST(a AS ARRAY<STRUCT<f: INT>>) AS x, a::ARRAY<INT> AS y, "
            "STRUCT(a, STRUCT(b)) AS z, ARRAY(a) AS w, MAP(a, b) AS m FROM s;"
        )
        == []
    )


@pytest.mark.parametrize(
    "statement, code",
    [
        ("(SELECT a FROM s) AS x;", "SS102"),
        ("(SELECT a FROM s) x;", "SS102"),
        ("INSERT INTO o (SELECT a FROM s) AS x;", "SS102"),
        ("CREATE VIEW v AS (SELECT a FROM s) AS x;", "SS102"),
        ("(SELECT a FROM s) AS x\x00", "SS102"),
        ("TABLE s;", "SS102"),
        ("(SELECT a FROM s) AS x;\x00", "SS101"),
    ],
)
def test_a_parenthesised_query_with_an_alias_as_a_statement_is_a_positioned_error(statement, code):
    text = HEAD + statement
    error = only_finding(text, code)
    assert error.span.line == 4


# ---- encodings ---------------------------------------------------------------------------


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.ssql"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + "INSERT INTO o SELECT a FROM s;").encode("utf-8"))
    assert sqlstream.compile_file(path).plan.queries[0].name == "o"
    assert CliRunner().invoke(main, ["check", str(path)]).exit_code == 0
    assert codes("\ufeff" + HEAD + "INSERT INTO o SELECT a FROM s;") == []  # text read as utf-8


def test_a_file_that_is_not_utf8_is_ss002_at_the_byte(tmp_path):
    path = tmp_path / "latin1.ssql"
    data = (HEAD + "-- café\nINSERT INTO o SELECT a FROM s;").encode("latin-1")
    path.write_bytes(data)
    with pytest.raises(sqlstream.SqlStreamError) as raised:
        sqlstream.compile_file(path)
    error = raised.value
    offset = data.index(b"\xe9")
    assert error.code == "SS002" and f"byte offset {offset}" in error.message
    assert (error.span.line, error.span.column) == (4, 7)
    for command in ("check", "translate"):
        result = CliRunner().invoke(main, [command, str(path)])
        assert (
            result.exit_code == 1
            and "SS002" in result.output
            and "internal error" not in result.output
        )


# ---- literals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, code, at",
    [
        (
            HEAD.replace("'1' MINUTE", "'abc' HOUR") + "INSERT INTO o SELECT a FROM s;",
            "SS102",
            "'abc'",
        ),
        (
            HEAD.replace("'1' MINUTE", "'-5' MINUTE") + "INSERT INTO o SELECT a FROM s;",
            "SS203",
            "'-5'",
        ),
        (
            HEAD + "INSERT INTO o SELECT ts + INTERVAL '1 fortnight' AS t FROM s;",
            "SS102",
            "'1 fortnight'",
        ),
        (
            HEAD + "INSERT INTO o SELECT a FROM s WHERE ts > TIMESTAMP '2024-13-01';",
            "SS102",
            "'2024-13-01'",
        ),
        (
            HEAD + "INSERT INTO o SELECT a FROM s WHERE CAST(ts AS DATE) = DATE '2024-02-30';",
            "SS102",
            "'2024-02-30'",
        ),
        (
            HEAD
            + "INSERT INTO o SELECT window_start, COUNT(*) AS n FROM TUMBLE(s, ts, INTERVAL '1' MONTH) "
            "GROUP BY window_start, window_end;",
            "SS203",
            "'1'",
        ),
        (
            HEAD + "INSERT INTO o SELECT window(ts, '10 minuts') AS w, COUNT(*) AS n FROM s "
            "GROUP BY window(ts, '10 minuts');",
            "SS203",
            "'10 minuts'",
        ),
        (
            HEAD
            + "INSERT INTO o SELECT window(ts, '10 minutes', '20 minutes') AS w, COUNT(*) AS n FROM s "
            "GROUP BY window(ts, '10 minutes', '20 minutes');",
            "SS203",
            "'20 minutes'",
        ),
        (
            HEAD + "INSERT INTO o SELECT a FROM s EMIT CHANGES EVERY INTERVAL '1.5' MINUTES;",
            "SS203",
            "INTERVAL '1.5' MINUTES",
        ),
        (
            HEAD.replace("format = 'json'", "format = 'json', maxFilesPerTrigger = 0")
            + "INSERT INTO o SELECT a FROM s;",
            "SS202",
            "0",
        ),
        (
            "CREATE STREAM r WITH (connector = 'rate', rows_per_second = 'many');\nSELECT value FROM r;",
            "SS202",
            "'many'",
        ),
    ],
)
def test_a_literal_spark_refuses_is_a_positioned_finding(text, code, at):
    error = only_finding(text, code)
    assert at in text[error.span.start : error.span.end], error.render()
    assert error.span.end - error.span.start <= len(at) + 20, error.render()


@pytest.mark.parametrize(
    "literal",
    [
        "INTERVAL '1.5' SECONDS",
        "INTERVAL '1 hour 30 minutes'",
        "INTERVAL '1-2' YEAR TO MONTH",
        "INTERVAL 10 MINUTES",
        "TIMESTAMP '2024-01-31'",
        "TIMESTAMP '2024-01-31T12:00:00.123Z'",
        "DATE '2024-02-29'",
    ],
)
def test_literals_spark_accepts_pass(literal):
    assert codes(HEAD + f"INSERT INTO o SELECT a, {literal} AS l FROM s;") == []


# ---- fuzzing -------------------------------------------------------------------------------


def fuzz(max_examples: int) -> settings:
    """A fixed seed (derandomize), no example database, a bounded number of examples."""
    return settings(
        derandomize=True,
        deadline=None,
        database=None,
        max_examples=max_examples,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@fuzz(150)
@given(programs())
def test_fuzz_grammar_built_programs(text):
    assert_robust(text)


@fuzz(200)
@given(mutants())
def test_fuzz_mutated_corpus_programs(text):
    assert_robust(text)


@fuzz(60)
@given(byte_mutants())
def test_fuzz_mutated_bytes(data):
    assert_file_robust(data)


@fuzz(80)
@given(nestings())
def test_fuzz_nesting_of_every_expression_kind(text):
    assert_robust(text)


@fuzz(60)
@given(statement_parens())
def test_fuzz_statement_level_parentheses(text):
    assert_robust(text)


@fuzz(60)
@given(nul_after_prefix())
def test_fuzz_nul_bytes_after_valid_prefixes(text):
    assert_robust(text)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return cli_paths(tmp_path_factory.mktemp("cli"))


def test_cli_paths_that_cannot_be_read_or_written(paths):
    for kind in ("directory", "fifo", "/dev/zero", "huge sparse", "missing", "missing folder"):
        for command in ("check", "translate", "explain"):
            assert_cli_robust([command, paths[kind]])
    assert_cli_robust(["translate", paths["valid"], "-o", paths["missing folder"]])
    assert_cli_robust(["translate", paths["valid"], "-o", paths["directory"]])
    assert MAX_FILE_BYTES < 2 * 1024**3


@pytest.mark.parametrize(
    "kind, why",
    [
        ("fifo", "not a regular file"),
        ("/dev/zero", "not a regular file"),
        ("huge sparse", "larger than"),
        ("directory", "Is a directory"),
    ],
)
def test_an_avro_schema_file_that_is_not_a_small_regular_file_is_ss211(paths, kind, why):
    text = (
        f"CREATE STREAM k (a INT) WITH (connector = 'kafka', bootstrap_servers = 'h:9092', "
        f"topic = 't', format = 'avro', avro_schema = '{paths[kind]}');\nSELECT a FROM k;\n"
    )
    error = only_finding(text, "SS211")
    assert why in error.message and text[error.span.start : error.span.end] == f"'{paths[kind]}'"


def test_a_csv_data_file_without_line_breaks_is_not_read_whole(tmp_path):
    import time

    from sqlstream.connectors.formats.csv_header import first_record

    with open(tmp_path / "big.csv", "wb") as handle:
        handle.truncate(2 * 1024**3)  # sparse: 2 GB of NUL bytes, no line break
    started = time.process_time()  # CPU seconds: reading 2 GB would take them, load would not
    reason = first_record(str(tmp_path), {"header": "true"})
    assert reason == "big.csv cannot be read (a line is longer than 1,048,576 characters)"
    assert time.process_time() - started < 5


@fuzz(40)
@given(data=st.data())
def test_fuzz_cli_paths(paths, data):
    assert_cli_robust(data.draw(cli_invocations(paths)))


def test_sqlglot_logs_nothing_while_a_program_compiles(caplog):
    """sqlglot logs text it cannot translate (which may hold a secret); on the compile thread
    its records are dropped, since sqlstream reports every problem itself. Outside, they pass."""
    import logging

    from sqlstream.frontend.limits import run_deep

    def compile_step() -> None:
        logging.getLogger("sqlglot").warning("unsupported: hunter2-secret")

    with caplog.at_level(logging.WARNING, logger="sqlglot"):
        run_deep(compile_step)
        assert "hunter2" not in caplog.text
        compile_step()  # a tool's own use of sqlglot, not a sqlstream compile
        assert "hunter2" in caplog.text
