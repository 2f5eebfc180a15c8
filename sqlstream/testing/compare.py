"""Comparing what a step expected with what Spark did, and the results of a run.

Expected rows are compared with the rows a sink received as a multiset (or in order,
with ``ordered: true``) on the columns the expected rows name, each value by the Spark
type of the sink's column (:mod:`sqlstream.testing.values`). A difference is a
:class:`Failure` naming the step, its line, the check and the rows missing and
unexpected (or the expected and actual value). No pyspark import.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.testing import values
from sqlstream.testing.spec import Rows, Step


@dataclass
class Failure:
    """One failed check.

    Attributes:
        step: the step's number (1-based) and ``line`` its line in the test file.
        check: what was checked: ``sink hourly``, ``watermark of hourly``,
            ``state_rows of hourly``, ``dropped_by_watermark of hourly``, ``error``.
        message: one line saying what differs.
        missing, unexpected: rows expected but not received, and received but not
            expected (as YAML data, on the compared columns).
        expected, actual: the expected and actual value, for a check of one value.
    """

    step: int
    line: int
    check: str
    message: str
    missing: list[dict] = field(default_factory=list)
    unexpected: list[dict] = field(default_factory=list)
    expected: object = None
    actual: object = None

    def to_dict(self) -> dict:
        """A JSON-ready record of the failure."""
        record = {
            "step": self.step,
            "line": self.line,
            "check": self.check,
            "message": self.message,
        }
        if self.missing or self.unexpected:
            record.update(missing=self.missing, unexpected=self.unexpected)
        if self.expected is not None or self.actual is not None:
            record.update(expected=self.expected, actual=self.actual)
        return record


@dataclass
class StepActual:
    """What Spark did in one step, as ``--record`` writes it.

    Attributes:
        sinks: sink name → rows received (every column, as YAML data).
        watermark: query name → watermark text (queries with a watermark).
        state_rows: query name → ``numRowsTotal`` of each stateful operator.
        dropped: query name → ``numRowsDroppedByWatermark`` of each, summed over the step.
        expectations: expectation name → rows of the step that violated it (Spark's
            ``observedMetrics``, ``expect:<owner>``, summed over the step's micro-batches;
            a stream's rule read by several queries counted once).
    """

    sinks: dict[str, list[dict]] = field(default_factory=dict)
    watermark: dict[str, str] = field(default_factory=dict)
    state_rows: dict[str, list[int]] = field(default_factory=dict)
    dropped: dict[str, list[int]] = field(default_factory=dict)
    expectations: dict[str, int] = field(default_factory=dict)


@dataclass
class CaseResult:
    """The outcome of one test.

    Attributes:
        path: the test file; ``name`` the test; ``line`` its line.
        status: ``passed``, ``failed`` (a check failed, or the pipeline failed where no
            error was expected) or ``error`` (the test file or the pipeline has an error).
        seconds: wall time of the test.
        failures: the failed checks (``failed``), in step order.
        error: the problem of an ``error`` test.
        actual: per step, what Spark did (for ``--record``).
    """

    path: Path
    name: str
    line: int
    status: str
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)
    error: SqlStreamError | None = None
    actual: list[StepActual] = field(default_factory=list)


def compare_rows(
    step: Step,
    sink: str,
    rows: Rows,
    actual: list[tuple],
    columns: list[tuple[str, values.Type]],
    zone: str,
    ordered: bool,
    tolerance: float,
    source,
) -> Failure | None:
    """Compare the expected ``rows`` of ``sink`` with the ``actual`` rows it received.

    Args:
        step: the step (for the failure's position).
        actual: the received rows, each a tuple of :func:`values.normal` values in the
            order of ``columns``.
        columns: ``(name, type)`` of the sink's rows (the query's output schema).
        zone: the session time zone (to read and show timestamps).
        ordered: compare in order (else as a multiset).
        tolerance: relative tolerance of floating point values.
        source: the test file's source, for errors in expected values.

    Returns:
        ``None`` when they match, else a :class:`Failure` with the missing and the
        unexpected rows.

    Raises:
        SqlStreamError: an expected value that does not fit its column's type (``SS203``)
            or a column the sink does not have (``SS201``), at its place in the test file.
    """
    index = {n.lower(): (i, n, t) for i, (n, t) in enumerate(columns)}
    named = list(rows.rows[0].cells) if rows.rows else []
    for name in named:
        if name.lower() not in index:
            cell = rows.rows[0].cells[name]
            raise SqlStreamError(
                f"sink '{sink}' has no column '{name}'",
                cell.key_span or cell.span,
                source,
                code="SS201",
                hint="its columns: " + ", ".join(n for n, _ in columns),
            )
    picked = (
        [index[n.lower()] for n in named]
        if rows.rows
        else [(i, n, t) for i, (n, t) in enumerate(columns)]
    )
    want = []
    for row in rows.rows:
        converted = []
        for (_, name, kind), column in zip(picked, named, strict=True):
            cell = row.cells[column]
            try:
                converted.append(values.expected(cell.value, kind, zone))
            except values.ValueProblem as exc:
                raise SqlStreamError(
                    f"column '{name}' ({values.type_name(kind)}): {exc}",
                    cell.span,
                    source,
                    code="SS203",
                ) from None
        want.append(tuple(converted))
    got = [tuple(row[i] for i, _, _ in picked) for row in actual]
    missing, unexpected = _match(want, got, ordered, tolerance)
    if not missing and not unexpected:
        return None

    def show(row):
        return {
            name: values.shown(v, kind, zone)
            for v, (_, name, kind) in zip(row, picked, strict=True)
        }

    message = (
        f"{len(missing)} row(s) missing, {len(unexpected)} unexpected "
        f"(expected {len(want)}, received {len(got)})"
    )
    if ordered and not missing and not unexpected:
        message = "rows in another order"
    return Failure(
        step.number,
        step.span.line,
        f"sink {sink}",
        message,
        [show(r) for r in missing],
        [show(r) for r in unexpected],
    )


def _match(want: list[tuple], got: list[tuple], ordered: bool, tolerance: float):
    """``(missing, unexpected)``: expected rows with no equal received row, and received
    rows left over (as a multiset; in order when ``ordered``)."""
    if ordered:
        if len(want) == len(got) and all(
            values.equal(a, b, tolerance) for a, b in zip(want, got, strict=True)
        ):
            return [], []
        return list(want), list(got)
    left = list(got)
    missing = []
    for row in want:
        for i, candidate in enumerate(left):
            if values.equal(row, candidate, tolerance):
                del left[i]
                break
        else:
            missing.append(row)
    return missing, left


def compare_value(
    step: Step, check: str, expected, actual, shown_expected=None, shown_actual=None
) -> Failure | None:
    """A failure when the ``expected`` and ``actual`` value of one check differ (shown as
    ``shown_expected`` / ``shown_actual`` when given)."""
    if expected == actual:
        return None
    left = expected if shown_expected is None else shown_expected
    right = actual if shown_actual is None else shown_actual
    return Failure(
        step.number,
        step.span.line,
        check,
        f"expected {left}, actual {right}",
        expected=left,
        actual=right,
    )
