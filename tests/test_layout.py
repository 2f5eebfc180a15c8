"""The layout the README describes is the layout of the code.

The README's "Layout" table lists every module of the package, one stage a row, in the
order data flows. This test reads the table and every module's imports (at the top and
inside functions) and holds them to it: every module is in the table once, and no module
imports one from a later row, so data flows one way and no import cycle can form across
rows. Within a row, modules may import each other only one way (no cycle).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "sqlstream"
MAX_LINES = 560  # "a few hundred lines" each; the largest today are dialect, spark_types, schema


def _rows() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Layout"):]
    section = section[:section.index("\n## ", 3)]
    rows = []
    for line in section.splitlines():
        if line.startswith("| ") and "`sqlstream/" in line:
            cell = line.rstrip(" |").rsplit("|", 1)[-1]
            rows.append(re.findall(r"`sqlstream/([\w/]+?)(?:\.py)?/?`", cell))
    return rows


def _module(path: Path) -> str:
    relative = path.relative_to(PACKAGE).with_suffix("")
    parts = relative.parts
    if parts[0] == "connectors":
        return "connectors"
    return parts[0]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "sqlstream":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("sqlstream."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("sqlstream.")}
    return found


def test_every_module_is_in_the_layout_once():
    listed = [m for row in _rows() for m in row]
    modules = {_module(p) for p in PACKAGE.rglob("*.py")}
    assert sorted(listed) == sorted(set(listed)), "a module is listed twice"
    assert set(listed) == modules


def test_no_module_imports_a_later_stage():
    rows = _rows()
    position = {m: i for i, row in enumerate(rows) for m in row}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        for imported in _imports(path) - {module}:
            if imported in position and position[imported] > position[module]:
                wrong.append(f"{path.relative_to(ROOT)} imports sqlstream.{imported} (a later row)")
    assert not wrong, "\n".join(wrong)


def test_modules_stay_small():
    sizes = {p.relative_to(ROOT): len(p.read_text(encoding="utf-8").splitlines())
             for p in PACKAGE.rglob("*.py")}
    assert not {p: n for p, n in sizes.items() if n > MAX_LINES}


def test_imports_have_no_cycle():
    graph = {}
    for path in PACKAGE.rglob("*.py"):
        name = str(path.relative_to(PACKAGE).with_suffix(""))
        if name.startswith("connectors"):
            continue  # one row; its modules import only base and each other one way
        graph[name] = {m for m in _imports(path) if (PACKAGE / f"{m}.py").exists()} - {name}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in graph.get(node, ()):
            assert state.get(target) != 1, "import cycle: " + " -> ".join([*trail, node, target])
            if target not in state:
                visit(target, [*trail, node])
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node, [])
