"""``sqlstream verify``: does a pipeline stream what the same SQL computes as a batch query?

The input (the rows of a test's ``input`` steps, or the files of a file source) is run:

* by the batch oracle (:mod:`sqlstream.testing.oracle`): every query over all rows at once;
* as streams, each on a fresh checkpoint through the test harness
  (:class:`~sqlstream.testing.harness.Harness`, one SparkSession, the test feed): all
  input in one micro-batch (``one-batch``), one micro-batch per input step or file
  (``per-step``), and ``splits`` seeded random cuts of the input in arrival order
  (``split-1`` …); each of several micro-batches stopped and started again on its
  checkpoint at a random batch boundary with a batch after it, where a query has state
  (the harness's ``restart`` step; :func:`plan_runs`).

Per query, what must agree (:func:`judge`): *split and restart invariance* (every run that
dropped no late row writes the same final rows) and *batch equivalence* (the final rows
of each run equal the oracle's over the input less the rows that run dropped as late).
Final: in append mode every row written and, of the oracle's, the windows whose end the
last watermark passed; in update mode the last row written per key; in complete mode the
last table. Late rows are found as Spark drops them: the rows of a micro-batch whose
event time is not after the watermark of that micro-batch, counted against Spark's
``numRowsDroppedByWatermark`` (the progress's ``stateOperators``).

Source: Spark guide, *Structured Streaming Programming Guide* (*Handling Late Data and
Watermarking*: a window is final once the watermark passes its end; output modes;
*Monitoring Streaming Queries*).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.diagnostics.source_text import Span
from sqlstream.ir import plan as p
from sqlstream.testing import values
from sqlstream.testing.compare import CaseResult
from sqlstream.testing.oracle import Oracle, hashable
from sqlstream.testing.pipeline import PipelineUnderTest, time_zone
from sqlstream.testing.spec import Case, Rows, Step, TestFile
from sqlstream.testing.verify_diff import _drop, _key, _once, diff
from sqlstream.testing.verify_keys import key_names

__all__ = ["Input", "QueryReport", "Run", "Verifier", "diff", "plan_runs"]

PARTITIONS = "spark.sql.shuffle.partitions"
"""Set to 1 in verify's streaming runs unless the pipeline or the test sets it: a run's
few rows then go through one state store per stateful operator and one task per stage
(as ``sqlstream test``'s session, :data:`sqlstream.testing.suite.SESSION_DEFAULTS`). What
a query writes does not depend on the number (rows compare as multisets), and a restart
reads it from the checkpoint (Spark guide, *Recovery Semantics after Changes in a
Streaming Query*)."""


@dataclass
class Input:
    """What verify runs on.

    Attributes:
        rows: every input row, ``(stream in lower case, row over its given columns)``, in
            arrival order; a row's index is its id.
        steps: the ids of each input step or file, in order (the ``per-step`` run).
        tables: each table's rows (lower-case name → rows over its given columns).
        settings: the test's Spark settings (none for files).
        origin: the test file or the folders the rows come from (for the report).
    """

    rows: list[tuple[str, tuple]]
    steps: list[list[int]]
    tables: dict[str, list[tuple]] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    origin: str = ""


@dataclass(frozen=True)
class Run:
    """One streaming run: its ``name``, micro-batches (row ids each, in arrival order) and
    the batch after which it is stopped and started again (``None``: no restart)."""

    name: str
    batches: tuple[tuple[int, ...], ...]
    restart: int | None


@dataclass
class RunResult:
    """What one run wrote, per query: ``steps`` the rows written in each micro-batch step
    (shown values, hashable), ``watermarks`` the watermark after each step (epoch
    microseconds or ``None``), ``late`` the ids of the rows it dropped as late and
    ``dropped`` Spark's count of them (``unidentified``: how many of those were not found
    among the rows, so the run's final rows cannot be compared); ``batch_of`` the batch of each step (``None`` for the
    restart step)."""

    run: Run
    steps: dict[str, list[list[tuple]]] = field(default_factory=dict)
    watermarks: dict[str, list[int | None]] = field(default_factory=dict)
    late: dict[str, list[int]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    batch_of: list[int | None] = field(default_factory=list)
    unidentified: dict[str, int] = field(default_factory=dict)
    state_rows: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class QueryReport:
    """The verdict on one query (the keys of ``--format json``, TESTING.md §6): ``run`` the
    run that shows a difference, ``against`` what it differs from (``batch``: the oracle;
    else the run it disagrees with), ``missing`` the rows of that one the run did not
    write and ``unexpected`` the rows it wrote that that one has not; ``late`` per run the
    rows it dropped as late (``batch``: 1-based micro-batch, ``stream``, ``row``) and
    ``dropped_by_spark`` Spark's count of them (``numRowsDroppedByWatermark``, summed over
    the stateful operators: a row may count once per operator)."""

    query: str
    result: str = "equal"
    property: str | None = None
    reason: str | None = None
    final_rows: int = 0
    not_final_rows: int = 0
    late_rows: dict[str, int] = field(default_factory=dict)
    late: dict[str, list[dict]] = field(default_factory=dict)
    dropped_by_spark: dict[str, int] = field(default_factory=dict)
    not_compared: dict[str, str] = field(default_factory=dict)
    counterexample: str | None = None
    run: str | None = None
    against: str | None = None
    missing: list[dict] = field(default_factory=list)
    unexpected: list[dict] = field(default_factory=list)


def plan_runs(data: Input, splits: int, seed: int, restarts: bool = True) -> list[Run]:
    """The runs of verify: ``one-batch``, ``per-step`` and ``splits`` random cuts of the
    input in arrival order (2 to 5 micro-batches each); all drawn from
    ``random.Random(seed)``.

    Each run of two micro-batches or more is stopped and started again on its checkpoint
    after a random micro-batch that has another after it (``restarts``: when a query it
    runs has state; a restart of a query without state only re-reads its source's
    offsets). A run of one micro-batch is not restarted: the only boundaries it has are
    before and after all of its input, where a restart has no state to carry into a next
    micro-batch. A run whose micro-batches and restart are those of an earlier run (the
    ``per-step`` run of an input of one step, a cut drawn twice) is left out: it is the
    same run.
    """
    rng = random.Random(seed)
    ids = list(range(len(data.rows)))
    shapes: list[tuple[str, list[list[int]]]] = [("one-batch", [ids]), ("per-step", data.steps)]
    for n in range(1, splits + 1):
        parts = rng.randint(2, 5) if len(ids) > 1 else 1
        cuts = sorted(rng.sample(range(1, len(ids)), min(parts, len(ids)) - 1)) if ids else []
        edges = [0, *cuts, len(ids)]
        shapes.append((f"split-{n}", [ids[a:b] for a, b in zip(edges, edges[1:], strict=False)]))
    runs: list[Run] = []
    for name, batches in shapes:
        kept = tuple(tuple(b) for b in batches if b) or ((),)
        restart = rng.randrange(len(kept) - 1) if len(kept) > 1 else None
        run = Run(name, kept, restart if restarts else None)
        if not any((r.batches, r.restart) == (run.batches, run.restart) for r in runs):
            runs.append(run)
    return runs


class Verifier:
    """Runs verify on one pipeline and one input, on one SparkSession.

    Args:
        harness: the test harness (its session runs the streams and the oracle).
        pipeline: the compiled pipeline.
        data: the input.
        test_file: the test file the input comes from (``None``: files).
    """

    def __init__(
        self, harness, pipeline: PipelineUnderTest, data: Input, test_file: TestFile | None
    ):
        self.harness = harness
        self.pipeline = pipeline
        self.data = data
        self.zone = time_zone(pipeline, data.settings)
        self.queries = fed_queries(pipeline, data)
        self.oracle = Oracle(
            harness.spark,
            pipeline,
            data.tables,
            harness.workdir,
            self.zone,
            {q.name for q in self.queries},
        )
        self.span = pipeline.plan.queries[0].span if pipeline.plan.queries else Span(0, 0, 1, 1)
        self.test_file = test_file or TestFile(
            pipeline.path, pipeline.plan.source, pipeline.path, self.span, []
        )
        self._oracles: dict[tuple[int, ...], dict] = {}
        self._times: dict[int, int] | None = None
        self._columns: dict[str, list] = {}  # the harness's columns per query, shared by runs
        self.columns: dict[str, list[str]] = {}
        self.runs = 0

    # ---- the batch oracle
    def expected(self, kept: list[int]) -> dict[str, tuple[list[str], list[tuple]]]:
        """The oracle over the rows ``kept`` (ids), cached."""
        key = tuple(kept)
        if key not in self._oracles:
            rows = [self.data.rows[i] for i in kept]
            self._oracles[key] = self.oracle.run([rows])
            for name, (columns, _) in self._oracles[key].items():
                self.columns[name] = columns
        return self._oracles[key]

    def settings(self) -> dict[str, str]:
        """The Spark settings of a streaming run: the test's, and one shuffle partition
        (:data:`PARTITIONS`) unless the pipeline or the test sets their number."""
        given = {k.lower() for k, _ in self.pipeline.plan.settings} | {
            k.lower() for k in self.data.settings
        }
        extra = {} if PARTITIONS.lower() in given else {PARTITIONS: "1"}
        return {**extra, **self.data.settings}

    # ---- a streaming run
    def stream(self, run: Run) -> RunResult:
        """Run ``run`` through the harness (every query); raises the pipeline's error."""
        self.runs += 1
        span = self.span
        steps: list[Step] = []
        batch_of: list[int | None] = []
        for index, batch in enumerate(run.batches):
            given: dict[str, Rows] = {}
            for i in batch:
                stream, row = self.data.rows[i]
                name = self.pipeline.streams[stream].name
                given.setdefault(name, Rows([], span, span)).values.append(row)
            steps.append(Step(len(steps) + 1, span, input=given))
            batch_of.append(index)
            if run.restart == index:
                steps.append(Step(len(steps) + 1, span, restart=True))
                batch_of.append(None)
        tables = {k: Rows([], span, span, values=list(v)) for k, v in self.data.tables.items() if v}
        case = Case(f"verify {run.name}", span, steps, tables, {}, self.settings())
        only = frozenset(q.name.lower() for q in self.queries)
        result: CaseResult = self.harness.run(
            self.test_file, case, self.pipeline, True, only, self._columns
        )
        if result.status == "error" and result.error is not None:
            raise result.error
        failed = [f for f in result.failures if f.check == "error"]
        if failed:
            raise SqlStreamError(
                f"run {run.name}: {failed[0].message}", span, self.pipeline.plan.source
            )
        out = RunResult(run, batch_of=batch_of)
        for query in self.queries:
            sink = query.sink.name
            out.steps[query.name] = [
                [tuple(hashable(v) for v in row.values()) for row in a.sinks.get(sink, [])]
                for a in result.actual
            ]
            marks = [a.watermark.get(query.name) for a in result.actual]
            out.watermarks[query.name] = [
                None if m is None else values.epoch_micros(values.parse_time(m, self.zone))
                for m in marks
            ]
            # a row is counted by each stateful operator that drops it: the most of them
            counts = [max(a.dropped.get(query.name) or [0]) for a in result.actual]
            states = [a.state_rows[query.name] for a in result.actual if query.name in a.state_rows]
            out.state_rows[query.name] = states[-1] if states else []
            out.dropped[query.name] = sum(counts)
            out.late[query.name] = self._late(query, run, out, counts) if sum(counts) else []
        return out

    def _late(self, query: p.Query, run: Run, out: RunResult, counts: list[int]) -> list[int]:
        """The ids of the rows of ``run`` dropped as late: in each step where Spark counted
        rows dropped by the watermark (``counts``), the rows of its micro-batch whose event
        time is not after the watermark of that micro-batch (the watermark after the step
        before). Spark's count is of state rows (after a partial aggregation, one per group
        and partition), and an aggregation drops a row only when its window's end is
        behind the watermark, so these are the rows Spark may have dropped: the oracle is
        run with and without them (:meth:`compared`). A count where no row is behind the
        watermark is added to ``out.unidentified``."""
        marks = out.watermarks[query.name]
        late, mark = [], None
        for step, index in enumerate(out.batch_of):
            if index is not None and counts[step]:
                times = self.event_times()
                behind = [
                    i
                    for i in run.batches[index]
                    if mark is not None and times.get(i) is not None and times[i] <= mark
                ]
                late += behind
                if not behind:
                    out.unidentified[query.name] = (
                        out.unidentified.get(query.name, 0) + counts[step]
                    )
            mark = marks[step] if marks[step] is not None else mark
        return late

    def event_times(self) -> dict[int, int]:
        """The event time (epoch microseconds) of every input row of a stream with a
        watermark: its watermark column as given, or, for a computed one, its expression
        evaluated by Spark over the given columns (``selectExpr`` of the stream's
        projection on a batch DataFrame of the rows)."""
        if self._times is not None:
            return self._times
        times: dict[int, int] = {}
        for key, relation in self.pipeline.streams.items():
            mark = relation.relation.watermark
            ids = [i for i, (stream, _) in enumerate(self.data.rows) if stream == key]
            if mark is None or not ids:
                continue
            names = [n.lower() for n, _ in relation.given]
            if mark.column.lower() in names:
                at = names.index(mark.column.lower())
                found = [self.data.rows[i][1][at] for i in ids]
            else:
                ddl = ", ".join(f"`{n}` {t}" for n, t in relation.given)
                frame = self.harness.spark.createDataFrame(
                    [self.data.rows[i][1] for i in ids], ddl
                ).selectExpr(*relation.projection)
                found = [row[mark.column] for row in frame.select(mark.column).collect()]
            for i, value in zip(ids, found, strict=True):
                if value is not None and hasattr(value, "timestamp"):
                    times[i] = values.epoch_micros(value)
        self._times = times
        return times

    # ---- what is final
    def final(self, query: p.Query, result: RunResult) -> list[tuple]:
        """The final rows ``query`` wrote in ``result`` (see the module)."""
        steps = result.steps[query.name]
        if query.output_mode == "complete":
            return list(steps[-1]) if steps else []
        rows = [row for step in steps for row in step]
        if query.output_mode != "update":
            return rows
        keys = self.key_columns(query)
        last: dict[tuple, tuple] = {}
        for row in rows:
            last[tuple(row[i] for i in keys)] = row
        return list(last.values())

    def key_columns(self, query: p.Query) -> list[int]:
        """The positions of ``query``'s grouping keys among its columns (update mode), from
        the plan (:func:`sqlstream.testing.verify_keys.key_names`); every column but the
        last when the plan does not tell."""
        columns = [c.lower() for c in self.columns.get(query.name, [])]
        keys = set(key_names(self.pipeline.plan, query) or ())
        found = [i for i, c in enumerate(columns) if c in keys]
        return found or list(range(max(len(columns) - 1, 0)))

    def not_final(self, query: p.Query, rows: list[tuple], mark: int | None) -> list[bool]:
        """Per oracle row of an append-mode query: its window has not ended by ``mark``
        (the run's last watermark; ``None``: none yet, so every window is open)."""
        columns = [c.lower() for c in self.columns.get(query.name, [])]
        if query.output_mode != "append":
            return [False] * len(rows)
        if "window_end" in columns:
            at = columns.index("window_end")

            def end(row):
                return row[at]
        elif "window" in columns:
            at = columns.index("window")

            def end(row):
                return dict(row[at]).get("end") if row[at] else None
        else:
            return [False] * len(rows)
        out = []
        for row in rows:
            value = end(row)
            if not isinstance(value, str):
                out.append(False)
                continue
            micros = values.epoch_micros(values.parse_time(value, self.zone))
            out.append(mark is None or micros > mark)
        return out

    def compared(self, query: p.Query, result: RunResult) -> tuple[list[tuple], list[tuple], int]:
        """``(oracle's final rows, the run's final rows, oracle rows not yet final)`` of
        ``query`` in ``result``, modulo the rows the run dropped as late.

        With late rows, the oracle runs over the run's rows with and without them: the
        rows both give must be written; a row only one gives (a window a late row falls
        in: Spark may drop a late row from some of its sliding windows and keep it in
        others) is accepted when written and not required. Not yet final: in append mode
        the windows whose end (a ``window_end`` or ``window`` column) the last watermark
        has not passed; without such a column, an aggregation's rows the run has not
        written (an outer join's: those with a ``NULL``, a row without its match yet), up
        to the rows still in its state (``numRowsTotal``) after the run."""
        ids = [i for b in result.run.batches for i in b]
        late = set(result.late.get(query.name, []))
        _, full = self.expected(ids)[query.name]
        either: list[tuple] = []
        want = full
        if late:
            _, less = self.expected([i for i in ids if i not in late])[query.name]
            a, b = Counter(map(_key, full)), Counter(map(_key, less))
            want = _once(full, a & b)
            either = _once(full, a - b) + _once(less, b - a)
        marks = [m for m in result.watermarks[query.name] if m is not None]
        open_ = self.not_final(query, want, marks[-1] if marks else None)
        final = [r for r, o in zip(want, open_, strict=True) if not o]
        got = self.final(query, result)
        if either:
            # a row only one oracle gives may be written: leave out of the run's rows those
            # beyond the rows required, up to the optional ones (not a required row that
            # happens to equal an optional one)
            spare = (Counter(map(_key, got)) - Counter(map(_key, final))) & Counter(
                map(_key, either)
            )
            got = _drop(got, spare)
        not_final = sum(open_)
        if query.output_mode == "append" and not any(open_) and not self._window_end(query, want):
            operators = query.state.operators if query.state else ()
            aggregating = any(o.kind == "aggregation" for o in operators)
            outer = any(
                o.kind == "stream_stream_join" and o.join_type in ("left", "right", "full")
                for o in operators
            )
            missing, _ = diff(final, got)
            if outer and not aggregating:
                # an outer join writes a row without a match once the watermark passes
                # its time bound: until then it waits in the join's state
                missing = [r for r in missing if None in r]
            if (
                (aggregating or outer)
                and missing
                and len(missing) <= sum(result.state_rows.get(query.name, []))
            ):
                final = diff(final, missing)[0]
                not_final = len(missing)
        return final, got, not_final

    def _window_end(self, query: p.Query, rows: list[tuple]) -> bool:
        """``query`` has a window end column whose values are times (shown as text)."""
        columns = [c.lower() for c in self.columns.get(query.name, [])]
        for name in ("window_end", "window"):
            if name in columns:
                at = columns.index(name)
                return any(isinstance(r[at], (str, tuple)) for r in rows)
        return False

    # ---- the verdict
    def judge(
        self, query: p.Query, results: list[RunResult]
    ) -> tuple[QueryReport, RunResult | None]:
        """The verdict on ``query`` over the runs' ``results``: ``split`` when two runs
        that dropped no late row wrote other final rows, else ``batch`` when a run's final
        rows differ from the oracle's; with the run that shows it (the first run when
        equal; ``None`` when no run could be compared: a run whose late rows were not all
        found is left out, ``not_compared`` says why)."""
        report = QueryReport(query.name)
        report.late_rows = {r.run.name: len(r.late.get(query.name, [])) for r in results}
        report.dropped_by_spark = {r.run.name: r.dropped.get(query.name, 0) for r in results}
        report.late = {
            r.run.name: [self.describe(r.run, i) for i in r.late[query.name]]
            for r in results
            if r.late.get(query.name)
        }
        report.not_compared = {
            r.run.name: f"Spark dropped {r.unidentified[query.name]} late rows not found "
            "behind the watermark of their micro-batch"
            for r in results
            if r.unidentified.get(query.name)
        }
        results = [r for r in results if not r.unidentified.get(query.name)]
        if not results:
            return report, None
        clean = [r for r in results if not r.dropped.get(query.name)]
        if clean:
            reference = self.final(query, clean[0])
            for other in clean[1:]:
                missing, unexpected = self.split_diff(query, clean[0], other)
                if missing or unexpected:
                    self._differs(report, query, "split", other, missing, unexpected)
                    report.against = clean[0].run.name
                    report.final_rows = len(reference)
                    return report, other
        for result in results:
            want, got, open_ = self.compared(query, result)
            missing, unexpected = diff(want, got)
            if missing or unexpected:
                self._differs(report, query, "batch", result, missing, unexpected)
                report.against = "batch"
                report.final_rows, report.not_final_rows = len(want), open_
                return report, result
        want, _, open_ = self.compared(query, results[0])
        report.final_rows, report.not_final_rows = len(want), open_
        return report, results[0]

    def split_diff(
        self, query: p.Query, a: RunResult, b: RunResult
    ) -> tuple[list[tuple], list[tuple]]:
        """``(missing, unexpected)``: the final rows of run ``a`` that run ``b`` did not
        write and those ``b`` wrote that ``a`` did not, less the rows still pending in the
        run that lacks them: of an outer join of two streams (append mode, no
        aggregation), rows with a ``NULL`` up to the rows in that run's join state
        (``numRowsTotal``). Such a row is written once the watermark passes its time
        bound, and a restart holds the watermark back: Spark keeps only the global
        watermark in the checkpoint, and after a restart a stream counts as at 0 until
        it has a row again (the minimum of the streams' watermarks), so a run restarted
        between one stream's last rows and another's writes such a row later."""
        missing, unexpected = diff(self.final(query, a), self.final(query, b))
        operators = query.state.operators if query.state else ()
        outer = query.output_mode == "append" and any(
            o.kind == "stream_stream_join" and o.join_type in ("left", "right", "full")
            for o in operators
        )
        if not outer or any(o.kind == "aggregation" for o in operators):
            return missing, unexpected

        def pending(rows: list[tuple], result: RunResult) -> list[tuple]:
            nulls = [r for r in rows if None in r]
            if nulls and len(nulls) <= sum(result.state_rows.get(query.name, [])):
                return [r for r in rows if None not in r]
            return rows

        return pending(missing, b), pending(unexpected, a)

    def describe(self, run: Run, i: int) -> dict:
        """Input row ``i`` of ``run`` for the report: its micro-batch (1-based), stream and
        values (given columns, as a test file writes them)."""
        stream, row = self.data.rows[i]
        relation = self.pipeline.streams[stream]
        batch = next(n for n, b in enumerate(run.batches, 1) if i in b)
        cells = {}
        for (name, kind), value in zip(relation.given, row, strict=True):
            if value is not None:
                t = values.parse_type(kind)
                cells[name] = values.shown(values.normal(value, t, self.zone), t, self.zone)
        return {"batch": batch, "stream": relation.name, "row": cells}

    def _differs(self, report, query, prop, result, missing, unexpected) -> None:
        columns = self.columns.get(query.name, [])
        report.result, report.property, report.run = "differs", prop, result.run.name
        report.missing = [dict(zip(columns, r, strict=False)) for r in missing]
        report.unexpected = [dict(zip(columns, r, strict=False)) for r in unexpected]

    def still_differs(self, query: p.Query, prop: str, run: Run, reference: Run | None) -> bool:
        """Whether ``run`` (and, for ``split``, ``reference``) still shows ``prop`` on
        ``query`` (a re-run of shrinking)."""
        result = self.stream(run)
        if result.unidentified.get(query.name):
            return False
        if prop == "batch":
            want, got, _ = self.compared(query, result)
            return any(diff(want, got))
        if reference is None or result.dropped.get(query.name):
            return False
        other = self.stream(reference)
        if other.dropped.get(query.name):
            return False
        return any(self.split_diff(query, other, result))


def fed_queries(pipeline: PipelineUnderTest, data: Input) -> list[p.Query]:
    """The queries of ``pipeline`` that read (through views) a stream ``data`` has rows
    of, or a table it has rows of, in the pipeline's order: the others have no input to
    compare on (a query whose sources the plan does not list is kept)."""
    fed = {stream for stream, _ in data.rows} | {k for k, rows in data.tables.items() if rows}
    return [
        q
        for q in pipeline.plan.queries
        if q.state is None or any(s.relation.lower() in fed for s in q.state.sources)
    ]
