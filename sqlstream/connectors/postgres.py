"""``connector = 'postgres'`` (and ``'jdbc'`` with a PostgreSQL URL): each micro-batch
written into a PostgreSQL table in one transaction, appended or upserted, exactly once.

The query runs with ``DataStreamWriter.foreachBatch`` and a :class:`PostgresWriter` made
from the options (the call ``translate`` prints)::

    (spark.sql(sql).writeStream
        .foreachBatch(importlib.import_module('sqlstream.connectors.postgres').PostgresWriter(
            url='postgresql://db:5432/dash', user='app', password='***', table='delays',
            mode='upsert', key_columns=['window_start', 'origin'], …))
        .outputMode('update') … .option('checkpointLocation', dir).queryName(name).start())

As the target of an ``AUTO CDC`` flow the function is an applier of changes instead
(:mod:`sqlstream.connectors.cdc.cdc_apply`, :mod:`sqlstream.connectors.cdc.postgres_cdc`).

On the driver, for micro-batch ``batch_id`` of the query whose id Spark keeps in its
checkpoint (the local property ``sql.streaming.queryId``), one transaction with psycopg:

1. the row of ``(query id, table)`` in the progress table (``sqlstream_batches``) is
   locked; if it holds ``batch_id`` or a later one, the batch was committed before (Spark
   replays the last batch after a crash, with the same rows) and nothing is written (the
   batch still runs, into Spark's ``noop`` sink: Spark 4.1 fails a stateful micro-batch
   whose ``foreachBatch`` did not process every partition,
   ``STATE_STORE_COMMIT_VALIDATION_FAILED``);
2. the table is created if missing, from the micro-batch's columns (:func:`pg_type`; the
   key columns are its primary key);
3. ``append``: ``COPY table FROM STDIN``; ``upsert``: ``COPY`` into a temporary table,
   then ``INSERT INTO table SELECT DISTINCT ON (keys) … ON CONFLICT (keys) DO UPDATE``
   (the last row of a key in the batch wins);
4. the progress row is set to ``batch_id``, and the transaction commits.

So a replayed batch changes nothing, for ``append`` too: exactly-once in effect. With
``EMIT CHANGES`` (update mode) an aggregation's table always holds each group's latest
value — what a dashboard reads.

Sources: Spark guide *Output Sinks* (ForeachBatch, "exactly-once … using the batchId");
PostgreSQL docs *INSERT … ON CONFLICT*, *COPY*, *CREATE TABLE*; psycopg 3 *COPY* and
*connection* docs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from sqlstream.connectors import upsert_options
from sqlstream.connectors.base import Connector, ResolvedOptions, ResolvePath
from sqlstream.connectors.cdc import applier_step
from sqlstream.connectors.foreach_batch import function_chain
from sqlstream.connectors.upsert_options import key_names
from sqlstream.diagnostics.errors import OptionError
from sqlstream.diagnostics.source_text import SECRET_TOKEN, Source
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier
from sqlstream.ir import plan as p
from sqlstream.ir.calls import Step

PROGRESS_TABLE = "sqlstream_batches"
_SCHEMES = ("postgresql://", "postgres://", "jdbc:postgresql://")


def libpq_url(url: str) -> str:
    """A URL libpq reads: Spark's ``jdbc:postgresql://…`` without ``jdbc:``."""
    return url[len("jdbc:") :] if url.lower().startswith("jdbc:") else url


class Postgres(Connector):
    """A PostgreSQL table: ``table`` and ``url`` (or ``host`` + ``database``) required;
    every output mode; durable."""

    name = "postgres"
    sink_format = "foreachBatch"
    required = ("table",)
    own_options: tuple[str, ...] = (
        "url",
        "host",
        "port",
        "database",
        "user",
        "password",
        "table",
        "mode",
        "key_columns",
        "progress_table",
    )
    passes_options = False
    durable = True
    continuous_sink = False

    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Raises:
        OptionError: ``SS222`` no address, both forms, a URL that is not
            PostgreSQL's, a bad port; ``SS223`` a mode other than append/upsert,
            upsert without ``key_columns``, ``key_columns`` without upsert.
        """
        url, host = compiler.get("url"), compiler.get("host")
        if url is None and host is None:
            where = next(iter(compiler.values()))
            raise OptionError(
                f"connector '{self.name}' needs option 'url' (or 'host' and 'database')",
                where.key_span,
                source,
                code="SS222",
                hint="add url = 'postgresql://host:5432/database'",
            )
        if url is not None and host is not None:
            raise OptionError(
                "give either 'url' or 'host', not both",
                host.key_span,
                source,
                code="SS222",
                hint="put the host into the URL, or drop the URL",
            )
        # a URL that is a secret is judged by its value (Source.unseal) and shown as ***
        if url is not None and not source.unseal(url.text).lower().startswith(_SCHEMES):
            raise OptionError(
                f"'{url.text}' is not a PostgreSQL URL",
                url.value_span,
                source,
                code="SS222",
                hint="postgresql://host:port/database (jdbc:postgresql://… also "
                "works); other databases: the foreach_batch connector",
            )
        if host is not None and "database" not in compiler:
            raise OptionError(
                "option 'host' needs option 'database'",
                host.key_span,
                source,
                code="SS222",
                hint="add database = '…'",
            )
        port = compiler.get("port")
        port_text = source.unseal(port.text) if port is not None else ""
        if port is not None and (not port_text.isdigit() or not 1 <= int(port_text) <= 65535):
            raise OptionError(
                f"port '{port.text}' is not a number from 1 to 65535",
                port.value_span,
                source,
                code="SS222",
                hint="the default is 5432",
            )
        upsert_options.check_mode(
            compiler,
            source,
            code="SS223",
            subject="",
            hint="mode = 'append' (insert every row) or 'upsert' (by key_columns)",
        )

    def check_sink(
        self,
        resolved: ResolvedOptions,
        columns,
        output_mode: str,
        source: Source,
        spark_version: str,
    ) -> tuple[OptionError, ...]:
        """``SS224``: a key column the query does not write (when its columns are known)."""
        return upsert_options.missing_key_columns(
            resolved.compiler.get("key_columns"), columns, source, "SS224"
        )

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, table)``: no ``format`` call; the table's name."""
        return None, self._table(resolved)

    def sink_options(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath, settings: dict[str, str]
    ) -> tuple[tuple[str, str], ...]:
        """The writer's options as ``(name, text)`` pairs, in a fixed order: ``url`` (a
        ``jdbc:`` prefix dropped), ``host``, ``port``, ``database``, ``user``,
        ``password``, ``table``, ``mode`` (default ``upsert`` with ``key_columns``, else
        ``append``), ``key_columns`` (``a,b``), ``progress_table``. Not ``.option()``
        calls: :meth:`format_steps` passes them to :class:`PostgresWriter`."""
        url = resolved.get("url")
        keys = key_names(resolved.get("key_columns"))
        pairs = [
            ("url", libpq_url(url) if url else None),
            ("host", resolved.get("host")),
            ("port", resolved.get("port")),
            ("database", resolved.get("database")),
            ("user", resolved.get("user")),
            ("password", resolved.get("password")),
            ("table", self._table(resolved)),
            ("mode", (resolved.get("mode") or ("upsert" if keys else "append")).lower()),
            ("key_columns", ",".join(keys) or None),
            ("progress_table", resolved.get("progress_table") or PROGRESS_TABLE),
        ]
        return tuple((k, v) for k, v in pairs if v is not None)

    @staticmethod
    def _table(resolved: ResolvedOptions) -> str | None:
        return resolved.get("table")

    def format_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """``foreachBatch(importlib.import_module('sqlstream.connectors.postgres')
        .PostgresWriter(url=…, …, key_columns=[…], …))``: the sink's options as keyword
        arguments (``port`` a number, ``key_columns`` a list)."""
        kwargs = []
        for key, text in sink.options:
            value: str | int | tuple[str, ...] = text
            if key == "port" and not SECRET_TOKEN.search(text):  # a secret: libpq reads text
                value = int(text)
            elif key == "key_columns":
                value = tuple(text.split(","))
            kwargs.append((key, value))
        flow = dict(sink.settings).get("auto_cdc")
        if flow is not None:
            connection = tuple((k, v) for k, v in kwargs if k not in ("mode", "key_columns"))
            target = "PostgresCdcTable"
            return (
                applier_step(flow, "sqlstream.connectors.cdc.postgres_cdc", target, connection),
            )
        return (
            Step(
                "foreachBatch", (function_chain(__name__, ("PostgresWriter",), call=tuple(kwargs)),)
            ),
        )

    def start_step(self, sink: p.Sink) -> Step:
        """``start()``: the path names the function or table, not an output path."""
        return Step("start")

    def option_steps(self, sink: p.Sink) -> tuple[Step, ...]:
        """None: the options are the writer's arguments (Spark ignores ``.option()`` here)."""
        return ()


class Jdbc(Postgres):
    """``connector = 'jdbc'`` with ``url = 'jdbc:postgresql://…'`` and ``dbtable`` (Spark's
    JDBC option names) or ``table``: the ``postgres`` sink. Other databases are refused."""

    name = "jdbc"
    required = ("url",)
    own_options = Postgres.own_options + ("dbtable",)

    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Raises:
        OptionError: ``SS222`` a URL that is not ``jdbc:postgresql://``, no table; see
            :meth:`Postgres.validate`.
        """
        url = compiler["url"]
        if not url.text.lower().startswith("jdbc:postgresql://"):
            raise OptionError(
                f"the jdbc sink writes PostgreSQL only, not '{url.text}'",
                url.value_span,
                source,
                code="SS222",
                hint="url = 'jdbc:postgresql://host:5432/db'; other databases: "
                "the foreach_batch connector",
            )
        if "table" not in compiler and "dbtable" not in compiler:
            raise OptionError(
                "connector 'jdbc' needs option 'dbtable'",
                url.key_span,
                source,
                code="SS222",
                hint="add dbtable = '…'",
            )
        super().validate(compiler, source)

    @staticmethod
    def _table(resolved: ResolvedOptions) -> str | None:
        return resolved.get("table") or resolved.get("dbtable")


# ---- run time: the foreachBatch writer (imports pyspark and psycopg when called) --------

_SIMPLE_TYPES = {
    "BooleanType": "boolean",
    "ByteType": "smallint",
    "ShortType": "smallint",
    "IntegerType": "integer",
    "LongType": "bigint",
    "FloatType": "real",
    "DoubleType": "double precision",
    "StringType": "text",
    "VarcharType": "text",
    "CharType": "text",
    "BinaryType": "bytea",
    "DateType": "date",
    "TimestampType": "timestamp with time zone",
    "TimestampNTZType": "timestamp",
    "DayTimeIntervalType": "interval",
    "YearMonthIntervalType": "interval",
}
_NESTED = ("ArrayType", "MapType", "StructType", "VariantType")


def pg_type(data_type) -> str:
    """The PostgreSQL type of a column of Spark type ``data_type`` (a pyspark
    ``DataType``): ``TIMESTAMP`` → ``timestamp with time zone`` (Spark's timestamps are
    instants), ``TIMESTAMP_NTZ`` → ``timestamp``, ``DECIMAL(p,s)`` → ``numeric(p,s)``,
    arrays, maps, structs and variants → ``jsonb`` (written as Spark's ``to_json``), any
    other → ``text``."""
    kind = type(data_type).__name__
    if kind == "DecimalType":
        return f"numeric({data_type.precision},{data_type.scale})"
    if kind in _NESTED:
        return "jsonb"
    return _SIMPLE_TYPES.get(kind, "text")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _read_expression(name: str, data_type) -> tuple[str, Callable[[Any], object] | None]:
    """``(Spark SQL expression, Python conversion or None)`` that reads column ``name`` for
    COPY: timestamps as microseconds since the epoch (exact, whatever the driver's time
    zone), nested values as JSON text, year-month intervals as months."""
    quoted = quote_identifier(name)
    kind = type(data_type).__name__
    if kind == "TimestampType":
        return f"unix_micros({quoted})", lambda v: _EPOCH + dt.timedelta(microseconds=v)
    if kind in _NESTED:
        return f"to_json({quoted})", None
    if kind == "YearMonthIntervalType":
        return f"CAST({quoted} AS INT)", lambda v: f"{v} months"
    return quoted, None


class PostgresWriter:
    """The ``foreachBatch`` function of a ``postgres`` sink: writes one micro-batch in one
    transaction, once per ``(query id, table, batch id)``.

    Args:
        table: the table (``name`` or ``schema.name``), created when missing.
        mode: ``append`` or ``upsert``.
        key_columns: the upsert keys (the created table's primary key).
        url: a libpq URL (``postgresql://…``), or ``None`` with ``host``.
        host, port, database, user, password: connection parameters (psycopg
            ``connect`` keywords; ``database`` is ``dbname``).
        progress_table: the table of committed batches (created when missing).

    Calling it (``writer(df, batch_id)``) raises what psycopg raises (Spark then fails the
    query with it; the batch is retried on restart).
    """

    def __init__(
        self,
        table: str,
        mode: str = "append",
        key_columns=(),
        url: str | None = None,
        host: str | None = None,
        port: int | None = None,
        database: str | None = None,
        user: str | None = None,
        password: str | None = None,
        progress_table: str = PROGRESS_TABLE,
    ):
        self.table, self.mode, self.key_columns = table, mode, tuple(key_columns)
        self.progress_table = progress_table
        self._url = libpq_url(url) if url else ""  # a secret URL arrives as written
        self._params: dict[str, Any] = {
            k: v
            for k, v in (
                ("host", host),
                ("port", port),
                ("dbname", database),
                ("user", user),
                ("password", password),
            )
            if v is not None
        }

    def __repr__(self) -> str:  # no connection parameters: the password is one
        return (
            f"PostgresWriter(table={self.table!r}, mode={self.mode!r}, "
            f"key_columns={list(self.key_columns)!r})"
        )

    def connect(self):
        """A new psycopg connection (not in autocommit: one transaction until commit)."""
        import psycopg

        return psycopg.connect(self._url, **self._params)

    @staticmethod
    def _name(text: str):
        from psycopg import sql

        return sql.Identifier(*[part.strip().strip('"') for part in text.split(".")])

    def __call__(self, df, batch_id: int) -> None:
        """Write micro-batch ``batch_id`` (its DataFrame ``df``), unless committed before."""
        from psycopg import sql

        context = df.sparkSession.sparkContext
        query_id = context.getLocalProperty("sql.streaming.queryId") or f"table:{self.table}"
        fields = df.schema.fields
        reads = [_read_expression(f.name, f.dataType) for f in fields]
        columns = sql.SQL(", ").join(sql.Identifier(f.name) for f in fields)
        with self.connect() as conn, conn.cursor() as cur:
            if self._committed(cur, query_id, batch_id):
                # Spark (4.1) checks that a micro-batch ran over every partition (its state
                # stores committed): run it, writing nowhere (the ``noop`` format).
                df.write.format("noop").mode("overwrite").save()
                return
            definitions = [
                sql.SQL("{} {}").format(sql.Identifier(f.name), sql.SQL(pg_type(f.dataType)))
                for f in fields
            ]
            keys = sql.SQL(", ").join(sql.Identifier(k) for k in self.key_columns)
            if self.key_columns:
                definitions.append(sql.SQL("PRIMARY KEY ({})").format(keys))
            cur.execute(
                sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(
                    self._name(self.table), sql.SQL(", ").join(definitions)
                )
            )
            target = self._name(self.table)
            if self.mode == "upsert":
                target = sql.Identifier("_sqlstream_batch")
                cur.execute(
                    sql.SQL(
                        "CREATE TEMPORARY TABLE {} ({}, _sqlstream_seq bigserial) ON COMMIT DROP"
                    ).format(target, sql.SQL(", ").join(definitions[: len(fields)]))
                )
            rows = df.selectExpr(*[e for e, _ in reads]).toLocalIterator(prefetchPartitions=True)
            with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN").format(target, columns)) as copy:
                for row in rows:
                    copy.write_row(
                        [
                            v if c is None or v is None else c(v)
                            for v, (_, c) in zip(row, reads, strict=True)
                        ]
                    )
            if self.mode == "upsert":
                self._merge(cur, fields, columns, keys)
            cur.execute(
                sql.SQL(
                    "INSERT INTO {} (query_id, table_name, batch_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT (query_id, table_name) DO UPDATE SET batch_id = EXCLUDED.batch_id, "
                    "committed_at = now()"
                ).format(self._name(self.progress_table)),
                (query_id, self.table, batch_id),
            )

    def _committed(self, cur, query_id: str, batch_id: int) -> bool:
        """Whether batch ``batch_id`` (or a later one) of the query was committed: the
        progress row (created when missing) is locked until the transaction ends."""
        from psycopg import sql

        progress = self._name(self.progress_table)
        cur.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (query_id text NOT NULL, table_name text NOT NULL, "
                "batch_id bigint NOT NULL, committed_at timestamp with time zone NOT NULL "
                "DEFAULT now(), PRIMARY KEY (query_id, table_name))"
            ).format(progress)
        )
        cur.execute(
            sql.SQL(
                "SELECT batch_id FROM {} WHERE query_id = %s AND table_name = %s FOR UPDATE"
            ).format(progress),
            (query_id, self.table),
        )
        row = cur.fetchone()
        return row is not None and row[0] >= batch_id

    def _merge(self, cur, fields, columns, keys) -> None:
        """``INSERT … SELECT DISTINCT ON (keys) … ON CONFLICT (keys) DO UPDATE`` from the
        batch's temporary table: the last row of each key in the batch wins."""
        from psycopg import sql

        others = [f.name for f in fields if f.name not in self.key_columns]
        action = (
            sql.SQL("DO NOTHING")
            if not others
            else sql.SQL("DO UPDATE SET {}").format(
                sql.SQL(", ").join(
                    sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(n)) for n in others
                )
            )
        )
        cur.execute(
            sql.SQL(
                "INSERT INTO {} ({}) SELECT DISTINCT ON ({}) {} FROM _sqlstream_batch "
                "ORDER BY {}, _sqlstream_seq DESC ON CONFLICT ({}) {}"
            ).format(self._name(self.table), columns, keys, columns, keys, keys, action)
        )
