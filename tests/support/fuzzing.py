"""Fuzzing strategies and the property every input must have (used by ``test_fuzz.py`` and
``tools/fuzz.py``).

Two sources of inputs, both ``hypothesis`` strategies:

* :func:`programs`: programs built from the statement grammar (docs/dialect.md#statements): streams
  with columns of random types, computed columns, watermarks; sinks of random connectors
  and options; views, inserts and bare selects whose bodies come from a small expression
  grammar (columns, literals, intervals, operators, calls, ``CASE``, subqueries, window
  TVFs), ``EMIT`` clauses — valid and invalid alike;
* :func:`nestings`: every expression kind of :data:`NESTING_SHAPES` nested in every place
  (:func:`nested`); :func:`statement_parens`: parenthesised and aliased queries as
  statements; :func:`nul_after_prefix`: NUL bytes after a valid prefix; and
  :func:`cli_invocations` with :func:`assert_cli_robust`: the command line on paths that
  cannot be read or written (:func:`cli_paths`);
* :func:`mutants`: the corpus programs (``tests/fixtures/check/*.ssql`` and the translate
  goldens) with text mutations (slices deleted or repeated, tokens inserted, characters
  replaced) and byte mutations (read through :func:`sqlstream.read_file` from a file).

:func:`assert_robust` is the property: only :class:`~sqlstream.SqlStreamError` escapes,
every finding's span lies inside the input (and its line is shown), and ``check`` and ``translate`` agree
(``translate`` raises if and only if ``check`` reports an error), each within :data:`SECONDS`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hypothesis import strategies as st

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS = tuple(
    sorted(
        p.read_text(encoding="utf-8")
        for d in ("check", "translate", "errors")
        for p in (FIXTURES / d).glob("*.ssql")
    )
)
VARIABLES = {"data": "/tmp/sqlstream-fuzz-data", "day": "2013-01-01", "path": "data"}

# ---- the property ------------------------------------------------------------------------


SECONDS = 5.0  # the bound on one compile of any input within the documented limits
# Measured in CPU seconds of this process (time.process_time), not wall time: a guard against
# exponential or runaway work that a loaded machine (waiting for a core) cannot trip.


def assert_robust(
    text: str, variables: dict | None = None, seconds: float | None = SECONDS
) -> list[SqlStreamError]:
    """Check ``text`` and translate it; fail unless the compiler behaved.

    Args:
        text: the program.
        variables: values for ``${…}`` (default :data:`VARIABLES`).
        seconds: the longest each of ``check`` and ``translate`` may take (CPU seconds;
            a bound against exponential or quadratic blow-up, not a benchmark), or ``None``.

    Returns:
        The findings of ``check``.

    Raises:
        AssertionError: a finding that is not a ``SqlStreamError`` or whose span lies
            outside ``text``; ``translate`` raising without an error from ``check``, or
            not raising with one; either taking longer than ``seconds``. Any other
            exception propagates (that is a bug).
    """
    variables = VARIABLES if variables is None else variables
    started = time.process_time()
    findings = sqlstream.check(text, variables)
    _assert_within(started, seconds, "check", text)
    for finding in findings:
        assert isinstance(finding, SqlStreamError), finding
        finding.render()
        finding.to_dict()
        if finding.span is not None:
            span = finding.span
            assert 0 <= span.start <= span.end <= len(text), (finding.render(), span)
            assert span.line >= 1 and span.column >= 1, span
            assert finding.source is not None, f"{finding.code} has a position but no source line"
    errors = [f for f in findings if f.severity == "error"]
    started = time.process_time()
    try:
        sqlstream.translate(text, variables)
    except SqlStreamError as error:
        error.render()
        assert errors, f"translate raised {error.render()!r} but check found no error"
    else:
        assert not errors, f"check found {errors[0].render()!r} but translate succeeded"
    _assert_within(started, seconds, "translate", text)
    return findings


def _assert_within(started: float, seconds: float | None, what: str, text: str) -> None:
    took = time.process_time() - started
    assert seconds is None or took <= seconds, (
        f"{what} took {took:.1f} s (over {seconds} s) on {len(text)} characters: {text[:300]!r}…"
    )


def assert_file_robust(data: bytes) -> None:
    """Write ``data`` to a file and read it as the CLI does: SS002 or :func:`assert_robust`."""
    handle, name = tempfile.mkstemp(suffix=".ssql")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        try:
            text = sqlstream.read_file(name)
        except SqlStreamError as error:
            assert error.code == "SS002", error.render()
            error.render()
            return
        assert_robust(text)
    finally:
        os.unlink(name)


# ---- grammar-based programs -------------------------------------------------------------

NAMES = ("a", "b", "ts", "s", "t", "v", "o", "x", "window_start", "`we ird`", "value", "timestamp")
TYPES = (
    "INT",
    "BIGINT",
    "STRING",
    "DOUBLE",
    "TIMESTAMP",
    "DATE",
    "BOOLEAN",
    "DECIMAL(10, 2)",
    "ARRAY<INT>",
    "MAP<STRING, INT>",
    "STRUCT<x: INT, y: STRING>",
    "VARCHAR(3)",
    "BLOB",
)
UNITS = (
    "SECOND",
    "SECONDS",
    "MINUTE",
    "MINUTES",
    "HOUR",
    "DAY",
    "WEEK",
    "MONTH",
    "YEAR",
    "MILLISECOND",
    "FORTNIGHT",
)
AMOUNTS = (
    "1",
    "10",
    "0",
    "-5",
    "1.5",
    "abc",
    "",
    "1 hour",
    "10 minutes",
    "1 month",
    "99999999999999999999",
)
FUNCTIONS = (
    "upper",
    "lower",
    "coalesce",
    "count",
    "sum",
    "avg",
    "max",
    "window",
    "session_window",
    "date_trunc",
    "to_timestamp",
    "explode",
    "current_timestamp",
    "nosuchfn",
    "abs",
)
OPERATORS = ("+", "-", "*", "/", "=", "<>", "<", ">=", "AND", "OR", "||", "%")

names = st.sampled_from(NAMES)


def _interval():
    return st.builds(
        lambda amount, unit, quoted: f"INTERVAL {quoted(amount)} {unit}",
        st.sampled_from(AMOUNTS),
        st.sampled_from(UNITS),
        st.sampled_from((lambda a: f"'{a}'", lambda a: a or "1")),
    )


literals = st.one_of(
    st.integers(-10, 10**12).map(str),
    st.sampled_from(("NULL", "TRUE", "'x'", "'it''s'", "1.5e3")),
    _interval(),
    st.sampled_from(
        (
            "TIMESTAMP '2024-01-31 12:00:00'",
            "TIMESTAMP '2024-13-01'",
            "DATE '2024-02-30'",
            "DATE '2024-02-28'",
            "X'ab'",
        )
    ),
)


def _expressions(max_leaves: int = 12):
    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(OPERATORS), inner).map(
                lambda t: f"{t[0]} {t[1]} {t[2]}"
            ),
            inner.map(lambda e: f"({e})"),
            st.tuples(st.sampled_from(FUNCTIONS), st.lists(inner, max_size=3)).map(
                lambda t: f"{t[0]}({', '.join(t[1])})"
            ),
            st.tuples(inner, inner, inner).map(
                lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"
            ),
            inner.map(lambda e: f"CAST({e} AS STRING)"),
            inner.map(lambda e: f"NOT {e}"),
            st.tuples(inner, names).map(lambda t: f"(SELECT {t[0]} FROM {t[1]})"),
        )

    return st.recursive(st.one_of(names, literals), extend, max_leaves=max_leaves)


expressions = _expressions()


@st.composite
def queries(draw) -> str:
    """A query body: SELECT … FROM (a relation, a window TVF, a subquery) [WHERE] [GROUP BY]."""
    items = draw(
        st.lists(st.tuples(expressions, st.one_of(st.none(), names)), min_size=1, max_size=4)
    )
    select = ", ".join(e if alias is None else f"{e} AS {alias}" for e, alias in items)
    relation = draw(names)
    source = draw(
        st.sampled_from(
            (
                relation,
                f"TUMBLE({relation}, ts, {draw(_interval())})",
                f"HOP(TABLE {relation}, DESCRIPTOR(ts), {draw(_interval())}, {draw(_interval())})",
                f"SESSION({relation}, ts, {draw(_interval())})",
                f"(SELECT * FROM {relation}) AS q",
                f"{relation} WATERMARK ts DELAY OF {draw(_interval())}",
                f"{relation} JOIN {draw(names)} USING ({draw(names)})",
            )
        )
    )
    text = f"SELECT {'DISTINCT ' if draw(st.booleans()) else ''}{select} FROM {source}"
    if draw(st.booleans()):
        text += f" WHERE {draw(expressions)}"
    if draw(st.booleans()):
        text += f" GROUP BY {', '.join(draw(st.lists(expressions, min_size=1, max_size=3)))}"
    if draw(st.booleans()):
        text = f"WITH {draw(names)} AS ({text}) SELECT * FROM {draw(names)}"
    return text + draw(
        st.sampled_from(
            ("", " LIMIT 5", " ORDER BY 1", " QUALIFY row_number() OVER (ORDER BY ts) = 1")
        )
    )


emits = st.one_of(
    st.just(""),
    st.builds(
        lambda mode, trigger: f" EMIT {mode} {trigger}".rstrip(),
        st.sampled_from(("", "CHANGES", "FINAL", "COMPLETE", "ON WINDOW CLOSE")),
        st.one_of(
            st.just(""),
            st.just("ONCE"),
            st.just("AVAILABLE NOW"),
            _interval().map(lambda i: f"EVERY {i}"),
            _interval().map(lambda i: f"CONTINUOUS EVERY {i}"),
        ),
    ),
)

OPTION_VALUES = (
    "'files'",
    "'rate'",
    "'console'",
    "'memory'",
    "'noop'",
    "'socket'",
    "'kafka'",
    "'json'",
    "'csv'",
    "'${data}/x'",
    "0",
    "-1",
    "31",
    "'abc'",
    "true",
    "1.5",
    "'${env:NOPE}'",
    "'${undefined}'",
)
OPTION_KEYS = (
    "connector",
    "path",
    "format",
    "header",
    "max_files_per_trigger",
    "maxFilesPerTrigger",
    "rowsPerSecond",
    "numPartitions",
    "port",
    "host",
    "query_name",
    "checkpoint_location",
    "infer_schema",
    "fromat",
    "spark.x",
)


@st.composite
def options(draw) -> str:
    pairs = draw(
        st.lists(
            st.tuples(st.sampled_from(OPTION_KEYS), st.sampled_from(OPTION_VALUES)),
            max_size=5,
            unique_by=lambda p: p[0],
        )
    )
    connector = draw(
        st.sampled_from(("'files'", "'rate'", "'console'", "'memory'", "'socket'", "'table'"))
    )
    return (
        "WITH (" + ", ".join([f"connector = {connector}"] + [f"{k} = {v}" for k, v in pairs]) + ")"
    )


@st.composite
def statements(draw) -> str:
    kind = draw(
        st.sampled_from(
            ("stream", "stream", "table", "view", "sink", "insert", "select", "set", "derived")
        )
    )
    name = draw(names)
    if kind in ("stream", "table"):
        columns = [
            f"{n} {t}"
            for n, t in draw(st.lists(st.tuples(names, st.sampled_from(TYPES)), max_size=4))
        ]
        columns += [
            f"{n} AS {e}" for n, e in draw(st.lists(st.tuples(names, expressions), max_size=2))
        ]
        if kind == "stream" and draw(st.booleans()):
            columns.append(f"WATERMARK FOR ts AS ts - {draw(_interval())}")
        body = f" ({', '.join(columns)})" if columns else ""
        return f"CREATE {kind.upper()} {name}{body} {draw(options())}"
    if kind == "view":
        return f"CREATE VIEW {name} AS {draw(queries())}"
    if kind == "sink":
        return f"CREATE SINK {name} {draw(options())}"
    if kind == "derived":
        return f"CREATE STREAM {name} {draw(options())} AS {draw(queries())}{draw(emits)}"
    if kind == "insert":
        return f"INSERT INTO {name} {draw(queries())}{draw(emits)}"
    if kind == "set":
        return f"SET '{draw(st.sampled_from(('spark.sql.shuffle.partitions', 'sqlstream.state_dir', 'sqlstream.x')))}' = '4'"
    return f"{draw(queries())}{draw(emits)}"


STREAM = (
    "CREATE STREAM s (a INT, b STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
    "WITH (connector = 'files', path = 'in', format = 'json')"
)


@st.composite
def programs(draw) -> str:
    """A program of up to 6 statements (the first often a valid stream ``s``)."""
    head = [STREAM, "CREATE SINK o WITH (connector = 'console')"] if draw(st.booleans()) else []
    return ";\n".join(head + draw(st.lists(statements(), min_size=1, max_size=6))) + ";\n"


# ---- nesting of every expression kind ---------------------------------------------------

# name → (opening, closing, innermost): one level is opening + inner + closing.
NESTING_SHAPES = {
    "parentheses": ("(", ")", "a"),
    "function call": ("abs(", ")", "a"),
    "CAST": ("CAST(", " AS INT)", "a"),
    "IF": ("if(a = 1, ", ", 0)", "a"),
    "CASE": ("CASE WHEN a = 1 THEN ", " END", "a"),
    "simple CASE": ("CASE a WHEN 1 THEN ", " ELSE 0 END", "a"),
    "NOT": ("NOT ", "", "a = 1"),
    "lambda": ("transform(array(1), x -> ", ")", "x + a"),
    "struct": ("struct(", ")", "a"),
    "STRUCT": ("STRUCT(", ")", "a"),
    "named_struct": ("named_struct('f', ", ")", "a"),
    "array": ("array(", ")", "a"),
    "element": ("array(", ")[0]", "a"),
    "map": ("map(1, ", ")", "a"),
    "scalar subquery": ("(SELECT ", " AS c FROM s)", "a"),
    "IN subquery": ("a IN (SELECT a FROM s WHERE ", ")", "a = 1"),
    "EXISTS": ("EXISTS (SELECT a FROM s WHERE ", ")", "a = 1"),
    "cast to nested type": ("CAST(NULL AS ", ")", "INT"),  # the type's levels: see nested()
}
SUBQUERY_SHAPES = {"scalar subquery", "IN subquery", "EXISTS"}
NESTING_PLACES = (
    "select",
    "where",
    "view",
    "computed column",
    "FROM subqueries",
    "type as a select item",
)
NESTED_HEAD = (
    "CREATE STREAM s (a INT, ts TIMESTAMP{computed}, WATERMARK FOR ts AS ts - "
    "INTERVAL '1' MINUTE) WITH (connector = 'files', path = 'in', format = 'json');\n"
    "CREATE SINK o WITH (connector = 'console');\n"
)


def nested(shape: str, depth: int, place: str = "select") -> str:
    """A program with an expression of ``shape`` (:data:`NESTING_SHAPES`) nested ``depth``
    levels at ``place`` (:data:`NESTING_PLACES`; ``"FROM subqueries"`` and ``"type as a
    select item"`` ignore ``shape``)."""
    opening, closing, inner = NESTING_SHAPES[shape]
    if shape == "cast to nested type":
        inner = "ARRAY<" * depth + "INT" + ">" * depth
        depth = 1
    expression = opening * depth + inner + closing * depth
    head = NESTED_HEAD.format(computed="")
    if place == "select":
        return head + f"INSERT INTO o SELECT {expression} AS x FROM s;\n"
    if place == "where":
        return head + f"INSERT INTO o SELECT a FROM s WHERE ({expression}) IS NOT NULL;\n"
    if place == "view":
        return (
            head
            + f"CREATE VIEW v AS SELECT {expression} AS x, ts FROM s;\nINSERT INTO o SELECT x FROM v;\n"
        )
    if place == "computed column":
        return (
            NESTED_HEAD.format(computed=f", x AS {expression}") + "INSERT INTO o SELECT x FROM s;\n"
        )
    if place == "FROM subqueries":
        return (
            head
            + "INSERT INTO o SELECT a FROM "
            + "(SELECT a, ts FROM " * depth
            + "s"
            + ")" * depth
            + ";\n"
        )
    if place == "type as a select item":
        return (
            head + "INSERT INTO o SELECT " + "ARRAY<" * depth + "INT" + ">" * depth + " FROM s;\n"
        )
    raise ValueError(place)


@st.composite
def nestings(draw, max_depth: int = 40) -> str:
    """A program of :func:`nested` with a random shape, depth (1 to ``max_depth``) and place,
    sometimes cut short or with one closing level too many."""
    text = nested(
        draw(st.sampled_from(sorted(NESTING_SHAPES))),
        draw(st.integers(1, max_depth)),
        draw(st.sampled_from(NESTING_PLACES)),
    )
    cut = draw(st.sampled_from(("", "short", "long")))
    if cut == "short":
        text = text.replace(")", "", 1)
    elif cut == "long":
        text = text.replace(";", ");", 1)
    return text


# ---- statement-level parentheses and NUL bytes ------------------------------------------

PARENTHESISED = (
    "(SELECT a FROM s)",
    "(SELECT a FROM s) AS x",
    "(SELECT a FROM s) x",
    "((SELECT a FROM s))",
    "(SELECT a FROM s) UNION (SELECT a FROM s)",
    "(a = 1, b = 2)",
    "(a)",
    "()",
    "TABLE s",
    "(SELECT a FROM s) ORDER BY a",
    "(WITH c AS (SELECT a FROM s) SELECT a FROM c) AS y",
    "(VALUES (1)) AS t (a)",
)


@st.composite
def statement_parens(draw) -> str:
    """A parenthesised query, expression or aliased query as a statement (bare, after INSERT
    INTO, in CREATE VIEW / CREATE STREAM … AS), sometimes followed by a NUL byte."""
    body = draw(st.sampled_from(PARENTHESISED))
    statement = draw(
        st.sampled_from(
            (
                "{}",
                "INSERT INTO o {}",
                "CREATE VIEW v AS {}",
                "CREATE STREAM t WITH (connector = 'memory') AS {}",
            )
        )
    ).format(body)
    end = draw(st.sampled_from((";\n", ";", "", ";\x00", "\x00", "\x00;", " \x00\n")))
    return STREAM + ";\nCREATE SINK o WITH (connector = 'console');\n" + statement + end


@st.composite
def nul_after_prefix(draw) -> str:
    """A corpus program cut after a random prefix, a NUL byte (or a few), then the rest or
    nothing."""
    text = CORPUS[draw(st.integers(0, len(CORPUS) - 1))]
    at = draw(st.integers(0, len(text)))
    rest = text[at:] if draw(st.booleans()) else ""
    return text[:at] + "\x00" * draw(st.integers(1, 3)) + rest


# ---- the command line on paths that cannot be read or written ---------------------------

PATH_KINDS = (
    "valid",
    "missing",
    "directory",
    "fifo",
    "/dev/zero",
    "huge sparse",
    "not utf-8",
    "missing folder",
    "nul after a statement",
)
OUTPUT_KINDS = (None, "writable", "missing folder", "directory", "/dev/full")


def cli_paths(folder: Path) -> dict[str, str]:
    """The files of :data:`PATH_KINDS` (and writable outputs) made under ``folder``."""
    valid = folder / "valid.ssql"
    valid.write_text(STREAM + ";\nSELECT a FROM s;\n", encoding="utf-8")
    fifo = folder / "fifo.ssql"
    if not fifo.exists():
        os.mkfifo(fifo)
    huge = folder / "huge.ssql"
    with open(huge, "wb") as handle:  # sparse: no disk used
        handle.truncate(2 * 1024**3)
    latin = folder / "latin1.ssql"
    latin.write_bytes("-- café\nSELECT 1;".encode("latin-1"))
    nul = folder / "nul.ssql"
    nul.write_text(STREAM + ";\n(SELECT a FROM s) AS x;\x00", encoding="utf-8")
    (folder / "out").mkdir(exist_ok=True)
    return {
        "valid": str(valid),
        "missing": str(folder / "missing.ssql"),
        "directory": str(folder),
        "fifo": str(fifo),
        "/dev/zero": "/dev/zero",
        "huge sparse": str(huge),
        "not utf-8": str(latin),
        "missing folder": str(folder / "no" / "such.ssql"),
        "nul after a statement": str(nul),
        "writable": str(folder / "out" / "x.py"),
        "/dev/full": "/dev/full",
    }


@st.composite
def cli_invocations(draw, paths: dict[str, str]) -> list[str]:
    """Arguments of a ``sqlstream`` command that reads (and with ``-o`` writes) a path of
    :func:`cli_paths`."""
    command = draw(st.sampled_from(("check", "translate", "explain")))
    args = [command, paths[draw(st.sampled_from(PATH_KINDS))]]
    if command == "check" and draw(st.booleans()):
        args.append(paths[draw(st.sampled_from(PATH_KINDS))])
    if command == "translate":
        output = draw(st.sampled_from(OUTPUT_KINDS))
        if output is not None:
            args += ["-o", paths.get(output, output)]
    if draw(st.booleans()):
        args += ["--format", "json"] if command != "translate" else ["--to", "pyspark"]
    return args


def assert_cli_robust(args: list[str], seconds: float = SECONDS) -> None:
    """Run ``sqlstream args`` (click's CliRunner): exit 0, 1 or 2, no traceback, no
    "internal error", within ``seconds``."""
    from click.testing import CliRunner

    from sqlstream.cli import main

    started = time.process_time()
    result = CliRunner().invoke(main, args)
    took = time.process_time() - started
    output = result.output
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args,
        result.exception,
    )
    assert "Traceback" not in output and "internal error" not in output, (args, output)
    assert took <= seconds, f"sqlstream {' '.join(args)} took {took:.1f} s"


# ---- mutations of the corpus -------------------------------------------------------------

TOKENS = (
    "(",
    ")",
    "((",
    "))",
    ";",
    ",",
    "'",
    "`",
    '"',
    "--",
    "/*",
    "*/",
    "${",
    "}",
    "${data}",
    "${env:HOME}",
    "\ufeff",
    "\x00",
    "\\",
    "é",
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "EMIT",
    "WATERMARK",
    "INTERVAL",
    "'abc'",
    "MONTH",
    "TUMBLE(",
    "WITH",
    "AS",
    "CREATE STREAM",
    "NULL",
    "<",
    ">",
    "ARRAY<",
    "STRUCT<",
    "1e999",
    "-",
    "\n",
    "\t",
    " ",
    "DISTINCT",
    "OVER ()",
    "*",
)


def mutate(draw, text: str, count: int, odd: tuple[str, ...] = ()) -> str:
    """``text`` with ``count`` mutations drawn with ``draw`` (a composite strategy's): a
    span of at most 40 characters deleted, repeated, replaced by one of :data:`TOKENS` or
    swapped with a later one, a token inserted, and, when ``odd`` is given, one of those
    strings inserted. The one mutation strategy of the fuzzers (programs, the language
    server's edits)."""
    actions = ("delete", "repeat", "insert", "replace", "swap") + (("odd",) if odd else ())
    for _ in range(count):
        size = len(text)
        start = draw(st.integers(0, size))
        end = draw(st.integers(start, min(size, start + 40)))
        action = draw(st.sampled_from(actions))
        if action == "delete":
            text = text[:start] + text[end:]
        elif action == "repeat":
            text = text[:end] + text[start:end] * draw(st.integers(1, 3)) + text[end:]
        elif action == "insert":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[start:]
        elif action == "replace":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[end:]
        elif action == "odd":
            text = text[:start] + draw(st.sampled_from(odd)) + text[start:]
        else:
            other = draw(st.integers(0, size))
            a, b = sorted((start, other))
            text = (
                text[:a]
                + text[b : b + (end - start)]
                + text[a + (end - start) : b]
                + text[a : a + (end - start)]
                + text[b + (end - start) :]
            )
    return text


@st.composite
def mutants(draw) -> str:
    """A corpus program with 1 to 4 text mutations (:func:`mutate`)."""
    # an index, not sampled_from: its repr would hold the whole corpus
    text = CORPUS[draw(st.integers(0, len(CORPUS) - 1))]
    return mutate(draw, text, draw(st.integers(1, 4)))


@st.composite
def byte_mutants(draw) -> bytes:
    """A corpus program as UTF-8 bytes with 1 to 3 bytes replaced, inserted or deleted (a BOM
    in front, sometimes)."""
    data = bytearray(CORPUS[draw(st.integers(0, len(CORPUS) - 1))].encode("utf-8"))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        byte = draw(st.integers(0, 255))
        action = draw(st.sampled_from(("replace", "insert", "delete")))
        if action == "replace" and at < len(data):
            data[at] = byte
        elif action == "insert":
            data.insert(at, byte)
        elif at < len(data):
            del data[at]
    prefix = b"\xef\xbb\xbf" if draw(st.booleans()) else b""
    return prefix + bytes(data)
