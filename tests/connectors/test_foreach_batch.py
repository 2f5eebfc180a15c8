"""``connector = 'foreach_batch'``: the function is imported and checked when the file is
compiled and the project trusted (SS220, SS221 at the option's value), its ``def`` read
from the source when not (SS221, or the SS274 warning: not checked), and called by Spark
with each micro-batch.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

import sqlstream
from sqlstream import Session
from tests import foreach_batch_functions as functions
from tests.support.flights import FLIGHTS_STREAM, copy_days

ROOT = Path(__file__).resolve().parents[2]
DAYS = sorted((ROOT / "examples/flights/data/flights").glob("2013-02-0[1-3].csv"))

PIPELINE = (
    FLIGHTS_STREAM
    + """
CREATE SINK late WITH (connector = 'foreach_batch', function = '{function}');

INSERT INTO late SELECT carrier, flight, origin, dep_delay FROM flights WHERE dep_delay > 60;
"""
)


def _findings(function: str, trust: bool = True) -> list:
    return sqlstream.check(PIPELINE.format(function=function), path="/nowhere/p.ssql", trust=trust)


@pytest.mark.parametrize(
    "function, code, message",
    [
        ("tests.no_such_module:collect", "SS220", "cannot import module 'tests.no_such_module'"),
        ("tests.foreach_batch_functions:colect", "SS220", "has no attribute 'colect'"),
        ("tests.foreach_batch_functions.collect", "SS220", "is not 'package.module:callable'"),
        ("tests.foreach_batch_functions:NOT_CALLABLE", "SS220", "is a int, not a function"),
        (
            "tests.foreach_batch_functions:one_argument",
            "SS221",
            "cannot be called with (DataFrame, batch_id)",
        ),
    ],
)
def test_a_function_that_cannot_run_is_an_error_at_the_option(function, code, message):
    (finding,) = _findings(function)
    assert (finding.code, finding.severity) == (code, "error")
    assert message in finding.message
    text = PIPELINE.format(function=function)
    assert text[finding.span.start : finding.span.end] == f"'{function}'"  # the value, quoted


@pytest.mark.parametrize(
    "function, code",
    [
        ("tests.no_such_module:collect", "SS274"),
        ("tests.foreach_batch_functions:colect", "SS274"),
        ("tests.foreach_batch_functions:NOT_CALLABLE", "SS274"),
        ("tests.foreach_batch_functions:instance", "SS274"),  # not a def: not read
        ("tests.foreach_batch_functions:one_argument", "SS221"),
    ],
)
def test_untrusted_the_def_is_read_from_the_project_and_nothing_imported(function, code):
    text = PIPELINE.format(function=function)
    path = str(ROOT / "p.ssql")  # the project: tests/foreach_batch_functions.py is read
    (finding,) = sqlstream.check(text, path=path)
    assert finding.code == code
    assert finding.severity == ("warning" if code == "SS274" else "error")
    assert text[finding.span.start : finding.span.end] == f"'{function}'"
    assert sqlstream.check(text.replace(function, "tests.foreach_batch_functions:collect")) == []


def test_functions_and_callable_objects_that_take_two_arguments_are_accepted():
    assert _findings("tests.foreach_batch_functions:collect") == []
    assert _findings("tests.foreach_batch_functions:instance") == []
    unknown = sqlstream.check(
        PIPELINE.format(function="tests.foreach_batch_functions:collect").replace(
            "function =", "fucntion = 'x', function ="
        ),
        trust=True,
    )
    assert [(f.code, f.message) for f in unknown] == [
        (
            "SS202",
            "unknown option 'fucntion' for connector 'foreach_batch'; did you mean 'function'?",
        )
    ]


def test_translate_prints_the_import_and_foreach_batch():
    text = sqlstream.translate(PIPELINE.format(function="tests.foreach_batch_functions:collect"))
    assert (
        "    .foreachBatch(importlib.import_module('tests.foreach_batch_functions').collect)\n"
        "    .outputMode('append')\n"
    ) in text
    assert "    .start())" in text


def test_a_module_beside_the_pipeline_file_is_found(tmp_path):
    (tmp_path / "my_sinks_beside.py").write_text("def write(df, batch_id):\n    pass\n")
    path = tmp_path / "p.ssql"
    path.write_text(PIPELINE.format(function="my_sinks_beside:write"))
    assert sqlstream.check(path.read_text(), path=str(path)) == []  # read, not imported
    assert "my_sinks_beside" not in sys.modules
    try:
        assert sqlstream.check(path.read_text(), path=str(path), trust=True) == []
        assert "my_sinks_beside" in sys.modules
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("my_sinks_beside", None)


@pytest.mark.spark
def test_each_micro_batch_reaches_the_function(spark, tmp_path):
    copy_days(tmp_path, DAYS)
    path = tmp_path / "late.ssql"
    path.write_text(PIPELINE.format(function="tests.foreach_batch_functions:collect"))
    functions.BATCHES.clear()
    session = Session(spark)
    session.run(session.compile_file(str(path)), available_now=True)

    expected = []
    for day in DAYS:
        with day.open(newline="") as f:
            for row in csv.DictReader(f):
                if row["dep_delay"] != "NA" and float(row["dep_delay"]) > 60:
                    expected.append(
                        (row["carrier"], int(row["flight"]), row["origin"], float(row["dep_delay"]))
                    )
    assert sorted(functions.BATCHES) == list(range(len(DAYS)))  # one file per micro-batch
    got = [
        (r["carrier"], r["flight"], r["origin"], r["dep_delay"])
        for rows in functions.BATCHES.values()
        for r in rows
    ]
    assert sorted(got) == sorted(expected) and len(expected) > 100
