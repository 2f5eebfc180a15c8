"""The findings registry (:mod:`sqlstream.diagnostics.codes`): every code used is registered, every code
registered is used, the docs' finding-codes page is generated from it; and an unexpected exception
is a bug the CLI reports as one, never an empty list of findings."""

from __future__ import annotations

import importlib.util
import re

import pytest
from click.testing import CliRunner

import sqlstream.analysis.schema
from sqlstream.cli import main
from sqlstream.diagnostics import codes
from sqlstream.diagnostics.codes import (
    BEGIN,
    CODES,
    END,
    Code,
    code,
    markdown_reference,
    markdown_table,
    replace_table,
)
from sqlstream.diagnostics.errors import OptionError, SqlStreamError
from tests.conftest import FIXTURES, ROOT

PACKAGE = ROOT / "sqlstream"
PAGE = ROOT / "docs" / "codes.md"
REGENERATE = "python tools/gen_codes_table.py --page docs/codes.md"
_MENTION = re.compile(r"\bSS\d{3}\b")
_LITERAL = re.compile(r"""["'](SS\d{3})["']""")  # a use: code="SS204", Finding("SS301", …)


def _package_codes(pattern: re.Pattern) -> dict[str, set[str]]:
    """Code → the package files (not codes.py) where ``pattern`` finds it."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix in (".py", ".txt", ".lark") and path.name != "codes.py":
            for name in pattern.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, set()).add(path.name)
    return found


def test_codes_page_is_generated_from_the_registry():
    page = PAGE.read_text(encoding="utf-8")
    assert replace_table(page) == page, f"docs/codes.md is stale; run: {REGENERATE}"
    assert markdown_table(links=True) in page
    for record in CODES.values():  # every code has its section, with its severity and doc
        assert (
            f"### {record.code} {{ #{record.code.lower()} }}\n\n**{record.severity}**: "
            f"{record.title}\n\n{record.doc}\n"
        ) in page


def test_every_code_used_in_the_package_is_registered():
    unknown = {name: files for name, files in _package_codes(_MENTION).items() if name not in CODES}
    assert not unknown, f"register these codes in sqlstream/diagnostics/codes.py: {unknown}"


def test_every_registered_code_is_used():
    unused = sorted(set(CODES) - set(_package_codes(_LITERAL)))
    assert not unused, f"registered but used nowhere in the package (remove, or use them): {unused}"


def test_codes_in_tests_and_docs_are_registered():
    texts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "check").glob("*.ssql"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((FIXTURES / "errors").glob("*.out"))]
    unknown = {name for text in texts for name in _MENTION.findall(text)} - set(CODES)
    assert not unknown, f"not registered in sqlstream/diagnostics/codes.py: {sorted(unknown)}"


def test_rule_findings_take_their_severity_from_the_registry():
    """A streaming rule states its code only; the severity is the registry's."""
    from sqlstream.analysis.rule_context import Finding

    text = (PACKAGE / "analysis" / "checks.py").read_text(encoding="utf-8")
    assert not re.findall(r'Finding\(\s*"SS\d{3}",\s*"(?:error|warning)"', text)
    assert Finding("SS350", "m", "h").severity == "warning"
    assert Finding("SS301", "m", "h").severity == "error"


def test_lookup_and_records():
    assert code("SS301") is CODES["SS301"]
    assert list(CODES) == sorted(CODES)
    assert {c.severity for c in CODES.values()} == {"error", "warning"}
    warnings = {c for c in CODES if CODES[c].severity == "warning"}
    assert (
        {"SS350", "SS351", "SS352", "SS360"}
        <= warnings
        == {c for c in CODES if c.startswith(("SS35", "SS36"))} | {"SS243", "SS256", "SS274"}
    )
    with pytest.raises(KeyError, match="SS999"):
        code("SS999")
    for bad in (
        ("S301", "error", "t", "d"),
        ("SS301", "fatal", "t", "d"),
        ("SS301", "error", "two\nlines", "d"),
        ("SS301", "error", "t", " "),
    ):
        with pytest.raises(ValueError):
            Code(*bad)
    with pytest.raises(ValueError, match="defined twice"):
        codes._codes(("SS001", "error", "t", "d"), ("SS001", "error", "t", "d"))


def test_errors_take_code_and_severity_from_the_registry():
    assert SqlStreamError("m").code == "SS000"
    assert OptionError("m").severity == "error"
    warning = OptionError("m", code="SS352")
    assert (warning.code, warning.severity) == ("SS352", "warning")
    assert (
        OptionError("m", code="SS301", severity="warning").severity == "warning"
    )  # lenient planner
    with pytest.raises(KeyError, match="SS399"):
        SqlStreamError("m", code="SS399")
    with pytest.raises(KeyError, match="SS399"):
        SqlStreamError("m", code="SS399", severity="warning")
    with pytest.raises(ValueError):
        SqlStreamError("m", severity="fatal")
    with pytest.raises(KeyError, match="SS398"):
        type("Unregistered", (SqlStreamError,), {"code": "SS398"})


def _tool():
    path = ROOT / "tools" / "gen_codes_table.py"
    spec = importlib.util.spec_from_file_location("gen_codes_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tool_prints_table_and_docs_and_rewrites_the_page(capsys, tmp_path):
    tool = _tool()
    assert tool.main([]) == 0
    assert capsys.readouterr().out == markdown_table()
    assert tool.main(["ss350"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SS350 (warning): stateful query") and CODES["SS350"].doc in out
    assert tool.main(["SS999"]) == 2
    page = tmp_path / "codes.md"
    page.write_text(f"# x\n\n{BEGIN}\n| code | finding |\n| SS1 | old |\n{END}\nmore\n")
    assert tool.main(["--page", str(page)]) == 0
    assert page.read_text() == f"# x\n\n{BEGIN}\n\n{markdown_reference()}\n{END}\nmore\n"
    page.write_text(f"# no markers\n\n{BEGIN}\n")
    assert tool.main(["--page", str(page)]) == 2


# ---- an unexpected exception is a bug, not "no findings" ------------------------------------


def _broken(*args, **kwargs):
    raise RuntimeError("boom")


def test_unexpected_exception_in_schema_reaches_the_cli(monkeypatch):
    """Before, ``query_schema`` swallowed any exception and reported no findings."""
    monkeypatch.setattr(sqlstream.analysis.schema, "check_types", _broken)
    example = str(ROOT / "examples" / "flights" / "hourly_delays.ssql")
    result = CliRunner().invoke(main, ["check", example])
    assert result.exit_code == 1
    assert "internal error: RuntimeError: boom" in result.output
    assert "this is a bug in sqlstream; rerun with --debug" in result.output
    result = CliRunner().invoke(main, ["check", "--debug", example])
    assert isinstance(result.exception, RuntimeError)
