"""``CREATE FUNCTION``: parsed in each spelling, resolved against real callables
(``tests/udf_functions.py``), typed and counted by ``check`` (no JVM). The rendered errors
are golden files (``tests/fixtures/errors/udf_*``); Spark runs them in
tests/planning/test_udfs_spark.py and ``sqlstream test examples/``."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import ParseError, SqlStreamError
from sqlstream.frontend import ast
from sqlstream.frontend.parser import parse
from sqlstream.lowering.lower import lower
from sqlstream.planning.function_definitions import split_reference

STREAM = """
CREATE STREAM readings (sensor STRING, celsius DOUBLE, ts TIMESTAMP)
WITH (connector = 'files', path = 'data/readings', format = 'json');
CREATE SINK out WITH (connector = 'memory');
"""


def functions(text: str) -> dict:
    plan = sqlstream.compile(text).plan
    return {f.name: f for f in plan.functions}


@pytest.mark.parametrize(
    "text",
    [
        "CREATE FUNCTION f(code STRING) RETURNS STRING LANGUAGE PYTHON AS 'm:f'",
        "CREATE FUNCTION f(code STRING) RETURNS STRING AS 'm:f' LANGUAGE PYTHON",
        "CREATE FUNCTION f(code STRING) LANGUAGE PYTHON AS 'm:f' RETURNS STRING",
    ],
)
def test_the_clauses_come_in_any_order(text):
    (statement,) = parse(text).statements
    assert isinstance(statement, ast.CreateFunction)
    assert (statement.reference, statement.returns, statement.language.value) == (
        "m:f",
        "STRING",
        "PYTHON",
    )
    assert [(n.value, t) for n, t in statement.parameters] == [("code", "STRING")]


def test_flink_form_and_sql_body_are_parsed_with_positions():
    flink, sql = parse(
        "CREATE TEMPORARY SYSTEM FUNCTION f AS 'pkg.mod.f' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION g(x DOUBLE) RETURNS DOUBLE RETURN x * 1.8 + 32"
    ).statements
    assert flink.parameters is None and flink.returns is None and flink.reference == "pkg.mod.f"
    assert (flink.reference_span.line, flink.reference_span.column) == (1, 39)
    assert sql.body.text == "x * 1.8 + 32" and (sql.body.span.line, sql.body.span.column) == (2, 51)


def test_a_clause_given_twice_is_a_parse_error():
    with pytest.raises(ParseError) as info:
        parse("CREATE FUNCTION f AS 'm:f' RETURNS INT RETURNS STRING")
    assert "RETURNS is given twice" in info.value.message and info.value.span.column == 40


@pytest.mark.parametrize(
    "text, expected",
    [
        ("pkg.mod:fn", ("pkg.mod", ("fn",))),
        ("pkg.mod.fn", ("pkg.mod", ("fn",))),
        ("mod:Cls.fn", ("mod", ("Cls", "fn"))),
        ("fn", None),
        ("a b:c", None),
    ],
)
def test_references_in_both_spellings(text, expected):
    assert split_reference(text) == expected


def test_types_come_from_annotations_in_flinks_form():
    found = functions(
        "CREATE FUNCTION every_type AS 'tests.udf_functions.every_type' LANGUAGE PYTHON;"
    )
    function = found["every_type"]
    assert [t for _, t in function.parameters] == [
        "BIGINT",
        "DOUBLE",
        "STRING",
        "BOOLEAN",
        "TIMESTAMP",
        "DATE",
        "DECIMAL(38, 18)",
        "BINARY",
        "BIGINT",
    ]
    assert function.returns == "DATE" and function.kind == "python"
    assert (function.min_args, function.max_args) == (8, 9)


def test_declared_types_win_and_pandas_series_make_a_pandas_function():
    found = functions(
        "CREATE FUNCTION doubled(x DOUBLE) RETURNS DOUBLE LANGUAGE PYTHON "
        "AS 'tests.udf_functions:doubled';\n"
        "CREATE FUNCTION any_number AS 'tests.udf_functions.any_number' RETURNS DOUBLE;"
    )
    assert found["doubled"].kind == "pandas" and found["doubled"].parameters == (("x", "DOUBLE"),)
    assert (found["any_number"].min_args, found["any_number"].max_args) == (0, None)


def test_a_pandas_function_needs_declared_types():
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(
            "CREATE FUNCTION doubled AS 'tests.udf_functions.doubled' LANGUAGE PYTHON;"
        )
    assert info.value.code == "SS272" and "pandas function" in info.value.message


def test_an_annotation_without_a_spark_type_is_refused():
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(
            "CREATE FUNCTION f AS 'tests.udf_functions.annotated_list' LANGUAGE PYTHON;"
        )
    assert info.value.code == "SS272" and "has no Spark type" in info.value.message


def test_calls_are_typed_with_the_return_type_everywhere():
    pipeline = sqlstream.compile(
        "CREATE FUNCTION shout AS 'tests.udf_functions.shout' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION to_f(c DOUBLE) RETURNS DOUBLE RETURN c * 1.8 + 32;"
        + STREAM
        + "INSERT INTO out SELECT shout(sensor) AS loud, COUNT(*) AS n, AVG(to_f(celsius)) AS f "
        "FROM readings WHERE to_f(celsius) > 90 GROUP BY shout(sensor) EMIT COMPLETE;"
    )
    (query,) = pipeline.plan.queries
    assert query.columns == (("loud", "STRING"), ("n", "BIGINT"), ("f", "DOUBLE"))


@pytest.mark.parametrize(
    "call, ok",
    [
        ("any_number()", True),
        ("any_number(celsius, celsius, 1.0)", True),
        ("to_f(celsius)", True),
        ("to_f()", False),
        ("to_f(celsius, 1)", False),
        ("shout(sensor)", True),
        ("shout(sensor, sensor)", False),
    ],
)
def test_the_argument_count_is_checked(call, ok):
    text = (
        "CREATE FUNCTION shout AS 'tests.udf_functions.shout' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION any_number AS 'tests.udf_functions:any_number' RETURNS DOUBLE;\n"
        "CREATE FUNCTION to_f(c DOUBLE) RETURNS DOUBLE RETURN c * 1.8 + 32;"
        + STREAM
        + f"INSERT INTO out SELECT {call} AS v FROM readings;"
    )
    if ok:
        sqlstream.compile(text)
        return
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text)
    assert info.value.code == "SS273"


@pytest.mark.parametrize(
    "text, message",
    [
        ("CREATE FUNCTION f(x INT) RETURNS INT", "names no function"),
        (
            "CREATE FUNCTION f(x INT) RETURNS INT AS 'tests.udf_functions:shout' RETURN x",
            "not both",
        ),
        ("CREATE FUNCTION f RETURNS INT RETURN 1", "needs its parameter list"),
        ("CREATE FUNCTION f(x INT) RETURN x + 1", "needs its parameter list and RETURNS"),
        ("CREATE FUNCTION f AS 'a.B' LANGUAGE SCALA", "LANGUAGE SCALA"),
        (
            "CREATE FUNCTION f(x INT) RETURNS INT RETURN x;\nCREATE FUNCTION F(x INT) RETURNS INT RETURN x",
            "defined twice",
        ),
    ],
)
def test_what_is_not_a_function_is_ss270(text, message):
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text)
    assert info.value.code == "SS270" and message in info.value.message


def test_a_function_is_known_only_after_its_statement():
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(
            STREAM + "INSERT INTO out SELECT to_f(celsius) AS f FROM readings;\n"
            "CREATE FUNCTION to_f(c DOUBLE) RETURNS DOUBLE RETURN c * 1.8 + 32;"
        )
    assert info.value.code == "SS206"


def test_a_function_wrapped_with_pandas_udf_is_registered_as_it_is(tmp_path):
    module = tmp_path / "wrapped_udfs_for_test.py"
    module.write_text(
        "import pandas as pd\nfrom pyspark.sql.functions import pandas_udf\n"
        "from pyspark.sql.types import DoubleType\n\n"
        "@pandas_udf(DoubleType())\ndef half(s: pd.Series) -> pd.Series:\n"
        "    return s / 2\n"
    )
    pipeline = sqlstream.compile(
        "CREATE FUNCTION half AS 'wrapped_udfs_for_test.half' LANGUAGE PYTHON;",
        path=str(tmp_path / "p.ssql"),
    )
    (function,) = pipeline.plan.functions
    assert (function.kind, function.wrapped, function.returns) == ("pandas", True, "DOUBLE")
    (block,) = [b for b in lower(pipeline.plan).blocks if b.kind == "function"]
    register = block.chains[-1]
    assert register.steps[-1].name == "register" and len(register.steps[-1].args) == 2


@pytest.mark.parametrize("trust", [True, False])
def test_check_and_translate_of_the_example_import_no_pyspark(trust):
    """Trusted, the example's module is imported (pandas too); untrusted, it is read, not
    imported, and translates the same; pyspark is imported by neither."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    example = str(ROOT / "examples" / "flights" / "udfs.ssql")
    code = (
        "import sys, sqlstream\n"
        f"text = open({example!r}).read()\n"
        f"assert sqlstream.check(text, path={example!r}, trust={trust}) == []\n"
        f"out = sqlstream.translate(text, path={example!r}, trust={trust})\n"
        f"assert \"spark.udf.register('carrier_group'\" in out and ('udfs' in sys.modules) is {trust}\n"
        "assert out == sqlstream.translate(text, path=" + repr(example) + ", trust=True)\n"
        "assert not any(m == 'pyspark' or m.startswith(('pyspark.', 'py4j')) for m in sys.modules), "
        "sorted(m for m in sys.modules if 'spark' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_misspelt_function_is_suggested_by_its_declared_name():
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(
            "CREATE FUNCTION to_fahrenheit(c DOUBLE) RETURNS DOUBLE RETURN c * 1.8 + 32;"
            + STREAM
            + "INSERT INTO out SELECT to_farenheit(celsius) AS f FROM readings;"
        )
    assert info.value.code == "SS206" and "to_fahrenheit" in info.value.message
