"""A run of ``sqlstream verify``: the input read (a test file's ``input`` steps, or the
files of ``--input STREAM=PATH``), the runs planned and judged
(:mod:`sqlstream.testing.verify`), each difference shrunk and written as a test file
(:mod:`sqlstream.testing.shrink`), and the report as text or JSON (TESTING.md §6).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.testing.pipeline import PipelineUnderTest, compile_pipeline
from sqlstream.testing.spec import TestFile
from sqlstream.testing.verify import Input, QueryReport, Verifier, plan_runs

__all__ = ["Report", "from_files", "from_test", "verify"]


@dataclass
class Report:
    """What ``verify`` found: the ``seed``, one :class:`QueryReport` per query, the runs
    (name → micro-batch sizes and the batch after which it restarted), the input's origin
    and the wall time in seconds."""

    seed: int
    queries: list[QueryReport]
    runs: dict[str, dict] = field(default_factory=dict)
    input: str = ""
    seconds: float = 0.0
    reruns: int = 0

    @property
    def exit_code(self) -> int:
        """0: every query equal; 1: a query differs."""
        return 1 if any(q.result == "differs" for q in self.queries) else 0

    def to_json(self) -> str:
        """``{"seed", "queries": [{"query", "result", "property", "reason", "final_rows",
        "not_final_rows", "late_rows", "counterexample", …}], …}``."""
        return json.dumps(
            {
                "seed": self.seed,
                "queries": [asdict(q) for q in self.queries],
                "runs": self.runs,
                "input": self.input,
                "seconds": round(self.seconds, 2),
            },
            indent=2,
            default=str,
        )

    def text(self) -> str:
        """The report for people: a line per query, then what differs."""
        lines = [f"verify {self.input} (seed {self.seed}; runs: {', '.join(self.runs)})"]
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
        equal = sum(q.result == "equal" for q in self.queries)
        lines.append(f"{equal} equal, {len(self.queries) - equal} differ in {self.seconds:.1f}s")
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


def _shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else as it is."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _row(row: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in row.items()) + "}"


def from_test(
    path: Path, variables: dict[str, str], trust: bool
) -> tuple[PipelineUnderTest, Input, TestFile]:
    """The pipeline and input of the first test of the test file ``path``: its ``input``
    steps' rows in order (a step's streams in the order written), its tables and settings;
    and the loaded test file.

    Raises:
        SqlStreamError: the test file's first problem, or its pipeline's.
    """
    from sqlstream.testing.loading import load

    test_file, pipelines = load(path, variables, trust)
    if not test_file.cases:
        raise SqlStreamError(
            "the test file has no test", test_file.pipeline_span, test_file.source, code="SS216"
        )
    case = test_file.cases[0]
    pipeline = pipelines[case.name]
    rows: list[tuple[str, tuple]] = []
    steps: list[list[int]] = []
    for step in case.steps:
        if step.input is None:
            continue
        ids = []
        for name, given in step.input.items():
            for row in given.values:
                ids.append(len(rows))
                rows.append((name.lower(), tuple(row)))
        steps.append(ids)
    tables = {k.lower(): list(v.values) for k, v in case.tables.items()}
    return pipeline, Input(rows, steps, tables, dict(case.settings), str(path)), test_file


def from_files(
    ssql: Path, inputs: dict[str, str], variables: dict[str, str], trust: bool, session
) -> tuple[PipelineUnderTest, Input]:
    """The pipeline ``ssql`` and the rows of each ``--input STREAM=PATH``: a file, or every
    file of a folder (sorted by name; hidden ones skipped), each read whole as a batch with
    the stream's format and options (CSV: columns bound by the header's names, as the
    ``files`` connector binds them), one micro-batch per file (``per-step``).

    Raises:
        SqlStreamError: ``SS217``: a stream the pipeline does not declare, or a path that
            does not exist.
    """
    pipeline = compile_pipeline(ssql, variables, trust)
    source = pipeline.plan.source
    files: list[tuple[str, Path]] = []
    for name, raw in inputs.items():
        key = name.lower()
        if key not in pipeline.streams:
            raise SqlStreamError(
                f"--input {name}: the pipeline declares no stream '{name}' "
                f"(streams: {', '.join(s.name for s in pipeline.streams.values()) or 'none'})",
                pipeline.plan.queries[0].span if pipeline.plan.queries else None,
                source,
                code="SS217",
            )
        path = Path(raw)
        if not path.exists():
            raise SqlStreamError(
                f"--input {name}: no such file or folder: {raw}",
                pipeline.streams[key].relation.span,
                source,
                code="SS217",
            )
        found = (
            sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith((".", "_")))
            if path.is_dir()
            else [path]
        )
        files += [(key, f) for f in found]
    rows: list[tuple[str, tuple]] = []
    steps: list[list[int]] = []
    spark = session() if files else None
    for key, file in files:
        ids = []
        for row in _read(spark, pipeline, key, file):
            ids.append(len(rows))
            rows.append((key, row))
        steps.append(ids)
    return pipeline, Input(rows, steps, {}, {}, ", ".join(f"{k}={v}" for k, v in inputs.items()))


def _read(spark, pipeline: PipelineUnderTest, key: str, file: Path) -> list[tuple]:
    relation = pipeline.streams[key]
    source = relation.relation
    options = {k: v for k, v in source.options if k.lower() not in ("path", "maxfilespertrigger")}
    reader = spark.read.format(source.format or "parquet").options(**options)
    if (source.format or "").lower() == "csv":
        frame = reader.load(str(file))
        present = {c.lower(): c for c in frame.columns}
        frame = frame.selectExpr(
            *[
                f"CAST(`{present[n.lower()]}` AS {t}) AS `{n}`"
                if n.lower() in present
                else f"CAST(NULL AS {t}) AS `{n}`"
                for n, t in relation.given
            ]
        )
    else:
        ddl = ", ".join(f"`{n}` {t}" for n, t in relation.given)
        frame = reader.schema(ddl).load(str(file))
    return [tuple(_aware(v) for v in row) for row in frame.collect()]


def _aware(value):
    """A naive ``datetime`` PySpark returns (local time) as an aware one."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.astimezone(dt.timezone.utc)
    return value


def verify(
    harness,
    pipeline: PipelineUnderTest,
    data: Input,
    splits: int = 5,
    seed: int = 0,
    counterexamples: Path | None = None,
    test_file=None,
) -> Report:
    """Verify ``pipeline`` on ``data`` (see :mod:`sqlstream.testing.verify`).

    Args:
        harness: the test harness, on the run's SparkSession.
        pipeline: the compiled pipeline.
        data: the input.
        splits: the number of random cuts.
        seed: the seed of the cuts and restart points.
        counterexamples: the folder the test file of each difference goes to (default:
            the pipeline's folder).
        test_file: the test file the input comes from (``None``: files).

    Returns:
        The :class:`Report`.

    Raises:
        SqlStreamError: the pipeline fails on Spark (in the oracle or a run).
    """
    from sqlstream.testing.shrink import shrink, write_counterexample

    started = time.monotonic()
    verifier = Verifier(harness, pipeline, data, test_file)
    verifier.expected(list(range(len(data.rows))))
    runs = plan_runs(data, splits, seed)
    results = [verifier.stream(run) for run in runs]
    report = Report(seed, [], input=data.origin)
    report.runs = {
        r.name: {"batches": [len(b) for b in r.batches], "restart_after": r.restart} for r in runs
    }
    from sqlstream.testing.verify import reason

    for query in pipeline.plan.queries:
        verdict, failing = verifier.judge(query, results)
        if verdict.result == "differs" and failing is not None:
            verdict.reason = reason(pipeline, query)
            reference = results[0].run if verdict.property == "split" else None
            before = verifier.runs
            run, other, _ = shrink(
                verifier, query, verdict.property or "batch", failing.run, reference
            )
            final = verifier.stream(run)
            folder = counterexamples or pipeline.path.parent
            stem = pipeline.path.name.removesuffix(".ssql")
            path = folder / f"{stem}.{query.name}.counterexample.test.yaml"
            title = (
                f"{query.name} differs ({verdict.property}) in run {verdict.run}, "
                f"seed {seed}, shrunk to {sum(len(b) for b in run.batches)} rows"
            )
            write_counterexample(verifier, query, final, path, title)
            verdict.counterexample = _shown_path(path)
            report.reruns += verifier.runs - before
        report.queries.append(verdict)
    report.seconds = time.monotonic() - started
    return report
