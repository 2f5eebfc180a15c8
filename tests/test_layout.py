"""The package layout is the pipeline's data flow.

``sqlstream`` is a package of stage subpackages, each listed in :data:`STAGES` in the order
data flows; the two modules at the top (``api``, ``session``), the command line (``cli``,
a package) and the package facade come after them. These tests read every module's imports
(at the top and inside functions) and hold them to that order: no module imports a later
stage, the imports have no cycle, every stage says in its ``__init__`` docstring what
enters and what leaves, and every module stays small ("a few hundred lines").
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "sqlstream"
MAX_LINES = 600
"""A few hundred lines. The bound was 500 lines of the hand-wrapped style; ``ruff format``'s
lines are about a fifth more for the same code (the package: 24,546 -> 29,532 lines). The
modules at the bound were split (connectors' base, runtime's progress and runner, the window
TVFs, the language server's analysis and server, the tree builder); the bound is the largest
module left, rounded up to 50: ``planning/planner.py`` (595 lines)."""

OVERSIZED = {}
"""Modules past the bound since the formatter, each being split (this set only shrinks)."""

STAGES = (
    "diagnostics",  # source text and spans, finding codes, errors
    "frontend",  # variables, limits, literals, AST, parser
    "ir",  # the plan and the binding calls: data shared by the later stages
    "sql",  # the sqlglot dialect and the rewrites to Spark SQL
    "analysis",  # types, names, schemas, facts, dedup, streaming rules, state signatures
    "connectors",  # one module per connector; formats/ for what they decode
    "planning",  # catalog, the compile path, declarations, settings, malformed records
    "lowering",  # plan -> binding calls, the printer, explain, packages, session config
    "runtime",  # Spark session, binder, runner, events and progress, restarts, state
    "testing",  # pipeline tests (*.test.yaml): loading, the step harness, comparison, reports
    "api",  # the Python API (compile, translate, Pipeline)
    "session",  # the run API (Session)
    "lsp",  # editor text -> LSP diagnostics, hover, completion, definitions, rename
    "graph",  # plan -> the pipeline picture (DOT, Mermaid; SVG, PNG, HTML by Graphviz)
    "cli",  # the command line
    "__init__",  # the package facade
)
"""The stages in data-flow order: a module may import its own stage and earlier ones."""


def _stage(path: Path) -> str:
    return path.relative_to(PACKAGE).with_suffix("").parts[0]


def _dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """The sqlstream modules ``path`` imports (``from sqlstream.x import y`` gives
    ``sqlstream.x.y`` when that is a module, else ``sqlstream.x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and node.module.split(".")[0] == "sqlstream"
        ):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                is_module = (ROOT / Path(*name.split("."))).with_suffix(".py").exists() or (
                    ROOT / Path(*name.split("."))
                ).is_dir()
                found.add(name if is_module else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "sqlstream"}
    return found - {"sqlstream"}


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_stage():
    assert {_stage(p) for p in _modules()} == set(STAGES)


def test_every_stage_package_says_what_enters_and_leaves():
    for stage in STAGES:
        init = PACKAGE / stage / "__init__.py"
        if (PACKAGE / stage).is_dir():
            docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
            assert docstring and len(docstring.split()) >= 20, f"{init} needs a docstring"


def test_no_module_imports_a_later_stage():
    position = {stage: i for i, stage in enumerate(STAGES)}
    wrong = []
    for path in _modules():
        for imported in _imports(path):
            stage = imported.split(".")[1]
            if position[stage] > position[_stage(path)]:
                wrong.append(f"{path.relative_to(ROOT)} imports {imported} (a later stage)")
    assert not wrong, "\n".join(wrong)


def test_modules_stay_small():
    sizes = {
        p.relative_to(ROOT): len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()
    }
    assert not {p: n for p, n in sizes.items() if n > MAX_LINES and str(p) not in OVERSIZED}


def test_imports_have_no_cycle():
    graph = {_dotted(p): {m for m in _imports(p)} - {_dotted(p)} for p in _modules()}
    # importing a module imports its package first: that is no edge of the data flow
    graph = {k: {m for m in v if not k.startswith(m + ".")} for k, v in graph.items()}
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


TESTS = ROOT / "tests"
TEST_FOLDERS = {
    "support": "what tests share: servers, harnesses, data and corpus readers (no tests)",
    "fixtures": "golden files, the check corpus, pipeline test files (no Python tests)",
    "examples": "the bundled examples (examples/) as the README runs them",
}
"""The folders of ``tests/`` that mirror no stage package, each with what it holds."""

TOP_LEVEL_TESTS = {
    "docs": "the documentation site and the pages' claims",
    "editors": "the editor extensions (editors/)",
    "layout": "this module: the package and test layout",
    "style": "the lint, format and type checks' configuration (pre-commit, the dev extra)",
}
"""``tests/test_<name>.py`` files that test no top-level module of ``sqlstream``."""

PIPELINE_FIXTURES = {"udf_functions", "foreach_batch_functions"}
"""Modules the fixture programs name (``'tests.udf_functions:shout'``) and the golden outputs
print: they keep their module names, so they stay at the top of ``tests/``."""


def _test_folders() -> list[Path]:
    """Every folder under ``tests/`` that holds Python files, but ``support`` and ``fixtures``."""
    return sorted(
        {
            p.parent
            for p in TESTS.rglob("*.py")
            if p.parent != TESTS and p.relative_to(TESTS).parts[0] not in ("support", "fixtures")
        }
    )


def test_tests_mirror_the_packages():
    """``tests/<package>/`` for a stage package ``sqlstream/<package>/`` (a subfolder for a
    subpackage) or a folder of :data:`TEST_FOLDERS`; Spark is a marker, not a folder."""
    assert not (TESTS / "spark").exists(), "Spark tests carry the marker spark, in their package"
    top = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert top <= {s for s in STAGES if (PACKAGE / s).is_dir()} | set(TEST_FOLDERS), top
    for folder in _test_folders():
        relative = folder.relative_to(TESTS)
        assert relative.parts[0] in TEST_FOLDERS or (PACKAGE / relative).is_dir(), (
            f"tests/{relative} mirrors no package of sqlstream/"
        )
        assert (folder / "__init__.py").exists(), f"tests/{relative} needs an __init__.py"


def test_top_level_tests_mirror_the_top_level_modules():
    """``tests/test_<module>.py`` for a top-level module (``cli``, ``session``, …) or one of
    :data:`TOP_LEVEL_TESTS`; the other modules there are the conftest and the modules the
    fixture programs import (:data:`PIPELINE_FIXTURES`)."""
    modules = {p.stem for p in PACKAGE.glob("*.py")} | {
        p.name for p in PACKAGE.iterdir() if p.name in STAGES and (p / "__init__.py").exists()
    }
    for path in TESTS.glob("*.py"):
        if path.stem.startswith("test_"):
            name = path.stem.removeprefix("test_")
            assert name in modules or name in TOP_LEVEL_TESTS, f"{path.name} mirrors no module"
        else:
            assert path.stem in {"__init__", "conftest"} | PIPELINE_FIXTURES, path.name


def test_tests_import_no_other_test_module():
    """What tests share lives in ``tests/support/`` (or the conftest): no test module imports
    another (``from tests.x.test_y import …``)."""
    wrong = []
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            wrong += [
                f"{path.relative_to(ROOT)} imports {n}"
                for n in names
                if n.split(".")[0] == "tests" and n.split(".")[-1].startswith("test_")
            ]
    assert not wrong, "\n".join(wrong)


def test_module_names_are_unique():
    """One job per module and a name that says it: no two modules of the package share a
    file name (``runtime/runner.py`` beside ``testing/runner.py`` read as one job twice), but
    for the packages' ``__init__`` and ``__main__``."""
    names: dict[str, list[str]] = {}
    for path in _modules():
        if path.stem not in ("__init__", "__main__"):
            names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert not {name: paths for name, paths in names.items() if len(paths) > 1}


def _stage_imports() -> dict[str, set[str]]:
    """Each stage's imports of other stages (``import sqlstream``: the facade, ``__init__``)."""
    graph: dict[str, set[str]] = {}
    for path in _modules():
        stage = _stage(path)
        targets = {m.split(".")[1] if "." in m else "__init__" for m in _imports(path)}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import) and any(a.name == "sqlstream" for a in node.names):
                targets.add("__init__")
        graph.setdefault(stage, set()).update(targets - {stage})
    return graph


def test_import_layers_stay_few():
    """The longest chain of stage imports (the layers a reader climbs from ``diagnostics`` to
    the command line) is 11: the plan does not import the front end, the command line
    imports the API and the run API rather than the facade (issue 31: 13 layers before,
    counting ``bench/`` and ``tools/`` above the package, 12 after)."""
    graph = _stage_imports()
    depth: dict[str, int] = {}

    def layer(stage: str) -> int:
        if stage not in depth:
            depth[stage] = 1 + max((layer(t) for t in graph.get(stage, ())), default=0)
        return depth[stage]

    assert max(layer(s) for s in STAGES) <= 11, {s: layer(s) for s in STAGES}
