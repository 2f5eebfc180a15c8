"""The finding codes of change data capture (``debezium-json``, ``CREATE FLOW … AUTO CDC``):
``(code, severity, title, doc)`` records, read by :mod:`sqlstream.diagnostics.codes`.

Kept apart from the other record modules so that each stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "SS290",
        "error",
        "`format = 'debezium-json'` where it cannot be read: on a sink, with `infer_schema`",
        """
     ``debezium-json`` is a source format of ``files`` and ``kafka``: each record is a
     Debezium change event whose row image (``after``, ``before`` for a delete) is decoded
     into the declared columns. It cannot be written (a sink writes rows, not change events)
     and its columns cannot be inferred (the envelope's fields are not the row's).
     Anti-pattern: ``CREATE SINK out WITH (connector = 'files', format = 'debezium-json', …)``.
     Fix: write ``json`` rows, or apply the changes to a table with ``CREATE FLOW … AUTO
     CDC``; declare the row's columns on the source.""",
    ),
    (
        "SS291",
        "error",
        "an `AUTO CDC` flow whose sequence is not orderable, whose delete condition is not "
        "a `BOOLEAN`, or whose key is left out or not atomic",
        """
     The flow applies, per key, the change with the highest ``SEQUENCE BY`` value: the
     sequence must be ordered (a number, string, date or timestamp), the keys compared
     (atomic types, kept in the target), and ``APPLY AS DELETE WHEN`` is a condition.
     Anti-pattern: ``SEQUENCE BY payload`` where ``payload`` is a ``STRUCT``, ``COLUMNS *
     EXCEPT (id)`` with ``KEYS (id)``. Fix: sequence by the log position (``METADATA FROM
     'source.lsn'``) or the event time; keep the keys.""",
    ),
    (
        "SS292",
        "error",
        "an `AUTO CDC` flow into a sink that cannot take row-level changes, whose sink "
        "sets `mode` / `key_columns`, or that another query writes",
        """
     Applying changes updates and deletes rows by key, which a table can do and an
     append-only sink (``files``, ``kafka``, ``console``, …) cannot. The flow's ``KEYS``
     say how rows are replaced, so the target sink sets no ``mode`` or ``key_columns`` of
     its own, and no other query (an ``INSERT``, another flow) writes it: the flow replaces
     the rows of the keys it touches. Anti-pattern: ``AUTO CDC INTO out`` where ``out`` is a
     ``files`` sink. Fix:
     a ``postgres`` sink (``iceberg`` / ``delta`` where available); to keep the change
     events themselves, ``INSERT INTO`` the files sink instead.""",
    ),
    (
        "SS293",
        "error",
        "`STORED AS SCD TYPE` other than 1 or 2, `TRACK HISTORY` without type 2, or a "
        "tracked column the target does not keep",
        """
     SCD type 1 keeps the latest row of each key; type 2 keeps every version with
     ``__START_AT`` / ``__END_AT``, and ``TRACK HISTORY ON`` names the columns whose change
     opens a version (Spark 4.3: only with type 2). Anti-pattern: ``STORED AS SCD TYPE 1
     TRACK HISTORY ON city``. Fix: ``STORED AS SCD TYPE 2 TRACK HISTORY ON city``.""",
    ),
    (
        "SS294",
        "error",
        "`FROM STREAM(s)` of an `AUTO CDC` flow names a table read once, or a stream whose "
        "columns are known only at run time",
        """
     A flow applies a stream of changes micro-batch by micro-batch; a ``CREATE TABLE`` is
     read once, and its keys, columns and sequence are checked against the stream's
     declared columns. Fix: read the change log with ``CREATE STREAM`` and declare its
     columns.""",
    ),
    (
        "SS108",
        "error",
        "Flink's `PRIMARY KEY (…) NOT ENFORCED` in the column list of a stream or table",
        """
     In Flink a primary key makes a table one updated by key. A stream or table declared
     here is read, not updated: the key belongs on the sink the changes are applied to —
     Flink's spelling, ``CREATE SINK customers (id BIGINT, name STRING, PRIMARY KEY (id)
     NOT ENFORCED) WITH (connector = 'postgres', …)`` and ``INSERT INTO customers SELECT
     id, name FROM changes``, or Spark 4.3's, ``CREATE FLOW … AS AUTO CDC INTO customers
     FROM STREAM(changes) KEYS (id) APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq``
     (docs/cdc.md#flink-spelling). Anti-pattern: ``CREATE TABLE customers (id BIGINT,
     name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH (connector = 'postgres', …)``. Fix:
     ``CREATE SINK`` with the key; for an upsert of a query's rows, the sink's ``mode =
     'upsert'`` and ``key_columns``.""",
    ),
    (
        "SS109",
        "error",
        "Flink's changelog spelling (a sink's `PRIMARY KEY`) where it cannot mean a table "
        "updated by key",
        """
     A sink with ``PRIMARY KEY (k) NOT ENFORCED`` is a table updated by key: an ``INSERT``
     from a ``debezium-json`` stream is applied as ``AUTO CDC … STORED AS SCD TYPE 1``, from
     any other query as an upsert by key (docs/cdc.md#flink-spelling). Refused: the key on
     a sink that appends (``files``, ``kafka``, …), a key without ``NOT ENFORCED`` (Flink
     refuses it) or whose columns are not declared, a column list without a key, ``mode``
     or ``key_columns`` beside the key, columns written other than the sink's (by name, in
     its order), a second ``INSERT``, a query over the changelog that is more than a
     function of one change (a join, an aggregation, a window, ``DISTINCT``, ``ORDER BY`` /
     ``LIMIT``, a subquery, a generator, a non-deterministic function such as ``rand()``,
     ``uuid()`` or ``current_timestamp()``) or reads it through a view, a key column that is
     computed (Flink's upsert key must be derivable: a column of the changelog, renamed or
     widened at most), a changelog that does not declare ``op STRING METADATA FROM 'op'``.
     A ``WHERE`` and expressions of the change's own columns are allowed (a change whose
     image fails the ``WHERE`` deletes its key, as in Flink). Anti-pattern: ``INSERT INTO
     customers SELECT upper(code) AS id, name FROM changes``. Fix: select the key column
     itself (``SELECT code AS id, …``), or compute in a view and write ``CREATE FLOW … AS
     AUTO CDC INTO customers FROM STREAM(view) KEYS (id) APPLY AS DELETE WHEN op = 'd'
     SEQUENCE BY seq``.""",
    ),
    (
        "SS225",
        "error",
        "a column of Flink's changelog `INSERT` whose type the sink's declared column cannot take",
        """
     A sink declared with columns (``CREATE SINK t (id BIGINT, …, PRIMARY KEY (id) NOT
     ENFORCED)``) is written by Spark's store assignment (``spark.sql.storeAssignmentPolicy
     = ANSI``, Spark's default; ``Cast.canANSIStoreAssign``): the same type, ``NULL``, a
     number into any number, any atomic type into ``STRING``, a date or timestamp into a date
     or timestamp, arrays, maps and structs element by element. An assignable column of
     another type is converted with a ``CAST`` (``translate`` prints it; a number that does
     not fit fails the query, as Spark's ``CAST`` under ANSI); any other is refused, as Spark
     refuses it (``INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_SAFELY_CAST``). Anti-pattern: ``city
     BIGINT`` declared for a ``STRING`` column. Fix: declare the column's type, or convert
     it in the query (``try_cast(city AS BIGINT)``).""",
    ),
)
