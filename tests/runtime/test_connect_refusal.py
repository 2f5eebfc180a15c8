"""``SS405``: through Spark Connect, a sink Spark writes with ``foreachBatch`` runs its
function in a Python process of the server (with its own session; since Spark 4.3 the
batch DataFrame is on the query's cloned session), not in ``exec``. ``refuse_on_connect``
(what the binder calls for a Spark Connect session before starting any query) refuses the
built-in connectors that write that way, ``foreach_batch`` and ``postgres``, at the
``INSERT``, without a server or a JVM."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.runtime.spark_session import CONNECT_UNSUPPORTED, refuse_on_connect

STREAM = """CREATE STREAM events (id BIGINT, kind STRING, ts TIMESTAMP,
                      WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = 'in/events', format = 'json');
"""

FOREACH_BATCH = (
    STREAM
    + """CREATE SINK batches WITH (connector = 'foreach_batch',
                          function = 'tests.foreach_batch_functions:collect');
INSERT INTO batches SELECT id, kind FROM events;
"""
)

POSTGRES = (
    STREAM
    + """CREATE SINK per_minute WITH (connector = 'postgres', host = 'db.internal',
    database = 'dash', user = 'app', table = 'public.per_minute',
    key_columns = 'window_start, kind');
INSERT INTO per_minute
SELECT window_start, kind, COUNT(*) AS events
FROM TUMBLE(events, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, kind
EMIT CHANGES;
"""
)


@pytest.mark.parametrize(
    ("text", "sink", "line"), [(FOREACH_BATCH, "batches", 6), (POSTGRES, "per_minute", 7)]
)
def test_foreach_batch_sinks_are_refused_at_their_insert(text, sink, line):
    pipeline = sqlstream.compile(text, path="p.ssql")
    notes: list[str] = []
    with pytest.raises(SqlStreamError) as caught:
        refuse_on_connect(pipeline, notes.append)
    error = caught.value
    assert error.code == "SS405" and error.span.line == line
    rendered = error.render()
    assert rendered.startswith(
        f"p.ssql:{line}:1: SS405 query '{sink}' uses foreachBatch, "
        "which Spark Connect cannot run here: " + CONNECT_UNSUPPORTED["foreachBatch"]
    ), rendered
    assert "--master" in rendered and "spark-submit" in rendered
    assert notes == []


def test_a_files_sink_runs_through_connect():
    pipeline = sqlstream.compile(
        STREAM + "CREATE SINK out WITH (connector = 'files', "
        "path = 'out', format = 'parquet');\n"
        "INSERT INTO out SELECT id, kind FROM events;\n"
    )
    notes: list[str] = []
    refuse_on_connect(pipeline, notes.append)  # no SS405
    assert notes == []
