"""``connector = 'iceberg'`` and ``'delta'`` without a JVM.

``check``: the options' findings at their positions (SS202, SS280-SS282, SS370), and the
output modes each sink takes. ``translate``: the ``foreachBatch`` writer call with the
paths resolved against the file's folder. The writers' one-commit change call
(``apply_changes``, what a change-data applier calls) on real tables written by the real
libraries (delta-rs, pyiceberg with its SQLite catalog): the rows of the given keys
replaced, the deleted keys gone, and the same ``(app id, batch id)`` committed once; a
complete-mode commit replaces every row. The results are read back with each library's own
reader and compared with the expected rows computed here in plain Python.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import sqlstream
from sqlstream.connectors.delta import DeltaWriter
from sqlstream.connectors.iceberg import IcebergWriter

QUERY = """
CREATE STREAM events (id BIGINT, kind STRING, ts TIMESTAMP,
                      WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = 'events', format = 'json');
CREATE SINK out WITH ({options});
INSERT INTO out
SELECT window_start, kind, COUNT(*) AS events
FROM TUMBLE(events, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, kind
EMIT {emit};
"""


def _text(options: str, emit: str = "FINAL") -> str:
    return QUERY.format(options=options, emit=emit)


@pytest.mark.parametrize(
    ("options", "emit", "code", "message", "at"),
    [
        (
            "connector = 'iceberg', table = 'hourly'",
            "FINAL",
            "SS280",
            "'hourly' is not an Iceberg table name (namespace.name)",
            "'hourly'",
        ),
        (
            "connector = 'delta', path = ' '",
            "FINAL",
            "SS280",
            "the path of a delta sink is empty",
            "' '",
        ),
        (
            "connector = 'delta', path = 'lake/t', mode = 'upsret', key_columns = 'kind'",
            "FINAL",
            "SS281",
            "unknown mode 'upsret' of a delta sink; did you mean 'upsert'?",
            "'upsret'",
        ),
        (
            "connector = 'iceberg', table = 'a.b', mode = 'upsert'",
            "FINAL",
            "SS281",
            "mode 'upsert' needs key_columns",
            "'upsert'",
        ),
        (
            "connector = 'delta', path = 'lake/t', mode = 'append', key_columns = 'kind'",
            "FINAL",
            "SS281",
            "key_columns is used by mode 'upsert' only",
            "key_columns",
        ),
        (
            "connector = 'iceberg', table = 'a.b', key_columns = 'window_start, knd'",
            "CHANGES",
            "SS282",
            "key column 'knd' is not a column of the query; did you mean 'kind'?",
            "'window_start, knd'",
        ),
        (
            "connector = 'delta', path = 'lake/t'",
            "CHANGES",
            "SS370",
            "a delta sink takes update output mode only with mode = 'upsert'",
            "'delta'",
        ),
        (
            "connector = 'iceberg', table = 'a.b', key_colums = 'kind'",
            "FINAL",
            "SS202",
            "unknown option 'key_colums' for connector 'iceberg'; did you mean 'key_columns'?",
            "key_colums",
        ),
        (
            "connector = 'iceberg'",
            "FINAL",
            "SS202",
            "connector 'iceberg' needs option 'table'",
            None,
        ),
        ("connector = 'delta'", "FINAL", "SS202", "connector 'delta' needs option 'path'", None),
    ],
)
def test_options_are_checked_at_their_position(options, emit, code, message, at):
    text = _text(options, emit)
    (finding,) = sqlstream.check(text)
    assert (finding.code, finding.message) == (code, message)
    if at is not None:
        assert text[finding.span.start : finding.span.end] == at


@pytest.mark.parametrize(
    "options",
    [
        "connector = 'delta', path = 'lake/t', mode = 'upsert', key_columns = 'window_start, kind'",
        "connector = 'iceberg', table = 'a.b', key_columns = 'window_start,kind'",
    ],
)
def test_update_mode_with_upsert_and_every_mode_without_are_accepted(options):
    assert sqlstream.check(_text(options, "CHANGES")) == []
    assert sqlstream.check(_text(options, "FINAL")) == []
    plain = options.split(", mode")[0].split(", key_columns")[0]
    assert sqlstream.check(_text(plain, "FINAL")) == []
    assert sqlstream.check(_text(plain, "COMPLETE")) == []


def test_translate_prints_the_writer_with_paths_beside_the_file(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(
        _text("connector = 'iceberg', table = 'analytics.hourly'")
        + "CREATE SINK latest WITH (connector = 'delta', path = 'lake/latest', "
        "key_columns = 'kind');\n"
        "INSERT INTO latest SELECT kind, COUNT(*) AS n FROM events GROUP BY kind EMIT CHANGES;\n"
        "CREATE SINK totals WITH (connector = 'delta', path = 's3://b/totals');\n"
        "INSERT INTO totals SELECT kind, COUNT(*) AS n FROM events GROUP BY kind "
        "EMIT COMPLETE;\n"
    )
    text = sqlstream.translate(path.read_text(), path=str(path))
    warehouse = tmp_path / ".sqlstream" / "warehouse"
    assert (
        ".foreachBatch(importlib.import_module('sqlstream.connectors.iceberg').IcebergWriter("
        f"table='analytics.hourly', warehouse='{warehouse}', catalog='sqlstream', "
        f"catalog_uri='sqlite:///{warehouse}/catalog.db', mode='append'))\n"
        "    .outputMode('append')" in text
    )
    assert (
        ".foreachBatch(importlib.import_module('sqlstream.connectors.delta').DeltaWriter("
        f"path='{tmp_path}/lake/latest', mode='upsert', key_columns=['kind']))\n"
        "    .outputMode('update')" in text
    )
    assert (
        "DeltaWriter(path='s3://b/totals', mode='append', complete=True))\n"
        "    .outputMode('complete')" in text
    )


# ---- the writers' one-commit calls, on real tables ----------------------------------------

T0 = dt.datetime(2013, 1, 1, 5, tzinfo=dt.timezone.utc)
SCHEMA = pa.schema(
    [
        pa.field("window_start", pa.timestamp("us", tz="UTC")),
        pa.field("origin", pa.string()),
        pa.field("flights", pa.int64(), nullable=False),
    ]
)


def _rows(*rows) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"window_start": T0 + dt.timedelta(hours=h), "origin": o, "flights": n}
            for h, o, n in rows
        ],
        schema=SCHEMA,
    )


def _keys(*keys) -> pa.Table:
    return _rows(*[(h, o, 0) for h, o in keys]).select(["window_start", "origin"])


def _content(table: pa.Table) -> list[tuple]:
    return sorted(
        (int((r["window_start"] - T0).total_seconds() // 3600), r["origin"], r["flights"])
        for r in table.to_pylist()
    )


def _delta(tmp_path):
    from deltalake import DeltaTable

    writer = DeltaWriter(str(tmp_path / "t"), "upsert", ("window_start", "origin"))
    return writer, lambda: DeltaTable(writer.path).to_pyarrow_table()


def _iceberg(tmp_path):
    writer = IcebergWriter(
        "lake.t", str(tmp_path / "wh"), mode="upsert", key_columns=("window_start", "origin")
    )
    return writer, lambda: writer.load().scan().to_arrow()


@pytest.mark.parametrize("make", [_delta, _iceberg], ids=["delta", "iceberg"])
def test_apply_changes_replaces_and_deletes_keys_in_one_commit_once(make, tmp_path):
    writer, read = make(tmp_path)
    app = "query-1"
    assert writer.committed(app) is None
    assert writer.apply_changes(_rows((0, "EWR", 3), (0, "JFK", 4), (1, "EWR", 5)), None, app, 0)
    assert _content(read()) == [(0, "EWR", 3), (0, "JFK", 4), (1, "EWR", 5)]
    # batch 1: (0, JFK) replaced, (1, EWR) deleted, (2, LGA) added; a delete of a key also
    # in the rows keeps the row; a delete of an absent key changes nothing
    changes = _rows((0, "JFK", 9), (2, "LGA", 1), (3, "EWR", 2))
    deletes = _keys((1, "EWR"), (3, "EWR"), (7, "JFK"))
    assert writer.apply_changes(changes, deletes, app, 1)
    expected = [(0, "EWR", 3), (0, "JFK", 9), (2, "LGA", 1), (3, "EWR", 2)]
    assert _content(read()) == expected
    assert writer.committed(app) == 1
    # replayed (same or older batch id): nothing changes
    assert not writer.apply_changes(_rows((0, "EWR", 100)), _keys((0, "JFK")), app, 1)
    assert not writer.apply_changes(_rows((0, "EWR", 100)), None, app, 0)
    assert _content(read()) == expected
    # another application (query) has batch ids of its own
    assert writer.apply_changes(_rows((0, "EWR", 7)), None, "query-2", 0)
    assert _content(read()) == [(0, "EWR", 7), *expected[1:]]


@pytest.mark.parametrize("make", [_delta, _iceberg], ids=["delta", "iceberg"])
def test_a_complete_mode_commit_replaces_every_row(make, tmp_path):
    writer, read = make(tmp_path)
    writer.commit(_rows((0, "EWR", 1), (1, "JFK", 2)), None, "q", 0, overwrite=True)
    writer.commit(_rows((5, "LGA", 3)), None, "q", 1, overwrite=True)
    assert _content(read()) == [(5, "LGA", 3)]
    assert writer.committed("q") == 1


def test_apply_changes_needs_key_columns(tmp_path):
    writer = DeltaWriter(str(tmp_path / "t"))
    with pytest.raises(ValueError, match="key_columns"):
        writer.apply_changes(_rows((0, "EWR", 1)), None, "q", 0)


def test_queries_creating_tables_of_one_namespace_at_once_all_succeed(tmp_path):
    """Two queries of one pipeline each create their Iceberg table on their first micro-batch,
    on the driver's threads; the namespace they share is created once (the CI run of 71c1b0b
    failed on the catalog's unique key when both inserted it)."""
    import threading

    warehouse = str(tmp_path / "wh")
    names = [f"lake.t{i}" for i in range(12)] + ["lake.t0", "lake.t1"]
    start = threading.Barrier(len(names))
    errors: list[BaseException] = []

    def create(name: str) -> None:
        writer = IcebergWriter(name, warehouse)
        start.wait()
        try:
            writer.load(_rows((0, "EWR", 1)).schema)
        except BaseException as error:  # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=create, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    catalog = IcebergWriter("lake.t0", warehouse).catalog()
    assert sorted(name for _, name in catalog.list_tables("lake")) == sorted(
        f"t{i}" for i in range(12)
    )
