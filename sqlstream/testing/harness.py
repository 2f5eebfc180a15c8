"""The harness: runs one test of a pipeline on a SparkSession, step by step.

What runs is the pipeline's plan as ``exec`` runs it — its settings, functions, views,
deduplications and queries with their output modes — with the ends swapped on the plan
(:meth:`~sqlstream.testing.pipeline.PipelineUnderTest.under_test`), then lowered as any plan
(:class:`~sqlstream.lowering.lowered.Lowered`) and its program run by the binder
(:mod:`sqlstream.runtime.binder`):

* every stream reads the test feed (:mod:`sqlstream.testing.feed`): one feed source per
  test, each stream a view of it filtered on the stream's tag with the stream's given
  columns, then its computed columns and its watermark (``withWatermark``) as declared;
* every ``CREATE TABLE`` reads the test's ``tables`` rows (empty if none) as a batch;
* every query writes with ``foreachBatch`` to a capture (:mod:`sqlstream.testing.capture`)
  that collects each micro-batch's rows by batch id, with a checkpoint of its own under
  the test's folder, and Spark's default trigger (micro-batches as soon as there is data),
  whatever ``EMIT … EVERY`` says.

A test runs the queries it checks (:func:`checked_queries`); ``--record`` runs them all.
An ``input`` step releases its rows to the feed, then waits with
``StreamingQuery.processAllAvailable`` on every running query: it returns when a trigger
found no new data and no need for another (no-data) micro-batch, so a window the
watermark closes is written in the step that closes it. A ``restart`` step stops every
query and starts it again on its checkpoint. After each step the checks read the rows
captured in the step's micro-batches and the queries' progress (``eventTime.watermark``,
``stateOperators[i].numRowsTotal`` / ``numRowsDroppedByWatermark``).

Source: Spark guide, *Structured Streaming Programming Guide* (foreachBatch, watermarks,
``spark.sql.streaming.noDataMicroBatches.enabled``, *Monitoring Streaming Queries*);
``StreamingQuery.processAllAvailable`` (PySpark API).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import time
from pathlib import Path

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from sqlstream.diagnostics.errors import QueryFailedError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, Program
from sqlstream.lowering.lowered import Lowered
from sqlstream.runtime.binder import environment, evaluate, run_block, spark_message
from sqlstream.runtime.expectation_failures import expectation_failure
from sqlstream.testing import capture, feed, values
from sqlstream.testing.capture import Capture
from sqlstream.testing.compare import CaseResult, StepActual, compare_rows, compare_value
from sqlstream.testing.pipeline import Capturing, PipelineUnderTest, Read, time_zone
from sqlstream.testing.spec import Case, Step, TestFile
from sqlstream.testing.tables import current_table

QUIET = {"spark.sql.streaming.noDataProgressEventInterval": "86400000"}
"""Set during a test: no idle progress events (only a micro-batch's own progress)."""


def _quiet(_: str) -> None:
    """The binder's ``report`` of a test: notes are not shown."""


def _progress(query) -> list[dict]:
    found = []
    for progress in query.recentProgress:
        found.append(progress if isinstance(progress, dict) else json.loads(progress.json))
    return found


class _Query:
    """One query of the test: its plan, capture, running ``StreamingQuery`` and progress.

    Attributes:
        plan: the query as the pipeline plans it (its sink is the one a test names).
        capture: the ``foreachBatch`` function its swapped sink names, and ``function``
            that name (:func:`sqlstream.testing.capture.register`).
        chain: the chain that starts it, from the program of the plan under test (set by
            :meth:`Harness.run` once that plan is lowered); ``env``: the binder's root
            names it is evaluated with; ``source``: the pipeline's (secrets).
    """

    def __init__(self, query: p.Query, checkpoint: Path, zone: str):
        self.plan = query
        self.checkpoint = checkpoint
        self.capture = Capture(zone)
        self.function = capture.register(self.capture)
        self.chain: Chain | None = None
        self.env: dict = {}
        self.source: Source | None = None
        self.running = None
        self.failed: SqlStreamError | None = None
        self.progress: dict[int, dict] = {}  # batch id -> its progress
        self.last: dict | None = None

    def start(self, spark) -> None:
        """Start the query: its chain of the program (``spark.sql(sql).writeStream
        .foreachBatch(capture)….start()``), the capture's columns read first from the
        chain's ``spark.sql(sql)`` at the first start (a restart reads the same columns)."""
        assert self.chain is not None, "Harness.run sets the chain before any start"
        if not self.capture.columns:
            frame = evaluate(self.chain, self.env, _quiet, steps=1, source=self.source)
            self.capture.columns = [
                (f.name, values.parse_type(f.dataType.simpleString())) for f in frame.schema.fields
            ]
        self.running = evaluate(self.chain, self.env, _quiet, source=self.source)

    def collect_progress(self) -> None:
        if self.running is None:
            return
        for progress in _progress(self.running):
            batch = progress.get("batchId")
            # a trigger that ran no micro-batch reports the next batch id (without addBatch)
            if batch in self.capture.batches and "addBatch" in (progress.get("durationMs") or {}):
                self.progress[batch] = progress
                if self.last is None or batch >= self.last.get("batchId", -1):
                    self.last = progress


def checked_queries(case: Case, pipeline: PipelineUnderTest) -> list[p.Query]:
    """The queries of ``pipeline`` that ``case`` checks, in the pipeline's order: those
    writing to a sink a step's ``expect`` names and those a ``watermark``, ``state_rows`` or
    ``dropped_by_watermark`` check names. Every query when a step expects an ``error`` (it
    may come from any query) or when the test checks nothing.

    The others are not run: Spark queries share nothing but their sources (each has its
    own offsets, state and watermark), so running them cannot change what is checked, and
    each would cost micro-batches in every step.
    """
    queries = pipeline.plan.queries
    only = queries[0].name if len(queries) == 1 else None
    names: set[str] = set()
    for step in case.steps:
        if step.error is not None or step.expectations:
            return list(queries)
        for sink in (*step.expect, *step.table):
            names |= {q.name.lower() for q in pipeline.sinks.get(sink.lower(), [])}
        for check in (*step.watermark, *step.state_rows, *step.dropped_by_watermark):
            name = check.query or only
            if name:
                names.add(name.lower())
    if not names:
        return list(queries)
    return [q for q in queries if q.name.lower() in names]


class Harness:
    """Runs tests on one SparkSession; each test in a folder of its own under ``workdir``.

    Args:
        spark: the session (all tests of a run share it).
        workdir: where feeds and checkpoints go (a temporary folder when ``None``).
    """

    def __init__(self, spark, workdir: Path | None = None):
        self.spark = spark
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="sqlstream-test-"))
        self.spark.dataSource.register(feed.FeedSource)
        self.env = environment(spark)
        self.count = 0

    def run(
        self,
        test_file: TestFile,
        case: Case,
        pipeline: PipelineUnderTest,
        every_query: bool = False,
        only: frozenset[str] | None = None,
        columns: dict[str, list] | None = None,
    ) -> CaseResult:
        """Run ``case`` of ``test_file`` on ``pipeline``: the queries it checks
        (:func:`checked_queries`), or every query of the pipeline when ``every_query``
        (``--record``, which writes what every sink received), or the queries named in
        ``only`` (lower case; ``sqlstream verify``: those its input feeds). ``columns``:
        each query's columns by name, read from the query when missing and kept there
        (``sqlstream verify``'s runs of one pipeline analyse each query once).

        Returns:
            A :class:`~sqlstream.testing.compare.CaseResult`: ``passed``, ``failed`` with
            its failures, or ``error`` with the problem (an expected value that does not
            fit its column, or Spark rejecting the pipeline's views).
        """
        started = time.monotonic()
        result = CaseResult(test_file.path, case.name, case.span.line, "passed")
        self.count += 1
        folder = self.workdir / f"test-{self.count}"
        folder.mkdir(parents=True)
        (folder / "feed").mkdir()
        zone = time_zone(pipeline, case.settings)
        run = pipeline.plan.queries if every_query else checked_queries(case, pipeline)
        if only is not None:
            run = tuple(q for q in pipeline.plan.queries if q.name.lower() in only)
        queries = [_Query(q, folder / "checkpoints" / q.name, zone) for q in run]
        for query in queries:
            query.capture.columns = list((columns or {}).get(query.plan.name, []))
        try:
            program = self._program(pipeline, case, queries, folder)
            restore = self._settings(pipeline, program, case)
            try:
                self._define(pipeline, program)
                self._steps(test_file, case, pipeline, queries, folder / "feed", zone, result)
            finally:
                for query in queries:
                    if query.running is not None:
                        query.running.stop()
                restore()
        except SqlStreamError as error:
            result.status, result.error = "error", error
        finally:
            for query in queries:
                capture.unregister(query.function)
                if columns is not None and query.capture.columns:
                    columns[query.plan.name] = query.capture.columns
            shutil.rmtree(folder, ignore_errors=True)
        if result.status == "passed" and result.failures:
            result.status = "failed"
        result.seconds = time.monotonic() - started
        return result

    def _program(
        self, pipeline: PipelineUnderTest, case: Case, queries: list[_Query], folder: Path
    ) -> Program:
        """The program of the pipeline under test: the feed's kind chosen, the tables' rows
        written, the ends swapped on the plan and that plan lowered; each query's starting
        chain and root names given to it."""
        streams = list(pipeline.streams.values())
        self._columns = [(n, values.parse_type(t)) for n, t in pipeline.feed_columns()[1:]]
        self._file_feed = all(feed.file_exact(kind) for _, kind in self._columns)
        path = str(folder / "feed")
        stream_feed = (
            Read("json", path, tuple(feed.JSON_OPTIONS.items()))
            if self._file_feed
            else Read(feed.FORMAT, path)
        )
        self.tags = {s.name.lower(): (i, len(s.given)) for i, s in enumerate(streams)}
        given = {name.lower(): rows for name, rows in case.tables.items()}
        tables = {}
        for i, (key, table) in enumerate(pipeline.tables.items()):
            rows = given[key].values if key in given else []
            columns = [(n, values.parse_type(t)) for n, t in table.given]
            where = folder / "tables" / str(i)
            if all(feed.file_exact(kind) for _, kind in columns):
                feed.write_rows(where, columns, rows)
                tables[key] = Read("json", str(where), tuple(feed.JSON_OPTIONS.items()))
            else:
                feed.write_table(where, rows)
                tables[key] = Read(feed.FORMAT, str(where))
        sinks = {q.plan.name.lower(): Capturing(q.function, str(q.checkpoint)) for q in queries}
        plan = pipeline.under_test(stream_feed, tables, sinks)
        program = Lowered(plan).program
        starts = {b.name: b.chains[-1] for b in program.blocks if b.kind == "query"}
        for query in queries:
            query.chain, query.env, query.source = starts[query.plan.name], self.env, plan.source
        return program

    def _settings(self, pipeline: PipelineUnderTest, program: Program, case: Case):
        """Apply the pipeline's ``SET``s (the program's settings block), the test's
        settings and :data:`QUIET`; return the function that puts the session's values
        back."""
        block = next(b for b in program.blocks if b.kind == "settings")
        keys = {chain.steps[-1].args[0] for chain in block.chains} if block else set()
        keys |= set(case.settings) | set(QUIET)
        conf = self.spark.conf
        before = {key: conf.get(key, None) for key in keys}
        if block:
            run_block(self.spark, pipeline.plan, block, report=lambda _: None)
        for key, value in {**QUIET, **case.settings}.items():
            try:
                conf.set(key, value)
            except (PySparkException, Py4JJavaError) as exc:
                raise SqlStreamError(
                    f"Spark refused setting '{key}': {spark_message(exc)}", code="SS202"
                ) from None

        def restore():
            for key, value in before.items():
                with contextlib.suppress(PySparkException, Py4JJavaError):
                    conf.unset(key) if value is None else conf.set(key, value)

        return restore

    def _define(self, pipeline: PipelineUnderTest, program: Program) -> None:
        """The functions and temporary views of the pipeline under test: the program's
        ``function`` and ``relation`` blocks (the feed, its views by stream, the streams
        and tables reading them, then the pipeline's views and deduplications)."""
        for block in program.blocks:
            if block.kind in ("function", "relation"):
                run_block(self.spark, pipeline.plan, block, lambda _: None, self.env)

    def _release(self, step: Step, folder: Path, released: int) -> None:
        rows = []
        for name, given in (step.input or {}).items():
            for row in given.values:
                index, width = self.tags[name.lower()]
                rows.append(
                    (
                        self._stream_name(name),
                        (None,) * self._offset(index)
                        + row
                        + (None,) * (self._width - self._offset(index) - width),
                    )
                )
        if self._file_feed:
            feed.write_step(folder, released, self._columns, rows)
        else:
            feed.release(folder, released, rows)

    def _steps(
        self,
        test_file: TestFile,
        case: Case,
        pipeline: PipelineUnderTest,
        queries: list[_Query],
        folder: Path,
        zone: str,
        result: CaseResult,
    ) -> None:
        widths = sorted(self.tags.values())
        self._offsets = {i: sum(w for j, w in widths if j < i) for i, _ in widths}
        self._width = sum(w for _, w in widths)
        self._names = {k: s.name for k, s in pipeline.streams.items()}
        released = 0
        for step in case.steps:
            marks = {id(q): len(q.capture.order) for q in queries}
            errors: list[SqlStreamError] = []
            if step.restart:
                for query in queries:
                    if query.running is not None:
                        query.running.stop()
                        query.running = None
            else:
                released += 1
                self._release(step, folder, released)
            # The file feed: every query is started, then each is waited for, so their
            # micro-batches overlap. The Python feed: one query at a time, each started and
            # run to idle before the next starts: each start launches a Python worker for
            # the feed, which must connect back to the JVM within Spark's fixed 10
            # seconds; several at once on a loaded machine miss it. (Queries are
            # independent, so the order changes no result.)
            if self._file_feed:
                for query in queries:
                    self._start(query, pipeline, errors)
            for query in queries:
                self._start(query, pipeline, errors)
                if query.running is None:
                    continue
                try:
                    query.running.processAllAvailable()
                except (PySparkException, Py4JJavaError) as exc:
                    query.failed = expectation_failure(
                        str(exc), pipeline.plan, query.plan
                    ) or QueryFailedError(  # FAIL UPDATE: SS560 at the rule
                        f"query '{query.plan.name}' failed: {spark_message(exc)}",
                        query.plan.span,
                        pipeline.plan.source,
                    )
                    # the whole of Spark's message, for `error: 'fragment'` (the shown
                    # message is cut short, and the capture's foreachBatch wraps the cause)
                    query.failed.detail = str(exc)
                    errors.append(query.failed)
                query.collect_progress()
                if query.failed is not None:
                    query.running = None
            new = {id(q): q.capture.order[marks[id(q)] :] for q in queries}
            actual = self._actual(pipeline, queries, new, zone)
            result.actual.append(actual)
            self._check(test_file, case, step, pipeline, queries, new, actual, errors, zone, result)

    def _start(
        self, query: _Query, pipeline: PipelineUnderTest, errors: list[SqlStreamError]
    ) -> None:
        """Start ``query`` unless it runs or has failed; a refusal is added to ``errors``."""
        if query.running is not None or query.failed is not None:
            return
        try:
            query.start(self.spark)
        except (PySparkException, Py4JJavaError) as exc:
            query.failed = QueryFailedError(
                f"query '{query.plan.name}': {spark_message(exc)}",
                query.plan.span,
                pipeline.plan.source,
            )
            errors.append(query.failed)

    def _offset(self, index: int) -> int:
        return self._offsets[index]

    def _stream_name(self, name: str) -> str:
        return self._names[name.lower()]

    def _actual(
        self, pipeline: PipelineUnderTest, queries: list[_Query], new: dict, zone: str
    ) -> StepActual:
        actual = StepActual()
        for query in queries:
            sink = query.plan.sink.name
            rows = _received(query, new[id(query)])
            shown = [
                {
                    n: values.shown(v, t, zone)
                    for v, (n, t) in zip(row, query.capture.columns, strict=True)
                }
                for row in rows
            ]
            actual.sinks.setdefault(sink, []).extend(shown)
            counted: dict[str, int] = {}  # rule -> violating rows of this query's batches
            for batch in new[id(query)]:
                metrics = (query.progress.get(batch) or {}).get("observedMetrics") or {}
                for owner, row in metrics.items():
                    row = row.asDict() if hasattr(row, "asDict") else row  # a Row, or JSON
                    for rule, n in row.items() if owner.startswith("expect:") else ():
                        counted[rule] = counted.get(rule, 0) + int(n or 0)
            for rule, n in counted.items():  # a stream's rule: the same in every query
                actual.expectations[rule] = max(n, actual.expectations.get(rule, 0))
            last = query.last
            if last is None:
                continue
            mark = (last.get("eventTime") or {}).get("watermark")
            if mark is not None:
                actual.watermark[query.plan.name] = _watermark_text(mark, zone)
            operators = last.get("stateOperators") or []
            if operators:
                actual.state_rows[query.plan.name] = [o.get("numRowsTotal", 0) for o in operators]
                dropped = [0] * len(operators)
                for batch in new[id(query)]:
                    progress = query.progress.get(batch) or {}
                    for i, o in enumerate(progress.get("stateOperators") or []):
                        if i < len(dropped):
                            dropped[i] += o.get("numRowsDroppedByWatermark", 0)
                actual.dropped[query.plan.name] = dropped
        return actual

    def _check(self, test_file, case, step, pipeline, queries, new, actual, errors, zone, result):
        source = test_file.source
        for sink, rows in step.expect.items():
            writers = [q for q in queries if q.plan.sink.name.lower() == sink.lower()]
            received = [row for q in writers for row in _received(q, new[id(q)])]
            failure = compare_rows(
                step,
                writers[0].plan.sink.name,
                rows,
                received,
                writers[0].capture.columns,
                zone,
                case.ordered,
                case.tolerance,
                source,
            )
            if failure:
                result.failures.append(failure)
        for sink, rows in step.table.items():  # the whole table, from every batch so far
            (writer,) = [q for q in queries if q.plan.sink.name.lower() == sink.lower()][:1]
            table, columns = current_table(writer.plan, writer.capture)
            failure = compare_rows(
                step,
                writer.plan.sink.name,
                rows,
                table,
                columns,
                zone,
                case.ordered,
                case.tolerance,
                source,
            )
            if failure:
                result.failures.append(failure)
        names = {q.plan.name.lower(): q.plan.name for q in queries}
        only = pipeline.plan.queries[0].name if len(pipeline.plan.queries) == 1 else None
        for check in step.watermark:
            name = names[check.query.lower()] if check.query else only
            want = values.epoch_micros(check.value)
            text = actual.watermark.get(name)
            got = None if text is None else values.epoch_micros(values.parse_time(text, zone))
            failure = compare_value(
                step,
                f"watermark of {name}",
                want,
                got,
                values.show_time(want, zone),
                text or "none",
            )
            if failure:
                result.failures.append(failure)
        for key, found in (
            ("state_rows", actual.state_rows),
            ("dropped_by_watermark", actual.dropped),
        ):
            for check in getattr(step, key):
                name = names[check.query.lower()] if check.query else only
                got = found.get(name, [])
                got = got[: len(check.value)]
                failure = compare_value(
                    step,
                    f"{key} of {name}",
                    check.value,
                    got,
                    _counts(check.value),
                    _counts(got) if got else "none",
                )
                if failure:
                    result.failures.append(failure)
        for check in step.expectations:
            got = actual.expectations.get(check.query or "", 0)
            failure = compare_value(step, f"expectation {check.query}", check.value, got)
            if failure:
                result.failures.append(failure)
        from sqlstream.testing.compare import Failure

        if step.error is not None:
            wanted = str(step.error.value)
            if not any(
                wanted == e.code
                or wanted.lower() in e.message.lower()
                or wanted.lower() in getattr(e, "detail", "").lower()
                for e in errors
            ):
                raised = "; ".join(f"{e.code} {e.message}" for e in errors) or "no error"
                result.failures.append(
                    Failure(
                        step.number,
                        step.span.line,
                        "error",
                        f"expected error '{wanted}', got {raised}",
                        expected=wanted,
                        actual=raised,
                    )
                )
        else:
            for error in errors:
                result.failures.append(
                    Failure(
                        step.number,
                        step.span.line,
                        "error",
                        f"{error.code} {error.message}",
                        actual=error.message,
                    )
                )


def _received(query: _Query, batches: list[int]) -> list[tuple]:
    """The rows ``query`` wrote in ``batches``; in complete mode the last table written."""
    if query.plan.output_mode == "complete":
        order = query.capture.order
        return list(query.capture.batches[order[-1]]) if order else []
    return [row for batch in batches for row in query.capture.batches[batch]]


def _watermark_text(text: str, zone: str) -> str:
    """Spark's ``eventTime.watermark`` (ISO 8601 in UTC, ``…Z``) in the session zone."""
    import datetime as dt

    instant = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return values.show_time(values.epoch_micros(instant), zone)


def _counts(found: list[int]):
    return found[0] if len(found) == 1 else found
