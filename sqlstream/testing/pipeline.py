"""The pipeline under test: compiled as ``sqlstream exec`` compiles it, and what a test may
name in it (streams and their columns, tables, sinks, queries).

The plan is the one ``exec`` runs (:func:`sqlstream.planning.planner.build_plan` of the
parsed file, streaming rules enforced); only its ends are described here for the feed: for
each stream and table the columns a test gives (declared, metadata and fixed connector
columns: every column that is not computed) and the projection that adds the computed
columns on top of them; and :meth:`PipelineUnderTest.under_test`, that plan with its ends
swapped for a test, which the harness lowers and runs as ``exec`` runs a plan. No pyspark
import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.frontend.literals import string_literal
from sqlstream.ir import plan as p

FEED = "__sqlstream_feed"
"""The view of the test feed (every stream's rows, each tagged with its stream), and the
prefix of the views that split it by stream (``__sqlstream_feed_0``, …)."""

TAG = "__sqlstream_stream"
"""The feed's column that names the stream a row belongs to."""


@dataclass(frozen=True)
class Relation:
    """A stream or table of the pipeline as a test feeds it.

    Attributes:
        relation: its plan step (the watermark is read from it).
        given: ``(name, Spark type)`` of the columns a test's rows give, in order.
        projection: the SQL expressions that make the relation's columns from ``given``
            (computed columns as declared), in declared order.
    """

    relation: p.SourceRelation
    given: tuple[tuple[str, str], ...]
    projection: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.relation.name


@dataclass(frozen=True)
class PipelineUnderTest:
    """A compiled pipeline as a test names its parts (keys lower-case, as SQL names
    compare); :meth:`under_test` is the same pipeline with its ends swapped for the test's
    feed and captures, which the harness runs."""

    path: Path
    plan: p.Plan
    streams: dict[str, Relation]
    tables: dict[str, Relation]
    sinks: dict[str, list[p.Query]]
    queries: dict[str, p.Query]

    def feed_columns(self) -> tuple[tuple[str, str], ...]:
        """``(name, Spark type)`` of the feed's columns: :data:`TAG`, then the given columns
        of every stream, in order, named ``s<stream>_<column>`` (``s0_0``, ``s0_1``, …)."""
        return ((TAG, "STRING"),) + tuple(
            (f"s{i}_{j}", t)
            for i, stream in enumerate(self.streams.values())
            for j, (_, t) in enumerate(stream.given)
        )

    def under_test(
        self, feed: Read | None, tables: Mapping[str, Read], sinks: Mapping[str, Capturing]
    ) -> p.Plan:
        """This pipeline's plan with its ends swapped for a test (new plan records; the
        settings, functions, views, deduplications and queries' SQL and output modes are
        the pipeline's):

        * every stream reads the feed: one source, the view :data:`FEED` (``feed``), split
          by stream into the views ``__sqlstream_feed_<i>`` (its rows, the given columns
          named as declared), which the stream reads (``spark.readStream.table``, the
          ``table`` connector) with its computed columns and watermark as declared;
        * every table reads its rows (``tables``, by lower-case name) as a batch, with its
          computed columns;
        * only the queries of ``sinks`` (by lower-case name) are kept, each writing to its
          capture with ``foreachBatch`` (the ``foreach_batch`` connector), with its own
          checkpoint and Spark's default trigger (micro-batches as soon as there is data).

        Args:
            feed: how the feed is read (``None``: the pipeline has no stream).
            tables: how each table's rows are read.
            sinks: the capture of each query to run.

        Returns:
            The plan to lower (:class:`~sqlstream.lowering.lowered.Lowered`) and run.
        """
        relations: list[p.Relation] = []
        swapped: dict[str, p.Relation] = {}
        streams = list(self.streams.values())
        if feed is not None and streams:
            columns = self.feed_columns()
            relations.append(
                p.SourceRelation(
                    FEED,
                    False,
                    "files",
                    feed.format,
                    feed.path,
                    feed.options,
                    columns,
                    False,
                    (),
                    None,
                    streams[0].relation.span,
                    columns=columns,
                )
            )
        for i, stream in enumerate(streams):
            items = ", ".join(
                f"{quote(f's{i}_{j}')} AS {quote(n)}" for j, (n, _) in enumerate(stream.given)
            )
            relations.append(
                p.SqlView(
                    f"{FEED}_{i}",
                    f"SELECT {items} FROM {quote(FEED)} "
                    f"WHERE {quote(TAG)} = {string_literal(stream.name)}",
                    stream.relation.span,
                    stream.given,
                )
            )
            swapped[stream.name.lower()] = _reading(stream, "table", None, f"{FEED}_{i}", (), None)
        for key, table in self.tables.items():
            read = tables[key]
            swapped[key] = _reading(
                table, "files", read.format, read.path, read.options, table.given
            )
        relations += [swapped.get(r.name.lower(), r) for r in self.plan.relations]
        queries = tuple(
            replace(
                q,
                sink=p.Sink(
                    q.sink.name,
                    "foreach_batch",
                    None,
                    sinks[q.name.lower()].function,
                    (),
                    (),
                    True,
                    q.sink.span,
                ),
                trigger=None,
                checkpoint_location=sinks[q.name.lower()].checkpoint_location,
            )
            for q in self.plan.queries
            if q.name.lower() in sinks
        )
        return replace(self.plan, relations=tuple(relations), queries=queries)


@dataclass(frozen=True)
class Read:
    """How a test's rows are read (``spark.readStream`` / ``spark.read``): ``format(…)``,
    the rows' schema, ``option(k, v)`` for each of ``options``, ``load(path)``."""

    format: str
    path: str
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Capturing:
    """Where a query under test writes: the ``foreach_batch`` function path of its capture
    (:func:`sqlstream.testing.capture.register`) and its checkpoint location."""

    function: str
    checkpoint_location: str


def _reading(
    relation: Relation,
    connector: str,
    fmt: str | None,
    path: str,
    options: tuple[tuple[str, str], ...],
    read_columns: tuple[tuple[str, str], ...] | None,
) -> p.SourceRelation:
    """``relation``'s plan step reading the test's rows: ``connector`` with ``fmt``, ``path``,
    ``options`` and ``read_columns``, then the relation's projection (its computed columns)
    and, after it, its watermark; no decoding (the rows are the given columns)."""
    return replace(
        relation.relation,
        connector=connector,
        format=fmt,
        path=path,
        options=options,
        read_columns=read_columns,
        infer_schema=False,
        projection=relation.projection,
        watermark_first=False,
        settings=(),
        decoding=None,
    )


STAND_IN = "sqlstream-test-stand-in"
"""The value of every ``${env:NAME}`` in a test run: the sinks and sources that would use
it (a password, a token) are swapped for captures and feeds, so no real secret is needed
or read."""


class _StandIns(Mapping):
    """An environment in which every variable is set to :data:`STAND_IN`."""

    def __getitem__(self, name: str) -> str:
        return STAND_IN

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


def compile_pipeline(
    path: Path, variables: dict[str, str], trust: bool = False
) -> PipelineUnderTest:
    """Compile the `.ssql` file ``path`` with ``variables`` as ``exec`` does, but with
    every ``${env:NAME}`` given :data:`STAND_IN` (a test swaps the connectors that read
    them, so it needs no secret from the environment), and its Python modules imported
    only when ``trust`` (else read: :mod:`sqlstream.planning.function_sources`).

    Raises:
        SqlStreamError: the file cannot be read (``SS002``,
            :func:`sqlstream.frontend.limits.read_file`, the reader of ``sqlstream.read_file``:
            the same limits), or its first problem (with
            its position in the `.ssql` file); ``SS203`` for a stream whose columns are
            inferred from files (a test must know them).
    """
    from sqlstream.frontend.limits import read_file, run_deep
    from sqlstream.frontend.parser import parse
    from sqlstream.planning.planner import build_plan
    from sqlstream.sql.parsing import check_sqlglot_build

    text = read_file(path)

    def build():
        check_sqlglot_build()
        script = parse(text, variables, str(path), environ=_StandIns())
        return script, build_plan(script, str(path), None, enforce=True, trust=trust)

    script, plan = run_deep(build)
    computed = {}
    for statement in script.statements:
        if isinstance(statement, (ast.CreateStream, ast.CreateTable)):
            computed[statement.name.value.lower()] = {
                c.name.value.lower(): c.expression.text
                for c in statement.columns
                if isinstance(c, ast.ComputedColumn)
            }
    streams: dict[str, Relation] = {}
    tables: dict[str, Relation] = {}
    for relation in plan.relations:
        if not isinstance(relation, p.SourceRelation):
            continue
        if relation.columns is None:
            raise SqlStreamError(
                f"'{relation.name}' reads its columns from files (infer_schema): a test "
                "needs them declared",
                relation.span,
                Source(text, str(path)),
                code="SS203",
                hint="declare the columns in the CREATE statement",
            )
        exprs = computed.get(relation.name.lower(), {})
        given = tuple((n, t) for n, t in relation.columns if n.lower() not in exprs)
        projection = tuple(
            f"{exprs[n.lower()]} AS {quote(n)}" if n.lower() in exprs else quote(n)
            for n, _ in relation.columns
        )
        (tables if relation.bounded else streams)[relation.name.lower()] = Relation(
            relation, given, projection
        )
    sinks: dict[str, list[p.Query]] = {}
    for query in plan.queries:
        sinks.setdefault(query.sink.name.lower(), []).append(query)
    return PipelineUnderTest(
        path, plan, streams, tables, sinks, {q.name.lower(): q for q in plan.queries}
    )


def time_zone(pipeline: PipelineUnderTest, settings: dict[str, str]) -> str:
    """The session time zone the test's timestamps are read in: the test's
    ``spark.sql.session.timeZone`` setting, else the pipeline's ``SET``, else ``UTC``."""
    for key, value in settings.items():
        if key.lower() == "spark.sql.session.timezone":
            return value
    for key, value in pipeline.plan.settings:
        if key.lower() == "spark.sql.session.timezone":
            return value
    return "UTC"
