"""The connector base class: what a connector is on Spark, and the options it resolved.

A connector (docs/connectors.md) is a subclass of :class:`Connector`, one module per
connector under ``sqlstream/connectors/``. Its class attributes say what it is on Spark
(formats, required and known options, fixed schema, metadata columns, sink output modes,
durability, continuous-trigger support); its methods override only what differs from the
common path:

* option rules: :meth:`Connector.validate` (e.g. ``files``' unknown format) and
  :meth:`Connector.ignored_options` (SS352 warnings);
* the planner's decisions: :meth:`Connector.source_target` / :meth:`Connector.sink_target`
  (the format and path of a read or a write), :meth:`Connector.declared` and
  :meth:`Connector.bind_columns` (what a declared source reads: ``kafka``'s fixed or Avro
  columns, ``files``' CSV columns bound to the header by name);
* lowering to binding calls: the read and write call sequence it inherits from
  :class:`~sqlstream.connectors.call_sequence.CallSequence` (``read_steps``,
  ``format_steps``, ``start_step`` and the chains around them).

A ``WITH (…)`` list is split into compiler and Spark options by
:mod:`sqlstream.connectors.option_resolution`; the result is a :class:`ResolvedOptions`.
A record's payload, as malformed-record handling decodes it, is a
:class:`~sqlstream.connectors.payload.Payload`.

Sources: Spark "Structured Streaming Programming Guide", *Input Sources* and *Output
Sinks*; PySpark ``DataStreamReader`` and ``DataStreamWriter``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlstream.connectors.call_sequence import CallSequence
from sqlstream.connectors.payload import Payload
from sqlstream.diagnostics.errors import OptionError, SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p

ALL_MODES = frozenset({"append", "update", "complete"})
DURABLE = "durable"

SPARK_KAFKA = "org.apache.spark:spark-sql-kafka-0-10_2.13"  # Spark's external modules
SPARK_AVRO = "org.apache.spark:spark-avro_2.13"

ResolvePath = Callable[[str | None], str | None]
Report = Callable[[SqlStreamError], None]


class Connector(CallSequence):
    """One ``connector = …`` value and what it means on Spark.

    Class attributes (a subclass sets those that differ):
        name: the ``connector = …`` value.
        source_format: ``readStream.format(…)`` value, or ``None`` if not a source
            (``<format>`` / ``<table>``: decided by :meth:`source_target`).
        sink_format: ``writeStream.format(…)`` value, or ``None`` if not a sink.
        required: options that must be given (compiler spelling or Spark's).
        spark_options: Spark option names this connector knows (camelCase).
        number_options: Spark option name → ``(bits, minimum)`` of an option Spark reads
            as a whole number (``toInt``: 32 bits, ``toLong``: 64) and refuses below
            ``minimum`` when the query starts.
        fixed_schema: ``(column, type)`` pairs of a connector whose schema Spark fixes.
        metadata: metadata key → ``(Spark expression, type)``.
        sink_modes: output modes the sink supports (``files``: append only).
        durable: the sink keeps data across restarts, so its query gets a checkpoint.
        bounded_source: the connector can also back a ``CREATE TABLE`` (``spark.read``).
        continuous_source: Spark's continuous processing reads it (``rate``, ``kafka``).
        continuous_sink: a continuous query may write it (not ``files``: a V1 sink).
        real_time_source, real_time_sink: a query in Spark's real-time mode (``EMIT …
            REAL TIME``) may read it (``kafka``) or write it (``kafka``, ``console``,
            ``memory``): Spark's ``RealTimeModeAllowlist`` and its guide, *Real-time Mode*.
        own_options: options this connector reads itself (never passed to Spark as they
            are), besides
            :data:`~sqlstream.connectors.option_resolution.COMPILER_OPTIONS`
            (``kafka``'s ``bootstrap_servers``, renamed
            by :meth:`finish`; ``postgres``: ``url``, ``user``, ``mode``, …).
        passes_options: an option the connector does not know goes to Spark unchanged
            (``False``: it is an error, for sinks whose ``.option()`` Spark ignores, such
            as ``foreachBatch``).
        path_target: the target of a read or a write is a file system path or URI
            (``files``): a restart record keeps a local one absolute.
        file_sink: as a sink it is Spark's file sink, whose log of written batches is in
            its output (``files``, ``table``): a restart may not switch to it from another
            sink nor change its output (Spark guide, *Recovery Semantics after Changes in a
            Streaming Query*).
        prints_rows: as a sink it prints each micro-batch on the driver's stdout
            (``console``): ``exec`` then shows no live progress table on that terminal,
            and through Spark Connect the rows are printed on the server.
        spark_packages: the Spark packages (``group:artifact``, no version; Maven Central)
            it needs beyond pyspark's own jars, and ``format_packages`` those a value
            ``format`` needs (``kafka``: ``spark-sql-kafka``, and ``spark-avro`` for Avro;
            :mod:`sqlstream.lowering.packages` adds the version).
        empty_available_now: as a source under ``trigger(availableNow=True)`` (``EMIT …
            ONCE``) it yields no rows on a new checkpoint (``rate``: no AvailableNow
            support of its own; warning ``SS360``).
        line_formats: the ``format`` values whose records are lines of text that
            :mod:`sqlstream.planning.malformed` reads and decodes itself under ``on_error = 'drop'``
            or ``'dead_letter'`` (``files``: csv and json); records of a
            :meth:`payload` are decoded there too.
    """

    name: str = ""
    source_format: str | None = None
    sink_format: str | None = None
    required: tuple[str, ...] = ()
    spark_options: tuple[str, ...] = ()
    number_options: dict[str, tuple[int, int]] = {}
    fixed_schema: tuple[tuple[str, str], ...] | None = None
    metadata: dict[str, tuple[str, str]] = {}
    sink_modes: frozenset[str] = ALL_MODES
    durable: bool = False
    bounded_source: bool = False
    continuous_source: bool = False
    continuous_sink: bool = True
    real_time_source: bool = False
    real_time_sink: bool = False
    own_options: tuple[str, ...] = ()
    passes_options: bool = True
    empty_available_now: bool = False
    path_target: bool = False
    file_sink: bool = False
    prints_rows: bool = False
    spark_packages: tuple[str, ...] = ()
    format_packages: dict[str, tuple[str, ...]] = {}
    line_formats: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"<connector {self.name}>"

    def can_be(self, role: str) -> bool:
        """Whether the connector can play ``role`` (``source``, ``table`` or ``sink``)."""
        if role == "sink":
            return self.sink_format is not None
        return self.source_format is not None and (role != "table" or self.bounded_source)

    # ---- option rules
    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Check the compiler options after the required ones are known to be there.

        Raises:
            OptionError: an invalid value (the base accepts everything).
        """

    def check_code(
        self, compiler: dict[str, ast.Option], source: Source, trust: bool
    ) -> tuple[OptionError, ...]:
        """Check the user code the options name (base: none): imported when ``trust``
        (the compile context's trust decision), else read without running it.

        Returns:
            Warnings (``SS274``: code that could not be checked).

        Raises:
            OptionError: code that does not fit.
        """
        return ()

    def ignored_options(
        self,
        compiler: dict[str, ast.Option],
        options: tuple[ast.Option, ...],
        source: Source,
        role: str,
    ) -> tuple[OptionError, ...]:
        """Options Spark accepts but ignores in ``role``: SS352 warnings (base: none)."""
        return ()

    def finish(self, resolved: ResolvedOptions, role: str, span) -> ResolvedOptions:
        """The options of a ``WITH`` list once checked, as ``role`` uses them: a connector
        may rename its own options to Spark's and keep settings for its lowering.
        Base: unchanged.

        Raises:
            SqlStreamError: an option combination the connector refuses.
        """
        return resolved

    def check_sink(
        self,
        resolved: ResolvedOptions,
        columns: tuple[tuple[str, str], ...] | None,
        output_mode: str,
        source: Source,
        spark_version: str,
    ) -> tuple[SqlStreamError, ...]:
        """Findings about a query written into this sink, once its columns (``(name,
        type)`` pairs, ``None`` when known only at run time) and output mode are known
        (``kafka``: a ``value`` column Spark can write, key columns that exist;
        ``postgres``: every key column is written), judged for Spark ``spark_version`` (a
        major.minor, the compile context's). Base: none."""
        return ()

    def check_source(self, resolved: ResolvedOptions, source: Source, spark_version: str) -> None:
        """Raise ``OptionError`` if unreadable on Spark ``spark_version`` (base: never)."""

    def declared(
        self,
        statement,
        resolved: ResolvedOptions,
        resolve_path: ResolvePath,
        project: str | None = None,
        trusted: bool = False,
    ) -> Connector:
        """The connector as ``statement`` (``CREATE STREAM`` / ``CREATE TABLE``) reads it: a
        connector whose schema depends on its options (``kafka``'s raw or Avro value) returns
        a copy with that ``fixed_schema`` / ``metadata``; a file it reads to know it (an Avro
        schema) lies in ``project`` unless ``trusted`` (as in :meth:`bind_columns`). Base:
        ``self``.

        Raises:
            SqlStreamError: declared columns the options contradict.
        """
        return self

    def bind_columns(
        self,
        resolved: ResolvedOptions,
        columns: list[ast.ColumnDef],
        path: str | None,
        report: Report,
        project: str | None = None,
        trusted: bool = False,
    ) -> tuple[tuple[tuple[str, str], ...], dict[str, str], tuple[tuple[str, str], ...]]:
        """How a source with declared ``columns`` (no fixed schema) reads them.

        Args:
            resolved: the source's options (after :meth:`finish`).
            columns: the declared physical columns, in declared order.
            path: the ``load()`` path (:meth:`source_target`, resolved), or ``None``.
            report: receives findings that do not stop the plan (``files``' CSV header
                checks, ``SS242`` / ``SS243``).
            project: the folder compile-time reads stay in (``None``: no boundary), see
                :attr:`sqlstream.ir.context.CompileContext.project`.
            trusted: compile-time reads may leave ``project``.

        Returns:
            ``(schema, read_as, options)``: the ``(name, type)`` pairs of the
            ``schema(…)`` call, in the order the source reads them; by declared name, the
            column each declared one is read from when that is another (the projection
            renames it); the Spark options of the read. Base: the declared columns as
            declared, ``{}``, the options written (``resolved.spark``).
        """
        return tuple((c.name.value, c.type) for c in columns), {}, resolved.spark

    def planned(self, relation: p.SourceRelation, statement) -> p.SourceRelation:
        """The planned read of ``statement`` with what the connector adds (options,
        ``settings`` its lowering reads). Base: unchanged."""
        return relation

    def sink_settings(
        self,
        resolved: ResolvedOptions,
        resolve_path: ResolvePath,
        project: str | None = None,
        trusted: bool = False,
    ) -> tuple[tuple[str, str], ...]:
        """The settings a sink's lowering reads (:attr:`plan.Sink.settings`); a file read
        for them stays in ``project`` unless ``trusted`` (as in :meth:`bind_columns`). Base:
        those :meth:`finish` kept."""
        return resolved.settings

    def source_target(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath
    ) -> tuple[str | None, str | None]:
        """``(format, path)`` of a read: the ``format(…)`` value (``None``: no format
        call) and the ``load(path)`` argument (or the table name). ``resolve_path`` makes a
        path relative to the `.ssql` file's folder. Base: the fixed format and ``path``."""
        return self.source_format, resolved.get("path")

    def sink_target(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath
    ) -> tuple[str | None, str | None]:
        """``(format, path)`` of a write: the ``format(…)`` value (``None``: none) and the
        ``start(path)`` argument (or the table name). Base: the fixed format, no path."""
        return self.sink_format, None

    def sink_options(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath, settings: dict[str, str]
    ) -> tuple[tuple[str, str], ...]:
        """``(name, value)`` options the sink adds after those written (``table``: the
        table's location); ``settings`` are the file's ``SET`` pairs so far, by lower-case
        key. Base: none."""
        return ()

    # ---- malformed records (sqlstream.planning.malformed)
    def payload(self, relation: p.SourceRelation) -> Payload | None:
        """How ``on_error = 'drop'`` / ``'dead_letter'`` (:mod:`sqlstream.planning.malformed`) finds
        the payload of each record this connector reads: ``kafka``'s ``value`` decoded as
        JSON, CSV or Avro. Base: ``None`` (``files`` sources are read by
        :mod:`sqlstream.planning.malformed` itself, one text line per record; other connectors
        carry typed records and cannot be malformed)."""
        return None

    def dead_letter_row(
        self, fields: tuple[tuple[str, str, str], ...], record: tuple[str, str]
    ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | None:
        """As a dead-letter sink of a source whose records have a value and key
        (``record``: their SQL, :attr:`Payload.record`): the ``selectExpr`` items and
        ``(name, type)`` columns of a dead letter, given its ``fields`` ``(name, type,
        SQL)`` (reason, source, position, time). Base: ``None``, a row of those columns
        beside ``raw`` (:mod:`sqlstream.planning.malformed`)."""
        return None


@dataclass(frozen=True)
class ResolvedOptions:
    """A ``WITH (…)`` list split into what the compiler reads and what Spark receives.

    Attributes:
        spec: the :class:`Connector`.
        compiler: compiler options by lower-case name (values as written).
        spark: ``(name, value)`` pairs for ``.option(name, value)``, in the order written.
        options: the original options by lower-case key, for positions in messages.
        warnings: options Spark will ignore (code SS352, severity warning).
        settings: ``(name, value)`` pairs the connector's lowering reads (not Spark
            options; see :meth:`Connector.finish`).
    """

    spec: Connector
    compiler: dict[str, ast.Option]
    spark: tuple[tuple[str, str], ...]
    options: dict[str, ast.Option]
    warnings: tuple[OptionError, ...] = ()
    settings: tuple[tuple[str, str], ...] = ()

    def get(self, key: str, default: str | None = None) -> str | None:
        """The text of compiler option ``key``, or ``default``."""
        option = self.compiler.get(key)
        return option.text if option is not None else default

    def required(self, key: str) -> str:
        """The text of compiler option ``key``, one the connector requires (the options
        were validated: it is there).

        Raises:
            KeyError: ``key`` was not given.
        """
        return self.compiler[key].text

    def source_target(self, resolve_path: ResolvePath) -> tuple[str | None, str | None]:
        """:meth:`Connector.source_target` of these options."""
        return self.spec.source_target(self, resolve_path)

    def sink_target(self, resolve_path: ResolvePath) -> tuple[str | None, str | None]:
        """:meth:`Connector.sink_target` of these options."""
        return self.spec.sink_target(self, resolve_path)
