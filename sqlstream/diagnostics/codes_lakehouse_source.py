"""The finding codes of ``iceberg`` and ``delta`` *sources* read on the Python path
(:mod:`sqlstream.connectors.lakehouse_source`): ``(code, severity, title, doc)`` records,
read by :mod:`sqlstream.diagnostics.codes`.

Kept apart from the other record modules so that each stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "SS295",
        "error",
        "an `iceberg` or `delta` source declares a column its table does not have",
        """
     A lakehouse source reads the declared columns by name from the table. When the table
     exists when the file is checked (a Delta folder, or the Iceberg catalog and table,
     inside the project), ``check`` reads its schema (delta-rs, pyiceberg; no JVM) and each
     declared column must be one of the table's. Anti-pattern: ``CREATE STREAM s (origin
     STRING, flights BIGINT) WITH (connector = 'delta', path = 'lake/hourly')`` for a table
     whose column is ``n_flights``. Fix: declare the table's names (rename in the query).""",
    ),
    (
        "SS296",
        "error",
        "an `iceberg` or `delta` source declares a column with another type than its table's",
        """
     The source's rows are the table's values cast to the declared types; a declared type
     other than the table's would change or lose values (a ``TIMESTAMP`` read as ``DATE``, a
     ``BIGINT`` read as ``INT``). Delta's ``long`` is ``BIGINT``, ``timestamp`` is
     ``TIMESTAMP``, ``timestamp_ntz`` is ``TIMESTAMP_NTZ``; Iceberg's ``timestamptz`` is
     ``TIMESTAMP``, its ``timestamp`` is ``TIMESTAMP_NTZ``. Anti-pattern: ``n INT`` for a
     ``long`` column. Fix: declare the table's type and convert in the query.""",
    ),
    (
        "SS286",
        "error",
        "a rate limit of the other lakehouse format's reader on a source",
        """
     Each format's streaming reader has its own rate-limit options, and a lakehouse source
     takes its format's names (on both paths: Spark's reader on the JVM path, sqlstream's
     Python reader elsewhere): Delta's ``maxFilesPerTrigger`` and ``maxBytesPerTrigger``,
     Iceberg's ``streaming-max-files-per-micro-batch`` and
     ``streaming-max-rows-per-micro-batch``. Anti-pattern: ``maxFilesPerTrigger = 1`` on an
     ``iceberg`` source. Fix: ``'streaming-max-files-per-micro-batch' = 1``.""",
    ),
    (
        "SS287",
        "error",
        "a lakehouse source's rate limit is not a positive whole number",
        """
     A rate limit is a count of files, rows or bytes per micro-batch: a whole number of at
     least 1; ``maxBytesPerTrigger`` also takes a byte size with a unit (``64m``, ``1g``:
     powers of 1024, as Spark reads sizes). Anti-pattern: ``maxFilesPerTrigger = 0`` or
     ``'streaming-max-rows-per-micro-batch' = 'many'``. Fix: ``maxFilesPerTrigger = 1``.""",
    ),
    (
        "SS288",
        "error",
        "a rate limit on a lakehouse source read where no read limit reaches the reader",
        """
     Where no Spark package of the format runs, a ``delta`` or ``iceberg`` source is read by
     sqlstream's Python data source; PySpark gives a Python stream reader a read limit
     (admission control: ``latestOffset(start, limit)``) from 4.2 on. On an older target
     minor (Iceberg on 4.0) the limit could not be honoured, so it is refused rather than
     ignored. Fix: remove it (each micro-batch then reads every new commit), or target Spark
     4.2 or later.""",
    ),
    (
        "SS407",
        "error",
        "a lakehouse source's checkpoint was written by the other reader of its format",
        """
     A ``delta`` or ``iceberg`` source is read by the format's Spark package where one runs
     (Delta on 4.0-4.2, Iceberg on 4.1) and by sqlstream's Python reader elsewhere. Their
     offsets differ (Delta's ``reservoirVersion`` / ``index``, Iceberg's ``snapshot_id`` /
     ``position`` against the Python reader's ``version`` / ``snapshot_id`` and ``files``),
     and neither reads the other's: a checkpoint written on one minor and started on a minor
     of the other path would fail inside Spark. sqlstream reads the checkpoint's last offsets
     before any query starts and refuses, naming both readers. Fix: a new
     ``checkpoint_location`` (the table is read from its start again), or run on the Spark
     minor that wrote the checkpoint.""",
    ),
    (
        "SS550",
        "error",
        "an `iceberg` or `delta` source met a commit that changes or deletes rows",
        """
     A streaming read of a table reads the rows each commit *appends*. A Delta commit that
     removes data (``MERGE``, ``UPDATE``, ``DELETE``, an overwrite: ``remove`` actions with
     ``dataChange``) or an Iceberg ``overwrite`` or ``delete`` snapshot has no meaning as
     appended rows: the query fails at it, as Spark's Delta source does (and Iceberg's).
     Compactions (Delta's ``dataChange = false``, Iceberg's ``replace``) are skipped.
     Anti-pattern: a stream over a table an upsert sink writes. Fix: ``skip_change_commits
     = true`` to skip such commits (their changed rows are not read, as Delta's
     ``skipChangeCommits``), or read the table's changes another way.""",
    ),
    (
        "SS551",
        "error",
        "an `iceberg` or `delta` source cannot read its table at run time",
        """
     The Python reader of a lakehouse source found the table unreadable as a stream: a
     declared column the table does not have (the table did not exist when the file was
     checked), a Delta commit whose log entry is gone (the log was cleaned up) or not on a
     local file system, an Iceberg snapshot that is no longer an ancestor of the current one
     (expired, rolled back). Fix: declare the table's columns; start on a new checkpoint
     location to read the table as it is now.""",
    ),
)
