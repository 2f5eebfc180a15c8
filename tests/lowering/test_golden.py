"""Golden files: `.ssql` → translation, and `.ssql` → rendered error.

``tests/fixtures/translate/NAME.ssql`` is translated and compared with ``NAME.out``;
``tests/fixtures/errors/NAME.ssql`` must fail to compile, and its rendered error (path,
line, column, source line, caret, hint) is compared with ``NAME.out``. Regenerate with::

    SQLSTREAM_UPDATE_GOLDEN=1 pytest tests/lowering/test_golden.py

and review the diff. Variables used by fixtures: ``dir=/data``; ``${env:SECRET_TOKEN}``
is set to ``s3cr3t-value`` (which must never appear in any output). The fixtures are the
project's own files: they are compiled trusted (the modules they name are imported).
"""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError
from tests.conftest import FIXTURES, check_golden
from tests.support.secret_token import SECRET

VARIABLES = {"dir": "/data", "threshold": 15}


def _cases(folder: str):
    return sorted((FIXTURES / folder).glob("*.ssql"), key=lambda p: p.name)


@pytest.fixture(autouse=True)
def _secret_env(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", SECRET)


@pytest.mark.parametrize("case", _cases("translate"), ids=lambda p: p.stem)
def test_translate(case):
    text = case.read_text(encoding="utf-8")
    actual = sqlstream.translate(
        text, VARIABLES, path=f"{case.parent.name}/{case.name}", trust=True
    )
    assert SECRET not in actual
    check_golden(case.with_suffix(".out"), actual)


@pytest.mark.parametrize("case", _cases("errors"), ids=lambda p: p.stem)
def test_error(case):
    text = case.read_text(encoding="utf-8")
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(text, VARIABLES, path=f"{case.parent.name}/{case.name}", trust=True)
    rendered = info.value.render() + "\n"
    assert SECRET not in rendered
    assert "^" in rendered, "every error in a file points at it with a caret"
    check_golden(case.with_suffix(".out"), rendered)
