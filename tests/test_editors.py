"""The VS Code extension (editors/vscode) builds: ``build.sh`` installs its npm packages,
tests the TextMate grammar on every example pipeline (node's test runner with
vscode-textmate and vscode-oniguruma) and packages ``sqlstream.vsix`` with @vscode/vsce."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile

import pytest

from tests.conftest import ROOT

EXTENSION = ROOT / "editors" / "vscode"


@pytest.mark.skipif(
    shutil.which("npm") is None or shutil.which("node") is None,
    reason="node and npm are not installed",
)
@pytest.mark.timeout(600)
def test_build_script_tests_the_grammar_and_packages_the_vsix():
    vsix = EXTENSION / "sqlstream.vsix"
    vsix.unlink(missing_ok=True)
    done = subprocess.run(
        ["sh", str(EXTENSION / "build.sh")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "# fail 0" in done.stdout  # node --test: every grammar test passed
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = json.loads(archive.read("extension/package.json"))
    assert {"extension/syntaxes/ssql.tmLanguage.json", "extension/src/extension.js"} <= names
    assert any(n.startswith("extension/node_modules/vscode-languageclient/") for n in names)
    assert manifest["contributes"]["languages"][0]["extensions"] == [".ssql"]
    assert manifest["capabilities"]["untrustedWorkspaces"]["supported"] == "limited"


def test_the_extension_declares_workspace_trust_and_passes_it_to_the_server():
    """VS Code's Workspace Trust: limited support in an untrusted workspace (the workspace
    cannot choose the server's command), and ``initializationOptions.trust`` is the
    workspace's trust, the server started again when trust is granted."""
    manifest = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    assert "imports none of its Python modules" in untrusted["description"]
    assert untrusted["restrictedConfigurations"] == ["sqlstream.command"]
    source = (EXTENSION / "src" / "extension.js").read_text(encoding="utf-8")
    assert "trust: vscode.workspace.isTrusted" in source
    assert "onDidGrantWorkspaceTrust" in source
    if shutil.which("node"):  # the extension's JavaScript parses
        subprocess.run(["node", "--check", str(EXTENSION / "src" / "extension.js")], check=True)


def test_language_server_does_not_import_pyspark():
    code = (
        "import sys, sqlstream.lsp.server, sqlstream.lsp.completion; "
        "assert not any(m.startswith('pyspark') for m in sys.modules), 'pyspark'"
    )
    subprocess.run([__import__("sys").executable, "-c", code], check=True, cwd=ROOT)
