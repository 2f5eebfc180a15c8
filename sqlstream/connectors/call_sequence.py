"""The common call sequence of a connector's read and write, as binding calls.

:class:`CallSequence` is the part of :class:`~sqlstream.connectors.base.Connector` that
lowers a planned read or write to binding calls (:mod:`sqlstream.ir.calls`): the steps
after ``spark.readStream`` / ``spark.read`` and the ``writeStream`` ends a connector
overrides (:meth:`CallSequence.read_steps`, :meth:`CallSequence.format_steps`,
:meth:`CallSequence.start_step`), and the sequence around them — projection, watermark,
temporary view; output mode, trigger, options, checkpoint, query name
(:meth:`CallSequence.read_chains`, :meth:`CallSequence.write_chain`).

Sources: Spark "Structured Streaming Programming Guide", *Input Sources* and *Output
Sinks*; PySpark ``DataStreamReader`` and ``DataStreamWriter``.
"""

from __future__ import annotations

from sqlstream.frontend.literals import quote_identifier
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, ChainOrigin, Step


class CallSequence:
    """The read and write calls of a connector, each step a method a connector may override
    (:class:`~sqlstream.connectors.base.Connector` is one)."""

    # ---- lowering: reads (DataStreamReader / DataFrameReader)
    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """The steps after ``spark.readStream`` (or ``spark.read``) up to the DataFrame:
        ``format(f)``, ``schema(ddl)``, ``option(k, v)``…, ``load([path])``
        (PySpark ``DataStreamReader.format/schema/option/load``)."""
        steps = [Step("format", (relation.format,))]
        schema = self.schema_arg(relation)
        if schema is not None:
            steps.append(Step("schema", (schema,)))
        steps += [Step("option", (k, v)) for k, v in relation.options]
        steps.append(Step("load", (relation.path,) if relation.path else ()))
        return tuple(steps)

    def schema_arg(self, relation: p.SourceRelation):
        """The ``schema(…)`` argument: the declared DDL string, or ``None`` (no call)."""
        return schema_ddl(relation)

    def read_chains(self, relation: p.SourceRelation) -> tuple[Chain, ...]:
        """The chains of a source read registered as a temporary view (the common sequence)::

            df = (spark.readStream <read_steps>)      # spark.read for CREATE TABLE
            df = df.withWatermark(column, delay)     # before the projection if watermark_first
            df = df.selectExpr(*projection)
            df = df.withWatermark(column, delay)     # otherwise after it
            df.createOrReplaceTempView(name)

        Spark guide: *Input Sources*, *Handling Late Data and Watermarking*.
        """
        what: ChainOrigin = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
        reader = Step("read" if relation.bounded else "readStream", call=False)
        chains = [Chain("spark", (reader, *self.read_steps(relation)), assign="df", **what)]
        steps = []
        if relation.projection:
            steps.append(Step("selectExpr", relation.projection))
        w = relation.watermark
        if w is not None:
            steps.insert(
                0 if relation.watermark_first else len(steps),
                Step("withWatermark", (w.column, w.delay)),
            )
        chains += [Chain("df", (step,), assign="df", **what) for step in steps]
        chains.append(Chain("df", (Step("createOrReplaceTempView", (relation.name,)),), **what))
        return tuple(chains)

    # ---- lowering: writes (DataStreamWriter)
    def format_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """``format(f)`` after ``writeStream`` (none when the sink has no format)."""
        return (Step("format", (sink.format,)),) if sink.format else ()

    def option_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """``option(k, v)`` for each of the sink's options (``DataStreamWriter.option``);
        a ``foreachBatch`` sink passes them to its function instead."""
        return tuple(Step("option", (k, v)) for k, v in sink.options)

    def start_step(self, sink: p.Sink) -> Step:
        """The call that starts the query: ``start([path])`` (``DataStreamWriter.start``)."""
        return Step("start", (sink.path,) if sink.path else ())

    def write_chain(self, query: p.Query, trigger: Step | None) -> Chain:
        """The chain that starts ``query`` (the common sequence)::

            (spark.sql(sql).writeStream <format_steps> .outputMode(mode) [.trigger(…)]
                .option(k, v)… [.partitionBy(…)] [.option('checkpointLocation', dir)]
                .queryName(name) <start_step>)

        ``trigger`` is the lowered trigger (:func:`sqlstream.lowering.lower.trigger_step`).
        Spark guide: *Starting Streaming Queries*, *Output Modes*, *Triggers*.
        """
        sink = query.sink
        steps = [
            Step("sql", (query.sql,)),
            Step("writeStream", call=False),
            *self.format_steps(sink),
            Step("outputMode", (query.output_mode,)),
        ]
        if trigger is not None:
            steps.append(trigger)
        steps += self.option_steps(sink)
        if sink.partition_by:
            steps.append(Step("partitionBy", sink.partition_by))
        if query.checkpoint_location:
            steps.append(Step("option", ("checkpointLocation", query.checkpoint_location)))
        steps += [Step("queryName", (query.name,)), self.start_step(sink)]
        return Chain(
            "spark",
            tuple(steps),
            label=f"Spark refused to start query '{query.name}'",
            span=query.span,
        )


def schema_ddl(relation: p.SourceRelation) -> str | None:
    """The relation's ``read_columns`` as a Spark DDL schema string (``"`a` STRING, `b` INT"``,
    the argument of ``DataStreamReader.schema``), or ``None`` when it declares none (the
    reader infers them)."""
    if not relation.read_columns:
        return None
    return ", ".join(f"{quote_identifier(n)} {t}" for n, t in relation.read_columns)
