"""Loading a ``*.test.yaml`` file: YAML with positions (ruamel.yaml, round-trip mode), the
shape of a test file, and the names and values it uses checked against the pipeline.

Every problem is a :class:`~sqlstream.diagnostics.errors.SqlStreamError` at its line and
column in the test file, shown with a caret like an error in a `.ssql` file: ``SS101``
the text is not YAML, ``SS202`` an unknown key, ``SS201`` an unknown stream, table, sink,
query or column, ``SS203`` a missing key, a value of the wrong shape or one that does not
fit its column's type, ``SS204`` two tests with one name, ``SS002`` a file that cannot
be read. A problem in the pipeline is reported at its place in the `.ssql` file.
"""

from __future__ import annotations

import os
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from sqlstream.diagnostics.errors import SqlStreamError, did_you_mean
from sqlstream.diagnostics.source_text import Source, Span
from sqlstream.frontend.limits import read_file, run_deep
from sqlstream.ir.context import inside, project_of
from sqlstream.testing import safe_yaml, values
from sqlstream.testing.pipeline import PipelineUnderTest, compile_pipeline, time_zone
from sqlstream.testing.spec import Case, Cell, Check, Row, Rows, Step, TestFile

FILE_KEYS = ("pipeline", "variables", "settings", "tests")
TEST_KEYS = ("name", "tables", "steps", "variables", "settings", "ordered", "tolerance")
STEP_KEYS = (
    "input",
    "restart",
    "expect",
    "table",
    "watermark",
    "state_rows",
    "dropped_by_watermark",
    "expectations",
    "error",
)
QUERY_CHECKS = ("watermark", "state_rows", "dropped_by_watermark")


def yaml() -> YAML:
    """The round-trip YAML reader and writer (keeps comments, order and flow style)."""
    reader = YAML(typ="rt")
    reader.preserve_quotes = True
    reader.width = 4096
    return reader


class _Reader:
    """Spans of the nodes of one document."""

    def __init__(self, source: Source):
        self.source = source
        self.lines = source.text.split("\n")

    def at(self, line: int, column: int) -> Span:
        starts = self.source._line_starts
        if line >= len(starts):
            return self.source.span(len(self.source.text))
        offset = starts[line] + column
        text = self.lines[line][column : column + 4096] if line < len(self.lines) else ""
        return self.source.span(offset, offset + max(1, _width(text)))

    def key(self, node, key) -> Span:
        return self.at(*self._place(node, key, 0))

    def value(self, node, key) -> Span:
        return self.at(*self._place(node, key, 2))

    def _place(self, node, key, index: int) -> tuple[int, int]:
        """``(line, column)`` of ``key`` (``index`` 0) or its value (2) in ``node``; a key a
        merge (``<<: *base``) brought is placed in the mapping it came from."""
        found = (node.lc.data or {}).get(key)
        if found is not None:
            return found[index], found[index + 1]
        for entry in getattr(node, "merge", ()):
            merged = entry[1] if isinstance(entry, tuple) else entry  # (ruamel's versions)
            if key in merged:
                return self._place(merged, key, index)
        return node.lc.line or 0, node.lc.col or 0

    def item(self, node, index: int) -> Span:
        return self.at(*node.lc.item(index))

    def node(self, node, fallback: Span) -> Span:
        lc = getattr(node, "lc", None)
        return self.at(lc.line, lc.col) if lc is not None and lc.line is not None else fallback

    def error(self, message: str, span: Span, code: str = "SS203", hint: str | None = None):
        return SqlStreamError(message, span, self.source, hint=hint, code=code)


def _width(text: str) -> int:
    """The length of the YAML scalar (or the opening bracket) at the start of ``text``."""
    if not text:
        return 1
    if text[0] in "[{":
        return 1
    if text[0] in "'\"":
        end = text.find(text[0], 1)
        return end + 1 if end > 0 else len(text)
    for index, char in enumerate(text):
        if char in ",]}#" or (char == ":" and text[index + 1 : index + 2] in (" ", "")):
            return len(text[:index].rstrip()) or 1
    return len(text.rstrip()) or 1


def read_document(path: Path, project: str | None = None):
    """``(source, document)`` of the test file ``path``, read within the limits of
    :mod:`sqlstream.testing.safe_yaml`.

    Args:
        path: the test file.
        project: the folder a symbolic link ``path`` must stay in (``None``: the project of
            ``path``, :func:`~sqlstream.ir.context.project_of`).

    Raises:
        SqlStreamError: ``SS002`` it cannot be read (not a regular file, a link out of its
            project, larger than :data:`~sqlstream.testing.safe_yaml.MAX_TEST_FILE_BYTES`,
            not UTF-8); ``SS101`` it is not YAML or holds what a test file may not (a tag,
            a huge integer, a date that is none), at the place the YAML parser stopped;
            ``SS104`` it is past a limit (nesting, values with aliases expanded).
    """
    linked = os.path.realpath(path) != os.path.abspath(path)
    if linked and not inside(path, project or project_of(path)):
        raise SqlStreamError(
            f"cannot read {path}: a symbolic link out of its project (or into a hidden folder)",
            code="SS002",
        )
    text = read_file(path, safe_yaml.MAX_TEST_FILE_BYTES)
    source = Source(text, str(path))
    read = _Reader(source)
    try:
        safe_yaml.check_text(text)
        document = run_deep(_parse, text)
        run_deep(safe_yaml.check_values, document)
    except safe_yaml.LimitProblem as problem:
        raise read.error(
            str(problem),
            read.at(problem.line, problem.column),
            code="SS104",
            hint="see the limits of test files in docs/pipeline-tests.md",
        ) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        span = read.at(mark.line, mark.column) if mark else None
        raise SqlStreamError(
            f"not valid YAML: {exc.problem or exc.context}", span, source, code="SS101"
        ) from None
    except ReaderError as exc:
        position = exc.position if isinstance(exc.position, int) else 0
        char = (
            exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or " ")
        )
        raise SqlStreamError(
            f"not valid YAML: {exc.reason} (character 0x{char:02x})",
            source.span(min(position, len(text)), min(position + 1, len(text))),
            source,
            code="SS101",
        ) from None
    except (YAMLError, RecursionError) as exc:
        raise SqlStreamError(
            f"not valid YAML: {exc}", read.at(0, 0), source, code="SS101"
        ) from None
    return source, document


def _parse(text: str):
    reader = yaml()
    reader.Constructor = safe_yaml.Constructor
    return reader.load(text)


def load(
    path: Path, variables: dict[str, str] | None = None, trust: bool = False
) -> tuple[TestFile, dict]:
    """Load and check the test file ``path``.

    Args:
        path: a ``*.test.yaml`` file.
        variables: ``${…}`` values given on the command line (``--var``); a file's or a
            test's own ``variables`` win.
        trust: the pipeline's Python modules are imported while it is compiled (``test
            --trust``); ``False``: no user code runs before the tests run on Spark. Trusted, its ``pipeline``
            may also be outside the test file's project (untrusted, such a pipeline,
            :func:`~sqlstream.ir.context.project_of`, is refused without being read).

    Returns:
        ``(test_file, pipelines)``: the :class:`TestFile` and, per test name, the
        compiled :class:`~sqlstream.testing.pipeline.PipelineUnderTest` it runs.

    Raises:
        SqlStreamError: the first problem in the test file (at its line and column) or in
            the pipeline.
    """
    project = project_of(path)
    source, document = read_document(path, project)
    read = _Reader(source)
    top = read.at(0, 0)
    if not isinstance(document, dict):
        raise read.error("a test file is a mapping with 'pipeline' and 'tests'", top)
    _keys(read, document, FILE_KEYS, "test file")
    for required in ("pipeline", "tests"):
        if required not in document:
            raise read.error(f"the test file has no '{required}'", top)
    pipeline_span = read.value(document, "pipeline")
    if not isinstance(document["pipeline"], str):
        raise read.error("'pipeline' is the path of a .ssql file", pipeline_span)
    pipeline = (path.parent / document["pipeline"]).resolve()
    if not trust and not inside(pipeline, project):
        raise read.error(
            f"the pipeline '{document['pipeline']}' is outside the test file's project "
            f"({project}): it is not read unless the project is trusted",
            pipeline_span,
            code="SS002",
        )
    if not pipeline.is_file():
        raise read.error(f"no pipeline file {pipeline}", pipeline_span, code="SS002")
    file_variables = {**(variables or {}), **_strings(read, document, "variables")}
    file_settings = _strings(read, document, "settings")
    tests = document["tests"]
    if not isinstance(tests, list) or not tests:
        raise read.error("'tests' is a list of tests", read.value(document, "tests"))
    cases: list[Case] = []
    pipelines: dict[str, PipelineUnderTest] = {}
    compiled: dict[tuple, PipelineUnderTest] = {}
    for index, node in enumerate(tests):
        span = read.item(tests, index)
        if not isinstance(node, dict):
            raise read.error("a test is a mapping with 'name' and 'steps'", span)
        _keys(read, node, TEST_KEYS, "test")
        case = _case(read, node, span, file_variables, file_settings)
        if any(c.name == case.name for c in cases):
            raise read.error(f"two tests are named '{case.name}'", case.span, code="SS204")
        key = tuple(sorted(case.variables.items()))
        if key not in compiled:
            compiled[key] = compile_pipeline(pipeline, case.variables, trust)
        _check(read, case, compiled[key])
        cases.append(case)
        pipelines[case.name] = compiled[key]
    return TestFile(path, source, pipeline, pipeline_span, cases, document), pipelines


def _keys(read: _Reader, node: dict, known: tuple[str, ...], what: str) -> None:
    for key in node:
        if key not in known:
            raise read.error(
                f"unknown key '{key}' in a {what}" + did_you_mean(str(key), known),
                read.key(node, key),
                code="SS202",
                hint=f"the keys of a {what}: {', '.join(known)}",
            )


def _strings(read: _Reader, node: dict, key: str) -> dict[str, str]:
    value = node.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise read.error(f"'{key}' is a mapping of names to values", read.value(node, key))
    return {
        str(k): "true" if v is True else "false" if v is False else str(v) for k, v in value.items()
    }


def _case(read: _Reader, node: dict, span: Span, variables: dict, settings: dict) -> Case:
    name = node.get("name")
    if not isinstance(name, str) or not name.strip():
        raise read.error(
            "a test needs a 'name' (text)", read.value(node, "name") if "name" in node else span
        )
    steps = node.get("steps")
    if not isinstance(steps, list) or not steps:
        raise read.error(
            f"test '{name}' needs 'steps': a list of input and restart steps",
            read.value(node, "steps") if "steps" in node else span,
        )
    tolerance = node.get("tolerance", 1e-9)
    if (
        isinstance(tolerance, bool)
        or not isinstance(tolerance, (int, float))
        or not 0 <= tolerance < float("inf")  # not NaN (no comparison holds), not infinite
    ):
        raise read.error(
            "'tolerance' is a relative tolerance, a finite number ≥ 0 (.nan or .inf would "
            "make every comparison pass)",
            read.value(node, "tolerance"),
        )
    ordered = node.get("ordered", False)
    if not isinstance(ordered, bool):
        raise read.error("'ordered' is true or false", read.value(node, "ordered"))
    tables = {}
    if node.get("tables") is not None:
        if not isinstance(node["tables"], dict):
            raise read.error("'tables' maps table names to rows", read.value(node, "tables"))
        tables = {str(k): _rows(read, node["tables"], k) for k in node["tables"]}
    return Case(
        name,
        read.node(node, span),
        [_step(read, steps, i) for i in range(len(steps))],
        tables,
        {**variables, **_strings(read, node, "variables")},
        {**settings, **_strings(read, node, "settings")},
        ordered,
        float(tolerance),
        node,
    )


def _step(read: _Reader, steps: list, index: int) -> Step:
    node, span = steps[index], read.item(steps, index)
    if not isinstance(node, dict):
        raise read.error("a step is a mapping: 'input: {stream: rows}' or 'restart: true'", span)
    _keys(read, node, STEP_KEYS, "step")
    step = Step(index + 1, span, node=node)
    if ("input" in node) == ("restart" in node):
        raise read.error("a step has either 'input' (one micro-batch) or 'restart: true'", span)
    if "restart" in node and node["restart"] is not True:
        raise read.error("'restart' is true", read.value(node, "restart"))
    step.restart = "restart" in node
    if "input" in node:
        given = node["input"] or {}
        if not isinstance(given, dict):
            raise read.error("'input' maps stream names to rows", read.value(node, "input"))
        step.input = {str(k): _rows(read, given, k) for k in given}
    if node.get("expect") is not None:
        if not isinstance(node["expect"], dict):
            raise read.error("'expect' maps sink names to rows", read.value(node, "expect"))
        step.expect = {str(k): _rows(read, node["expect"], k) for k in node["expect"]}
    if node.get("table") is not None:
        if not isinstance(node["table"], dict):
            raise read.error("'table' maps sink names to rows", read.value(node, "table"))
        step.table = {str(k): _rows(read, node["table"], k) for k in node["table"]}
    for key in QUERY_CHECKS:
        if key in node:
            setattr(step, key, _checks(read, node, key))
    if "expectations" in node:
        given = node["expectations"]
        if not isinstance(given, dict) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in given.values()
        ):
            raise read.error(
                "'expectations' maps expectation names to counts of violating rows, "
                "e.g. {known_origin: 2}",
                read.value(node, "expectations"),
            )
        step.expectations = _checks(read, node, "expectations")
    if "error" in node:
        if not isinstance(node["error"], str) or not node["error"].strip():
            raise read.error(
                "'error' is a code (SS501) or a fragment of the message", read.value(node, "error")
            )
        step.error = Cell(node["error"], read.value(node, "error"))
    return step


def _checks(read: _Reader, node: dict, key: str) -> list[Check]:
    value = node[key]
    if isinstance(value, dict):
        return [
            Check(str(q), v, read.value(value, q), read.key(value, q)) for q, v in value.items()
        ]
    return [Check(None, value, read.value(node, key))]


def _rows(read: _Reader, parent: dict, key) -> Rows:
    node, span, key_span = parent[key], read.value(parent, key), read.key(parent, key)
    if node is None:
        node = []
    if isinstance(node, dict) and set(node) == {"columns", "rows"}:
        columns, table = node["columns"], node["rows"] or []
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise read.error("'columns' is a list of column names", read.value(node, "columns"))
        if not isinstance(table, list):
            raise read.error(
                "'rows' is a list of rows, each a list of values", read.value(node, "rows")
            )
        _count(read, table, read.value(node, "rows"))
        rows = []
        for index, row in enumerate(table):
            row_span = read.item(table, index)
            if not isinstance(row, list) or len(row) != len(columns):
                raise read.error(f"a row of {len(columns)} values ({', '.join(columns)})", row_span)
            rows.append(
                Row(
                    {
                        c: Cell(row[i], read.item(row, i), read.item(columns, k))
                        for k, (i, c) in enumerate(enumerate(columns))
                    },
                    row_span,
                )
            )
        return Rows(rows, span, key_span)
    if not isinstance(node, list):
        raise read.error("rows are a list of mappings, or {columns: […], rows: [[…], …]}", span)
    _count(read, node, span)
    rows = []
    for index, row in enumerate(node):
        row_span = read.item(node, index)
        if not isinstance(row, dict):
            raise read.error("a row is a mapping {column: value}", row_span)
        rows.append(
            Row({str(c): Cell(row[c], read.value(row, c), read.key(row, c)) for c in row}, row_span)
        )
    return Rows(rows, span, key_span)


def _count(read: _Reader, rows: list, span: Span) -> None:
    if len(rows) > safe_yaml.MAX_ROWS:
        raise read.error(
            f"{len(rows):,} rows: at most {safe_yaml.MAX_ROWS:,} for one stream, table or sink "
            "in a step",
            span,
            code="SS104",
            hint="split the rows over several steps (each step is one micro-batch)",
        )


def expectation_names(plan) -> list[str]:
    """The names of the expectations of a plan's streams and sinks, in plan order."""
    found = [e.name for r in plan.relations for e in getattr(r, "expectations", ())]
    return found + [e.name for q in plan.queries for e in q.expectations]


def _named(read: _Reader, names: dict, name: str, span: Span, what: str):
    found = names.get(name.lower())
    if found is None:
        raise read.error(
            f"the pipeline has no {what} '{name}'" + did_you_mean(name, list(names)),
            span,
            code="SS201",
            hint=f"its {'querie' if what == 'query' else what}s: {', '.join(names) or 'none'}",
        )
    return found


def _check(read: _Reader, case: Case, pipeline: PipelineUnderTest) -> None:
    """Check the names and input values of ``case`` against ``pipeline``; fill in the
    values of its input and table rows."""
    zone = time_zone(pipeline, case.settings)
    for name, rows in case.tables.items():
        _values(read, rows, _named(read, pipeline.tables, name, rows.key_span, "table"), zone)
    for step in case.steps:
        for name, rows in (step.input or {}).items():
            _values(read, rows, _named(read, pipeline.streams, name, rows.key_span, "stream"), zone)
        for name, rows in step.expect.items():
            queries = _named(read, pipeline.sinks, name, rows.key_span, "sink")
            _expected_columns(read, rows, queries, name)
        for name, rows in step.table.items():  # its columns: the table's (testing/tables.py)
            _named(read, pipeline.sinks, name, rows.key_span, "sink")
        for key in QUERY_CHECKS:
            for check in getattr(step, key):
                _query_check(read, pipeline, key, check, zone)
        rules = {r.lower(): r for r in expectation_names(pipeline.plan)}
        for check in step.expectations:
            assert check.query is not None  # (a mapping: rule name → count)
            _named(read, rules, check.query, check.key_span or check.span, "expectation")


def _values(read: _Reader, rows: Rows, relation, zone: str) -> None:
    types = {n.lower(): (i, n, values.parse_type(t)) for i, (n, t) in enumerate(relation.given)}
    rows.values = []
    for row in rows.rows:
        out = [None] * len(relation.given)
        for column, cell in row.cells.items():
            if column.lower() not in types:
                raise read.error(
                    f"'{relation.name}' has no column '{column}'"
                    + did_you_mean(column, [n for n, _ in relation.given]),
                    cell.key_span or cell.span,
                    code="SS201",
                    hint=f"its columns: {', '.join(n for n, _ in relation.given)} "
                    "(computed columns are computed, not given)",
                )
            index, name, kind = types[column.lower()]
            try:
                out[index] = values.to_python(cell.value, kind, zone)
            except values.ValueProblem as exc:
                raise read.error(
                    f"column '{name}' ({values.type_name(kind)}): {exc}", cell.span
                ) from None
        rows.values.append(tuple(out))


def _expected_columns(read: _Reader, rows: Rows, queries, sink: str) -> None:
    first = None
    for row in rows.rows:
        names = [c.lower() for c in row.cells]
        if first is None:
            first = names
        elif sorted(names) != sorted(first):
            raise read.error(
                f"every expected row of '{sink}' names the same columns ({', '.join(first)})",
                row.span,
            )
        for query in queries:
            known = {n.lower() for n, _ in query.columns or ()}
            for column, cell in row.cells.items():
                if query.columns is not None and column.lower() not in known:
                    raise read.error(
                        f"sink '{sink}' has no column '{column}'"
                        + did_you_mean(column, [n for n, _ in query.columns]),
                        cell.key_span or cell.span,
                        code="SS201",
                        hint=f"query '{query.name}' writes {', '.join(n for n, _ in query.columns)}",
                    )


def _query_check(
    read: _Reader, pipeline: PipelineUnderTest, key: str, check: Check, zone: str
) -> None:
    if check.query is None:
        if len(pipeline.queries) != 1:
            raise read.error(
                f"the pipeline has {len(pipeline.queries)} queries: give "
                f"'{key}' per query, {{query: value}}",
                check.span,
                hint="its queries: " + ", ".join(q.name for q in pipeline.plan.queries),
            )
    else:
        _named(read, pipeline.queries, check.query, check.key_span or check.span, "query")
    if key == "watermark":
        try:
            check.value = values.parse_time(
                check.value.isoformat(sep=" ")
                if hasattr(check.value, "isoformat")
                else str(check.value),
                zone,
            )
        except values.ValueProblem as exc:
            raise read.error(f"watermark: {exc}", check.span) from None
        return
    numbers = check.value if isinstance(check.value, list) else [check.value]
    if not numbers or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers
    ):
        raise read.error(
            f"'{key}' is a count (N), or one per stateful operator ([N, …])", check.span
        )
    check.value = list(numbers)
