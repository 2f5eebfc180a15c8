"""Completion at a position of a `.ssql` document.

What is offered depends on where the cursor is (read from the text before it):

* after ``alias.`` or ``relation.``: the columns of that relation;
* inside ``WITH (…)``: the option keys of the connector the list names (``connector``
  first), or after ``connector =`` the connector names (:data:`sqlstream.connectors.CONNECTORS`);
* after ``ON VIOLATION``: ``DROP ROW`` and ``FAIL UPDATE`` (:data:`VIOLATION_ACTIONS`);
* after ``EMIT``: its clauses (``FINAL``, ``CHANGES``, ``ON WINDOW CLOSE``, ``COMPLETE``,
  ``EVERY INTERVAL …``, ``ONCE``, ``AVAILABLE NOW``, ``CONTINUOUS``);
* elsewhere: the declared relations and sinks, the user functions declared in the file
  (with their signature and language), the columns of the relations the statement
  reads, Spark's built-in functions (with a signature where one is listed here), the window
  TVFs and the dialect's keywords.

Items are ``{"label", "kind", "detail", "insert"}`` dicts; ``kind`` is one of
``relation``, ``sink``, ``column``, ``function``, ``keyword``, ``option``, ``connector``,
``snippet``.
"""

from __future__ import annotations

import re

from sqlstream.analysis.spark_types import known_functions
from sqlstream.connectors import COMPILER_OPTIONS, CONNECTORS, snake_case
from sqlstream.ir import spark_versions
from sqlstream.lsp.document_index import Analysis
from sqlstream.lsp.features import scope_columns

EMIT_CLAUSES = (
    ("FINAL", "append mode: a window's row once the watermark passes its end"),
    ("CHANGES", "update mode: changed rows every micro-batch"),
    ("ON WINDOW CLOSE", "append mode (as FINAL)"),
    ("COMPLETE", "complete mode: the whole result every micro-batch"),
    ("EVERY INTERVAL '1' MINUTE", "processing-time trigger: a micro-batch every interval"),
    ("ONCE", "availableNow trigger: what is there now, then stop"),
    ("AVAILABLE NOW", "availableNow trigger (as ONCE)"),
    ("CONTINUOUS", "continuous processing (map-like queries; rate or kafka sources)"),
    (
        "CHANGES REAL TIME",
        "Spark's real-time mode (Spark 4.2+; kafka sources; a checkpoint "
        "every 5 minutes unless CHECKPOINT EVERY)",
    ),
)

VIOLATION_ACTIONS = (
    ("DROP ROW", "a violating row is counted and dropped"),
    ("FAIL UPDATE", "a violating row stops the query in its micro-batch (nothing written)"),
)
"""What may follow ``ON VIOLATION`` in a ``CONSTRAINT … EXPECT (…)`` (without it: counted,
the row kept)."""

WINDOW_TVFS = (
    (
        "TUMBLE",
        "TUMBLE(${1:relation}, ${2:time_column}, INTERVAL '${3:1}' ${4:HOUR})",
        "TUMBLE(relation, time_column, size): fixed, non-overlapping windows",
    ),
    (
        "HOP",
        "HOP(${1:relation}, ${2:time_column}, INTERVAL '${3:5}' MINUTES, INTERVAL '${4:1}' HOUR)",
        "HOP(relation, time_column, slide, size): sliding windows",
    ),
    (
        "SESSION",
        "SESSION(TABLE ${1:relation} PARTITION BY (${2:key}), "
        "DESCRIPTOR(${3:time_column}), INTERVAL '${4:30}' MINUTES)",
        "SESSION(TABLE relation PARTITION BY keys, DESCRIPTOR(time), gap): session windows",
    ),
)

KEYWORDS = (
    "CREATE STREAM",
    "CREATE TABLE",
    "CREATE VIEW",
    "CREATE SINK",
    "INSERT INTO",
    "SET",
    "WITH",
    "AS",
    "WATERMARK FOR",
    "CONSTRAINT",
    "EXPECT",
    "ON VIOLATION",
    "METADATA",
    "METADATA FROM",
    "IF NOT EXISTS",
    "EMIT",
    "SELECT",
    "DISTINCT",
    "DISTINCT ON",
    "FROM",
    "WHERE",
    "GROUP BY",
    "HAVING",
    "ORDER BY",
    "LIMIT",
    "JOIN",
    "LEFT JOIN",
    "RIGHT JOIN",
    "FULL JOIN",
    "LEFT SEMI JOIN",
    "LEFT ANTI JOIN",
    "CROSS JOIN",
    "ON",
    "USING",
    "UNION ALL",
    "UNION",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "AND",
    "OR",
    "NOT",
    "IN",
    "IS NULL",
    "IS NOT NULL",
    "BETWEEN",
    "LIKE",
    "INTERVAL",
    "CAST",
    "FOR SYSTEM_TIME AS OF",
    "window_start",
    "window_end",
    "window_time",
)

SIGNATURES = {  # Spark SQL built-in functions: the most used ones (Spark SQL reference)
    "count": "count(expr) → BIGINT",
    "sum": "sum(expr) → numeric",
    "avg": "avg(expr) → DOUBLE",
    "min": "min(expr)",
    "max": "max(expr)",
    "coalesce": "coalesce(expr1, expr2, …)",
    "concat": "concat(str1, str2, …) → STRING",
    "upper": "upper(str) → STRING",
    "lower": "lower(str) → STRING",
    "substring": "substring(str, pos[, len]) → STRING",
    "trim": "trim(str) → STRING",
    "length": "length(str) → INT",
    "round": "round(expr[, d]) → numeric",
    "abs": "abs(expr)",
    "floor": "floor(expr) → BIGINT",
    "ceil": "ceil(expr) → BIGINT",
    "cast": "cast(expr AS type)",
    "to_timestamp": "to_timestamp(str[, fmt]) → TIMESTAMP",
    "to_date": "to_date(str[, fmt]) → DATE",
    "date_trunc": "date_trunc(unit, ts) → TIMESTAMP",
    "date_format": "date_format(ts, fmt) → STRING",
    "current_timestamp": "current_timestamp() → TIMESTAMP",
    "from_json": "from_json(str, schema[, options]) → STRUCT",
    "to_json": "to_json(expr[, options]) → STRING",
    "from_unixtime": "from_unixtime(seconds[, fmt]) → STRING",
    "unix_timestamp": "unix_timestamp([ts[, fmt]]) → BIGINT",
    "timestamp_seconds": "timestamp_seconds(seconds) → TIMESTAMP",
    "window": "window(time_column, window_duration[, slide_duration[, start_time]]) → STRUCT<start, end>",
    "session_window": "session_window(time_column, gap_duration) → STRUCT<start, end>",
    "window_time": "window_time(window_column) → TIMESTAMP",
    "approx_count_distinct": "approx_count_distinct(expr[, relativeSD]) → BIGINT",
    "collect_list": "collect_list(expr) → ARRAY",
    "collect_set": "collect_set(expr) → ARRAY",
    "first": "first(expr[, ignoreNulls]) ",
    "last": "last(expr[, ignoreNulls])",
    "if": "if(cond, then, else)",
    "nvl": "nvl(expr1, expr2)",
    "split": "split(str, regex) → ARRAY<STRING>",
    "regexp_extract": "regexp_extract(str, regexp[, idx]) → STRING",
    "regexp_replace": "regexp_replace(str, regexp, rep) → STRING",
    "explode": "explode(array_or_map) → rows",
    "struct": "struct(col1, col2, …) → STRUCT",
    "named_struct": "named_struct(name1, val1, …) → STRUCT",
    "array": "array(expr, …) → ARRAY",
    "size": "size(array_or_map) → INT",
    "hash": "hash(expr, …) → INT",
    "percentile_approx": "percentile_approx(col, percentage[, accuracy])",
    "stddev": "stddev(expr) → DOUBLE",
    "variance": "variance(expr) → DOUBLE",
    "datediff": "datediff(end, start) → INT",
    "date_add": "date_add(start, days) → DATE",
    "hour": "hour(ts) → INT",
    "minute": "minute(ts) → INT",
    "year": "year(date) → INT",
    "month": "month(date) → INT",
    "dayofmonth": "dayofmonth(date) → INT",
    "max_by": "max_by(x, y)",
    "min_by": "min_by(x, y)",
    "row_number": "row_number() → INT",
    "greatest": "greatest(expr, …)",
    "least": "least(expr, …)",
}


def spark_functions() -> tuple[str, ...]:
    """Spark's built-in function names of the default Spark version ``check`` judges for
    (:func:`sqlstream.analysis.spark_types.known_functions`), sorted."""
    return tuple(sorted(known_functions(spark_versions.default())))


def connector_options(name: str) -> list[tuple[str, str]]:
    """``(key, detail)`` of the options connector ``name`` reads: its Spark options in
    snake_case (camelCase works too), its own options and the compiler's; empty when
    there is no such connector."""
    connector = CONNECTORS.get(name.lower())
    if connector is None:
        return []
    found = [(snake_case(o), f"Spark option {o}") for o in connector.spark_options]
    found += [(o, f"{name} option") for o in connector.own_options]
    found += [(o, "sqlstream option") for o in sorted(COMPILER_OPTIONS) if o != "connector"]
    return list(dict((k, (k, d)) for k, d in found).values())


def _item(label: str, kind: str, detail: str = "", insert: str | None = None) -> dict:
    return {"label": label, "kind": kind, "detail": detail, "insert": insert}


def _with_context(before: str) -> str | None:
    """The text of an unclosed ``WITH (`` list before the cursor, or ``None``."""
    matches = list(re.finditer(r"\bWITH\s*\(", before, re.IGNORECASE))
    if not matches:
        return None
    match = matches[-1]
    inside = before[match.end() :]
    return None if inside.count(")") >= inside.count("(") + 1 else inside


def complete(analysis: Analysis, offset: int) -> list[dict]:
    """The completion items at ``offset`` (see the module docstring)."""
    text = analysis.text
    statement = analysis.statement_at(offset)
    start = statement.start if statement else max(0, text.rfind(";", 0, offset) + 1)
    before = text[start:offset]
    dotted = re.search(r"([A-Za-z_]\w*)\.\w*\Z", before)
    if dotted:
        return [
            _item(c, "column", f"{t} — {r}")
            for c, t, r in scope_columns(analysis, offset, dotted.group(1))
        ]
    inside = _with_context(before)
    if inside is not None:
        if re.search(r"\bconnector\s*=\s*'?\w*\Z", inside, re.IGNORECASE):
            quoted = re.search(r"'\w*\Z", inside) is not None
            return [
                _item(name, "connector", _roles(name), name if quoted else f"'{name}'")
                for name in sorted(CONNECTORS)
            ]
        if re.search(r"=\s*[^,]*\Z", inside):
            return []
        named = re.search(r"\bconnector\s*=\s*'(\w+)'", before, re.IGNORECASE)
        items = [_item("connector", "option", "which connector", "connector = '$1'")]
        if named:
            items += [
                _item(k, "option", d, f"{k} = $1") for k, d in connector_options(named.group(1))
            ]
        return items
    if re.search(r"\bON\s+VIOLATION\s+\w*\Z", before, re.IGNORECASE):
        return [_item(action, "keyword", detail) for action, detail in VIOLATION_ACTIONS]
    if re.search(r"\bEMIT(\s+\w+)*\s+\w*\Z", before, re.IGNORECASE) and re.search(
        r"\bEMIT\b[^;]*\Z", before, re.IGNORECASE
    ):
        return [_item(clause, "keyword", detail) for clause, detail in EMIT_CLAUSES]
    items = []
    for (namespace, _), declared in analysis.declarations.items():
        if namespace == "function":  # a user function: its signature and language
            items.append(_item(declared.name, "function", declared.detail, f"{declared.name}($1)"))
            continue
        kind = "sink" if namespace == "sink" else "relation"
        items.append(_item(declared.name, kind, f"{declared.kind} {declared.detail}".strip()))
    for column, type_, relation in scope_columns(analysis, offset):
        items.append(_item(column, "column", f"{type_} — {relation}"))
    for name, snippet, detail in WINDOW_TVFS:
        items.append(_item(name, "snippet", detail, snippet))
    for name in spark_functions():
        items.append(
            _item(name, "function", SIGNATURES.get(name, "Spark built-in function"), f"{name}($1)")
        )
    items += [_item(k, "keyword") for k in KEYWORDS]
    return items


def _roles(name: str) -> str:
    connector = CONNECTORS[name]
    roles = [r for r in ("source", "table", "sink") if connector.can_be(r)]
    return "connector: " + ", ".join(roles)
