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
