"""The pipeline under test: its ends swapped on the plan, then lowered as any plan (no JVM).
What the program of the swapped plan calls is what the harness runs
(``tests/spark/test_test_command.py`` runs it)."""

from __future__ import annotations

from sqlstream.lowering.lowered import Lowered
from sqlstream.lowering.printer import render_program
from sqlstream.testing.pipeline import FEED, Capturing, Read, compile_pipeline

PIPELINE = """\
CREATE STREAM clicks (user_id STRING, ts TIMESTAMP, hour AS date_trunc('HOUR', ts),
  WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'kafka', bootstrap_servers = '${env:BROKERS}', topic = 'clicks');
CREATE TABLE users (user_id STRING, country STRING)
WITH (connector = 'files', path = 'users', format = 'csv');
CREATE SINK counts WITH (connector = 'files', path = 'out', format = 'json');
CREATE SINK shown WITH (connector = 'console');
INSERT INTO counts SELECT window_start, country, COUNT(*) AS n
FROM TUMBLE(clicks, ts, INTERVAL '1' MINUTE) AS c JOIN users AS u ON c.user_id = u.user_id
GROUP BY window_start, window_end, country EMIT EVERY INTERVAL '10' SECONDS;
INSERT INTO shown SELECT user_id FROM clicks;
"""


def _under_test(tmp_path):
    path = tmp_path / "p.ssql"
    path.write_text(PIPELINE, encoding="utf-8")
    pipeline = compile_pipeline(path, {})
    plan = pipeline.under_test(
        Read("json", "/t/feed", (("mode", "FAILFAST"),)),
        {"users": Read("json", "/t/tables/0")},
        {"counts": Capturing("sqlstream.testing.capture:CAPTURES.c1", "/t/ckpt/counts")},
    )
    return pipeline, plan


def test_the_streams_read_one_feed_and_the_tables_their_rows(tmp_path):
    pipeline, plan = _under_test(tmp_path)
    text = render_program(Lowered(plan).program)
    assert [r.name for r in plan.relations] == [FEED, f"{FEED}_0", "clicks", "users"]
    assert pipeline.feed_columns() == (
        ("__sqlstream_stream", "STRING"),
        ("s0_0", "STRING"),
        ("s0_1", "TIMESTAMP"),
    )
    assert (
        "df = (spark.readStream\n    .format('json')\n"
        "    .schema('`__sqlstream_stream` STRING, `s0_0` STRING, `s0_1` TIMESTAMP')\n"
        "    .option('mode', 'FAILFAST')\n    .load('/t/feed'))"
    ) in text
    assert (
        'spark.sql("SELECT `s0_0` AS `user_id`, `s0_1` AS `ts` FROM `__sqlstream_feed` '
        "WHERE `__sqlstream_stream` = 'clicks'\").createOrReplaceTempView('__sqlstream_feed_0')"
    ) in text
    assert "df = (spark.readStream\n    .table('__sqlstream_feed_0'))" in text
    assert "df = df.withWatermark('ts', '1 minute')" in text
    assert "kafka" not in text and "${env" not in text
    assert (
        "df = (spark.read\n    .format('json')\n    .schema('`user_id` STRING, `country` STRING')"
        in text
    )


def test_only_the_queries_run_write_to_their_captures_with_the_default_trigger(tmp_path):
    _, plan = _under_test(tmp_path)
    (query,) = plan.queries
    assert query.name == "counts" and query.trigger is None
    (block,) = [b for b in Lowered(plan).program.blocks if b.kind == "query"]
    steps = [s.name for s in block.chains[-1].steps]
    assert steps == [
        "sql",
        "writeStream",
        "foreachBatch",
        "outputMode",
        "option",
        "queryName",
        "start",
    ]
    function = block.chains[-1].steps[2].args[0]
    assert [s.name for s in function.steps] == ["import_module", "CAPTURES", "c1"]
    assert block.chains[-1].steps[4].args == ("checkpointLocation", "/t/ckpt/counts")
