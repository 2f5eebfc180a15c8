"""Spellings from Flink SQL and ksqlDB inside query bodies and expressions: those that mean
something here are recognised (``PROCTIME()`` as a computed column), the others are refused at
their position with the sqlstream spelling that does the same (``SS260``, docs/compat.md).

* Flink's ``PROCTIME()`` is processing time. As a computed column (``pt AS PROCTIME()``) it
  becomes Spark's ``current_timestamp()``, which Spark evaluates once per micro-batch in a
  streaming query (``ComputeCurrentTime``): every row of a batch gets the batch's time. It
  cannot carry a watermark (Spark's watermarks are on event time); elsewhere it is refused.
* Flink's ``CURRENT_WATERMARK(ts)`` has no Spark counterpart: Spark keeps the watermark per
  query, drops late rows in stateful operators, and reports both in each micro-batch's
  progress (``eventTime.watermark``, ``numRowsDroppedByWatermark``).
* ksqlDB's ``WINDOW TUMBLING|HOPPING|SESSION (…)`` is taken right after one relation in
  ``FROM`` (:mod:`sqlstream.sql.ksql_windows`); elsewhere (after a join) it is refused, the
  hint building the TVF call from the clause.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlstream.diagnostics.errors import ForeignSpellingError

__all__ = ["FOREIGN_FUNCTIONS", "is_proctime", "ksql_window_problem"]

FOREIGN_FUNCTIONS = {
    "proctime": (
        "Flink's PROCTIME() is taken only as a computed column of a stream (pt AS PROCTIME())",
        "declare it on the stream, CREATE STREAM s (…, pt AS PROCTIME()), or write "
        "current_timestamp(): Spark's processing time, the time of the micro-batch",
    ),
    "current_watermark": (
        "Flink's CURRENT_WATERMARK() has no Spark counterpart: Spark keeps one "
        "watermark per query, not per row",
        "Spark drops rows later than the watermark in stateful operators (windows, "
        "deduplication, joins) and reports the watermark and the dropped rows in "
        "each micro-batch's progress (eventTime.watermark, numRowsDroppedByWatermark; "
        "shown by sqlstream exec); set the lateness with WATERMARK FOR ts AS ts - "
        "INTERVAL '…'",
    ),
}


def is_proctime(tree: exp.Expr) -> bool:
    """Whether ``tree`` is the call ``PROCTIME()`` (no arguments)."""
    return (
        isinstance(tree, exp.Anonymous) and tree.name.lower() == "proctime" and not tree.expressions
    )


_KSQL_WINDOWS = {"TUMBLING": "TUMBLE", "HOPPING": "HOP", "SESSION": "SESSION"}
_DURATION = re.compile(r"(\d+)\s+([A-Za-z]+)")


def _interval(text: str) -> str:
    match = _DURATION.search(text)
    if match is None:
        return "INTERVAL '…' …"
    unit = match.group(2).upper()
    return f"INTERVAL '{match.group(1)}' {unit[:-1] if unit.endswith('S') else unit}"


def ksql_window_problem(sql: str, tokens: list[Token]) -> ForeignSpellingError | None:
    """ksqlDB's ``WINDOW TUMBLING|HOPPING|SESSION (…)`` clause in ``sql`` where the parser
    does not take it (after a join), refused with the TVF that means the same; ``None`` if
    there is none. The first such clause is the one refused.

    Args:
        sql: a query body.
        tokens: its tokens (sqlglot's Spark tokenizer).

    Returns:
        An ``SS260`` error with ``offset_start``/``offset_end`` on the clause, or ``None``.
    """
    for index, token in enumerate(tokens[:-2]):
        kind = tokens[index + 1].text.upper()
        if (
            token.text.upper() != "WINDOW"
            or kind not in _KSQL_WINDOWS
            or tokens[index + 2].token_type != TokenType.L_PAREN
        ):
            continue
        depth, end = 0, index + 2
        for end in range(index + 2, len(tokens)):
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[end].token_type, 0)
            if depth == 0:
                break
        body = sql[tokens[index + 2].end + 1 : tokens[end].start]
        relation = (
            tokens[index - 1].text
            if index > 1 and tokens[index - 2].token_type == TokenType.FROM
            else "s"
        )
        parts = {
            (m.group(1) or "").upper(): m.group(2)
            for m in re.finditer(
                r"(SIZE|ADVANCE\s+BY|GRACE\s+PERIOD|RETENTION)?\s*(\d+\s+[A-Za-z]+)", body, re.I
            )
        }
        parts = {re.sub(r"\s+", " ", k): v for k, v in parts.items()}
        size = _interval(parts.get("SIZE", parts.get("", "")))
        if kind == "HOPPING":
            call = f"HOP({relation}, ts, {_interval(parts.get('ADVANCE BY', ''))}, {size})"
        elif kind == "SESSION":
            call = f"SESSION({relation}, ts, {_interval(parts.get('', parts.get('SIZE', '')))})"
        else:
            call = f"TUMBLE({relation}, ts, {size})"
        grace = parts.get("GRACE PERIOD")
        lateness = (
            f"; GRACE PERIOD is the watermark's delay: WATERMARK FOR ts AS ts - {_interval(grace)} "
            "on the stream"
            if grace
            else ""
        )
        error = ForeignSpellingError(
            f"ksqlDB's WINDOW {kind} clause is taken right after one stream or view in FROM "
            f"(FROM s [AS a] WINDOW {kind} (…)), not here",
            hint=f"window the relation with a window table-valued function: FROM {call} … GROUP BY window_start, window_end, … (ts: the stream's event-time "
            f"column; WINDOWSTART and WINDOWEND are window_start and window_end){lateness}",
        )
        error.offset_start, error.offset_end = token.start, tokens[end].end + 1
        return error
    return None
