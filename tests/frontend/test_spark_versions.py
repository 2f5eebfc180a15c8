"""The Spark version a file is judged for: ``--spark-version``, ``SET
'sqlstream.spark_version'``, the installed PySpark (package metadata, no import), the newest."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest
from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.ir import spark_versions
from tests.conftest import ROOT

# jaro_winkler_similarity is a Spark 4.3 function; 4.0-4.2 do not have it
NEW_FUNCTION = (
    "CREATE STREAM c (url STRING) WITH (connector = 'files', path = '/d', format = 'json');"
    "SELECT jaro_winkler_similarity(url, '/a') AS s FROM c;"
)


def test_default_is_the_installed_pyspark_read_without_importing_it():
    assert spark_versions.installed() == spark_versions.major_minor(metadata.version("pyspark"))
    assert spark_versions.default() == spark_versions.installed()
    code = (
        "import sys; from sqlstream.ir import spark_versions; spark_versions.default(); "
        "import sqlstream; sqlstream.check('SELECT 1;'); print('pyspark' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.stdout.strip() == "False", done.stderr


def test_version_spellings():
    assert [
        spark_versions.supported(v) for v in ("4.2", "4.2.1", " 4.3.0 ", "4.4", "3.5", "x")
    ] == ["4.2", "4.2", "4.3", None, None, None]
    assert spark_versions.at_least("4.3", "4.3") and not spark_versions.at_least("4.2", "4.3")


def test_the_function_list_is_the_target_versions():
    for version in ("4.0", "4.1", "4.2"):
        assert [f.code for f in sqlstream.check(NEW_FUNCTION, spark_version=version)] == ["SS206"]
    assert sqlstream.check(NEW_FUNCTION, spark_version="4.3") == []
    # SET in the file, wherever it stands; the API's (the CLI's) argument overrides it
    in_file = NEW_FUNCTION + "SET 'sqlstream.spark_version' = '4.2';"
    assert [f.code for f in sqlstream.check(in_file)] == ["SS206"]
    assert sqlstream.check(in_file, spark_version="4.3") == []


def test_an_unsupported_version_is_a_positioned_finding():
    (finding,) = sqlstream.check("SET 'sqlstream.spark_version' = '3.5';", path="p.ssql")
    assert (finding.code, finding.message) == ("SS202", "Spark version '3.5' is not supported")
    assert finding.span.start == len("SET 'sqlstream.spark_version' = ")
    assert finding.hint == "the supported Spark versions: 4.0, 4.1, 4.2, 4.3"
    with pytest.raises(sqlstream.SqlStreamError, match="Spark version '5.1' is not supported"):
        sqlstream.compile("SELECT 1;", spark_version="5.1")


def test_check_spark_version_option(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(NEW_FUNCTION)
    runner = CliRunner()
    old = runner.invoke(main, ["check", "--spark-version", "4.1", str(path)])
    assert old.exit_code == 1 and "SS206 unknown function 'jaro_winkler_similarity'" in old.output
    new = runner.invoke(main, ["check", "--spark-version", "4.3.0", str(path)])
    assert new.exit_code == 0 and f"{path}: ok" in new.output
    bad = runner.invoke(main, ["check", "--spark-version", "4.4", str(path)])
    assert (
        bad.exit_code == 2
        and "'4.4' is not a supported Spark version (4.0, 4.1, 4.2, 4.3)" in bad.output
    )
