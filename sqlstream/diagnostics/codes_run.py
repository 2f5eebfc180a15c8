"""The finding codes of a run (``SS4xx``, ``SS5xx``): checkpoints and restarts, and Spark at
run time; ``(code, severity, title, doc)`` records, read by :mod:`sqlstream.diagnostics.codes`
(which validates them and builds :data:`~sqlstream.diagnostics.codes.CODES`).

Kept apart from the registry's code so that each module stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    # ---- checkpoints and restarts ------------------------------------------------------------
    (
        "SS401",
        "error",
        "a restart on a checkpoint with a change Spark does not allow (other "
        "sources, stateful operators, keys, aggregates, join type, file sink path, session "
        "time zone, …), a files sink path another checkpoint writes, or a malformed record",
        """
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
     Filters, projections that keep the state, rate limits and triggers are allowed.
     Keys and aggregates are compared by meaning: a column is followed through views, CTEs,
     subqueries and computed columns to the source column it reads (``dest AS origin`` in
     a view is another key than ``origin``), and equal spellings are one (``INTERVAL '60'
     MINUTES`` and ``'1' HOUR``, ``avg(DEP_DELAY)`` and ``AVG(dep_delay)``, ``COUNT(1)`` and
     ``COUNT(*)``). Another ``spark.sql.session.timeZone`` is refused when the state holds
     timestamp-derived values. Also SS401: a files sink whose output directory's
     ``_spark_metadata`` lists batches written by another checkpoint (named), or by any
     checkpoint when this one is fresh — Spark would skip those batch ids and write nothing;
     and a ``state_signature.json`` that is not a record (bad or truncated JSON, wrong
     shapes or types, a newer format: the message names the field).""",
    ),
    (
        "SS402",
        "error",
        "`sqlstream state`: a query with no checkpoint to read (never started, "
        "no batch committed yet, or no checkpoint location), or a batch or snapshot it does "
        "not keep",
        """
     ``sqlstream state`` reads a query's checkpoint with Spark's state data source
     (``state-metadata``, ``statestore``; Spark guide *State Data Source Integration
     Guide*). A query that has not committed a micro-batch, or whose sink has no checkpoint
     location (``console``, ``memory``: Spark uses a temporary one, deleted on exit), has
     nothing to read. A batch asked for (``--batch-id``, ``--changes-to``) that is not
     committed, or a snapshot (``--snapshot-batch-id``) that a local checkpoint does not
     keep for the partition, is reported the same way. Fix: run the pipeline first
     (``sqlstream exec``), with the same ``--state-dir`` and ``--var`` values as the run
     whose state you want to see; for a snapshot, pick a batch the message lists.""",
    ),
    (
        "SS403",
        "error",
        "`sqlstream state`: a query that keeps no state (no aggregation, "
        "deduplication, `DISTINCT` or stream-stream join)",
        """
     Only stateful operators keep rows in Spark's state store between micro-batches; a
     stateless query's checkpoint holds offsets and commits only. Anti-pattern: ``sqlstream
     state p.ssql copy_rows`` on a filter-and-project query. Fix: name a stateful query
     (``sqlstream explain`` lists each query's stateful operators).""",
    ),
    (
        "SS404",
        "error",
        "`sqlstream state`: no query of that name in the file",
        """
     The QUERY argument is a query name of the file: its ``query_name`` option, or the
     sink name of ``INSERT INTO sink``. Fix: use a name ``sqlstream explain FILE`` lists
     (the message suggests the closest one).""",
    ),
    (
        "SS405",
        "error",
        "`--remote`: a feature the pipeline uses that Spark Connect cannot run "
        "in this process (`foreachBatch`, `foreach`)",
        """
     Through Spark Connect (``exec --remote sc://…``) the client sends plans; a
     ``foreachBatch`` or ``foreach`` function is pickled and run in a Python process of
     the *server*, so a sink that keeps state or connections in this process (e.g. a
     ``foreach_batch`` sink writing to a database through a client library) cannot work
     as written. Fix: run with ``--master`` (local or a cluster: the driver is this
     process), or submit the pipeline to the cluster with ``spark-submit``.""",
    ),
    (
        "SS406",
        "error",
        "`sqlstream state`: read options that do not go together, or a state "
        "partition the query does not have",
        """
     ``sqlstream state`` passes its options to Spark's state data source, which allows
     only some combinations (``StateSourceOptions``, Spark 4.0 to 4.3): ``--batch-id``
     (``batchId``) not with ``--changes-from`` (``readChangeFeed``); ``--changes-to`` only
     with ``--changes-from``; ``--snapshot-batch-id`` (``snapshotStartBatchId``) and
     ``--partition`` (``snapshotPartitionId``) both or neither, not with the change feed,
     and the snapshot's batch not after ``--batch-id``; a partition below the query's
     number of state partitions. The command checks them before Spark starts (a usage
     error, exit status 2); the Python API (``state_reader.read``) raises ``SS406`` at the
     query's statement. Fix: drop or pair the options as the message says; ``sqlstream
     state`` without options shows the partitions and the batches the checkpoint keeps.""",
    ),
    # ---- Spark at run time -------------------------------------------------------------------
    (
        "SS501",
        "error",
        "Spark rejected a source or query at start, or a running query failed",
        """
     ``exec`` (and ``Pipeline.start``) report Spark's own error, positioned at the statement
     whose source or query failed. When Spark refuses a query that ``check`` accepted,
     ``check`` lacks a rule: please report it.""",
    ),
    (
        "SS502",
        "error",
        "a query's checkpoint location is in use by another run (another "
        "`exec`, `Session` or `Pipeline.start`, here or on another machine)",
        """
     Two runs of a query on one checkpoint race for its offset log: Spark fails the second
     some seconds later ("Race while writing batch"), or two drivers write the same batch.
     ``exec`` (and every ``Session`` and ``Pipeline.start`` run) holds an OS file lock
     (``flock``) on ``<checkpoint>/sqlstream/run.lock`` while the query runs, taken before
     the SparkSession starts, with the holder's pid, host and start time in it; the kernel
     releases it when the process ends, however it ends, so a killed run leaves nothing to
     clean up. Fix: wait for the run the message names to finish, stop it (Ctrl-C, or
     ``kill PID``: SIGTERM stops it cleanly), or give the sink another
     ``checkpoint_location`` (a files sink also another ``path``) to run a second copy.""",
    ),
    (
        "SS503",
        "error",
        "a checkpoint Spark finds inconsistent (its metadata file or a "
        "stateful operator's state directory missing, a row of state corrupt)",
        """
     Spark 4.2 and newer check a checkpoint when a query restarts: offset or commit logs
     without the ``metadata`` file (``STREAMING_CHECKPOINT_MISSING_METADATA_FILE``), a
     stateful query whose ``state/`` folder is empty or missing
     (``STREAMING_STATEFUL_OPERATOR_MISSING_STATE_DIRECTORY``) or a row of state whose
     checksum fails (``STATE_STORE_ROW_CHECKSUM_VERIFICATION_FAILED``) stop it (Spark 4.1
     refuses a checkpoint without its ``metadata`` file with another message, reported as
     ``SS501``). Usually files were deleted or copied by hand. Fix: restore the checkpoint from a backup, or start on a new checkpoint location
     (a files sink with a new path too), which reads the sources again.""",
    ),
    (
        "SS510",
        "error",
        "a Spark package the pipeline needs (Kafka, Avro) cannot be "
        "resolved: no repository reachable, or the version is not served",
        """
     A pipeline with a ``kafka`` connector (or Avro values) needs Spark's
     ``org.apache.spark:spark-sql-kafka-0-10_2.13`` (and ``spark-avro_2.13``) package, which
     is not in pyspark. ``exec`` adds it to ``spark.jars.packages`` (the newest patch
     release of the running Spark's major.minor that Maven Central serves with all its
     dependencies); without network access and without the package in the local Ivy cache
     the session cannot start. Fix: run once with network access, give
     ``--packages``/``SET 'spark.jars.packages'`` (or ``spark.jars`` with local jars), or
     set ``SQLSTREAM_SPARK_PACKAGE_VERSION``.""",
    ),
    (
        "SS545",
        "error",
        "a delta sink or source on Spark 4.0-4.2 started in a session without Delta's "
        "package, extension or catalog",
        """
     On the Spark minors whose Delta package runs (4.0, 4.1, 4.2) a ``delta`` sink is
     written, and a ``delta`` source read, by Delta's own Spark writer and reader (the JVM
     path), which need the package on the session's class path and its
     ``spark.sql.extensions`` and ``spark.sql.catalog.spark_catalog`` settings — static
     settings, given when the session is built. ``exec`` builds its session with them; a
     session of your own (``pipeline.start(spark)``) is checked before anything runs.
     Fix: build the session with the three settings the message names
     (``SparkSession.builder.config(…)``), or run the file with ``sqlstream exec``.""",
    ),
    (
        "SS530",
        "error",
        "the Spark cluster cannot be reached (`--master spark://…` or "
        "`--remote sc://…`: nothing listens at the host and port)",
        """
     Before creating a session, ``exec`` and ``state`` open a TCP connection to the
     standalone master (``spark://host:port``, default port 7077) or the Spark Connect
     server (``sc://host:port``, default port 15002); without it Spark would retry for
     minutes. Fix: start the master (``spark-class org.apache.spark.deploy.master.Master``)
     or the server (``start-connect-server.sh``, or ``spark-submit --class
     org.apache.spark.sql.connect.service.SparkConnectServer``), or correct the URL.""",
    ),
    (
        "SS531",
        "error",
        "`--remote`: the Spark Connect client libraries are not installed",
        """
     PySpark's Spark Connect client needs ``grpcio``, ``grpcio-status``,
     ``googleapis-common-protos``, ``pyarrow``, ``pandas`` and ``zstandard`` (PySpark's
     ``connect`` extra). Fix: ``pip install 'sqlstream[connect]'``.""",
    ),
    (
        "SS532",
        "error",
        "`sqlstream state`: Spark could not read the state of a checkpoint",
        """
     Spark's state data source (Spark 4.0 or later) refused the checkpoint: e.g. it was
     written by a Spark version without operator metadata, or a batch's state files are
     missing. The message is Spark's. Fix: read it with the Spark version that wrote it,
     or (a query that is running) read it again after the next commit.""",
    ),
)
