"""A ``postgres`` sink as the target of an ``AUTO CDC`` flow: the
:class:`~sqlstream.connectors.cdc.cdc_apply.CdcTable` operation in PostgreSQL, and the
``foreachBatch`` call ``translate`` prints for it::

    .foreachBatch(importlib.import_module('sqlstream.connectors.cdc.cdc_apply').CdcApplier(
        target=importlib.import_module('sqlstream.connectors.cdc.postgres_cdc').PostgresCdcTable(
            url='postgresql://db:5432/crm', table='customers', progress_table='sqlstream_batches'),
        keys=['id'], columns=['id', 'name', 'city'], scd_type=1, tracked=[]))

One transaction per micro-batch, with psycopg, as the ``postgres`` sink's
(:class:`~sqlstream.connectors.postgres.PostgresWriter`, whose connection, table names and
progress table it shares): the progress row of ``(query id, table)`` locked and checked
(a batch committed before changes nothing), the target and its changes table created when
missing, the keys' kept changes read, their rows and changes replaced, the batch id
recorded, committed.

The call is made by :meth:`sqlstream.connectors.postgres.Postgres.format_steps` from the
sink's settings. Tables: the target (the flow's columns; SCD 2 adds ``__START_AT`` and ``__END_AT`` of the
sequence's type; primary key: the keys, SCD 2 the keys and ``__START_AT``) and its changes
table ``<table>__sqlstream_changes`` (the micro-batch's columns: the target's, then
``__sqlstream_sequence`` and ``__sqlstream_delete``; SCD 1: the winning change of each key,
tombstones included; SCD 2: every change). Readers query the target; the changes table is
the applier's.

Sources: PostgreSQL docs *COPY*, *CREATE TABLE*, *DELETE*; psycopg 3 *COPY*, *transactions*.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlstream.connectors.cdc.cdc_apply import END_AT, START_AT
from sqlstream.connectors.postgres import PROGRESS_TABLE, PostgresWriter, pg_type

CHANGES_SUFFIX = "__sqlstream_changes"
DDL_LOCK = 0x5353_4344_4300  # pg_advisory_xact_lock key of the appliers' CREATE TABLEs


class PostgresCdcTable(PostgresWriter):
    """A PostgreSQL table that takes row-level changes (a
    :class:`~sqlstream.connectors.cdc.cdc_apply.CdcTable`).

    Args:
        table: the target table (``name`` or ``schema.name``), created when missing.
        changes_table: the table of kept changes (default ``<table>__sqlstream_changes``).
        url, host, port, database, user, password, progress_table: as
            :class:`~sqlstream.connectors.postgres.PostgresWriter`.
    """

    def __init__(
        self,
        table: str,
        url: str | None = None,
        host: str | None = None,
        port: int | None = None,
        database: str | None = None,
        user: str | None = None,
        password: str | None = None,
        progress_table: str = PROGRESS_TABLE,
        changes_table: str | None = None,
    ):
        super().__init__(
            table, "append", (), url, host, port, database, user, password, progress_table
        )
        self.changes_table = changes_table or table + CHANGES_SUFFIX
        self._created = False  # the tables exist (created once per run of the driver)

    def __repr__(self) -> str:  # no connection parameters: the password is one
        return f"PostgresCdcTable(table={self.table!r})"

    @contextmanager
    def transaction(
        self, query_id: str, batch_id: int, fields: list, flow: dict[str, Any]
    ) -> Iterator[_Transaction | None]:
        """The micro-batch's transaction (:meth:`~sqlstream.connectors.cdc.cdc_apply.CdcTable.transaction`):
        ``None`` when the batch was committed before; else the tables created when missing,
        and on leaving the block the batch id recorded and the transaction committed (rolled
        back on an error)."""
        from psycopg import sql

        types = {f.name: pg_type(f.dataType) for f in fields}
        keys = list(flow["keys"])
        target = [(c, types[c]) for c in flow["columns"]]
        if flow["scd_type"] == 2:
            kind = types[flow["sequence"]]
            target += [(START_AT, kind), (END_AT, kind)]
        # the tables first, in a transaction of their own: two flows creating them at once
        # would collide in PostgreSQL's catalog (CREATE TABLE IF NOT EXISTS is not safe
        # against a concurrent one), so their creators take turns (an advisory lock)
        if not self._created:
            with self.connect() as conn, conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (DDL_LOCK,))
                self._committed(cur, query_id, batch_id)  # creates the progress table
                self._create(cur, target, fields, keys, flow)
            self._created = True
        with self.connect() as conn, conn.cursor() as cur:
            if self._committed(cur, query_id, batch_id):
                yield None
                return
            yield _Transaction(self, cur, keys, [(k, types[k]) for k in keys], target, fields)
            cur.execute(
                sql.SQL(
                    "INSERT INTO {} (query_id, table_name, batch_id) VALUES (%s, %s, %s) "
                    "ON CONFLICT (query_id, table_name) DO UPDATE SET batch_id = EXCLUDED.batch_id, "
                    "committed_at = now()"
                ).format(self._name(self.progress_table)),
                (query_id, self.table, batch_id),
            )

    def _create(self, cur, target, fields, keys, flow) -> None:
        """``CREATE TABLE IF NOT EXISTS`` the target (``target``: ``(name, PostgreSQL
        type)``; primary key the keys, and ``__START_AT`` for SCD 2) and the changes table
        (the micro-batch's ``fields``; primary key the keys, and the sequence for SCD 2)."""
        from psycopg import sql

        scd2 = flow["scd_type"] == 2
        changes = [(f.name, pg_type(f.dataType)) for f in fields]
        for name, columns, key in (
            (self.table, target, keys + ([START_AT] if scd2 else [])),
            (self.changes_table, changes, keys + ([flow["sequence"]] if scd2 else [])),
        ):
            definitions = [
                sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t in columns
            ]
            definitions.append(
                sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(map(sql.Identifier, key)))
            )
            cur.execute(
                sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(
                    self._name(name), sql.SQL(", ").join(definitions)
                )
            )


class _Transaction:
    """:class:`~sqlstream.connectors.cdc.cdc_apply.CdcTransaction` on a psycopg cursor: the keys
    of the micro-batch in a temporary table, joined to read and to delete."""

    def __init__(self, table: PostgresCdcTable, cur, keys, key_types, target, fields):
        self.table, self.cur, self.keys = table, cur, keys
        self.key_types, self.target = key_types, target
        self.fields = [f.name for f in fields]
        self._loaded = False

    def _ids(self, names):
        from psycopg import sql

        return sql.SQL(", ").join(sql.Identifier(n) for n in names)

    def _load(self, keys: list[tuple]) -> None:
        from psycopg import sql

        if self._loaded:
            return
        self.cur.execute(
            sql.SQL("CREATE TEMPORARY TABLE _sqlstream_keys ({}) ON COMMIT DROP").format(
                sql.SQL(", ").join(
                    sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t))
                    for n, t in self.key_types
                )
            )
        )
        copy_sql = sql.SQL("COPY _sqlstream_keys ({}) FROM STDIN").format(self._ids(self.keys))
        with self.cur.copy(copy_sql) as copy:
            for key in keys:
                copy.write_row(list(key))
        self._loaded = True

    def _matching(self):
        from psycopg import sql

        return sql.SQL("({}) IN (SELECT {} FROM _sqlstream_keys)").format(
            self._ids(self.keys), self._ids(self.keys)
        )

    def changes(self, keys: list[tuple]) -> list[tuple]:
        """The kept changes of ``keys``, in the micro-batch's columns."""
        from psycopg import sql

        self._load(keys)
        self.cur.execute(
            sql.SQL("SELECT {} FROM {} WHERE {}").format(
                self._ids(self.fields), self.table._name(self.table.changes_table), self._matching()
            )
        )
        return [tuple(r) for r in self.cur.fetchall()]

    def replace(self, keys: list[tuple], rows: list[tuple], changes: list[tuple]) -> None:
        """Delete the rows and kept changes of ``keys``; write ``rows`` and ``changes``."""
        from psycopg import sql

        if not keys:
            return
        self._load(keys)
        for name, columns, values in (
            (self.table.table, [n for n, _ in self.target], rows),
            (self.table.changes_table, self.fields, changes),
        ):
            self.cur.execute(
                sql.SQL("DELETE FROM {} WHERE {}").format(self.table._name(name), self._matching())
            )
            copy_sql = sql.SQL("COPY {} ({}) FROM STDIN").format(
                self.table._name(name), self._ids(columns)
            )
            with self.cur.copy(copy_sql) as copy:
                for row in values:
                    copy.write_row(list(row))
