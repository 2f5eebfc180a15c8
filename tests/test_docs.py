"""The documentation site builds: ``mkdocs build --strict`` over ``mkdocs.yml`` and ``docs/``.

Strict mode fails on any warning: a page missing from the navigation, a link to a page or
an anchor that does not exist, a snippet file that is not there (``bench/README.md``), or a
click command ``mkdocs-click`` cannot document. The command-line page is generated from
:mod:`sqlstream.cli` at build time, and ``tests/diagnostics/test_codes.py`` holds the
finding-codes page to the registry. No JVM; a few seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytest.importorskip(
    "mkdocs", reason="mkdocs is installed by the docs extra (pip install -e '.[dev]')"
)


def test_site_builds_strict(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pages = {p.name for p in site.glob("*.html")}
    assert {
        "index.html",
        "getting-started.html",
        "concepts.html",
        "dialect.html",
        "connectors.html",
        "cli.html",
        "codes.html",
        "python-api.html",
        "operations.html",
        "stateful.html",
        "guarantees.html",
        "architecture.html",
        "testing.html",
        "streaming-rules.html",
        "benchmarks.html",
    } <= pages
    cli = (site / "cli.html").read_text(encoding="utf-8")
    for command in (
        "check",
        "translate",
        "explain",
        "exec",
        "state",
    ):  # generated from the click group
        assert f"sqlstream {command}" in cli, command
    assert "--allow-incompatible-restart" in cli
    assert 'id="ss301"' in (site / "codes.html").read_text(encoding="utf-8")


def test_readme_links_to_existing_pages_and_anchors():
    """README.md links into docs/ (GitHub renders it outside the site, so mkdocs does not
    check it): each linked file exists, and each anchor is an explicit ``{ #id }`` there."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(((?:docs|bench)/[^)#]+)(?:#([^)]*))?\)", readme)
    assert len(links) >= 10
    missing = [path for path, _ in links if not (ROOT / path).is_file()]
    assert not missing, missing
    anchors = [
        f"{path}#{anchor}"
        for path, anchor in links
        if anchor and f"{{ #{anchor} }}" not in (ROOT / path).read_text(encoding="utf-8")
    ]
    assert not anchors, anchors
