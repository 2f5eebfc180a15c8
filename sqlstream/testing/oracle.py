"""The batch oracle of ``sqlstream verify``: every query of a pipeline run by Spark as a
batch query over all of its input at once, with the meaning the user wrote.

It is the pipeline under test (:meth:`~sqlstream.testing.pipeline.PipelineUnderTest.
under_test`: the feed, the tables' rows) made bounded — each source is read with
``spark.read`` in place of ``spark.readStream`` (the lowering's own switch for a ``CREATE
TABLE``), so the compiler's views, window functions (``window()``) and joins run as batch
queries over the same rows — and lowered as any plan. ``withWatermark`` is a no-op on a
batch DataFrame (PySpark API: *DataFrame.withWatermark*). One step is replaced: a keep-first
deduplication ordered by event time (:class:`~sqlstream.ir.plan.Deduplicate` with an
``order``, the case of SS361) becomes the SQL the user wrote, ``ROW_NUMBER() OVER
(PARTITION BY keys ORDER BY order) = 1`` as a batch window function: the earliest row per
key, where Spark's ``dropDuplicates`` keeps the first to arrive.

Source: Spark SQL guide, *Window Functions* (``ROW_NUMBER``); Spark guide, *Structured
Streaming Programming Guide* (the same DataFrame operations on static and streaming data).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.ir import plan as p
from sqlstream.lowering.lowered import Lowered
from sqlstream.runtime.binder import environment, evaluate, run_block
from sqlstream.testing import feed, values
from sqlstream.testing.pipeline import Capturing, PipelineUnderTest, Read

Batch = list[tuple[str, tuple]]
"""One micro-batch of input: ``(stream name in lower case, row over its given columns)``
pairs, in arrival order."""


def feed_row(pipeline: PipelineUnderTest, stream: str, row: tuple) -> tuple[str, tuple]:
    """``row`` of ``stream`` (lower-case name) as a row of the feed: ``(tag, values over
    every stream's given columns)``, ``None`` in the other streams' columns (as the
    harness releases a step)."""
    streams = list(pipeline.streams.values())
    index = next(i for i, s in enumerate(streams) if s.name.lower() == stream)
    before = sum(len(s.given) for s in streams[:index])
    after = sum(len(s.given) for s in streams[index + 1 :])
    return streams[index].name, (None,) * before + tuple(row) + (None,) * after


def batch_plan(
    pipeline: PipelineUnderTest, stream_feed: Read | None, tables: dict[str, Read]
) -> p.Plan:
    """The plan of the batch oracle (see the module): the pipeline under test with every
    source bounded and every keep-first deduplication by event time as its SQL.

    Args:
        pipeline: the compiled pipeline.
        stream_feed: how all of the input is read (``None``: no stream).
        tables: how each table's rows are read (by lower-case name).

    Returns:
        A plan whose program defines the views (its ``relation`` blocks) and whose queries'
        chains start with ``spark.sql(sql)`` (each query's batch DataFrame).
    """
    # a sink is needed to lower the plan; the oracle never starts a query
    sinks = {
        q.name.lower(): Capturing("sqlstream.testing.oracle:hashable", "")
        for q in pipeline.plan.queries
    }
    plan = pipeline.under_test(stream_feed, tables, sinks)
    relations: list[p.Relation] = []
    for relation in plan.relations:
        if isinstance(relation, p.SourceRelation):
            relation = replace(relation, bounded=True)
        elif isinstance(relation, p.Deduplicate) and relation.order is not None:
            relation = p.SqlView(
                relation.name, keep_first_sql(relation), relation.span, relation.columns
            )
        elif isinstance(relation, p.Deduplicate):
            # Spark refuses dropDuplicatesWithinWatermark on a batch DataFrame; over all
            # rows at once it keeps the first row of each key, as dropDuplicates does
            relation = replace(relation, within_watermark=False)
        relations.append(relation)
    return replace(plan, relations=tuple(relations))


def keep_first_sql(dedup: p.Deduplicate) -> str:
    """The batch SQL of a keep-first deduplication ordered by event time: the earliest row
    of each key by ``dedup.order`` (``ROW_NUMBER() … = 1``), with the input's columns."""
    assert dedup.order is not None
    partition = ", ".join(quote(k) for k in dedup.keys)
    over = (f"PARTITION BY {partition} " if partition else "") + f"ORDER BY {quote(dedup.order)}"
    rn = "__sqlstream_verify_rn"
    columns = ", ".join(quote(n) for n, _ in dedup.columns) if dedup.columns else "*"
    inner = f"SELECT *, ROW_NUMBER() OVER ({over}) AS {rn} FROM {quote(dedup.input)}"
    if columns == "*":
        return f"SELECT * EXCEPT ({rn}) FROM ({inner}) WHERE {rn} = 1"
    return f"SELECT {columns} FROM ({inner}) WHERE {rn} = 1"


class Oracle:
    """Runs the batch oracle of a pipeline on a SparkSession.

    Args:
        spark: the session (the one the streaming runs use).
        pipeline: the compiled pipeline.
        tables: each table's rows (by lower-case name; missing: empty).
        folder: where the input and the tables' rows are written (a folder of its own per
            run, removed after it).
        zone: the session time zone values are shown in.
        only: the names of the queries to run (``None``: every query).
    """

    def __init__(
        self,
        spark,
        pipeline: PipelineUnderTest,
        tables: dict[str, list[tuple]],
        folder: Path,
        zone: str,
        only: set[str] | None = None,
    ):
        self.only = only
        self.spark = spark
        self.pipeline = pipeline
        self.tables = tables
        self.folder = folder
        self.zone = zone

    def run(self, batches: list[Batch]) -> dict[str, tuple[list[str], list[tuple]]]:
        """Every query (of :attr:`only`) over all rows of ``batches`` as one batch.

        Returns:
            Per query name: its column names and its rows, each value as the tests show
            it (:func:`sqlstream.testing.values.shown`, then made hashable).

        Raises:
            SqlStreamError: Spark rejected a view or a query (positioned at it).
        """
        where = Path(tempfile.mkdtemp(prefix="oracle-", dir=self.folder))
        try:
            return self._run(batches, where)
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def _run(self, batches: list[Batch], where: Path) -> dict[str, tuple[list[str], list[tuple]]]:
        pipeline = self.pipeline
        columns = [(n, values.parse_type(t)) for n, t in pipeline.feed_columns()[1:]]
        rows = [feed_row(pipeline, stream, row) for batch in batches for stream, row in batch]
        stream_feed = None
        if pipeline.streams:
            if all(feed.file_exact(kind) for _, kind in columns):
                (where / "feed").mkdir(parents=True)
                feed.write_step(where / "feed", 1, columns, rows)
                stream_feed = Read("json", str(where / "feed"), tuple(feed.JSON_OPTIONS.items()))
            else:
                feed.write_table(where / "feed", [(tag, *row) for tag, row in rows])
                stream_feed = Read(feed.FORMAT, str(where / "feed"))
        reads = {}
        for i, (key, table) in enumerate(pipeline.tables.items()):
            kinds = [(n, values.parse_type(t)) for n, t in table.given]
            path = where / "tables" / str(i)
            if all(feed.file_exact(kind) for _, kind in kinds):
                feed.write_rows(path, kinds, self.tables.get(key, []))
                reads[key] = Read("json", str(path), tuple(feed.JSON_OPTIONS.items()))
            else:
                feed.write_table(path, self.tables.get(key, []))
                reads[key] = Read(feed.FORMAT, str(path))
        plan = batch_plan(pipeline, stream_feed, reads)
        program = Lowered(plan).program
        env = environment(self.spark)
        for block in program.blocks:
            if block.kind in ("function", "relation"):
                run_block(self.spark, plan, block, lambda _: None, env)
        found = {}
        for block in program.blocks:
            if block.kind != "query" or (self.only is not None and block.name not in self.only):
                continue
            frame = evaluate(block.chains[-1], env, lambda _: None, steps=1, source=plan.source)
            kinds = [(f.name, values.parse_type(f.dataType.simpleString())) for f in frame.schema]
            shown = [
                tuple(
                    hashable(values.shown(values.normal(v, t, self.zone), t, self.zone))
                    for v, (_, t) in zip(row, kinds, strict=True)
                )
                for row in frame.collect()
            ]
            found[block.name or ""] = ([n for n, _ in kinds], shown)
        return found


def hashable(value):
    """A shown value (:func:`sqlstream.testing.values.shown`) made hashable: lists as
    tuples, mappings as tuples of pairs."""
    if isinstance(value, list):
        return tuple(hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, hashable(v)) for k, v in value.items())
    return value
