"""``connector = 'kafka'``: Apache Kafka topics as a stream (or table) and as a sink.

Source: Spark's Kafka source (``readStream.format('kafka')``, package
``spark-sql-kafka-0-10``; see :mod:`sqlstream.lowering.packages`) reads records with the fixed
columns ``key``, ``value`` (binary), ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType`` (and ``headers`` with ``includeHeaders``). The declared columns are decoded
from ``value`` by ``format``:

* ``json`` (the default when columns are declared): ``from_json(CAST(value AS STRING), ddl)``;
* ``csv``: ``from_csv(CAST(value AS STRING), ddl)``;
* ``avro``: ``from_avro(value, schema)`` with ``avro_schema`` (inline JSON or an ``.avsc``
  path); the declared columns must be fields of the schema with the types Spark maps them
  to (checked when compiling); without declared columns the stream has every field;
* ``debezium-json``: a Debezium change record, its row image into the declared columns
  (:mod:`sqlstream.connectors.formats.debezium`; tombstones skipped);
* ``raw`` (the default without columns): Kafka's own columns, ``key`` / ``value`` as
  ``BINARY`` or, if declared so, ``STRING``.

Decoding fails the query on a record that does not parse (``mode`` ``FAILFAST``; with
``on_error = 'drop'`` / ``'dead_letter'``, :mod:`sqlstream.planning.malformed` decodes through
:meth:`Kafka.payload`): a value is never silently NULLs. ``METADATA FROM 'key'`` (``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``, ``headers``) exposes Kafka's
columns beside the decoded ones, through a struct ``__kafka`` the decoding keeps.

Sink: Spark's Kafka sink (``writeStream.format('kafka')``) writes a ``value`` column
(string or binary), optional ``key``, ``headers``, ``partition``. A query with a ``value``
column is written as it is; otherwise its columns are encoded into ``value`` by ``format``
(``json``: ``to_json(struct(…))``, ``avro``: ``to_avro(struct(…)[, avro_schema])``,
``csv``: ``to_csv``). The key is the query's ``key`` column or ``key_columns`` (one column
as text, several as a JSON object). Every output mode works (Spark's Kafka sink is
at-least-once).

Options: ``bootstrap_servers`` (Spark's ``kafka.bootstrap.servers``), ``topic`` (a
source's ``subscribe``, a sink's ``topic``), ``topic_pattern`` (``subscribePattern``),
``starting_offsets`` (``startingOffsets``), Spark's other Kafka options in camelCase or
snake_case, and every ``kafka.*`` consumer/producer property passed through.

How ``value`` is decoded and a query's rows encoded, as SQL, is
:mod:`sqlstream.connectors.formats.kafka_records`.

Sources: Spark "Structured Streaming + Kafka Integration Guide"; "Apache Avro Data Source Guide"
(``from_avro``, ``to_avro``, types); Spark SQL ``from_json``, ``from_csv``, ``to_json``, ``to_csv``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

from sqlstream.connectors.base import (
    SPARK_AVRO,
    SPARK_KAFKA,
    Connector,
    ResolvedOptions,
    ResolvePath,
)
from sqlstream.connectors.formats import debezium, kafka_records
from sqlstream.connectors.formats.avro import avro_columns, load_schema, quotable
from sqlstream.connectors.formats.kafka_records import HEADERS_TYPE, KAFKA_COLUMNS, split_names
from sqlstream.connectors.payload import Payload
from sqlstream.diagnostics.errors import SqlStreamError, did_you_mean
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as _quote
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Chain, ChainOrigin, Step

VALUE_FORMATS = ("json", "csv", "avro", "raw", debezium.DEBEZIUM)
SOURCE_OPTIONS = (
    "assign",
    "subscribe",
    "subscribePattern",
    "startingOffsets",
    "endingOffsets",
    "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp",
    "startingTimestamp",
    "endingTimestamp",
    "startingOffsetsByTimestampStrategy",
    "failOnDataLoss",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "maxRecordsPerPartition",
    "groupIdPrefix",
    "includeHeaders",
)
# Options the connector reads itself (consumed, renamed to Spark's or used by the decoding).
OWN_OPTIONS = ("bootstrap_servers", "topic", "topic_pattern", "avro_schema", "key_columns")


class KafkaError(SqlStreamError):
    """A Kafka option or sink column that cannot work (SS210, SS212; an Avro schema that
    cannot be read is :mod:`sqlstream.connectors.formats.avro`'s SS211)."""

    code = "SS210"


class Kafka(Connector):
    """Kafka topics: ``bootstrap_servers`` and ``topic`` (or ``topic_pattern``) required."""

    value_format: str  # set on the copy a declared stream reads (see declared)
    avro_schema: dict | None
    name = "kafka"
    source_format = "kafka"
    sink_format = "kafka"
    spark_options = SOURCE_OPTIONS
    own_options = OWN_OPTIONS
    number_options = {
        "maxOffsetsPerTrigger": (64, 1),
        "minOffsetsPerTrigger": (64, 1),
        "minPartitions": (32, 1),
        "maxRecordsPerPartition": (64, 1),
    }
    metadata = {
        **{n: (f"`__kafka`.{_quote(n)}", t) for n, t in KAFKA_COLUMNS if n != "value"},
        "headers": ("`__kafka`.`headers`", HEADERS_TYPE),
    }
    durable = True
    spark_packages, format_packages = (SPARK_KAFKA,), {"avro": (SPARK_AVRO,)}
    bounded_source = True
    continuous_source = True
    real_time_source = True
    real_time_sink = True

    # ---- options
    def finish(self, resolved: ResolvedOptions, role: str, span) -> ResolvedOptions:
        """Rename the connector's options to Spark's and check them.

        ``bootstrap_servers`` → ``kafka.bootstrap.servers``; ``topic`` → ``subscribe``
        (source) or ``topic`` (sink); ``topic_pattern`` → ``subscribePattern``. The value
        format, Avro schema and key columns go to ``settings`` (read by the lowering).

        Raises:
            KafkaError: ``SS210``: no bootstrap servers, no topic (or both ``topic`` and
                ``topic_pattern``), ``topic_pattern`` on a sink, an unknown ``format``.
        """
        compiler, spark = resolved.compiler, list(resolved.spark)
        given = {k.lower() for k, _ in spark}
        servers = compiler.get("bootstrap_servers")
        if servers is not None:
            spark.insert(0, ("kafka.bootstrap.servers", servers.text))
        elif "kafka.bootstrap.servers" not in given:
            raise KafkaError(
                "connector 'kafka' needs option 'bootstrap_servers'",
                span,
                hint="add bootstrap_servers = 'host:9092' (Spark's "
                "kafka.bootstrap.servers) to the WITH list",
            )
        topic, pattern = compiler.get("topic"), compiler.get("topic_pattern")
        if role == "sink":
            if pattern is not None:
                raise KafkaError(
                    "a Kafka sink writes to one 'topic', not a 'topic_pattern'",
                    pattern.key_span,
                    hint="write topic = '…'",
                )
            if topic is not None:
                spark.insert(1, ("topic", topic.text))
        else:
            subscriptions = [k for k in ("assign", "subscribe", "subscribepattern") if k in given]
            chosen = [o for o in (topic, pattern) if o is not None]
            if len(chosen) + len(subscriptions) != 1:
                where = chosen[1].key_span if len(chosen) > 1 else span
                raise KafkaError(
                    "connector 'kafka' reads one of 'topic', 'topic_pattern' (or Spark's "
                    "'assign')" + (": give only one" if chosen or subscriptions else ""),
                    where,
                    hint="topic = 'a' or topic = 'a,b' (Spark's subscribe), or topic_pattern = "
                    "'flights.*' (subscribePattern)",
                )
            if topic is not None:
                spark.insert(1, ("subscribe", topic.text))
            elif pattern is not None:
                spark.insert(1, ("subscribePattern", pattern.text))
        fmt = compiler.get("format")
        if fmt is not None and fmt.text.lower() not in VALUE_FORMATS:
            raise KafkaError(
                f"unknown Kafka value format '{fmt.text}'{did_you_mean(fmt.text.lower(), VALUE_FORMATS)}",
                fmt.value_span,
                hint=f"formats: {', '.join(VALUE_FORMATS)}",
            )
        avro = compiler.get("avro_schema")
        if avro is not None and (fmt is None or fmt.text.lower() != "avro"):
            raise KafkaError(
                "option 'avro_schema' needs format = 'avro'",
                avro.key_span,
                hint="add format = 'avro', or remove avro_schema",
            )
        if role != "sink" and compiler.get("key_columns") is not None:
            raise KafkaError(
                "'key_columns' is an option of a Kafka sink",
                compiler["key_columns"].key_span,
                hint="remove it",
            )
        settings = [(k, compiler[k].text) for k in ("format", "key_columns") if k in compiler]
        return replace(resolved, spark=tuple(spark), settings=tuple(settings))

    # ---- sources
    def declared(
        self,
        statement,
        resolved: ResolvedOptions,
        resolve_path: ResolvePath,
        project: str | None = None,
        trusted: bool = False,
    ) -> Connector:
        """The connector as ``statement`` reads it: with ``format = 'raw'`` (the default
        without declared columns) Kafka's fixed columns; with ``avro`` the fields of the
        Avro schema (its file read only inside ``project`` unless ``trusted``:
        :func:`~sqlstream.connectors.formats.avro.load_schema`), against which the declared
        columns are checked.

        Raises:
            KafkaError: ``SS210`` a raw stream declaring another column or type;
                ``SS211`` an Avro schema that cannot be read or is not a record, a declared
                column that is not one of its fields or has another type.
        """
        from sqlstream.analysis.spark_types import spark_type

        physical = [c for c in statement.columns if isinstance(c, ast.ColumnDef)]
        fmt = (resolved.get("format") or ("json" if physical else "raw")).lower()
        if resolved.compiler.get("infer_schema") is not None:
            raise KafkaError(
                "connector 'kafka' cannot infer a schema",
                resolved.compiler["infer_schema"].key_span,
                hint="declare the columns; with format = 'avro' they can come from avro_schema",
            )
        if fmt in ("json", "csv", debezium.DEBEZIUM) and not physical:
            raise KafkaError(
                f"stream '{statement.name}' needs its columns to decode {fmt} values",
                statement.name.span,
                hint="declare them, e.g. (origin STRING, time_hour TIMESTAMP); "
                "or read the bytes with format = 'raw'",
            )
        spec = copy.copy(self)
        spec.value_format = fmt
        spec.avro_schema = None
        if fmt == debezium.DEBEZIUM:  # the envelope's metadata keys beside Kafka's
            spec.metadata = debezium.metadata(statement, self.metadata)
        if fmt == "raw":
            spec.fixed_schema = KAFKA_COLUMNS
            spec.metadata = {n: (_quote(n), t) for n, (_, t) in self.metadata.items()}
            spec.metadata["headers"] = ("`headers`", HEADERS_TYPE)
            fixed = dict((n.lower(), t) for n, t in KAFKA_COLUMNS)
            for column in physical:
                name = column.name.value.lower()
                allowed = (
                    ("STRING", "BINARY") if name in ("key", "value") else (fixed.get(name, ""),)
                )
                if name in fixed and column.type not in allowed:
                    raise KafkaError(
                        f"Kafka's column '{column.name}' is {' or '.join(allowed)}, not {column.type}",
                        column.span,
                        hint="declare key and value as STRING or BINARY; decode a "
                        "payload with format = 'json', 'csv' or 'avro'",
                    )
        elif fmt == "avro":
            option = resolved.compiler.get("avro_schema")
            if option is None:
                raise KafkaError(
                    "format = 'avro' needs option 'avro_schema'",
                    resolved.compiler["format"].value_span,
                    hint="avro_schema = 'schemas/flight.avsc' or the schema's JSON",
                )
            spec.avro_schema = load_schema(option, resolve_path, project, trusted)
            quoted = quotable(option, resolve_path, project)
            spec.fixed_schema = avro_columns(spec.avro_schema, option, quoted)
            fields = dict((n.lower(), t) for n, t in spec.fixed_schema)
            listed = ", ".join(n for n, _ in spec.fixed_schema)
            for column in physical:
                name = column.name.value.lower()
                if name not in fields:
                    raise KafkaError(
                        f"column '{column.name}' is not a field of the Avro schema"
                        + (
                            f"{did_you_mean(name, fields)} (its fields: {listed})"
                            if quoted
                            else " (a file outside the project: its fields are not quoted)"
                        ),
                        column.name.span,
                        code="SS211",
                        hint="declare only fields of avro_schema, by name",
                    )
                if fields[name] != spark_type(column.type):
                    given = fields[name] if quoted else "another type (not quoted)"
                    raise KafkaError(
                        f"column '{column.name}' is declared {column.type} but the Avro schema "
                        f"gives {given}",
                        column.span,
                        code="SS211",
                        hint=f"declare {column.name.value} {fields[name]} (Spark's type for the "
                        "Avro field), or cast it in a computed column"
                        if quoted
                        else "declare the Avro field's type, or cast it in a computed column",
                    )
        return spec

    def planned(self, relation: p.SourceRelation, statement) -> p.SourceRelation:
        """Record the decoding in the relation's ``settings`` (value format, Avro schema,
        whether metadata columns are used) and ask Spark for ``headers`` when they are."""
        keys = {
            (c.key or c.name.value).lower()
            for c in statement.columns
            if isinstance(c, ast.MetadataColumn)
        }
        settings = dict(relation.settings)
        settings["format"] = getattr(self, "value_format", "raw")
        if getattr(self, "avro_schema", None) is not None:
            settings["avro_schema"] = json.dumps(self.avro_schema, separators=(",", ":"))
        if keys and settings["format"] != "raw":
            settings["metadata"] = "true"
        options = relation.options
        if "headers" in keys and "includeheaders" not in relation.spark_options:
            options += (("includeHeaders", "true"),)
        return replace(relation, options=options, settings=tuple(settings.items()))

    def source_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``('kafka', what it subscribes to)``: the topics (or pattern, or assignment) stand
        for the input in the plan and the state signature (another topic on a restart is
        another source); ``load()`` takes no path."""
        topics = [v for k, v in resolved.spark if k in ("subscribe", "subscribePattern", "assign")]
        return self.source_format, topics[0] if topics else None

    def schema_arg(self, relation: p.SourceRelation):
        """``None``: the Kafka source has a fixed schema (Spark refuses ``schema(…)``)."""
        return None

    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """``format('kafka').option(k, v)….load()`` (the topic is an option)."""
        return (
            Step("format", ("kafka",)),
            *(Step("option", (k, v)) for k, v in relation.options),
            Step("load"),
        )

    def read_chains(self, relation: p.SourceRelation) -> tuple[Chain, ...]:
        """The common read sequence with the decoding of ``value`` after ``load()``::

        df = df.selectExpr("from_json(CAST(value AS STRING), '<ddl>', …) AS `__value`",
                           'struct(key, topic, …) AS `__kafka`')   # with metadata only
        df = df.selectExpr('`__value`.*', '`__kafka`')
        """
        chains = list(super().read_chains(relation))
        decode = self.decode_steps(relation)
        what: ChainOrigin = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
        chains[1:1] = [Chain("df", (step,), assign="df", **what) for step in decode]
        return tuple(chains)

    def decode_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """The ``selectExpr`` steps that decode ``value``
        (:func:`sqlstream.connectors.formats.kafka_records.decode_steps`)."""
        return kafka_records.decode_steps(relation)

    def payload(self, relation: p.SourceRelation) -> Payload | None:
        """``value`` as ``on_error`` decodes it
        (:func:`sqlstream.connectors.formats.kafka_records.payload`)."""
        return kafka_records.payload(relation)

    def dead_letter_row(self, fields, record):
        """A Kafka source's dead letter in a Kafka sink
        (:func:`sqlstream.connectors.formats.kafka_records.dead_letter_row`)."""
        return kafka_records.dead_letter_row(fields, record)

    # ---- sinks
    def check_sink(
        self, resolved: ResolvedOptions, columns, output_mode: str, source, spark_version: str
    ) -> tuple[SqlStreamError, ...]:
        """Findings (``SS212``) about the columns a query writes to this sink: a ``value``,
        ``key`` or ``headers`` column Spark cannot write, ``key_columns`` that are not
        columns, no topic; positioned at the sink's ``connector`` (or ``key_columns``)
        option. ``columns`` ``None`` (known only at run time): none."""
        findings: list[SqlStreamError] = []
        if columns is None:
            return ()
        span = resolved.options["connector"].value_span
        types = {n.lower(): t for n, t in columns}
        options = resolved.compiler
        if (
            "topic" not in options
            and "topic" not in {k.lower() for k, _ in resolved.spark}
            and "topic" not in types
        ):
            findings.append(
                KafkaError(
                    "a Kafka sink needs option 'topic' or a 'topic' column",
                    span,
                    code="SS212",
                    hint="add topic = '…' to the sink",
                )
            )
        fmt = options.get("format")
        if fmt is not None and fmt.text.lower() == "raw" and "value" not in types:
            findings.append(
                KafkaError(
                    "a raw Kafka sink writes the query's 'value' column, and the query has none",
                    fmt.value_span,
                    code="SS212",
                    hint="add a column AS value (STRING or BINARY), or encode the row with "
                    "format = 'json' (the default), 'avro' or 'csv'",
                )
            )
        if "value" in types and types["value"] not in ("STRING", "BINARY", "UNKNOWN"):
            findings.append(
                KafkaError(
                    f"the 'value' column written to Kafka is {types['value']}; Spark writes only "
                    "STRING or BINARY",
                    span,
                    code="SS212",
                    hint="CAST(… AS STRING) AS value, or rename the column so the row is encoded",
                )
            )
        if "headers" in types and types["headers"] not in (HEADERS_TYPE, "UNKNOWN"):
            findings.append(
                KafkaError(
                    f"the 'headers' column written to Kafka is {types['headers']}, not {HEADERS_TYPE}",
                    span,
                    code="SS212",
                    hint="build it with array(named_struct('key', …, 'value', CAST(… AS BINARY)))",
                )
            )
        key_columns = options.get("key_columns")
        if key_columns is not None:
            if "key" in types:
                findings.append(
                    KafkaError(
                        "the query has a 'key' column and the sink 'key_columns'",
                        key_columns.key_span,
                        code="SS212",
                        hint="remove one of them",
                    )
                )
            for name in split_names(key_columns.text):
                if name.lower() not in types:
                    findings.append(
                        KafkaError(
                            f"key column '{name}' is not a column of the query"
                            f"{did_you_mean(name.lower(), types)}",
                            key_columns.value_span,
                            code="SS212",
                            hint=f"the query's columns: {', '.join(n for n, _ in columns)}",
                        )
                    )
        return tuple(findings)

    def sink_settings(
        self,
        resolved: ResolvedOptions,
        resolve_path: ResolvePath,
        project: str | None = None,
        trusted: bool = False,
    ) -> tuple[tuple[str, str], ...]:
        """The sink's settings, with ``avro_schema`` read (inside ``project`` unless
        ``trusted``) and made compact JSON.

        Raises:
            KafkaError: ``SS211``: an Avro schema that cannot be read.
        """
        settings = dict(resolved.settings)
        option = resolved.compiler.get("avro_schema")
        if option is not None:
            settings["avro_schema"] = json.dumps(
                load_schema(option, resolve_path, project, trusted), separators=(",", ":")
            )
        return tuple(settings.items())

    def encode_step(self, query: p.Query) -> Step | None:
        """The ``selectExpr`` that encodes the query's rows into Kafka's columns
        (:func:`sqlstream.connectors.formats.kafka_records.encode_step`), or ``None``."""
        return kafka_records.encode_step(query)

    def write_chain(self, query: p.Query, trigger: Step | None) -> Chain:
        """The common write chain with :meth:`encode_step` after ``spark.sql(…)``."""
        chain = super().write_chain(query, trigger)
        step = self.encode_step(query)
        if step is None:
            return chain
        return replace(chain, steps=(chain.steps[0], step, *chain.steps[1:]))
