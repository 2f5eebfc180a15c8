"""The lint and type checks run the same tools everywhere.

``.ci/run`` runs ``ruff check``, ``ruff format --check`` and ``mypy`` from the venv the
``dev`` extra installs; the pre-commit hooks run ruff at the revision
``.pre-commit-config.yaml`` names. CI runs the checks themselves; this holds the one thing
it does not: that a contributor's hook is the ruff CI runs (two versions of ruff can
format the same file differently, and select different rules under the same codes).
"""

from __future__ import annotations

import re

from ruamel.yaml import YAML

from tests.conftest import ROOT


def _dev_pin(package: str) -> tuple[str, str]:
    """``(lowest, below)`` of ``package``'s pin in the ``dev`` extra of pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    found = re.search(rf'"{package}>=([0-9.]+),<([0-9.]+)"', text)
    assert found, f"the dev extra pins {package} as '{package}>=X,<Y'"
    return found.group(1), found.group(2)


def test_the_pre_commit_ruff_is_the_ruff_the_dev_extra_pins():
    config = YAML(typ="safe").load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    (ruff,) = [r for r in config["repos"] if r["repo"].endswith("/ruff-pre-commit")]
    lowest, below = _dev_pin("ruff")
    assert ruff["rev"] == f"v{lowest}", "update the hook's rev with the dev extra's ruff"
    assert {h["id"] for h in ruff["hooks"]} == {"ruff-check", "ruff-format"}
    assert below.split(".")[:2] != lowest.split(".")[:2]  # (a range, not one version)


def test_the_pre_commit_mypy_is_the_venvs_over_the_configured_files():
    config = YAML(typ="safe").load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [h for r in config["repos"] if r["repo"] == "local" for h in r["hooks"]]
    (mypy,) = [h for h in hooks if h["id"] == "mypy"]
    # the venv's mypy (the dependencies' types installed), files from [tool.mypy]
    assert mypy["entry"] == "mypy" and mypy["language"] == "system"
    assert mypy["pass_filenames"] is False
    _dev_pin("mypy")
