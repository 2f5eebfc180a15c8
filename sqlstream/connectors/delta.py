"""``connector = 'delta'``: each micro-batch committed once into a Delta table at a path,
appended, merged by key or overwritten, through ``deltalake`` (delta-rs) from
``foreachBatch`` — no Spark package — where Delta's Spark package does not run (Spark 4.3);
on Spark 4.0–4.2 through Delta's own Spark writer (:mod:`.lakehouse_jvm`, the JVM path),
chosen in :meth:`Delta.sink_options` from the target Spark minor. As a source: Delta's
streaming reader on 4.0–4.2, sqlstream's Python data source elsewhere
(:mod:`.lakehouse_source`).

The call ``translate`` prints::

    (spark.sql(sql).writeStream
        .foreachBatch(importlib.import_module('sqlstream.connectors.delta').DeltaWriter(
            path='/abs/lake/latest', mode='upsert', key_columns=['origin']))
        .outputMode('update') … .option('checkpointLocation', dir).queryName(name).start())

``path`` is resolved against the ``.ssql`` file's folder (a URI such as ``s3://…`` is kept
as written). Each commit carries a delta-rs *app transaction* ``(query id, batch id)``
(Delta's ``txn`` action, Spark's ``txnAppId`` / ``txnVersion``), read back before the next
commit with ``DeltaTable.transaction_version``: a replayed micro-batch is skipped
(:mod:`.lakehouse`). ``mode = 'upsert'`` is one ``MERGE`` (``TableMerger``) per micro-batch,
complete output mode an overwrite. The table is created from the first micro-batch's
columns (Spark's types as Arrow maps them: ``DataFrame.toArrow``).

Sources: Delta protocol *Transaction Identifiers*; delta-rs ``write_deltalake``,
``DeltaTable.merge``, ``CommitProperties`` / ``Transaction``, ``transaction_version``.
"""

from __future__ import annotations

from sqlstream.connectors import lakehouse, lakehouse_jvm, lakehouse_offsets, lakehouse_source
from sqlstream.connectors.base import ResolvedOptions, ResolvePath
from sqlstream.diagnostics.errors import OptionError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir import spark_versions
from sqlstream.ir.calls import Chain, Step

_WRITER = "DeltaWriter"


class Delta(lakehouse.LakehouseSink):
    """A Delta table at ``path`` (required); every output mode (update with upsert only);
    durable."""

    name = "delta"
    python_writer = (__name__, _WRITER)
    jvm_writer = (lakehouse_jvm.__name__, lakehouse_jvm.WRITER)
    cdc_table = "DeltaCdcTable"
    source_format = "delta"
    required = ("path",)
    own_options: tuple[str, ...] = ("path", *lakehouse.OWN_OPTIONS)
    jvm_source_minors = tuple(lakehouse_jvm.DELTA_PACKAGES)

    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Raises:
        OptionError: ``SS280`` an empty ``path``; ``SS281`` the mode (see
            :func:`.lakehouse.check_mode`).
        """
        path = compiler["path"]
        if not path.text.strip():
            raise OptionError(
                "the path of a delta sink is empty",
                path.value_span,
                source,
                code="SS280",
                hint="path = 'lake/name': a folder, relative to this file",
            )
        lakehouse.check_mode(compiler, source, self.name)

    def declared(self, statement, resolved, resolve_path, project=None, trusted=False):
        """``self``, once the declared columns are checked against the table's schema when
        the table exists at ``path`` inside ``project`` (or ``trusted``), read with
        delta-rs (:func:`.lakehouse_source.check_columns`: ``SS295``, ``SS296``)."""
        path = resolve_path(resolved.get("path"))
        if path and statement.columns and lakehouse_source.readable(path, project, trusted):
            schema = lakehouse_source.delta_schema(path)
            lakehouse_source.check_columns(statement, schema, f"the delta table {path}")
        return self

    def source_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``('delta', path)``: the table's folder, resolved against the file's folder."""
        return self.source_format, resolve_path(resolved.get("path"))

    def bind_columns(self, resolved, columns, path, report, project=None, trusted=False):
        """The declared columns as declared; the options of the read: ``path``,
        ``starting_version``, ``skip_change_commits`` (the Python reader's names)."""
        read = tuple((c.name.value, c.type) for c in columns)
        return read, {}, (("path", path or ""), *lakehouse_source.reader_options(resolved))

    def read_chains(self, relation: p.SourceRelation) -> tuple[Chain, ...]:
        """The common chains; on the Python path (:mod:`.lakehouse_source`) the data source
        registered first."""
        chains = super().read_chains(relation)
        if lakehouse_source.is_python(relation):
            return (lakehouse_source.register_chain(relation), *chains)
        return chains

    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """On the JVM path ``format('delta')``, ``option('startingVersion' |
        'skipChangeCommits' | 'maxFilesPerTrigger' | 'maxBytesPerTrigger', v)`` when given, ``load(path)``: no ``schema`` call (Delta's
        streaming reader takes the table's schema and refuses another), each new commit's
        rows read as appends. On the Python path the reader's steps
        (:func:`.lakehouse_source.read_steps`)."""
        if lakehouse_source.is_python(relation):
            return lakehouse_source.read_steps(relation)
        names = {"starting_version": "startingVersion", "skip_change_commits": "skipChangeCommits"}
        names.update((n, n) for n in lakehouse_offsets.RATE_OPTIONS["delta"])
        options = [Step("option", (names[k], v)) for k, v in relation.options if k in names]
        return (Step("format", ("delta",)), *options, Step("load", (relation.path,)))

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(None, path)``: no ``format`` call; the table's folder."""
        return None, resolve_path(resolved.get("path"))

    def sink_options(
        self, resolved: ResolvedOptions, resolve_path: ResolvePath, settings: dict[str, str]
    ) -> tuple[tuple[str, str], ...]:
        """The writer's arguments as ``(name, text)``: ``path`` (resolved), ``mode``
        (``upsert`` with ``key_columns``, else ``append``), ``key_columns`` (``a,b``);
        then ``engine = 'spark'`` when the target Spark minor (``settings``'
        ``sqlstream.spark_version``) has Delta's package (the JVM path,
        :mod:`.lakehouse_jvm`)."""
        path = resolve_path(resolved.get("path"))
        assert path is not None  # required
        keys = lakehouse.key_names(resolved.get("key_columns"))
        mode = "upsert" if lakehouse.is_upsert(resolved) else "append"
        jvm = lakehouse_jvm.engine(self.name, settings.get(spark_versions.SETTING, ""))
        pairs = [
            ("path", path),
            ("mode", mode),
            ("key_columns", ",".join(keys) or None),
            (lakehouse.ENGINE, jvm),
        ]
        return tuple((k, v) for k, v in pairs if v is not None)


# ---- run time: the foreachBatch writer (imports deltalake when called) -----------------


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class DeltaWriter(lakehouse.LakehouseWriter):
    """The ``foreachBatch`` function of a ``delta`` sink: one Delta commit per micro-batch,
    with the app transaction ``(query id, batch id)``.

    Args:
        path: the table's folder or URI (created with the first micro-batch).
        mode, key_columns, complete: see :class:`.lakehouse.LakehouseWriter`.

    Calling it (``writer(df, batch_id)``) raises what delta-rs raises (Spark then fails
    the query; the batch is retried on restart).
    """

    def __init__(self, path: str, mode: str = "append", key_columns=(), complete: bool = False):
        super().__init__(mode, key_columns, complete)
        self.path = self.target = path

    def __repr__(self) -> str:
        return f"DeltaWriter(path={self.path!r}, mode={self.mode!r})"

    def table(self):
        """The ``deltalake.DeltaTable`` at :attr:`path`, or ``None`` when there is none."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.path)
        except TableNotFoundError:
            return None

    def committed(self, app: str) -> int | None:
        """The app transaction version of ``app`` in the table's log, or ``None``."""
        table = self.table()
        return None if table is None else table.transaction_version(app)

    def commit(self, rows, delete_keys, app: str, batch_id: int, overwrite: bool) -> None:
        """One delta-rs commit (``write_deltalake`` or a ``MERGE``) with the app
        transaction ``(app, batch_id)`` and both in its ``commitInfo``."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        props = CommitProperties(
            custom_metadata=lakehouse.commit_metadata(app, batch_id),
            app_transactions=[Transaction(app_id=app, version=batch_id)],
        )
        table = self.table()
        if table is None and delete_keys is not None and rows.num_rows == 0:
            return  # deletes only, from a table that does not exist yet
        if overwrite or not self.key_columns or table is None:
            if overwrite:
                write_deltalake(self.path, rows, mode="overwrite", commit_properties=props)
            else:
                write_deltalake(self.path, rows, mode="append", commit_properties=props)
            return
        source, flag = _changes(rows, delete_keys, self.key_columns)
        predicate = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in self.key_columns)
        values = {_quoted(n): f"s.{_quoted(n)}" for n in rows.schema.names}
        merger = table.merge(
            source, predicate, source_alias="s", target_alias="t", commit_properties=props
        )
        if delete_keys is not None:
            merger = merger.when_matched_delete(predicate=f"s.{flag}")
        merger.when_matched_update(values, predicate=f"NOT s.{flag}").when_not_matched_insert(
            values, predicate=f"NOT s.{flag}"
        ).execute()


def _changes(rows, delete_keys, keys: tuple[str, ...]):
    """``(source, flag column)``: ``rows`` and the ``delete_keys`` (their other columns
    null) with a boolean column that marks a delete; a key both in ``rows`` and in
    ``delete_keys`` keeps its row."""
    import pyarrow as pa

    flag = "__sqlstream_delete"
    schema = pa.schema([f.with_nullable(True) for f in rows.schema])
    rows = rows.cast(schema)
    source = rows.append_column(flag, pa.array([False] * rows.num_rows, pa.bool_()))
    if delete_keys is None or delete_keys.num_rows == 0:
        return source, flag
    kept = delete_keys.select(list(keys))
    if rows.num_rows:
        kept = kept.join(rows.select(list(keys)), list(keys), join_type="left anti")
    columns = [
        kept.column(f.name).cast(f.type) if f.name in keys else pa.nulls(kept.num_rows, f.type)
        for f in schema
    ]
    columns.append(pa.array([True] * kept.num_rows, pa.bool_()))
    deletes = pa.Table.from_arrays(columns, schema=source.schema)
    return pa.concat_tables([source, deletes]), flag
