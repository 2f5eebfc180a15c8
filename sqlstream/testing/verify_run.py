"""A run of ``sqlstream verify``: the input read (a test file's ``input`` steps, or the
files of ``--input STREAM=PATH``), the runs planned and judged
(:mod:`sqlstream.testing.verify`), each difference shrunk and written as a test file
(:mod:`sqlstream.testing.shrink`), and the report as text or JSON (TESTING.md §6).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.testing.pipeline import PipelineUnderTest, compile_pipeline
from sqlstream.testing.spec import TestFile
from sqlstream.testing.verify import Input, Verifier, plan_runs
from sqlstream.testing.verify_report import Report, shown_path

__all__ = ["Target", "from_files", "from_test", "verify"]


@dataclass
class Target:
    """One test to verify: its ``name``, its compiled ``pipeline`` and its input ``data``."""

    name: str
    pipeline: PipelineUnderTest
    data: Input


def from_test(
    path: Path, variables: dict[str, str], trust: bool, keyword: str | None = None
) -> tuple[TestFile, list[Target]]:
    """The tests of the test file ``path`` to verify: every test (or those whose name
    contains ``keyword``, as ``sqlstream test -k``), each with its pipeline and its input:
    its ``input`` steps' rows in order (a step's streams in the order written), its tables
    and settings. A test without an input row is left out.

    Raises:
        SqlStreamError: the test file's first problem, or its pipeline's; ``SS216``: no
            test (with ``keyword``: none whose name contains it) feeds a row.
    """
    from sqlstream.testing.loading import load

    test_file, pipelines = load(path, variables, trust)
    cases = [c for c in test_file.cases if not keyword or keyword in c.name]
    targets = []
    for case in cases:
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
        data = Input(rows, steps, tables, dict(case.settings), str(path))
        if rows:
            targets.append(Target(case.name, pipelines[case.name], data))
    if not targets:
        which = f" whose name contains '{keyword}'" if keyword else ""
        raise SqlStreamError(
            f"no test{which} has an input row to verify with"
            if cases
            else f"the test file has no test{which}",
            test_file.pipeline_span,
            test_file.source,
            code="SS216",
        )
    return test_file, targets


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
    test: str | None = None,
    number: int | None = None,
    shrinking: bool = True,
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
        test: the name of the test the input comes from (``None``: files).
        number: the test's place among those verified of its file (1-based), put in the
            name of a counterexample when the file has more than one test (``None``: one).

    Returns:
        The :class:`Report`.

    Raises:
        SqlStreamError: the pipeline fails on Spark (in the oracle or a run).
    """
    from sqlstream.testing.shrink import shrink, write_counterexample

    started = time.monotonic()
    verifier = Verifier(harness, pipeline, data, test_file)
    verifier.expected(list(range(len(data.rows))))
    stateful = any(q.state is None or q.state.stateful for q in verifier.queries)
    runs = plan_runs(data, splits, seed, restarts=stateful)
    results = [verifier.stream(run) for run in runs]
    report = Report(seed, [], input=data.origin, test=test)
    report.runs = {
        r.name: {"batches": [len(b) for b in r.batches], "restart_after": r.restart} for r in runs
    }
    from sqlstream.testing.verify_reason import reason

    report.unfed = [q.name for q in pipeline.plan.queries if q not in verifier.queries]
    for query in verifier.queries:
        verdict, failing = verifier.judge(query, results)
        if verdict.result == "differs" and failing is not None:
            verdict.reason = reason(pipeline, query)
        if verdict.result == "differs" and failing is not None and shrinking:
            reference = results[0].run if verdict.property == "split" else None
            before = verifier.runs
            run, other, _ = shrink(
                verifier, query, verdict.property or "batch", failing.run, reference
            )
            final = verifier.stream(run)
            folder = counterexamples or pipeline.path.parent
            stem = pipeline.path.name.removesuffix(".ssql")
            which = f".{number}" if number is not None else ""
            path = folder / f"{stem}.{query.name}{which}.counterexample.test.yaml"
            title = (
                f"{query.name} differs ({verdict.property}) in run {verdict.run}, "
                f"seed {seed}, shrunk to {sum(len(b) for b in run.batches)} rows"
            )
            write_counterexample(verifier, query, final, path, title)
            verdict.counterexample = shown_path(path)
            report.reruns += verifier.runs - before
        report.queries.append(verdict)
    report.seconds = time.monotonic() - started
    return report
