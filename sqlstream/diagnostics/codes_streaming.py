"""The finding codes of the streaming rules and their warnings (``SS3xx``): ``(code,
severity, title, doc)`` records, read by :mod:`sqlstream.diagnostics.codes` (which
validates them and builds :data:`~sqlstream.diagnostics.codes.CODES`).

Kept apart from the registry's code so that each module stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    # ---- streaming rules (Spark's UnsupportedOperationChecker; docs/streaming-rules.md) ----
    (
        "SS301",
        "error",
        "append mode on an aggregation without a watermarked grouping key (any "
        "aggregation of the query, inner ones included; a `UNION` without the event-time "
        "column)",
        """
     Append mode writes each group once, when it is final; Spark knows that only when a
     grouping key is the watermarked event-time column or a window on it (rules R2, R2b).
     Anti-pattern: ``SELECT origin, count(*) FROM flights GROUP BY origin EMIT FINAL``. Fix:
     ``WATERMARK FOR`` on the stream and ``GROUP BY`` a window TVF on it, or ``EMIT
     CHANGES`` / ``EMIT COMPLETE``.""",
    ),
    (
        "SS302",
        "error",
        "complete mode without an aggregation",
        """
     Complete mode rewrites the whole result every trigger, which Spark allows only for an
     aggregation (R1). Anti-pattern: ``SELECT * FROM s EMIT COMPLETE``. Fix: add a ``GROUP
     BY``, use ``EMIT CHANGES`` / ``EMIT FINAL``, or leave the mode to inference.""",
    ),
    (
        "SS303",
        "error",
        "update mode with a session window",
        """
     Spark refuses update mode for an aggregation grouped by a session window (R3): sessions
     merge, so an updated row could replace several. Fix: ``EMIT FINAL`` (append, with a
     watermark) or ``EMIT COMPLETE``.""",
    ),
    (
        "SS304",
        "error",
        "an output mode the sink does not support (`files`: append only)",
        """
     The file sinks accept append mode only, even for a query without aggregation (R19:
     Spark's ``STREAMING_OUTPUT_MODE.UNSUPPORTED_DATASOURCE``). Anti-pattern: ``INSERT INTO
     parquet_sink … EMIT CHANGES``. Fix: aggregate over a watermarked window with ``EMIT
     FINAL``, or write to a memory or console sink.""",
    ),
    (
        "SS305",
        "error",
        "no output mode fits the query and sink (inference)",
        """
     Without ``EMIT`` the mode is inferred: append, update, complete, the first that Spark
     allows for the query and the sink. None does; the message gives each mode's reason.
     Typical case: an aggregation without a watermarked window into a files sink. Fix:
     a window on a watermarked column, or another sink.""",
    ),
    (
        "SS306",
        "error",
        "continuous trigger on a query that is not map-like (aggregation, "
        "join, set operation, generator, watermark, current time)",
        """
     Continuous processing runs only projections and filters (R21: "Continuous processing
     does not support … operations"). Anti-pattern: ``SELECT k, count(*) … EMIT CONTINUOUS
     …``. Fix: ``EMIT … EVERY INTERVAL …`` (micro-batches).""",
    ),
    (
        "SS307",
        "error",
        "continuous trigger on a source other than rate or kafka",
        """
     Only the ``rate`` and ``kafka`` sources can be read continuously
     (R21); a file source fails at start. Fix: ``EMIT … EVERY INTERVAL …``.""",
    ),
    (
        "SS308",
        "error",
        "continuous trigger into a files sink",
        """
     The files sink passes ``start()`` and fails at once ("Unknown type of trigger:
     ContinuousTrigger"): it is a V1 sink (R21). Fix: a memory, console or noop sink, or
     ``EMIT … EVERY INTERVAL …``.""",
    ),
    (
        "SS309",
        "error",
        "a query that reads no stream (only tables)",
        """
     ``writeStream`` needs a streaming DataFrame: Spark refuses a query over tables only
     (``WRITE_STREAM_NOT_ALLOWED``). Anti-pattern: ``INSERT INTO out SELECT * FROM
     airlines`` where ``airlines`` is a ``CREATE TABLE``. Fix: read a ``CREATE STREAM``
     relation (a file stream over the same folder), or query the table in batch outside
     sqlstream.""",
    ),
    (
        "SS310",
        "error",
        "LIMIT in update mode",
        """
     Spark refuses a ``LIMIT`` over a stream in update mode (R7); append and complete mode
     accept it. Anti-pattern: ``SELECT … LIMIT 10 EMIT CHANGES``. Fix: ``EMIT COMPLETE`` or
     append mode, or remove the ``LIMIT``.""",
    ),
    (
        "SS311",
        "error",
        "ORDER BY other than on an aggregation in complete mode",
        """
     Spark sorts a stream only when the sorted result contains an aggregation and the mode
     is complete (R9; ``SORT BY`` and ``CLUSTER BY`` too). Anti-pattern: ``SELECT * FROM s
     ORDER BY ts``. Fix: sort where the result is read, or aggregate and ``EMIT
     COMPLETE``.""",
    ),
    (
        "SS312",
        "error",
        "a DISTINCT Spark plans as an aggregation (`UNION`, `SELECT DISTINCT` "
        "over an aggregation) in update mode (a duplicate arriving in a later trigger is "
        "written again)",
        """
     Spark runs it, but in update mode a row whose duplicate arrives in a later trigger is
     written again: the result is not the SQL's. (A ``SELECT DISTINCT`` over a stream is a
     deduplication, ``dropDuplicates``, which drops it.) Fix: ``EMIT COMPLETE`` (the whole
     distinct set every trigger), ``UNION ALL`` of deduplicated streams, or ``GROUP BY``
     the columns.""",
    ),
    (
        "SS313",
        "error",
        "chained aggregations in update or complete mode",
        """
     An aggregation over another aggregation runs only in append mode (R5: Spark's
     "correctness issue due to global watermark"): Spark cannot tell which rows of the inner
     one are final. Fix: aggregate once, or use windows on watermarked columns and
     ``EMIT FINAL``.""",
    ),
    (
        "SS314",
        "error",
        "a window function (`OVER`) on a stream",
        """
     Spark refuses non-time windows on streams (R12: ``NON_TIME_WINDOW_NOT_SUPPORTED_IN_STREAMING``);
     a window function over a table is fine. Anti-pattern: ``ROW_NUMBER() OVER (PARTITION
     BY k ORDER BY ts)``. Fix: a ``GROUP BY`` with a time window (TUMBLE, HOP, SESSION).""",
    ),
    (
        "SS315",
        "error",
        "a session window as the only grouping key",
        """
     Spark starts the query and fails its first batch ("Global aggregation with session
     window in streaming query is not supported", R4). Anti-pattern: ``GROUP BY
     window_start, window_end`` of a ``SESSION``. Fix: group by a key too, ``GROUP BY
     user_id, window_start, window_end``.""",
    ),
    (
        "SS316",
        "error",
        "OFFSET in a streaming query",
        """
     Spark refuses ``OFFSET`` anywhere in a streaming query, even on a table joined to the
     stream (R8). Fix: remove it.""",
    ),
    (
        "SS317",
        "error",
        "an aggregate function with DISTINCT (`COUNT(DISTINCT x)`) on a stream",
        """
     Spark refuses distinct aggregate functions on streams (R11). Anti-pattern:
     ``COUNT(DISTINCT url)``. Fix: ``approx_count_distinct(url)``, or deduplicate first.""",
    ),
    (
        "SS318",
        "error",
        "a set operation Spark refuses on streams (UNION with a table, "
        "INTERSECT, EXCEPT with a stream on the right, stream EXCEPT table outside update mode)",
        """
     R10: ``UNION`` of a stream and a table, ``INTERSECT`` and ``EXCEPT`` with a stream on
     the right are refused at start; a stream ``EXCEPT`` a table is an aggregation that only
     update mode runs (append mode fails in the first batch). ``UNION ALL`` of two streams
     is fine. Fix: join the stream with the table instead.""",
    ),
    (
        "SS319",
        "error",
        "a second watermark on a relation that already has one",
        """
     Spark starts the query and fails its first batch: "Redefining watermark is disallowed"
     (R24). Anti-pattern: ``FROM s WATERMARK ts DELAY OF …`` when ``s`` was declared with
     ``WATERMARK FOR``. Fix: keep one of the two.""",
    ),
    (
        "SS320",
        "error",
        "stream-static outer/semi/anti join with the stream on the unsupported side",
        """
     Spark's join matrix (R17): the stream must be on the preserved side of an outer join
     (the table on its nullable side) and on the left of a semi or anti join; a ``FULL``
     join of a stream and a table is refused (both sides are nullable). Anti-pattern: ``stream RIGHT JOIN table``. Fix: ``table RIGHT JOIN stream`` or
     ``stream LEFT JOIN table``, or an inner join.""",
    ),
    (
        "SS321",
        "error",
        "stream-stream outer/semi join without the watermark and time range "
        "Spark needs, or an outer join whose preserved side has none (Spark would never write "
        "its unmatched rows)",
        """
     An outer or semi join of two streams needs a watermark on the nullable side and a
     condition in ``ON`` that bounds the other side's time by it, or the event time among
     the keys (R18). Spark accepts an outer join whose preserved side has no such bound, but
     never writes its unmatched rows. Fix: ``WATERMARK FOR`` on both streams and ``b.ts
     BETWEEN a.ts AND a.ts + INTERVAL '1' HOUR`` (months and years cannot bound it).""",
    ),
    (
        "SS322",
        "error",
        "stream-stream join in update or complete mode",
        """
     A join of two streams runs only in append mode, also when an aggregation follows it
     (R6); from Spark 4.2 an inner join of two streams also runs in update mode (an
     aggregation after it too; measured: 4.1.4 refuses it, 4.2.1 and 4.3.0 run it), which
     ``check`` allows when judging for 4.2 or later. Fix: ``EMIT FINAL``, with windows on watermarked columns for an aggregation
     after the join.""",
    ),
    (
        "SS323",
        "error",
        "stream-stream join without an equality between the two streams",
        """
     Spark starts the query and fails its first batch: "Stream-stream join without equality
     predicate is not supported" (R18). Fix: a key condition such as ``a.user_id =
     b.user_id`` in ``ON``.""",
    ),
    (
        "SS324",
        "error",
        "stream-stream LEFT ANTI join",
        """
     Spark refuses a ``LEFT ANTI`` join of two streams (R18). Fix: anti-join a stream with
     a table, or a ``LEFT JOIN`` with watermarks and a time range, keeping the rows whose
     right side is ``NULL``.""",
    ),
    (
        "SS325",
        "error",
        "a ROW_NUMBER pattern on a stream that is not a keep-first "
        "deduplication (keep-last, top-N, not ordered by a time column)",
        """
     ``SELECT DISTINCT ON (k)``, ``QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) = 1``
     and Flink's ``… ROW_NUMBER() … AS rn … WHERE rn = 1`` over a stream become Spark's
     ``dropDuplicates([k])`` (docs/dialect.md#deduplication): keep the first row per key. Spark has no
     other form: ``ORDER BY ts DESC`` (keep the last), ``rn <= 3`` (top-N) or an order by a
     column that is not a time would stay a window function, which Spark refuses on a
     stream (``Non-time-based windows are not supported on streaming DataFrames``).
     Anti-pattern: ``QUALIFY ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) = 1``.
     Fix: ``ORDER BY ts`` (ascending) to keep the first row; for the latest row per key,
     ``GROUP BY k`` with ``max_by(col, ts)`` in update mode.""",
    ),
    (
        "SS326",
        "error",
        "`SET 'sqlstream.state_store'` to a value that names no state store provider",
        """
     ``sqlstream.state_store`` chooses where Spark keeps the state of stateful queries:
     ``rocksdb`` (Spark's ``RocksDBStateStoreProvider`` with changelog checkpointing: state
     on local disk, not in the JVM heap), ``hdfs`` (Spark's default
     ``HDFSBackedStateStoreProvider``: every key in memory) or the fully-qualified class
     name of a ``StateStoreProvider``. Spark would take any other value as a class name and
     fail the first micro-batch with ``ClassNotFoundException``. Anti-pattern: ``SET
     'sqlstream.state_store' = 'rocks'``. Fix: ``SET 'sqlstream.state_store' =
     'rocksdb'``.""",
    ),
    (
        "SS327",
        "error",
        "`SET 'spark.sql.streaming.multipleWatermarkPolicy'` to neither `min` nor `max`",
        """
     A query over several watermarked streams (a union, a stream-stream join) has one
     global watermark: the minimum of the streams' watermarks (``min``, Spark's default) or
     their maximum (``max``). Spark refuses any other value when the setting is made
     (``INVALID_CONF_VALUE``). Anti-pattern: ``SET
     'spark.sql.streaming.multipleWatermarkPolicy' = 'fastest'``. Fix: ``'max'``.""",
    ),
    (
        "SS335",
        "error",
        "`FOR SYSTEM_TIME AS OF` other than a lookup join: on the `FROM` "
        "relation, in a join other than `JOIN`/`LEFT JOIN`, `VERSION AS OF`, `FROM … TO`, or a "
        "time that is not from the left of the join",
        """
     sqlstream reads Flink's lookup join ``s JOIN t FOR SYSTEM_TIME AS OF s.ts AS u ON …``
     (or ``LEFT JOIN``) as the stream-static join it means when ``t`` is a ``CREATE TABLE``:
     the clause is dropped and Spark joins every micro-batch with the table. Spark SQL's own
     ``TIMESTAMP AS OF`` / ``VERSION AS OF`` is time travel to a constant version of a
     catalog table, refused on a view, so no other use of the clause can run. Anti-pattern:
     ``FROM t FOR SYSTEM_TIME AS OF PROCTIME()``, ``s RIGHT JOIN t FOR SYSTEM_TIME AS OF
     s.ts``. Fix: ``FROM s JOIN t FOR SYSTEM_TIME AS OF s.ts AS u ON …``, or drop the clause.""",
    ),
    (
        "SS336",
        "error",
        "a lookup join (`FOR SYSTEM_TIME AS OF`) of a relation that reads a stream",
        """
     A lookup join looks each row of the stream up in a table as of the row's time. With a
     ``CREATE TABLE`` (static: one version) that is Spark's stream-static join. A relation
     that reads a stream has no versions to look up in Spark (Flink's event-time temporal
     join of a versioned table has no Spark equivalent); joining it would be a stream-stream
     join, with other results. Anti-pattern: ``orders JOIN rates FOR SYSTEM_TIME AS OF
     o.ts`` where ``rates`` is a ``CREATE STREAM``. Fix: declare the looked-up relation
     with ``CREATE TABLE``, or write a stream-stream join without the clause, with
     watermarks on both sides and a time range in ``ON``.""",
    ),
    (
        "SS337",
        "error",
        "a files sink's partition_by that Spark 4.3 refuses (a complex-typed, "
        "repeated or every column)",
        """
     Since Spark 4.3 a query into a files sink checks its partition columns when it starts,
     as a batch write does: a column of type ``ARRAY``, ``MAP``, ``STRUCT`` or ``VARIANT``
     (``INVALID_PARTITION_COLUMN_DATA_TYPE``), a column named twice
     (``COLUMN_ALREADY_EXISTS``) or every column of the query
     (``ALL_PARTITION_COLUMNS_NOT_ALLOWED``) stops it, where Spark 4.0–4.2 run it;
     ``check`` reports it when judging for 4.3 (``--spark-version``, ``SET
     'sqlstream.spark_version'``, or the installed PySpark). Anti-pattern: ``partition_by =
     'route'`` where ``route`` is ``named_struct(…)``. Fix: partition by atomic columns and
     leave at least one column to write into the files.""",
    ),
    (
        "SS338",
        "error",
        "SQL syntax the judged Spark version does not have (the WATERMARK … "
        "DELAY OF clause before Spark 4.1)",
        """
     Spark 4.0's SQL parser has no ``WATERMARK <column> DELAY OF <interval>`` clause in
     ``FROM`` (4.1 added it): Spark 4.0 refuses the query (``PARSE_SYNTAX_ERROR``).
     ``check`` reports it when judging for 4.0 (``--spark-version 4.0``, ``SET
     'sqlstream.spark_version' = '4.0'``, or an installed PySpark 4.0). Anti-pattern: ``FROM
     clicks WATERMARK ts DELAY OF INTERVAL 1 MINUTE`` on Spark 4.0. Fix: ``WATERMARK FOR ts
     AS ts - INTERVAL '1' MINUTE`` in the stream's declaration.""",
    ),
    (
        "SS340",
        "error",
        "`EMIT … REAL TIME` judged for a Spark version without real-time mode (4.0, 4.1)",
        """
     Real-time mode is ``DataStreamWriter.trigger(realTime='…')``, which PySpark has from
     4.2 on (PySpark 4.0 and 4.1 have no such argument). ``check`` reports it when judging
     for 4.0 or 4.1 (``--spark-version``, ``SET 'sqlstream.spark_version'``, or the installed
     PySpark). Fix: run on Spark 4.2 or newer, or use ``EMIT … EVERY INTERVAL …``.""",
    ),
    (
        "SS341",
        "error",
        "`EMIT … REAL TIME` with an output mode other than update",
        """
     Real-time mode writes in update mode only (Spark:
     ``STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED``). Anti-pattern: ``EMIT FINAL
     REAL TIME``. Fix: ``EMIT CHANGES REAL TIME`` (without a mode, update is chosen).""",
    ),
    (
        "SS342",
        "error",
        "`EMIT … REAL TIME` reading a source other than kafka, or writing a "
        "sink other than kafka, console or memory",
        """
     Spark's real-time mode reads only the Kafka source
     (``STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED``; not ``rate``, not files) and
     writes the Kafka, console, memory and foreach sinks (``foreachBatch``, files, tables
     and PostgreSQL are refused). Fix: a Kafka source and sink, or micro-batches (``EMIT …
     EVERY INTERVAL …``).""",
    ),
    (
        "SS343",
        "error",
        "`EMIT … REAL TIME` on a query outside the judged version's real-time allow-list",
        """
     Spark checks a real-time query's operators when it starts
     (``STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST``). Spark 4.2 runs
     stateless queries only: projections, filters, generators, ``UNION ALL`` of streams,
     watermarks and stream-static joins whose static side is broadcast. Spark 4.3 adds
     aggregations (tumbling and sliding windows included) and ``dropDuplicates``. Neither
     runs stream-stream joins, session windows, window functions, ``ORDER BY``, ``LIMIT``
     or a deduplication within the watermark. Anti-pattern: ``SELECT k, count(*) … GROUP BY
     k EMIT CHANGES REAL TIME`` judged for 4.2. Fix: judge for (and run on) 4.3, or use
     micro-batches.""",
    ),
    # ---- warnings ----------------------------------------------------------------------------
    (
        "SS350",
        "warning",
        "stateful query whose state grows without bound (no watermark)",
        """
     An aggregation, a deduplication (``SELECT DISTINCT``, ``DISTINCT ON``, ``ROW_NUMBER …
     = 1``: ``dropDuplicates``) or a stream-stream join without a watermark keeps every
     group, key or row in its state forever: memory grows with every new key. Spark runs
     it. Fix: ``WATERMARK FOR`` on the event time and a window on it (a time range in ``ON``
     for a join; for a deduplication, the event-time column among the keys, or a watermark
     so that ``DISTINCT ON`` becomes ``dropDuplicatesWithinWatermark``), so Spark can drop
     old state.""",
    ),
    (
        "SS351",
        "warning",
        "inferred append-mode aggregation: rows appear only after the watermark passes",
        """
     Without ``EMIT``, an aggregation over a watermarked window is inferred as append mode:
     each window is written once, after the watermark passes its end, so nothing appears
     until later data arrives. Fix: say ``EMIT FINAL`` to make it explicit, or ``EMIT
     CHANGES`` for early, updated results.""",
    ),
    (
        "SS352",
        "warning",
        "an option Spark ignores (another format's option; a streaming-only "
        "option on a table or sink)",
        """
     Spark silently ignores options it does not know for a format, and the options of
     ``readStream`` on a table or a sink. Anti-pattern: ``header = true`` on a parquet
     source, ``maxFilesPerTrigger`` on a ``CREATE TABLE``. Fix: remove it.""",
    ),
    (
        "SS360",
        "warning",
        "a `rate` source read with `EMIT … ONCE` (or `exec --available-now`): "
        "no rows on a new checkpoint",
        """
     Spark's ``rate`` source has no ``Trigger.AvailableNow`` support of its own: Spark
     reads the rows due when the query starts, and a new ``rate`` source has produced none
     yet, so the first run writes nothing and ends (measured on Spark 4.1.4: one empty
     micro-batch; a later run on the same checkpoint reads ``rowsPerSecond`` × the seconds
     since the previous one). Anti-pattern: ``CREATE STREAM ticks WITH (connector =
     'rate')`` and ``SELECT … FROM ticks EMIT ONCE``. Fix: ``connector =
     'rate_micro_batch'`` with ``rows_per_batch = N`` (Spark's rate-per-micro-batch source
     supports AvailableNow: each run reads one micro-batch of N rows), or ``EMIT … EVERY
     INTERVAL …`` and stop the run with ``exec --timeout``.""",
    ),
    (
        "SS361",
        "warning",
        "a keep-first deduplication by event time keeps the first row to arrive, not the earliest",
        """
     ``ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) … = 1`` (and ``QUALIFY``, ``DISTINCT
     ON … ORDER BY``) means the row with the earliest ``ts`` per key. On a stream it becomes
     Spark's ``dropDuplicates`` (``dropDuplicatesWithinWatermark`` under a watermark), which
     keeps the first row of each key to arrive and drops the rest: when a row with an
     earlier ``ts`` arrives in a later micro-batch, the stream keeps the later one and the
     same SQL over the same rows as a batch query keeps the earlier one. The rewrite is
     exact only when rows arrive in event-time order per key; ``sqlstream verify`` shows
     the rows where it is not. Anti-pattern: a keep-first deduplication of events that
     arrive out of order. Fix: when every duplicate is the same event (retries), order by
     a key column or use ``DISTINCT ON (k)``; for the earliest row per key, aggregate in a
     window (``min_by(col, ts)`` grouped by ``k`` and a window on ``ts``), which waits for
     the watermark.""",
    ),
    (
        "SS362",
        "warning",
        "the result depends on when the query runs: a nondeterministic function or processing time",
        """
     ``rand()``, ``uuid()``, ``shuffle()``, ``monotonically_increasing_id()``, the current
     time (``current_timestamp()``, ``now()``, Flink's ``PROCTIME()`` column) and windows
     over processing time give other values in every run: Spark evaluates the current time
     once per micro-batch, so the result depends on how rows were cut into micro-batches
     and when they arrived, and a restart or a batch query over the same rows gives other
     rows. ``sqlstream verify`` reports such a query as differing and names this reason.
     Fix: derive the value from the data (an event-time column, a hash of the key columns:
     ``sha2(concat_ws('|', k1, k2), 256)``) where results must be reproducible.""",
    ),
    (
        "SS370",
        "error",
        "update output mode into an `iceberg` or `delta` sink that appends",
        """
     In update output mode each micro-batch holds the groups that changed, with their new
     values; appended to a table they would add a row per change of a group, not keep its
     latest value. A lakehouse sink takes update mode with ``mode = 'upsert'`` (a ``MERGE``
     by ``key_columns`` per micro-batch), append mode, or complete mode (an overwrite).
     Anti-pattern: ``EMIT CHANGES`` into ``connector = 'delta'`` without a mode. Fix: add
     ``mode = 'upsert', key_columns = '…'`` (the grouping keys), or ``EMIT FINAL``.""",
    ),
)
