"""The compile-time read of a CSV header stays in the pipeline's project and is bounded
(docs/connectors.md#csv-columns-by-name, issue 32 item 2).

Real files, folders, symbolic links and FIFOs under ``tmp_path``: a file outside the
project (an absolute path, ``../``, a glob, a link) is not read and no message quotes it;
inside, the header binds as before; one physical line is read at most; a deep glob and a
huge tree answer within seconds; a FIFO is never opened.
"""

from __future__ import annotations

import os
import time

import pytest

import sqlstream
from sqlstream.connectors.formats import csv_header
from sqlstream.connectors.formats.csv_header import Header, first_record
from sqlstream.diagnostics.errors import CompileError, SqlStreamError
from sqlstream.ir.context import project_of

SECRET = "root,x,0,0,secret-content,/root,/bin/bash\n"
PIPELINE = """CREATE STREAM s (nope STRING, other STRING) WITH (connector = 'files',
    path = '{path}', format = 'csv', header = true{extra});
SELECT nope FROM s;
"""


@pytest.fixture
def project(tmp_path):
    """``tmp_path/project`` (a repository: it holds ``.git``) and a secret file beside it."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n")
    (root / "data").mkdir()
    (root / "data" / "f.csv").write_text("id,name\n1,a\n")
    (root / "pipelines").mkdir()
    (tmp_path / "secret.csv").write_text(SECRET)
    return root


def _messages(root, path, extra=""):
    """Every message and the translated program of the pipeline at ``root/pipelines``."""
    file = root / "pipelines" / "p.ssql"
    file.write_text(PIPELINE.format(path=path, extra=extra))
    try:
        pipeline = sqlstream.compile_file(file)
    except CompileError as error:
        return "\n".join(str(f) for f in error.findings)
    except SqlStreamError as error:
        return str(error)
    return pipeline.translate()


def test_the_project_is_the_repository_root(project):
    assert project_of(project / "pipelines" / "p.ssql") == str(project.resolve())


@pytest.mark.parametrize(
    "path",
    [
        "{tmp}/secret.csv",
        "../../secret.csv",
        "{tmp}/secre*.csv",
        "../../*.csv",
        "{tmp}",
        "/etc/passwd",
        "../.git/config",
        "../link.csv",
        "../linked",
        "../linked/secret.csv",  # second probe: a linked folder, .. after a link, braces
        "../linked/../linked/secret.csv",
        "../linked/*.csv",
        "../**/secret.csv",
        "{{../linked,../..}}/*.csv",
        "{tmp}/{{secret,x}}.csv",
    ],
)
@pytest.mark.parametrize("extra", ["", ", quote = 'r', escape = 'r'"])
def test_a_file_outside_the_project_is_not_read_nor_quoted(project, tmp_path, path, extra):
    os.symlink(tmp_path / "secret.csv", project / "link.csv")
    os.symlink(tmp_path, project / "linked")
    started = time.monotonic()
    shown = _messages(project, path.format(tmp=tmp_path), extra)
    assert time.monotonic() - started < 5
    for word in ("secret-content", "bin/bash", "repositoryformatversion", "core", "root:"):
        assert word not in shown
    assert "SS242" not in shown  # nothing read: Spark checks the header at run time
    assert "'enforceSchema', 'false'" in shown


def test_inside_the_project_the_header_binds_as_before(project):
    shown = _messages(project, "../data")
    assert "SS242" in shown and "column 'nope' is not in the header of f.csv (id, name)" in shown
    shown = _messages(project, "../data/*.csv")
    assert "(id, name)" in shown


def test_trusted_reads_outside_but_quotes_nothing(project, tmp_path):
    found = first_record(str(tmp_path / "secret.csv"), {}, str(project), trusted=True)
    assert isinstance(found, Header) and not found.quotable
    binding = csv_header.bind([("nope", "STRING")], found)
    message = binding.problems[0][1]
    assert "secret" in message  # the file's name
    assert "root" not in message and "bash" not in message


def test_one_physical_line_at_most(tmp_path):
    (tmp_path / "q.csv").write_text('"a,b\nsecond-line\nthird,line"\n')
    found = first_record(str(tmp_path), {"quote": '"'})
    assert isinstance(found, Header)
    assert not any("second-line" in n or "third" in n for n in found.names)


def test_a_fifo_is_never_opened(tmp_path):
    os.mkfifo(tmp_path / "a.csv")
    (tmp_path / "b.csv").write_text("x,y\n")
    os.utime(tmp_path / "b.csv", (2_000_000_000, 2_000_000_000))
    assert first_record(str(tmp_path), {}) == Header(str(tmp_path / "b.csv"), ("x", "y"))
    os.unlink(tmp_path / "b.csv")
    assert first_record(str(tmp_path / "a.csv"), {}) == "there are no files at the path yet"


def test_a_deep_glob_answers_within_seconds():
    started = time.monotonic()
    found = first_record("/*/*/*/*/*/*/*/*", {}, None, trusted=True)
    assert time.monotonic() - started < 5
    assert isinstance(found, (Header, str))
    refused = first_record("/*/*/*/*/*/*/*/*", {}, "/nonexistent-project")
    assert "outside the pipeline's project" in refused


def test_a_huge_tree_is_refused_by_its_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_header, "MAX_ENTRIES", 50)
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / "f.csv").write_text("a\n")
    found = first_record(str(tmp_path / "*" / "*.csv"), {})
    assert found == "its files were not all listed (more than 50 files and folders)"
    found = first_record(str(tmp_path), {"recursivefilelookup": "true"})
    assert found == "its files were not all listed (more than 50 files and folders)"
