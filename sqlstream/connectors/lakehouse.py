"""What the ``iceberg`` and ``delta`` connectors share: their option rules (``mode``,
``key_columns``, the output modes; a source's options on a sink and a sink's on a source,
the rate limits: :meth:`LakehouseSink.check_sink`, :meth:`LakehouseSink.check_source`), the
``foreachBatch`` call ``translate`` prints, and the run-time steps of a micro-batch written through a Python library (``pyiceberg``,
``deltalake``) rather than a Spark package.

A micro-batch is written by :class:`LakehouseWriter`, the ``foreachBatch`` function of the
sink (a subclass per format, in :mod:`.iceberg` and :mod:`.delta`):

1. the query's id — ``sql.streaming.queryId``, which Spark keeps in the checkpoint, so it is
   the same for every run on one checkpoint location — is the *application id*;
2. if the table's commit metadata says that this application committed ``batch_id`` or a
   later batch, the batch was written before (Spark replays the last micro-batch after a
   crash) and nothing is written; the batch still runs, into Spark's ``noop`` sink (Spark
   4.1 fails a stateful micro-batch that did not process every partition);
3. otherwise the micro-batch is collected to the driver as Arrow
   (``DataFrame.toArrow()``, PySpark 4.0+) and committed in ONE commit of the table that
   also records ``(application id, batch id)``: appended, overwritten (complete mode) or
   merged by key (``mode = 'upsert'``: the last row of a key in the batch wins).

So a replayed micro-batch changes nothing: exactly-once in effect, for append too.

For change data capture (``AUTO CDC``), :meth:`LakehouseWriter.apply_changes` is the one
call: *replace the rows of these keys with these rows and delete these keys, in one commit,
once per (application id, batch id)*.

Sources: Spark guide *Output Sinks* (ForeachBatch: "exactly-once … using the batchId");
PySpark ``DataFrame.toArrow``; delta-rs *Transactions* (app transactions) and *Merging a
table*; pyiceberg *API* (``Transaction.overwrite`` with an ``overwrite_filter``, snapshot
properties).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlstream.connectors import lakehouse_offsets, upsert_options
from sqlstream.connectors.base import Connector, ResolvedOptions
from sqlstream.connectors.cdc import applier_step
from sqlstream.connectors.foreach_batch import function_chain
from sqlstream.connectors.upsert_options import key_names
from sqlstream.diagnostics.errors import OptionError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, Step

# Commit metadata: the application (query) id and the micro-batch id of each commit.
ENGINE = "engine"
"""The sink option (in :attr:`~sqlstream.ir.plan.Sink.options`) that names the writer:
``spark`` for the JVM path (:mod:`.lakehouse_jvm`); absent for the Python path."""
SPARK = "spark"
SOURCE_OPTIONS = ("starting_version", "skip_change_commits")
"""Options of a source only (``SS283`` on a sink); the rate limits too
(:data:`.lakehouse_offsets.ALL_RATE_OPTIONS`)."""
SINK_OPTIONS = ("mode", "key_columns")
"""Options of a sink only (``SS283`` on a source)."""
OWN_OPTIONS = (*SINK_OPTIONS, *SOURCE_OPTIONS, *lakehouse_offsets.ALL_RATE_OPTIONS)
"""The options both connectors read themselves, besides where the table is."""
APP_KEY = "sqlstream.app_id"
BATCH_KEY = "sqlstream.batch_id"


def check_mode(compiler: dict[str, ast.Option], source: Source, connector: str) -> None:
    """The ``mode`` / ``key_columns`` pair of a lakehouse sink
    (:func:`.upsert_options.check_mode`).

    Raises:
        OptionError: ``SS281`` a mode other than append/upsert, upsert without
            ``key_columns``, ``key_columns`` without upsert.
    """
    upsert_options.check_mode(
        compiler,
        source,
        code="SS281",
        subject=f" of a {connector} sink",
        hint="mode = 'append' (add every row) or 'upsert' (a MERGE by key_columns)",
    )


def is_upsert(resolved: ResolvedOptions) -> bool:
    """Whether the sink merges by key (``mode = 'upsert'``, or ``key_columns`` alone)."""
    mode = resolved.get("mode")
    return mode.lower() == "upsert" if mode else bool(key_names(resolved.get("key_columns")))


def check_columns(
    resolved: ResolvedOptions, columns, output_mode: str, source: Source, connector: str
) -> tuple[OptionError, ...]:
    """The findings about the columns and output mode of a query into a lakehouse sink.

    Args:
        resolved: the sink's options.
        columns: the query's ``(name, type)`` pairs, or ``None`` when unknown.
        output_mode: ``append``, ``update`` or ``complete``.

    Returns:
        ``SS282`` for each key column the query does not write; ``SS370`` for update mode
        without ``mode = 'upsert'`` (an appended table would keep every changed row of a
        group, not its latest value).
    """
    found: list[OptionError] = []
    where = resolved.compiler.get("connector")
    if output_mode == "update" and not is_upsert(resolved) and where is not None:
        found.append(
            OptionError(
                f"a {connector} sink takes update output mode only with mode = 'upsert'",
                where.value_span,
                source,
                code="SS370",
                hint="add mode = 'upsert', key_columns = '…' (the grouping keys), or use "
                "EMIT FINAL (append) or a complete-mode query",
            )
        )
    found.extend(
        upsert_options.missing_key_columns(
            resolved.compiler.get("key_columns"), columns, source, "SS282"
        )
    )
    return tuple(found)


def check_role(resolved: ResolvedOptions, role: str, source: Source) -> None:
    """The options of a lakehouse connector used as ``role`` (``source`` or ``sink``).

    Raises:
        OptionError: ``SS283`` a sink's option (``mode``, ``key_columns``) on a source, or a
            source's (``starting_version``, ``skip_change_commits``) on a sink.
    """
    wrong = SINK_OPTIONS if role != "sink" else SOURCE_OPTIONS
    for key in wrong:
        option = resolved.compiler.get(key)
        if option is not None:
            other = "sink" if role != "sink" else "source"
            raise OptionError(
                f"'{key}' is an option of a {resolved.spec.name} {other}, not of a {role}",
                option.span,
                source,
                code="SS283",
                hint=f"remove {key}; a {role} takes "
                + ", ".join(SOURCE_OPTIONS if role != "sink" else SINK_OPTIONS),
            )
    version = resolved.compiler.get("starting_version")
    if version is not None and resolved.spec.name != "delta":
        raise OptionError(
            "starting_version is an option of a delta source (a table version)",
            version.span,
            source,
            code="SS283",
            hint="remove it: an iceberg source reads the table as of its first micro-batch, "
            "then each append snapshot",
        )
    if version is not None and not version.text.strip().isdigit():
        raise OptionError(
            f"starting_version '{version.text}' is not a table version (a whole number >= 0)",
            version.value_span,
            source,
            code="SS283",
            hint="starting_version = 3: read the commits from version 3 on",
        )
    skip = resolved.compiler.get("skip_change_commits")
    if skip is not None and skip.text.strip().lower() not in ("true", "false"):
        raise OptionError(
            f"skip_change_commits '{skip.text}' is not true or false",
            skip.value_span,
            source,
            code="SS283",
            hint="skip_change_commits = true: skip commits that change or delete rows",
        )


def writer_step(module: str, writer: str, sink: p.Sink, complete: bool = False) -> Step:
    """``foreachBatch(importlib.import_module(module).<writer>(…))``: the sink's options
    as keyword arguments, in their order (``key_columns`` a list); ``complete=True`` for a
    query in complete output mode (an overwrite per micro-batch)."""
    kwargs: list[tuple[str, object]] = []
    for key, text in sink.options:
        if key == "engine":  # the choice of writer (.lakehouse_jvm), not its argument
            continue
        kwargs.append((key, tuple(text.split(",")) if key == "key_columns" else text))
    if complete:
        kwargs.append(("complete", True))
    return Step("foreachBatch", (function_chain(module, (writer,), call=tuple(kwargs)),))


def cdc_applier_step(target: str, sink: p.Sink) -> Step | None:
    """The sink as the target of an ``AUTO CDC`` flow (its settings' ``auto_cdc``, JSON from
    :mod:`sqlstream.planning.flows`), or ``None`` when it is not one::

        foreachBatch(importlib.import_module('sqlstream.connectors.cdc.cdc_apply').CdcApplier(
            target=importlib.import_module('sqlstream.connectors.cdc.lakehouse_cdc')
                .<target>(…the sink's options…),
            keys=[…], columns=[…], scd_type=1, tracked=[…]))
    """
    flow_json = dict(sink.settings).get("auto_cdc")
    if flow_json is None:
        return None
    skipped = ("mode", "key_columns", ENGINE)  # the applier writes with pyiceberg/delta-rs
    options = tuple((k, v) for k, v in sink.options if k not in skipped)
    return applier_step(flow_json, "sqlstream.connectors.cdc.lakehouse_cdc", target, options)


def complete_chain(chain: Chain, module: str, writer: str, query: p.Query) -> Chain:
    """``chain`` (the common write chain of ``query``) with the writer told that the query
    runs in complete output mode, when it does."""
    if query.output_mode != "complete":
        return chain
    step = writer_step(module, writer, query.sink, complete=True)
    steps = tuple(step if s.name == "foreachBatch" else s for s in chain.steps)
    return dataclasses.replace(chain, steps=steps)


# ---- run time: what both writers do with a micro-batch (pyspark and pyarrow imported late)


def is_jvm(sink: p.Sink) -> bool:
    """Whether ``sink`` was planned onto the JVM path (its :data:`ENGINE` option)."""
    return dict(sink.options).get(ENGINE) == SPARK


class LakehouseSink(Connector):
    """What the ``iceberg`` and ``delta`` connectors share as sinks: each micro-batch
    written by a ``foreachBatch`` writer, whose arguments are the sink's options —
    :attr:`python_writer` (pyiceberg / delta-rs), or :attr:`jvm_writer` (the format's Spark
    package) when the sink was planned onto the JVM path (:func:`is_jvm`) — or by the
    applier :attr:`cdc_table` of an ``AUTO CDC`` flow into the table (on every minor)."""

    sink_format = "foreachBatch"
    passes_options = False
    durable = True
    continuous_sink = False
    python_writer: tuple[str, str] = ("", "")
    """``(module, class)`` of the Python path's writer."""
    jvm_writer: tuple[str, str] = ("", "")
    """``(module, class)`` of the JVM path's writer."""
    cdc_table: str = ""
    """The applier class of an ``AUTO CDC`` flow (:func:`cdc_applier_step`)."""
    jvm_source_minors: tuple[str, ...] = ()
    """The Spark minors whose package of the format reads a source of it (elsewhere
    sqlstream's Python reader does, :mod:`.lakehouse_source`)."""

    def check_source(self, resolved: ResolvedOptions, source: Source, spark_version: str) -> None:
        """Raises:
        OptionError: ``SS283`` a sink's option on a source, a bad ``starting_version`` or
            ``skip_change_commits`` (:func:`check_role`); ``SS286``-``SS288`` a rate limit
            (:func:`.lakehouse_offsets.check_rates`).
        """
        check_role(resolved, "source", source)
        python = spark_version not in self.jvm_source_minors
        lakehouse_offsets.check_rates(resolved, "source", python, spark_version, source)

    def check_sink(
        self,
        resolved: ResolvedOptions,
        columns,
        output_mode: str,
        source: Source,
        spark_version: str,
    ) -> tuple[OptionError, ...]:
        """``SS283`` a source's option on the sink (:func:`check_role`, a rate limit too),
        then ``SS282`` a key column not written and ``SS370`` update mode without upsert
        (:func:`check_columns`)."""
        try:
            check_role(resolved, "sink", source)
            lakehouse_offsets.check_rates(resolved, "sink", False, spark_version, source)
        except OptionError as error:
            return (error,)
        return check_columns(resolved, columns, output_mode, source, self.name)

    def writer(self, sink: p.Sink) -> tuple[str, str]:
        """``(module, class)`` of ``sink``'s ``foreachBatch`` writer."""
        return self.jvm_writer if is_jvm(sink) else self.python_writer

    def format_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """``foreachBatch(…<writer>(…))`` (:func:`writer_step`), or the applier of an
        ``AUTO CDC`` flow into the table (:func:`cdc_applier_step`)."""
        applier = cdc_applier_step(self.cdc_table, sink)
        return (applier or writer_step(*self.writer(sink), sink),)

    def write_chain(self, query: p.Query, trigger: Step | None) -> Chain:
        """The common chain; ``complete=True`` to the writer in complete output mode."""
        chain = super().write_chain(query, trigger)
        return complete_chain(chain, *self.writer(query.sink), query)

    def start_step(self, sink: p.Sink) -> Step:
        """``start()``: the table is the writer's."""
        return Step("start")

    def option_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """None: the options are the writer's arguments."""
        return ()


def app_id(df, fallback: str) -> str:
    """The id of the streaming query running ``df`` (``sql.streaming.queryId``: kept in
    the checkpoint, the same for every run on it), else ``fallback``."""
    context = df.sparkSession.sparkContext
    return context.getLocalProperty("sql.streaming.queryId") or fallback


def run_nowhere(df) -> None:
    """Run the micro-batch into Spark's ``noop`` sink: a replayed batch already committed
    still has to run over every partition (its state stores commit)."""
    df.write.format("noop").mode("overwrite").save()


def to_arrow(df):
    """The micro-batch as a ``pyarrow.Table`` (``DataFrame.toArrow``), its timestamps
    (instants) in UTC, the zone lakehouse formats store."""
    import pyarrow as pa

    table = df.toArrow()
    fields = []
    for field in table.schema:
        kind = field.type
        if pa.types.is_timestamp(kind) and kind.tz is not None:
            kind = pa.timestamp("us", tz="UTC")
        elif pa.types.is_large_string(kind):
            kind = pa.string()
        fields.append(pa.field(field.name, kind, field.nullable))
    return table.cast(pa.schema(fields))


def last_per_key(table, keys: tuple[str, ...]):
    """The rows of ``table`` (Arrow) with the last row of each key only (the batch's order)."""
    import pyarrow as pa

    if not keys or table.num_rows == 0:
        return table
    index = "__sqlstream_row"
    numbered = table.append_column(index, pa.array(range(table.num_rows), pa.int64()))
    last = numbered.group_by(list(keys), use_threads=False).aggregate([(index, "max")])
    return table.take(last.column(f"{index}_max").to_pylist()).combine_chunks()


class LakehouseWriter:
    """The ``foreachBatch`` function of a lakehouse sink (base of ``IcebergWriter`` and
    ``DeltaWriter``): one commit per micro-batch, once per ``(query id, batch id)``.

    Args:
        mode: ``append`` or ``upsert``.
        key_columns: the upsert keys.
        complete: the query runs in complete output mode: each micro-batch replaces the
            table's rows (an overwrite).

    A subclass implements :meth:`committed` (the last batch id the application committed)
    and :meth:`commit` (one commit of the table).
    """

    target = ""

    def __init__(self, mode: str = "append", key_columns=(), complete: bool = False):
        self.mode, self.key_columns, self.complete = mode, tuple(key_columns), complete

    def committed(self, app: str) -> int | None:
        """The last micro-batch id committed by application ``app``, or ``None``."""
        raise NotImplementedError

    def commit(self, rows, delete_keys, app: str, batch_id: int, overwrite: bool) -> None:
        """One commit: ``overwrite`` replaces every row with ``rows``; otherwise with
        :attr:`key_columns` the rows of the keys of ``rows`` and ``delete_keys`` are
        replaced by ``rows``, else ``rows`` is appended; ``(app, batch_id)`` recorded."""
        raise NotImplementedError

    def __call__(self, df, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (its DataFrame ``df``), unless committed before."""
        app = app_id(df, f"{type(self).__name__}:{self.target}")
        last = self.committed(app)
        if last is not None and last >= batch_id:
            run_nowhere(df)
            return
        rows = to_arrow(df)
        if rows.num_rows == 0 and not self.complete:
            return  # nothing to change: a replay of it changes nothing either
        if self.mode == "upsert" and not self.complete:
            rows = last_per_key(rows, self.key_columns)
        self.commit(rows, None, app, batch_id, overwrite=self.complete)

    def apply_changes(self, rows, delete_keys, app: str, batch_id: int) -> bool:
        """Replace the rows of the keys of ``rows`` with ``rows`` and delete the rows of
        the keys in ``delete_keys``, in one commit, once per ``(app, batch_id)`` — the call
        an applier of change data (``AUTO CDC``) makes per micro-batch.

        Args:
            rows: a ``pyarrow.Table`` of the table's columns, one row per key (the winner).
            delete_keys: a ``pyarrow.Table`` of the key columns (or ``None``): keys whose
                rows are deleted (a key in both is replaced by its row in ``rows``).
            app: the application id (e.g. :func:`app_id` of the micro-batch).
            batch_id: the micro-batch id.

        Returns:
            ``True`` if committed, ``False`` if ``(app, batch_id)`` (or a later batch) was
            committed before and nothing changed.

        Raises:
            ValueError: the writer has no ``key_columns``.
        """
        if not self.key_columns:
            raise ValueError("apply_changes needs key_columns")
        last = self.committed(app)
        if last is not None and last >= batch_id:
            return False
        self.commit(rows, delete_keys, app, batch_id, overwrite=False)
        return True


def commit_metadata(app: str, batch_id: int) -> dict[str, Any]:
    """The properties recorded with a commit: :data:`APP_KEY` and :data:`BATCH_KEY`."""
    return {APP_KEY: app, BATCH_KEY: str(batch_id)}
