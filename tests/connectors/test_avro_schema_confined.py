"""The compile-time read of an Avro schema file (``avro_schema = '….avsc'``) stays in the
pipeline's project unless trusted, as the CSV header's does (docs/connectors.md#kafka,
issue 32 item 2).

Real files, folders and symbolic links under ``tmp_path``: a schema file outside the project
(an absolute path, ``../``, a link, a hidden folder) is refused with a positioned ``SS211``
that quotes nothing of it, for a source and a sink; inside the project it is read as before;
trusted (``trust=True``) it is read wherever it lies.
"""

from __future__ import annotations

import json
import os

import pytest

import sqlstream
from sqlstream.diagnostics.errors import CompileError, SqlStreamError

SCHEMA = {
    "type": "record",
    "name": "secret_record_name",
    "fields": [{"name": "secret_field", "type": "string"}],
}
SOURCE = """CREATE STREAM s WITH (connector = 'kafka', bootstrap_servers = 'h:1', topic = 't',
    format = 'avro', avro_schema = '{path}');
SELECT * FROM s;
"""
SINK = """CREATE STREAM r WITH (connector = 'rate');
CREATE SINK out WITH (connector = 'kafka', bootstrap_servers = 'h:1', topic = 'o',
    format = 'avro', avro_schema = '{path}');
INSERT INTO out SELECT CAST(value AS STRING) AS secret_field FROM r;
"""


@pytest.fixture
def project(tmp_path):
    """``tmp_path/project`` (a repository: it holds ``.git``) with a schema of its own, and
    a schema beside it, outside."""
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    (root / "schemas").mkdir()
    (root / "schemas" / "flight.avsc").write_text(json.dumps(SCHEMA))
    (root / ".hidden").mkdir()
    (root / ".hidden" / "flight.avsc").write_text(json.dumps(SCHEMA))
    (root / "pipelines").mkdir()
    (tmp_path / "outside.avsc").write_text(json.dumps(SCHEMA))
    os.symlink(tmp_path / "outside.avsc", root / "schemas" / "link.avsc")
    return root


def _compile(root, template, path, trust=False):
    file = root / "pipelines" / "p.ssql"
    text = template.format(path=path)
    file.write_text(text)
    return text, sqlstream.compile_file(file, trust=trust)


@pytest.mark.parametrize("template", [SOURCE, SINK], ids=["source", "sink"])
@pytest.mark.parametrize(
    "path",
    ["{tmp}/outside.avsc", "../../outside.avsc", "../schemas/link.avsc", "../.hidden/flight.avsc"],
)
def test_a_schema_outside_the_project_is_not_read_nor_quoted(project, tmp_path, template, path):
    path = path.format(tmp=tmp_path)
    with pytest.raises(SqlStreamError) as raised:
        _compile(project, template, path)
    text = template.format(path=path)
    error = raised.value
    findings = error.findings if isinstance(error, CompileError) else [error]
    (finding,) = [f for f in findings if f.code == "SS211"]
    assert "outside the pipeline's project" in finding.message
    assert text[finding.span.start : finding.span.end] == f"'{path}'"  # the option's value
    shown = str(raised.value)
    assert "secret_field" not in shown and "secret_record_name" not in shown
    assert "--trust" in shown  # the hint


@pytest.mark.parametrize("template", [SOURCE, SINK], ids=["source", "sink"])
def test_inside_the_project_the_schema_is_read(project, template):
    _, pipeline = _compile(project, template, "../schemas/flight.avsc")
    assert "secret_field" in pipeline.translate()


@pytest.mark.parametrize("template", [SOURCE, SINK], ids=["source", "sink"])
@pytest.mark.parametrize("path", ["{tmp}/outside.avsc", "../schemas/link.avsc"])
def test_trusted_the_schema_is_read_wherever_it_lies(project, tmp_path, template, path):
    _, pipeline = _compile(project, template, path.format(tmp=tmp_path), trust=True)
    assert "secret_field" in pipeline.translate()


def test_trusted_by_the_environment(project, tmp_path, monkeypatch):
    monkeypatch.setenv("SQLSTREAM_TRUST", "1")
    findings = sqlstream.check(
        SOURCE.format(path=tmp_path / "outside.avsc"),
        path=str(project / "pipelines" / "p.ssql"),
        trust=sqlstream.ir.context.trusted(),
    )
    assert not [f for f in findings if f.code == "SS211"]


DECLARED = """CREATE STREAM s ({columns}) WITH (connector = 'kafka', bootstrap_servers = 'h:1',
    topic = 't', format = 'avro', avro_schema = '{path}');
SELECT * FROM s;
"""
BAD_TYPE = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "secret_field", "type": "secret_named_type"}],
}


@pytest.mark.parametrize(
    ("columns", "schema", "words"),
    [
        ("nope STRING", SCHEMA, ("secret_field",)),
        ("secret_field INT", SCHEMA, ("gives STRING", "declare secret_field STRING")),
        ("secret_field STRING", BAD_TYPE, ("secret_field", "secret_named_type")),
    ],
    ids=["not a field", "another type", "a type not understood"],
)
@pytest.mark.parametrize("inside", [True, False], ids=["inside", "outside, trusted"])
def test_a_trusted_schema_outside_the_project_is_read_but_not_quoted(
    project, tmp_path, columns, schema, words, inside
):
    folder = project / "schemas" if inside else tmp_path
    (folder / "other.avsc").write_text(json.dumps(schema))
    file = project / "pipelines" / "p.ssql"
    file.write_text(DECLARED.format(columns=columns, path=folder / "other.avsc"))
    with pytest.raises(SqlStreamError) as raised:
        sqlstream.compile_file(file, trust=True)
    shown = str(raised.value)
    assert "SS211" in shown
    for word in words:  # quoted for a file of the project only
        assert (word in shown) == inside, shown
