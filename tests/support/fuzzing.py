"""Fuzzing strategies and the property every input must have (used by ``test_fuzz.py`` and
``tools/fuzz.py``).

Two sources of inputs, both ``hypothesis`` strategies:

* :func:`programs`: programs built from the statement grammar (docs/dialect.md#statements): streams
  with columns of random types, computed columns, watermarks; sinks of random connectors
  and options; views, inserts and bare selects whose bodies come from a small expression
  grammar (columns, literals, intervals, operators, calls, ``CASE``, subqueries, window
  TVFs), ``EMIT`` clauses — valid and invalid alike;
* :func:`mutants`: the corpus programs (``tests/fixtures/check/*.ssql`` and the translate
  goldens) with text mutations (slices deleted or repeated, tokens inserted, characters
  replaced) and byte mutations (read through :func:`sqlstream.read_file` from a file).

:func:`assert_robust` is the property: only :class:`~sqlstream.SqlStreamError` escapes,
every finding's span lies inside the input (and its line is shown), and ``check`` and ``translate`` agree
(``translate`` raises if and only if ``check`` reports an error).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import strategies as st

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CORPUS = tuple(sorted(p.read_text(encoding="utf-8") for d in ("check", "translate", "errors")
                      for p in (FIXTURES / d).glob("*.ssql")))
VARIABLES = {"data": "/tmp/sqlstream-fuzz-data", "day": "2013-01-01", "path": "data"}

# ---- the property ------------------------------------------------------------------------


def assert_robust(text: str, variables: dict | None = None) -> list[SqlStreamError]:
    """Check ``text`` and translate it; fail unless the compiler behaved.

    Returns:
        The findings of ``check``.

    Raises:
        AssertionError: a finding that is not a ``SqlStreamError`` or whose span lies
            outside ``text``; ``translate`` raising without an error from ``check``, or
            not raising with one. Any other exception propagates (that is a bug).
    """
    variables = VARIABLES if variables is None else variables
    findings = sqlstream.check(text, variables)
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
    try:
        sqlstream.translate(text, variables)
    except SqlStreamError as error:
        error.render()
        assert errors, f"translate raised {error.render()!r} but check found no error"
    else:
        assert not errors, f"check found {errors[0].render()!r} but translate succeeded"
    return findings


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
TYPES = ("INT", "BIGINT", "STRING", "DOUBLE", "TIMESTAMP", "DATE", "BOOLEAN", "DECIMAL(10, 2)",
         "ARRAY<INT>", "MAP<STRING, INT>", "STRUCT<x: INT, y: STRING>", "VARCHAR(3)", "BLOB")
UNITS = ("SECOND", "SECONDS", "MINUTE", "MINUTES", "HOUR", "DAY", "WEEK", "MONTH", "YEAR",
         "MILLISECOND", "FORTNIGHT")
AMOUNTS = ("1", "10", "0", "-5", "1.5", "abc", "", "1 hour", "10 minutes", "1 month", "99999999999999999999")
FUNCTIONS = ("upper", "lower", "coalesce", "count", "sum", "avg", "max", "window", "session_window",
             "date_trunc", "to_timestamp", "explode", "current_timestamp", "nosuchfn", "abs")
OPERATORS = ("+", "-", "*", "/", "=", "<>", "<", ">=", "AND", "OR", "||", "%")

names = st.sampled_from(NAMES)


def _interval():
    return st.builds(lambda amount, unit, quoted: f"INTERVAL {quoted(amount)} {unit}",
                     st.sampled_from(AMOUNTS), st.sampled_from(UNITS),
                     st.sampled_from((lambda a: f"'{a}'", lambda a: a or "1")))


literals = st.one_of(
    st.integers(-10, 10**12).map(str), st.sampled_from(("NULL", "TRUE", "'x'", "'it''s'", "1.5e3")),
    _interval(),
    st.sampled_from(("TIMESTAMP '2024-01-31 12:00:00'", "TIMESTAMP '2024-13-01'", "DATE '2024-02-30'",
                     "DATE '2024-02-28'", "X'ab'")),
)


def _expressions(max_leaves: int = 12):
    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(OPERATORS), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            inner.map(lambda e: f"({e})"),
            st.tuples(st.sampled_from(FUNCTIONS), st.lists(inner, max_size=3)).map(
                lambda t: f"{t[0]}({', '.join(t[1])})"),
            st.tuples(inner, inner, inner).map(lambda t: f"CASE WHEN {t[0]} THEN {t[1]} ELSE {t[2]} END"),
            inner.map(lambda e: f"CAST({e} AS STRING)"),
            inner.map(lambda e: f"NOT {e}"),
            st.tuples(inner, names).map(lambda t: f"(SELECT {t[0]} FROM {t[1]})"),
        )
    return st.recursive(st.one_of(names, literals), extend, max_leaves=max_leaves)


expressions = _expressions()


@st.composite
def queries(draw) -> str:
    """A query body: SELECT … FROM (a relation, a window TVF, a subquery) [WHERE] [GROUP BY]."""
    items = draw(st.lists(st.tuples(expressions, st.one_of(st.none(), names)), min_size=1, max_size=4))
    select = ", ".join(e if alias is None else f"{e} AS {alias}" for e, alias in items)
    relation = draw(names)
    source = draw(st.sampled_from((
        relation, f"TUMBLE({relation}, ts, {draw(_interval())})",
        f"HOP(TABLE {relation}, DESCRIPTOR(ts), {draw(_interval())}, {draw(_interval())})",
        f"SESSION({relation}, ts, {draw(_interval())})", f"(SELECT * FROM {relation}) AS q",
        f"{relation} WATERMARK ts DELAY OF {draw(_interval())}",
        f"{relation} JOIN {draw(names)} USING ({draw(names)})")))
    text = f"SELECT {'DISTINCT ' if draw(st.booleans()) else ''}{select} FROM {source}"
    if draw(st.booleans()):
        text += f" WHERE {draw(expressions)}"
    if draw(st.booleans()):
        text += f" GROUP BY {', '.join(draw(st.lists(expressions, min_size=1, max_size=3)))}"
    if draw(st.booleans()):
        text = f"WITH {draw(names)} AS ({text}) SELECT * FROM {draw(names)}"
    return text + draw(st.sampled_from(("", " LIMIT 5", " ORDER BY 1", " QUALIFY row_number() OVER (ORDER BY ts) = 1")))


emits = st.one_of(st.just(""), st.builds(
    lambda mode, trigger: f" EMIT {mode} {trigger}".rstrip(),
    st.sampled_from(("", "CHANGES", "FINAL", "COMPLETE", "ON WINDOW CLOSE")),
    st.one_of(st.just(""), st.just("ONCE"), st.just("AVAILABLE NOW"),
              _interval().map(lambda i: f"EVERY {i}"), _interval().map(lambda i: f"CONTINUOUS EVERY {i}"))))

OPTION_VALUES = ("'files'", "'rate'", "'console'", "'memory'", "'noop'", "'socket'", "'kafka'", "'json'",
                 "'csv'", "'${data}/x'", "0", "-1", "31", "'abc'", "true", "1.5", "'${env:NOPE}'", "'${undefined}'")
OPTION_KEYS = ("connector", "path", "format", "header", "max_files_per_trigger", "maxFilesPerTrigger",
               "rowsPerSecond", "numPartitions", "port", "host", "query_name", "checkpoint_location",
               "infer_schema", "fromat", "spark.x")


@st.composite
def options(draw) -> str:
    pairs = draw(st.lists(st.tuples(st.sampled_from(OPTION_KEYS), st.sampled_from(OPTION_VALUES)),
                          max_size=5, unique_by=lambda p: p[0]))
    connector = draw(st.sampled_from(("'files'", "'rate'", "'console'", "'memory'", "'socket'", "'table'")))
    return "WITH (" + ", ".join([f"connector = {connector}"] + [f"{k} = {v}" for k, v in pairs]) + ")"


@st.composite
def statements(draw) -> str:
    kind = draw(st.sampled_from(("stream", "stream", "table", "view", "sink", "insert", "select", "set",
                                 "derived")))
    name = draw(names)
    if kind in ("stream", "table"):
        columns = [f"{n} {t}" for n, t in draw(st.lists(st.tuples(names, st.sampled_from(TYPES)), max_size=4))]
        columns += [f"{n} AS {e}" for n, e in draw(st.lists(st.tuples(names, expressions), max_size=2))]
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


STREAM = ("CREATE STREAM s (a INT, b STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
          "WITH (connector = 'files', path = 'in', format = 'json')")


@st.composite
def programs(draw) -> str:
    """A program of up to 6 statements (the first often a valid stream ``s``)."""
    head = [STREAM, "CREATE SINK o WITH (connector = 'console')"] if draw(st.booleans()) else []
    return ";\n".join(head + draw(st.lists(statements(), min_size=1, max_size=6))) + ";\n"


# ---- mutations of the corpus -------------------------------------------------------------

TOKENS = ("(", ")", "((", "))", ";", ",", "'", "`", '"', "--", "/*", "*/", "${", "}", "${data}",
          "${env:HOME}", "\ufeff", "\x00", "\\", "é", "SELECT", "FROM", "WHERE", "GROUP BY", "EMIT",
          "WATERMARK", "INTERVAL", "'abc'", "MONTH", "TUMBLE(", "WITH", "AS", "CREATE STREAM", "NULL",
          "<", ">", "ARRAY<", "STRUCT<", "1e999", "-", "\n", "\t", " ", "DISTINCT", "OVER ()", "*")


@st.composite
def mutants(draw) -> str:
    """A corpus program with 1 to 4 text mutations."""
    text = CORPUS[draw(st.integers(0, len(CORPUS) - 1))]  # (sampled_from's repr would hold them all)
    for _ in range(draw(st.integers(1, 4))):
        size = len(text)
        start = draw(st.integers(0, size))
        end = draw(st.integers(start, min(size, start + 40)))
        action = draw(st.sampled_from(("delete", "repeat", "insert", "replace", "swap")))
        if action == "delete":
            text = text[:start] + text[end:]
        elif action == "repeat":
            text = text[:end] + text[start:end] * draw(st.integers(1, 3)) + text[end:]
        elif action == "insert":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[start:]
        elif action == "replace":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[end:]
        else:
            other = draw(st.integers(0, size))
            a, b = sorted((start, other))
            text = text[:a] + text[b:b + (end - start)] + text[a + (end - start):b] + text[a:a + (end - start)] + text[b + (end - start):]
    return text


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
