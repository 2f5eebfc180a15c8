"""The user's Python code a file names (``connectors/user_code.py``): found by path in the
pipeline's project, read with ``ast`` when untrusted (no marker file written), imported
per folder and re-read when edited when trusted (docs/operations.md#trust)."""

from __future__ import annotations

import os
import sys

import pytest

import sqlstream
from sqlstream.connectors.user_code import module_file, project_roots, read_function

UDFS = """\
import pathlib

pathlib.Path(__file__).with_name("MARKER").write_text("imported")


def f(x: str) -> {returns}:
    return x
"""

PIPELINE = """\
CREATE FUNCTION f AS 'udfs:f' LANGUAGE PYTHON;
CREATE STREAM s (a STRING) WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK o WITH (connector = 'console');
INSERT INTO o SELECT f(a) AS b FROM s;
"""


@pytest.fixture
def clean_modules():
    """Forget the ``udfs`` modules and folders a trusted compile added."""
    path = list(sys.path)
    yield
    sys.modules.pop("udfs", None)
    sys.path[:] = path


def _folder(root, name: str, returns: str):
    folder = root / name
    folder.mkdir()
    (folder / "udfs.py").write_text(UDFS.format(returns=returns))
    (folder / "p.ssql").write_text(PIPELINE)
    return folder


def _type(folder, trust: bool) -> str:
    path = folder / "p.ssql"
    plan = sqlstream.compile(path.read_text(), path=str(path), trust=trust).plan
    ((_, returns),) = plan.queries[0].columns
    return returns


def test_the_project_is_the_folder_up_to_its_root(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("def g(a: int, b: int = 1, *c) -> int: ...")
    deep = tmp_path / "pipelines" / "x"
    deep.mkdir(parents=True)
    pipeline = str(deep / "p.ssql")
    assert project_roots(pipeline) == [str(deep), str(deep.parent), str(tmp_path)]
    assert module_file("pkg.sub.mod", pipeline) == str(tmp_path / "pkg" / "sub" / "mod.py")
    assert module_file("os", pipeline) is None  # never sys.path nor installed packages
    found = read_function("pkg.sub.mod", ("g",), pipeline)
    assert found is not None
    assert (found.positional, found.required, found.star) == (("a", "b"), 1, True)
    lonely = tmp_path.parent / f"{tmp_path.name}-lonely"
    lonely.mkdir()
    assert project_roots(str(lonely / "p.ssql")) == [str(lonely)]  # no project: its folder


def test_a_link_out_of_the_project_is_not_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("def h(x: str) -> str: ...")
    inside = tmp_path / "inside"
    inside.mkdir()
    os.symlink(outside / "secret.py", inside / "linked.py")
    assert module_file("linked", str(inside / "p.ssql")) is None


@pytest.mark.parametrize("trust", [False, True])
def test_two_folders_each_get_their_own_module(tmp_path, trust, clean_modules):
    first = _folder(tmp_path, "first", "str")
    second = _folder(tmp_path, "second", "int")
    assert (_type(first, trust), _type(second, trust), _type(first, trust)) == (
        "STRING",
        "BIGINT",
        "STRING",
    )
    assert (first / "MARKER").exists() is trust
    assert (second / "MARKER").exists() is trust


@pytest.mark.parametrize("trust", [False, True])
def test_an_edited_module_is_read_again(tmp_path, trust, clean_modules):
    folder = _folder(tmp_path, "project", "str")
    assert _type(folder, trust) == "STRING"
    (folder / "udfs.py").write_text(UDFS.format(returns="float"))  # another size
    assert _type(folder, trust) == "DOUBLE"


def test_untrusted_functions_are_typed_as_trusted_ones_are(tmp_path, clean_modules):
    (tmp_path / "udfs.py").write_text(
        "from pyspark.sql.functions import pandas_udf, udf\n"
        "import pandas as pd\n"
        "from typing import Optional\n"
        "@udf('double')\n"
        "def wrapped(x):\n    return 1.0\n"
        "def text(a: 'str', b: Optional[int] = None) -> 'str | None':\n    return a\n"
        "def series(v: pd.Series) -> pd.Series:\n    return v\n"
    )
    text = (
        "CREATE FUNCTION w AS 'udfs:wrapped' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION t AS 'udfs.text' LANGUAGE PYTHON;\n"
        "CREATE FUNCTION p(v DOUBLE) RETURNS DOUBLE LANGUAGE PYTHON AS 'udfs:series';\n"
    )
    path = str(tmp_path / "p.ssql")
    untrusted = sqlstream.compile(text, path=path).plan.functions
    assert [(f.kind, f.returns, f.min_args, f.max_args, f.wrapped) for f in untrusted] == [
        ("python", "DOUBLE", 1, 1, True),
        ("python", "STRING", 1, 2, False),
        ("pandas", "DOUBLE", 1, 1, False),
    ]
    assert untrusted[1].parameters == (("a", "STRING"), ("b", "BIGINT"))
