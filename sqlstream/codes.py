"""Every finding code of sqlstream, each defined once: its severity, title and documentation.

A finding (:class:`~sqlstream.errors.SqlStreamError`) carries a code registered here;
constructing one with any other code raises ``KeyError``. Ranges: ``SS0xx`` files and
variables, ``SS1xx`` syntax, ``SS2xx`` names, options, meaning and types, ``SS3xx``
streaming rules (``SS35x`` warnings), ``SS4xx`` checkpoints and restarts, ``SS5xx`` Spark
at run time. The rule numbers in
the docs (R1, R2 …) are those of ``docs/streaming-rules.md``, where each was verified on
Spark 4.1.4.

The README's "Finding codes" table is generated from :data:`CODES` by
``python tools/gen_codes_table.py`` (``--readme README.md`` rewrites it in place);
``tests/test_codes.py`` fails when the README's table differs from :func:`markdown_table`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CODES", "Code", "code", "markdown_table", "replace_table"]

SEVERITIES = ("error", "warning")
_CODE = re.compile(r"SS\d{3}\Z")


@dataclass(frozen=True)
class Code:
    """One finding code.

    Attributes:
        code: ``SS`` and three digits, e.g. ``"SS301"``.
        severity: ``"error"`` (the file cannot run) or ``"warning"`` (it runs, perhaps not
            as meant): the severity of its findings unless one says otherwise (a lenient
            planner, ``compile(…, checks=False)``, records errors as warnings).
        title: one line of Markdown, as the README's table shows it.
        doc: a few sentences: what Spark does and why, an anti-pattern and the fix.

    Raises:
        ValueError: a malformed code, an unknown severity, or an empty title or doc.
    """

    code: str
    severity: str
    title: str
    doc: str

    def __post_init__(self) -> None:
        if not _CODE.match(self.code):
            raise ValueError(f"finding code {self.code!r} is not SS and three digits")
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: severity {self.severity!r} is not one of {SEVERITIES}")
        if not self.title.strip() or "\n" in self.title or not self.doc.strip():
            raise ValueError(f"{self.code}: needs a one-line title and a doc")


def _codes(*records: tuple[str, str, str, str]) -> dict[str, Code]:
    """The registry from ``(code, severity, title, doc)`` tuples; white space in docs folded."""
    registry: dict[str, Code] = {}
    for name, severity, title, doc in records:
        if name in registry:
            raise ValueError(f"finding code {name} is defined twice")
        registry[name] = Code(name, severity, title, " ".join(doc.split()))
    return dict(sorted(registry.items()))


CODES: dict[str, Code] = _codes(
    # ---- files and variables ----------------------------------------------------------------
    ("SS000", "error", "an error without a more specific code (the default of "
     "`SqlStreamError`; every error sqlstream raises has its own code)", """
     The code of a ``SqlStreamError`` constructed without one, e.g. by code that uses the
     Python API. sqlstream itself never reports it: seeing it is a bug."""),
    ("SS001", "error", "undefined or malformed `${…}` variable, unset environment variable", """
     Variables are replaced before parsing, so the file cannot be read without a value.
     Anti-pattern: ``path = '${data}/flights'`` run without ``--var data=…``. Fix: pass
     ``--var data=/mnt/data`` (API: ``variables={'data': …}``), or ``export NAME=…`` for
     ``${env:NAME}``; write ``${name}`` with letters, digits, ``_``, ``.`` and ``-``."""),
    ("SS002", "error", "a file that cannot be read", """
     The ``.ssql`` file named on the command line (or to ``compile_file``) does not exist,
     is a directory, or is not readable (the message gives the operating system's reason),
     or it is not UTF-8: the message gives the byte offset of the first byte that is not,
     and the caret points at it. A leading byte-order mark is accepted. Fix: save the file
     as UTF-8."""),
    # ---- syntax ----------------------------------------------------------------------------
    ("SS101", "error", "the statement grammar does not accept the text", """
     The statement envelope (LANGUAGE.md §2: ``CREATE STREAM``, ``CREATE SINK``, ``INSERT
     INTO``, ``SET`` …) is parsed before any SQL; the message says what was found and what
     could come there. Anti-pattern: a statement without its closing ``;``, an unterminated
     string. Fix: end every statement with ``;`` and close every quote."""),
    ("SS102", "error", "a query body or expression is not valid Spark SQL", """
     Query bodies, computed columns and watermark expressions are Spark SQL (plus window
     TVFs and ``WATERMARK``), parsed with sqlglot's Spark dialect; Spark would refuse the
     text with a ``PARSE_SYNTAX_ERROR``, or a typed literal with ``INVALID_INTERVAL_FORMAT`` /
     ``INVALID_TYPED_LITERAL`` (``INTERVAL 'abc' HOUR``, ``DATE '2024-02-30'``,
     ``TIMESTAMP '2024-13-01'``). Anti-pattern: ``SELECT a b c FROM s``. Fix: the caret
     points at the first token that does not fit."""),
    ("SS103", "error", "parentheses or nested types deeper than 1,000 levels, subqueries "
     "deeper than 256", """
     Parentheses (expressions, calls, subqueries) and nested types (``ARRAY<…>``,
     ``STRUCT<…>``, ``MAP<…>``) may nest up to 1,000 levels, subqueries up to 256
     (``sqlstream.limits``): deeper than Spark 4.1 accepts, which refuses 400 nested
     parentheses or 200 nested subqueries with ``FAILED_TO_PARSE_TOO_COMPLEX``. The same
     code is given to a statement too complex to compile for any other reason.
     Anti-pattern: generated SQL that wraps a query in a subquery per step. Fix: split the
     query into views (``CREATE VIEW``)."""),
    # ---- names, options, meaning, types -----------------------------------------------------
    ("SS201", "error", "unknown relation, sink, column, metadata key", """
     A name the file does not declare: a relation in ``FROM``, the sink of an ``INSERT``, a
     watermark column, a column of a connector with a fixed schema, a metadata key. Spark
     would raise ``TABLE_OR_VIEW_NOT_FOUND`` or ``UNRESOLVED_COLUMN``. Anti-pattern:
     ``FROM flihgts``. Fix: the "did you mean" spelling, or declare the relation with
     ``CREATE STREAM``, ``CREATE TABLE`` or ``CREATE VIEW`` before the statement."""),
    ("SS202", "error", "unknown connector, setting or option (with \"did you mean\"), "
     "missing option", """
     A ``WITH`` list or ``SET`` that cannot be bound: an unknown connector or file format, a
     connector used in the wrong role, a required option missing, an option close to a
     known one (likely misspelt), an unknown compiler setting, a number option Spark cannot
     read or refuses (``maxFilesPerTrigger = 0``, ``rowsPerSecond = 'abc'``, a ``port`` past
     32 bits), or a ``SET`` Spark refused at start. Anti-pattern: ``WITH (connector = 'files', path = 'in', fromat = 'csv')``. Fix:
     ``format = 'csv'``; options far from every known one are passed to Spark unchanged."""),
    ("SS203", "error", "a statement that parses but has no meaning (bad type, watermark on a "
     "column that is not a TIMESTAMP, interval, TVF use)", """
     The grammar accepts the statement but Spark cannot run what it says: a watermark on a
     column that is not a ``TIMESTAMP`` (Spark: ``EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE``), a
     watermark delay that is not a constant interval, a duration Spark cannot read or
     refuses where it is used (a negative watermark delay or trigger interval, months in a
     window or trigger, a window slide longer than its size, ``'1.5 minutes'``: only
     seconds have fractions), a window TVF outside ``FROM`` or two in one ``SELECT``, a
     ``SESSION`` that is not aggregated, an option given twice.
     Anti-pattern: ``WATERMARK FOR epoch AS epoch - INTERVAL '1' MINUTE`` on a ``BIGINT``.
     Fix: a computed column ``ts AS timestamp_seconds(epoch)`` and the watermark on it."""),
    ("SS204", "error", "duplicate name", """
     Streams, tables and views share one namespace, sinks have their own, and each sink
     takes one query: a second declaration of a name, or a second query into the same sink,
     is refused. Fix: rename one of them, or give each query its own ``CREATE SINK``
     (or set ``query_name``)."""),
    ("SS205", "error", "unknown column, struct field or `USING` column in a query, view or "
     "computed column (with \"did you mean\", or the relation's columns)", """
     A column no relation of the ``FROM`` clause has, through views, joins, subqueries and
     CTEs (Spark: ``UNRESOLVED_COLUMN``, ``FIELD_NOT_FOUND``, ``UNRESOLVED_USING_COLUMN_FOR_JOIN``).
     A ``SELECT`` alias is not visible in ``WHERE``. Anti-pattern: ``SELECT carier FROM
     flights``. Fix: the suggested name, or the relation's columns the message lists."""),
    ("SS206", "error", "unknown function (with \"did you mean\"; the names are Spark 4.1's "
     "built-in functions)", """
     A call to a function that is not one of Spark's built-in functions (Spark:
     ``UNRESOLVED_ROUTINE``); sqlstream does not know user-defined functions. Anti-pattern:
     ``SELECT avrg(dep_delay)``. Fix: ``avg(dep_delay)``; ``SHOW FUNCTIONS`` lists them."""),
    ("SS207", "error", "ambiguous column: more than one relation of the `FROM` clause has it", """
     Spark raises ``AMBIGUOUS_REFERENCE`` for an unqualified column two joined relations
     have. Anti-pattern: ``SELECT carrier FROM flights f JOIN airlines a ON f.carrier =
     a.carrier``. Fix: qualify it, ``f.carrier``, or join with ``USING (carrier)``."""),
    ("SS208", "error", "a type error Spark raises at analysis: a window on a number, "
     "`TIMESTAMP` ± a number, a field of a column that is not a struct", """
     Spark fails the query with ``DATATYPE_MISMATCH`` before it runs. Only errors Spark is
     certain to raise are reported; a type sqlstream cannot know is ``UNKNOWN`` and never a
     finding. Anti-pattern: ``ts + 3600``. Fix: ``ts + INTERVAL 1 HOUR``; a window on
     ``timestamp_seconds(epoch)`` instead of a number."""),
    ("SS209", "error", "a column in the SELECT list of an aggregation that is neither in "
     "`GROUP BY` nor inside an aggregate function (Spark's `MISSING_AGGREGATION` / "
     "`MISSING_GROUP_BY`)", """
     An aggregation has one row per group, so every selected column must be a grouping key
     or aggregated. Anti-pattern: ``SELECT origin, dest, count(*) FROM f GROUP BY origin``.
     Fix: ``GROUP BY origin, dest``, or ``first(dest)``."""),
    ("SS210", "error", "a Kafka connector's options do not fit: no `bootstrap_servers`, no "
     "or two topics, `topic_pattern` on a sink, an unknown value `format`, a raw column "
     "declared with another type", """
     Spark's Kafka source needs ``kafka.bootstrap.servers`` and exactly one of
     ``subscribe``, ``subscribePattern``, ``assign`` (``IllegalArgumentException`` when the
     query starts); its sink writes one topic. The value is decoded by ``format`` (``json``,
     ``csv``, ``avro``, ``raw``); a raw stream has Kafka's columns, ``key`` and ``value``
     ``BINARY`` or ``STRING``. Anti-pattern: ``WITH (connector = 'kafka', topic = 'a',
     topic_pattern = 'b.*')``. Fix: ``bootstrap_servers = 'host:9092', topic = 'a'``."""),
    ("SS211", "error", "an Avro schema that cannot be read, is not a record, or does not "
     "have a declared column with its type", """
     ``format = 'avro'`` decodes ``value`` with Spark's ``from_avro(value, schema)``; the
     declared columns are fields of that record, typed as Spark maps Avro types (``long``
     → ``BIGINT``, ``timestamp-micros`` → ``TIMESTAMP``, a union with ``null`` → its other
     type). A column that is not a field, or declared with another type, would fail or be
     wrong at run time. Anti-pattern: ``dep_delay INT`` for a field ``"type": "double"``.
     Fix: ``dep_delay DOUBLE``, or cast in a computed column."""),
    ("SS212", "error", "a query whose columns a Kafka sink cannot write (a `value`, `key` or "
     "`headers` column of another type, `key_columns` that are not columns, no topic)", """
     Spark's Kafka sink writes a ``value`` column that is ``STRING`` or ``BINARY``, an
     optional ``key`` (``STRING``/``BINARY``) and ``headers`` (``ARRAY<STRUCT<key: STRING,
     value: BINARY>>``), to the ``topic`` option or a ``topic`` column (it fails the query
     when it starts otherwise). Without a ``value`` column sqlstream encodes the row
     (``format``: ``json``, ``avro``, ``csv``). Anti-pattern: ``key_columns = 'orign'``.
     Fix: name columns of the query."""),
    # ---- streaming rules (Spark's UnsupportedOperationChecker; docs/streaming-rules.md) ----
    ("SS301", "error", "append mode on an aggregation without a watermarked grouping key (any "
     "aggregation of the query, inner ones included; a `UNION` without the event-time "
     "column)", """
     Append mode writes each group once, when it is final; Spark knows that only when a
     grouping key is the watermarked event-time column or a window on it (rules R2, R2b).
     Anti-pattern: ``SELECT origin, count(*) FROM flights GROUP BY origin EMIT FINAL``. Fix:
     ``WATERMARK FOR`` on the stream and ``GROUP BY`` a window TVF on it, or ``EMIT
     CHANGES`` / ``EMIT COMPLETE``."""),
    ("SS302", "error", "complete mode without an aggregation", """
     Complete mode rewrites the whole result every trigger, which Spark allows only for an
     aggregation (R1). Anti-pattern: ``SELECT * FROM s EMIT COMPLETE``. Fix: add a ``GROUP
     BY``, use ``EMIT CHANGES`` / ``EMIT FINAL``, or leave the mode to inference."""),
    ("SS303", "error", "update mode with a session window", """
     Spark refuses update mode for an aggregation grouped by a session window (R3): sessions
     merge, so an updated row could replace several. Fix: ``EMIT FINAL`` (append, with a
     watermark) or ``EMIT COMPLETE``."""),
    ("SS304", "error", "an output mode the sink does not support (`files`: append only)", """
     The file sinks accept append mode only, even for a query without aggregation (R19:
     Spark's ``STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE``). Anti-pattern: ``INSERT INTO
     parquet_sink … EMIT CHANGES``. Fix: aggregate over a watermarked window with ``EMIT
     FINAL``, or write to a memory or console sink."""),
    ("SS305", "error", "no output mode fits the query and sink (inference)", """
     Without ``EMIT`` the mode is inferred: append, update, complete, the first that Spark
     allows for the query and the sink. None does; the message gives each mode's reason.
     Typical case: an aggregation without a watermarked window into a files sink. Fix:
     a window on a watermarked column, or another sink."""),
    ("SS306", "error", "continuous trigger on a query that is not map-like (aggregation, "
     "join, set operation, generator, watermark, current time)", """
     Continuous processing runs only projections and filters (R21: "Continuous processing
     does not support … operations"). Anti-pattern: ``SELECT k, count(*) … EMIT CONTINUOUS
     …``. Fix: ``EMIT … EVERY INTERVAL …`` (micro-batches)."""),
    ("SS307", "error", "continuous trigger on a source other than rate or kafka", """
     Only the ``rate`` and ``kafka`` sources can be read continuously
     (R21); a file source fails at start. Fix: ``EMIT … EVERY INTERVAL …``."""),
    ("SS308", "error", "continuous trigger into a files sink", """
     The files sink passes ``start()`` and fails at once ("Unknown type of trigger:
     ContinuousTrigger"): it is a V1 sink (R21). Fix: a memory, console or noop sink, or
     ``EMIT … EVERY INTERVAL …``."""),
    ("SS309", "error", "a query that reads no stream (only tables)", """
     ``writeStream`` needs a streaming DataFrame: Spark refuses a query over tables only
     (``WRITE_STREAM_NOT_ALLOWED``). Anti-pattern: ``INSERT INTO out SELECT * FROM
     airlines`` where ``airlines`` is a ``CREATE TABLE``. Fix: read a ``CREATE STREAM``
     relation (a file stream over the same folder), or query the table in batch outside
     sqlstream."""),
    ("SS310", "error", "LIMIT in update mode", """
     Spark refuses a ``LIMIT`` over a stream in update mode (R7); append and complete mode
     accept it. Anti-pattern: ``SELECT … LIMIT 10 EMIT CHANGES``. Fix: ``EMIT COMPLETE`` or
     append mode, or remove the ``LIMIT``."""),
    ("SS311", "error", "ORDER BY other than on an aggregation in complete mode", """
     Spark sorts a stream only when the sorted result contains an aggregation and the mode
     is complete (R9; ``SORT BY`` and ``CLUSTER BY`` too). Anti-pattern: ``SELECT * FROM s
     ORDER BY ts``. Fix: sort where the result is read, or aggregate and ``EMIT
     COMPLETE``."""),
    ("SS312", "error", "a DISTINCT Spark plans as an aggregation (`UNION`, `SELECT DISTINCT` "
     "over an aggregation) in update mode (a duplicate arriving in a later trigger is "
     "written again)", """
     Spark runs it, but in update mode a row whose duplicate arrives in a later trigger is
     written again: the result is not the SQL's. (A ``SELECT DISTINCT`` over a stream is a
     deduplication, ``dropDuplicates``, which drops it.) Fix: ``EMIT COMPLETE`` (the whole
     distinct set every trigger), ``UNION ALL`` of deduplicated streams, or ``GROUP BY``
     the columns."""),
    ("SS313", "error", "chained aggregations in update or complete mode", """
     An aggregation over another aggregation runs only in append mode (R5: Spark's
     "correctness issue due to global watermark"): Spark cannot tell which rows of the inner
     one are final. Fix: aggregate once, or use windows on watermarked columns and
     ``EMIT FINAL``."""),
    ("SS314", "error", "a window function (`OVER`) on a stream", """
     Spark refuses non-time windows on streams (R12: ``NON_TIME_WINDOW_NOT_SUPPORTED_IN_STREAMING``);
     a window function over a table is fine. Anti-pattern: ``ROW_NUMBER() OVER (PARTITION
     BY k ORDER BY ts)``. Fix: a ``GROUP BY`` with a time window (TUMBLE, HOP, SESSION)."""),
    ("SS315", "error", "a session window as the only grouping key", """
     Spark starts the query and fails its first batch ("Global aggregation with session
     window in streaming query is not supported", R4). Anti-pattern: ``GROUP BY
     window_start, window_end`` of a ``SESSION``. Fix: group by a key too, ``GROUP BY
     user_id, window_start, window_end``."""),
    ("SS316", "error", "OFFSET in a streaming query", """
     Spark refuses ``OFFSET`` anywhere in a streaming query, even on a table joined to the
     stream (R8). Fix: remove it."""),
    ("SS317", "error", "an aggregate function with DISTINCT (`COUNT(DISTINCT x)`) on a stream", """
     Spark refuses distinct aggregate functions on streams (R11). Anti-pattern:
     ``COUNT(DISTINCT url)``. Fix: ``approx_count_distinct(url)``, or deduplicate first."""),
    ("SS318", "error", "a set operation Spark refuses on streams (UNION with a table, "
     "INTERSECT, EXCEPT with a stream on the right, stream EXCEPT table outside update mode)", """
     R10: ``UNION`` of a stream and a table, ``INTERSECT`` and ``EXCEPT`` with a stream on
     the right are refused at start; a stream ``EXCEPT`` a table is an aggregation that only
     update mode runs (append mode fails in the first batch). ``UNION ALL`` of two streams
     is fine. Fix: join the stream with the table instead."""),
    ("SS319", "error", "a second watermark on a relation that already has one", """
     Spark starts the query and fails its first batch: "Redefining watermark is disallowed"
     (R24). Anti-pattern: ``FROM s WATERMARK ts DELAY OF …`` when ``s`` was declared with
     ``WATERMARK FOR``. Fix: keep one of the two."""),
    ("SS320", "error", "stream-static outer/semi/anti join with the stream on the unsupported "
     "side", """
     Spark's join matrix (R17): the stream must be on the preserved side of an outer join
     and on the left of a semi or anti join; a ``FULL`` join of a stream and a table is
     refused. Anti-pattern: ``stream RIGHT JOIN table``. Fix: ``table RIGHT JOIN stream`` or
     ``stream LEFT JOIN table``, or an inner join."""),
    ("SS321", "error", "stream-stream outer/semi join without the watermark and time range "
     "Spark needs, or an outer join whose preserved side has none (Spark would never write "
     "its unmatched rows)", """
     An outer or semi join of two streams needs a watermark on the nullable side and a
     condition in ``ON`` that bounds the other side's time by it, or the event time among
     the keys (R18). Spark accepts an outer join whose preserved side has no such bound, but
     never writes its unmatched rows. Fix: ``WATERMARK FOR`` on both streams and ``b.ts
     BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR`` (months and years cannot bound it)."""),
    ("SS322", "error", "stream-stream join in update or complete mode", """
     A join of two streams runs only in append mode, also when an aggregation follows it
     (R6). Fix: ``EMIT FINAL``, with windows on watermarked columns for an aggregation
     after the join."""),
    ("SS323", "error", "stream-stream join without an equality between the two streams", """
     Spark starts the query and fails its first batch: "Stream-stream join without equality
     predicate is not supported" (R18). Fix: a key condition such as ``a.user_id =
     b.user_id`` in ``ON``."""),
    ("SS324", "error", "stream-stream LEFT ANTI join", """
     Spark refuses a ``LEFT ANTI`` join of two streams (R18). Fix: anti-join a stream with
     a table, or a ``LEFT JOIN`` with watermarks and a time range, keeping the rows whose
     right side is ``NULL``."""),
    ("SS325", "error", "a ROW_NUMBER pattern on a stream that is not a keep-first "
     "deduplication (keep-last, top-N, not ordered by a time column)", """
     ``SELECT DISTINCT ON (k)``, ``QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) = 1``
     and Flink's ``… ROW_NUMBER() … AS rn … WHERE rn = 1`` over a stream become Spark's
     ``dropDuplicates([k])`` (LANGUAGE.md §3.3): keep the first row per key. Spark has no
     other form: ``ORDER BY ts DESC`` (keep the last), ``rn <= 3`` (top-N) or an order by a
     column that is not a time would stay a window function, which Spark refuses on a
     stream (``Non-time-based windows are not supported on streaming DataFrames``).
     Anti-pattern: ``QUALIFY ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) = 1``.
     Fix: ``ORDER BY ts`` (ascending) to keep the first row; for the latest row per key,
     ``GROUP BY k`` with ``max_by(col, ts)`` in update mode."""),
    # ---- warnings ----------------------------------------------------------------------------
    ("SS350", "warning", "stateful query whose state grows without bound (no watermark)", """
     An aggregation, a deduplication (``SELECT DISTINCT``, ``DISTINCT ON``, ``ROW_NUMBER …
     = 1``: ``dropDuplicates``) or a stream-stream join without a watermark keeps every
     group, key or row in its state forever: memory grows with every new key. Spark runs
     it. Fix: ``WATERMARK FOR`` on the event time and a window on it (a time range in ``ON``
     for a join; for a deduplication, the event-time column among the keys, or a watermark
     so that ``DISTINCT ON`` becomes ``dropDuplicatesWithinWatermark``), so Spark can drop
     old state."""),
    ("SS351", "warning", "inferred append-mode aggregation: rows appear only after the "
     "watermark passes", """
     Without ``EMIT``, an aggregation over a watermarked window is inferred as append mode:
     each window is written once, after the watermark passes its end, so nothing appears
     until later data arrives. Fix: say ``EMIT FINAL`` to make it explicit, or ``EMIT
     CHANGES`` for early, updated results."""),
    ("SS352", "warning", "an option Spark ignores (another format's option; a streaming-only "
     "option on a table or sink)", """
     Spark silently ignores options it does not know for a format, and the options of
     ``readStream`` on a table or a sink. Anti-pattern: ``header = true`` on a parquet
     source, ``maxFilesPerTrigger`` on a ``CREATE TABLE``. Fix: remove it."""),
    # ---- Spark at run time -------------------------------------------------------------------
    # ---- checkpoints and restarts ------------------------------------------------------------
    ("SS401", "error", "a restart on a checkpoint with a change Spark does not allow (other "
     "sources, stateful operators, keys, aggregates, join type, file sink path, …)", """
     A checkpoint holds the offsets of the query's inputs and the state of its stateful
     operators, keyed and shaped as the query that wrote it (Spark guide, *Recovery Semantics
     after Changes in a Streaming Query*). sqlstream records the query's state signature in
     the checkpoint (``sqlstream/state_signature.json``) and compares it before the query
     starts: a refused change is reported as ``old → new`` and nothing runs. Anti-pattern:
     an hourly aggregation restarted with ``TUMBLE(…, INTERVAL '2' HOUR)`` on the same
     checkpoint (Spark resumes the hourly state and writes wrong windows), or a files sink
     whose ``path`` changed (the output splits). Fix: give the sink a new
     ``checkpoint_location`` (a files sink also a new ``path``) to start over, or keep the
     change out; ``exec --allow-incompatible-restart`` runs it anyway, at your own risk.
     Filters, projections that keep the state, rate limits and triggers are allowed."""),
    ("SS402", "error", "`sqlstream state`: a query with no checkpoint to read (never started, "
     "no batch committed yet, or no checkpoint location)", """
     ``sqlstream state`` reads a query's checkpoint with Spark's state data source
     (``state-metadata``, ``statestore``; Spark guide *State Data Source Integration
     Guide*). A query that has not committed a micro-batch, or whose sink has no checkpoint
     location (``console``, ``memory``: Spark uses a temporary one, deleted on exit), has
     nothing to read. Fix: run the pipeline first (``sqlstream exec``), with the same
     ``--state-dir`` and ``--var`` values as the run whose state you want to see."""),
    ("SS403", "error", "`sqlstream state`: a query that keeps no state (no aggregation, "
     "deduplication, `DISTINCT` or stream-stream join)", """
     Only stateful operators keep rows in Spark's state store between micro-batches; a
     stateless query's checkpoint holds offsets and commits only. Anti-pattern: ``sqlstream
     state p.ssql copy_rows`` on a filter-and-project query. Fix: name a stateful query
     (``sqlstream explain`` lists each query's stateful operators)."""),
    ("SS404", "error", "`sqlstream state`: no query of that name in the file", """
     The QUERY argument is a query name of the file: its ``query_name`` option, or the
     sink name of ``INSERT INTO sink``. Fix: use a name ``sqlstream explain FILE`` lists
     (the message suggests the closest one)."""),
    ("SS405", "error", "`--remote`: a feature the pipeline uses that Spark Connect cannot run "
     "in this process (`foreachBatch`, `foreach`)", """
     Through Spark Connect (``exec --remote sc://…``) the client sends plans; a
     ``foreachBatch`` or ``foreach`` function is pickled and run in a Python process of
     the *server*, so a sink that keeps state or connections in this process (e.g. a
     ``foreach_batch`` sink writing to a database through a client library) cannot work
     as written. Fix: run with ``--master`` (local or a cluster: the driver is this
     process), or submit the pipeline to the cluster with ``spark-submit``."""),
    ("SS501", "error", "Spark rejected a source or query at start, or a running query failed", """
     ``exec`` (and ``Pipeline.start``) report Spark's own error, positioned at the statement
     whose source or query failed. When Spark refuses a query that ``check`` accepted,
     ``check`` lacks a rule: please report it."""),
    ("SS510", "error", "a Spark package the pipeline needs (Kafka, Avro) cannot be "
     "resolved: no repository reachable, or the version is not served", """
     A pipeline with a ``kafka`` connector (or Avro values) needs Spark's
     ``org.apache.spark:spark-sql-kafka-0-10_2.13`` (and ``spark-avro_2.13``) package, which
     is not in pyspark. ``exec`` adds it to ``spark.jars.packages`` (the newest patch
     release of the running Spark's major.minor that Maven Central serves with all its
     dependencies); without network access and without the package in the local Ivy cache
     the session cannot start. Fix: run once with network access, give
     ``--packages``/``SET 'spark.jars.packages'`` (or ``spark.jars`` with local jars), or
     set ``SQLSTREAM_SPARK_PACKAGE_VERSION``."""),
    ("SS530", "error", "the Spark cluster cannot be reached (`--master spark://…` or "
     "`--remote sc://…`: nothing listens at the host and port)", """
     Before creating a session, ``exec`` and ``state`` open a TCP connection to the
     standalone master (``spark://host:port``, default port 7077) or the Spark Connect
     server (``sc://host:port``, default port 15002); without it Spark would retry for
     minutes. Fix: start the master (``spark-class org.apache.spark.deploy.master.Master``)
     or the server (``start-connect-server.sh``, or ``spark-submit --class
     org.apache.spark.sql.connect.service.SparkConnectServer``), or correct the URL."""),
    ("SS531", "error", "`--remote`: the Spark Connect client libraries are not installed", """
     PySpark's Spark Connect client needs ``grpcio``, ``grpcio-status``,
     ``googleapis-common-protos``, ``pyarrow``, ``pandas`` and ``zstandard`` (PySpark's
     ``connect`` extra). Fix: ``pip install 'sqlstream[connect]'``."""),
    ("SS532", "error", "`sqlstream state`: Spark could not read the state of a checkpoint", """
     Spark's state data source (Spark 4.0 or later) refused the checkpoint: e.g. it was
     written by a Spark version without operator metadata, or a batch's state files are
     missing. The message is Spark's. Fix: read it with the Spark version that wrote it,
     or (a query that is running) read it again after the next commit."""),
)


def code(name: str) -> Code:
    """Return the registered :class:`Code` named ``name`` (e.g. ``"SS301"``).

    Raises:
        KeyError: ``name`` is not registered in :data:`CODES`.
    """
    try:
        return CODES[name]
    except KeyError:
        raise KeyError(f"finding code {name!r} is not registered in sqlstream/codes.py") from None


def markdown_table() -> str:
    """Return the README's "Finding codes" table: a Markdown table, one row per code, a
    warning's code followed by ``(warning)``; ends with a newline."""
    rows = ["| code | finding |", "| --- | --- |"]
    for record in CODES.values():
        label = f"{record.code} (warning)" if record.severity == "warning" else record.code
        rows.append(f"| {label} | {record.title} |")
    return "\n".join(rows) + "\n"


_TABLE = re.compile(r"(^### Finding codes\n\n)((?:\|.*\n)+)", re.MULTILINE)


def replace_table(readme: str) -> str:
    """Return ``readme`` with the table under its ``### Finding codes`` heading replaced by
    :func:`markdown_table` (unchanged text means the README is up to date).

    Raises:
        ValueError: no ``### Finding codes`` heading followed by a blank line and a table.
    """
    if not _TABLE.search(readme):
        raise ValueError("no '### Finding codes' heading followed by a blank line and a table")
    return _TABLE.sub(lambda m: m.group(1) + markdown_table(), readme, count=1)
