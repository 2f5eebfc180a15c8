"""The report of ``sqlstream verify`` (TESTING.md §6): per test verified, its runs and a
verdict per query; as text for people and as JSON (``--format json``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlstream.testing.verify import QueryReport

__all__ = ["FileReport", "Report"]


@dataclass
class Report:
    """What ``verify`` found on one input: the ``seed``, one :class:`QueryReport` per
    query, the runs (name → micro-batch sizes and the batch after which it restarted), the
    input's origin, the test's name (``None``: ``--input`` files) and the wall time in
    seconds; ``reruns``: the streaming runs spent shrinking differences; ``unfed``: the
    queries not run, none of their streams and tables having an input row."""

    seed: int
    queries: list[QueryReport]
    runs: dict[str, dict] = field(default_factory=dict)
    input: str = ""
    seconds: float = 0.0
    reruns: int = 0
    test: str | None = None
    unfed: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0: every query equal; 1: a query differs."""
        return 1 if any(q.result == "differs" for q in self.queries) else 0

    def lines(self) -> list[str]:
        """The report of this input for people: a line per query, then what differs."""
        named = f", test '{self.test}'" if self.test else ""
        lines = [f"verify {self.input}{named} (seed {self.seed}; runs: {', '.join(self.runs)})"]
        for q in self.queries:
            late = ", ".join(f"{r} {n}" for r, n in q.late_rows.items() if n) or "none"
            if q.result == "equal":
                lines.append(
                    f"  {q.query}: equal — {q.final_rows} final rows compared, "
                    f"{q.not_final_rows} not yet final, late rows dropped: {late}"
                )
                lines += _late_lines(q)
                lines += [f"      not compared: {r}: {why}" for r, why in q.not_compared.items()]
                continue
            what = "the batch query" if q.property == "batch" else f"run {q.against}"
            mine = "batch query" if q.property == "batch" else f"run {q.against}"
            lines.append(
                f"  {q.query}: DIFFERS ({q.property}) — run {q.run} (seed {self.seed}) "
                f"against {what}; late rows dropped: {late}"
            )
            lines += [f"      - {_row(r)}   ({mine} only)" for r in q.missing[:10]]
            lines += [f"      + {_row(r)}   (run {q.run} only)" for r in q.unexpected[:10]]
            lines += _late_lines(q)
            if q.reason:
                lines.append(f"    reason: {q.reason}")
            if q.counterexample:
                lines.append(f"    smallest input: {q.counterexample} (sqlstream test fails on it)")
        if self.unfed:
            lines.append(f"  not run (no input row for them): {', '.join(self.unfed)}")
        return lines

    def text(self) -> str:
        """:meth:`lines` and a closing count."""
        return FileReport(self.seed, [self]).text()

    def to_json(self) -> str:
        """The JSON of a :class:`FileReport` of this one input."""
        return FileReport(self.seed, [self]).to_json()


@dataclass
class FileReport:
    """What ``verify`` found on every test it verified (one :class:`Report` each; one in
    all for ``--input``), with the ``seed`` they share."""

    seed: int
    reports: list[Report]

    @property
    def exit_code(self) -> int:
        """0: every query of every test equal; 1: a query differs."""
        return max((r.exit_code for r in self.reports), default=0)

    @property
    def seconds(self) -> float:
        """The wall time of every test's verify, in seconds."""
        return sum(r.seconds for r in self.reports)

    def to_json(self) -> str:
        """``{"seed", "queries": [{"test", "query", "result", "property", "reason",
        "final_rows", "not_final_rows", "late_rows", "counterexample", …}], "tests":
        [{"test", "input", "runs", "seconds", "reruns"}], "input", "seconds"}``: the
        queries of every test in one list, each naming its test."""
        return json.dumps(
            {
                "seed": self.seed,
                "queries": [{"test": r.test, **asdict(q)} for r in self.reports for q in r.queries],
                "tests": [
                    {
                        "test": r.test,
                        "input": r.input,
                        "runs": r.runs,
                        "seconds": round(r.seconds, 2),
                        "reruns": r.reruns,
                        "not_run": r.unfed,
                    }
                    for r in self.reports
                ],
                "input": self.reports[0].input if self.reports else "",
                "seconds": round(self.seconds, 2),
            },
            indent=2,
            default=str,
        )

    def text(self) -> str:
        """Each test's report, then the count of queries equal and differing."""
        lines = [line for r in self.reports for line in r.lines()]
        queries = [q for r in self.reports for q in r.queries]
        equal = sum(q.result == "equal" for q in queries)
        tests = f" over {len(self.reports)} tests" if len(self.reports) > 1 else ""
        lines.append(f"{equal} equal, {len(queries) - equal} differ{tests} in {self.seconds:.1f}s")
        return "\n".join(lines)


def _late_lines(q: QueryReport) -> list[str]:
    """The late rows of each run, the first three of each."""
    lines = []
    for run, rows in q.late.items():
        for late in rows[:3]:
            lines.append(f"      late in {run}, micro-batch {late['batch']}: {_row(late['row'])}")
        if len(rows) > 3:
            lines.append(f"      … and {len(rows) - 3} more late rows in {run}")
    return lines


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _row(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in row.items()) + "}"
