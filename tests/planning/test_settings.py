"""``SET`` of the state store and of the multiple-watermark policy, without a JVM: what the
plan, ``translate``, ``translate --to pyspark`` and ``explain`` say. (That Spark runs them
as said is ``tests/examples/test_stateful_spark.py`` and the corpus programs 320–325.)"""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.lowering.explain import describe, render
from sqlstream.planning import settings

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
STREAMS = """
CREATE STREAM clicks (user_id STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = '/d/clicks', format = 'json');
CREATE STREAM views (user_id STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5' MINUTES)
WITH (connector = 'files', path = '/d/views', format = 'json');
CREATE SINK out WITH (connector = 'memory');
INSERT INTO out
SELECT window_start, window_end, COUNT(*) AS n
FROM TUMBLE((SELECT user_id, ts FROM clicks UNION ALL SELECT user_id, ts FROM views), ts, INTERVAL '1' MINUTE)
GROUP BY window_start, window_end
EMIT FINAL;
"""


def _errors(text: str) -> list[SqlStreamError]:
    return [f for f in sqlstream.check(text) if f.severity == "error"]


@pytest.mark.parametrize(
    "value, expected",
    [
        (
            "rocksdb",
            [
                ("spark.sql.streaming.stateStore.providerClass", ROCKSDB),
                ("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true"),
            ],
        ),
        (
            "RocksDB",
            [
                ("spark.sql.streaming.stateStore.providerClass", ROCKSDB),
                ("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true"),
            ],
        ),
        (
            "hdfs",
            [
                (
                    "spark.sql.streaming.stateStore.providerClass",
                    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
                )
            ],
        ),
        (
            "com.example.MyProvider",
            [("spark.sql.streaming.stateStore.providerClass", "com.example.MyProvider")],
        ),
    ],
)
def test_state_store_expands_to_spark_settings(value, expected):
    pipeline = sqlstream.compile(f"SET 'sqlstream.state_store' = '{value}';\n{STREAMS}")
    assert list(pipeline.plan.settings) == [("sqlstream.state_store", value), *expected]
    translation = pipeline.translate()
    for key, spark_value in expected:
        assert f"spark.conf.set({key!r}, {spark_value!r})" in translation
    script = pipeline.to_pyspark()
    assert f".config('spark.sql.streaming.stateStore.providerClass', {expected[0][1]!r})" in script


def test_unknown_state_store_is_positioned_at_the_value():
    (error,) = _errors(f"SET 'sqlstream.state_store' = 'rocks';\n{STREAMS}")
    assert error.code == "SS326"
    assert (error.span.line, error.span.column) == (1, 31)
    assert "did you mean 'rocksdb'" in error.message


def test_lenient_compile_passes_an_unknown_store_on_as_a_class_for_spark_to_refuse():
    pipeline = sqlstream.compile(f"SET 'sqlstream.state_store' = 'rocks';\n{STREAMS}", checks=False)
    assert ("spark.sql.streaming.stateStore.providerClass", "rocks") in pipeline.plan.settings
    assert [w.code for w in pipeline.plan.warnings] == ["SS326"]


@pytest.mark.parametrize("value", ["min", "max", "MAX"])
def test_watermark_policy_is_shown_for_a_query_over_two_watermarks(value):
    pipeline = sqlstream.compile(
        f"SET 'spark.sql.streaming.multipleWatermarkPolicy' = '{value}';\n{STREAMS}"
    )
    assert (
        f"-- global watermark: {value.lower()} of clicks.ts - 1 minute, views.ts - 5 minutes "
        f"(spark.sql.streaming.multipleWatermarkPolicy = {value.lower()}, SET)"
    ) in pipeline.translate()
    (query,) = describe(pipeline.plan)
    assert query["global_watermark"] == {"policy": value.lower(), "from": "SET"}
    assert f"global watermark: the {value.lower()} of them" in render([query])


def test_default_policy_is_spark_min_and_single_watermark_queries_say_nothing():
    pipeline = sqlstream.compile(STREAMS)
    (query,) = describe(pipeline.plan)
    assert query["global_watermark"] == {"policy": "min", "from": "Spark's default"}
    single = sqlstream.compile(STREAMS.replace("UNION ALL SELECT user_id, ts FROM views", ""))
    assert describe(single.plan)[0]["global_watermark"] is None
    assert "global watermark" not in single.translate()


@pytest.mark.parametrize("value", ["fastest", "minimum", ""])
def test_unknown_watermark_policy_is_refused_before_spark(value):
    (error,) = _errors(f"SET 'spark.sql.streaming.multipleWatermarkPolicy' = '{value}';\n{STREAMS}")
    assert error.code == "SS327"
    assert error.span.line == 1 and error.span.column == 53


def test_explain_names_the_state_store_of_stateful_queries():
    pipeline = sqlstream.compile(f"SET 'sqlstream.state_store' = 'rocksdb';\n{STREAMS}")
    (query,) = describe(pipeline.plan)
    assert query["state_store"] == "rocksdb"
    assert "  state store: rocksdb\n" in render([query])
    direct = sqlstream.compile(
        f"SET 'spark.sql.streaming.stateStore.providerClass' = '{ROCKSDB}';\n" + STREAMS
    )
    assert describe(direct.plan)[0]["state_store"] == "rocksdb (no changelog checkpointing)"
    assert "state store: Spark's default" in render(describe(sqlstream.compile(STREAMS).plan))


def test_unknown_compiler_setting_still_stops_the_statement():
    with pytest.raises(SqlStreamError) as info:
        sqlstream.compile(f"SET 'sqlstream.state_stor' = 'rocksdb';\n{STREAMS}")
    assert (
        info.value.code == "SS202" and "did you mean 'sqlstream.state_store'" in info.value.message
    )


def test_state_store_of_settings():
    assert settings.state_store([]) is None
    assert settings.state_store(settings.expand("sqlstream.state_store", "rocksdb")) == "rocksdb"
    assert settings.watermark_policy(
        [("spark.sql.streaming.multipleWatermarkPolicy", " Max ")]
    ) == ("max", "SET")


def test_a_changed_watermark_policy_is_an_allowed_restart_change_spark_ignores():
    from sqlstream.runtime import restarts

    (query,) = sqlstream.compile(STREAMS).plan.queries
    spark = {"state_store_provider": ROCKSDB, "shuffle_partitions": "2"}
    old = restarts.record(query.state, {**spark, "watermark_policy": "min"})
    (change,) = restarts.diff(
        old, restarts.record(query.state, {**spark, "watermark_policy": "max"})
    )
    assert change.allowed and change.what == "spark.sql.streaming.multipleWatermarkPolicy"
    assert (change.old, change.new) == ("min", "max") and "ignores the new setting" in change.why
    assert not restarts.diff(
        old, restarts.record(query.state, {**spark, "watermark_policy": "MIN"})
    )
    recorded_before = {**old, "spark": spark}  # a record written before the policy was kept
    assert not restarts.diff(
        recorded_before, restarts.record(query.state, {**spark, "watermark_policy": "max"})
    )


STATIC_SET = """SET 'spark.driver.memory' = '3g';
SET 'spark.jars.packages' = 'a:b:1';
SET 'spark.sql.warehouse.dir' = '/tmp/wh';
SET 'Spark.UI.Enabled' = 'false';
SET 'spark.sql.shuffle.partitions' = '3';
CREATE STREAM r WITH (connector = 'rate');
SELECT * FROM r;
"""


def test_static_settings_go_to_the_session_builder_only():
    """A ``SET`` of a setting Spark reads only at start (``settings.STATIC_SETTINGS``: a
    running session refuses ``spark.conf.set`` of it) is a comment in ``translate`` and a
    ``.config`` of the builder in ``--to pyspark``; a runtime SQL setting is set both ways."""
    assert [
        k
        for k in (
            "spark.driver.memory",
            "spark.executor.cores",
            "spark.jars",
            "spark.UI.enabled",
            "spark.sql.warehouse.dir",
            "spark.master",
        )
        if not settings.is_static(k)
    ] == []
    assert not [
        k
        for k in (
            "spark.sql.shuffle.partitions",
            "spark.sql.session.timeZone",
            "spark.hadoop.fs.defaultFS",
            "sqlstream.state_dir",
        )
        if settings.is_static(k)
    ]
    printed = sqlstream.translate(STATIC_SET)
    for key, value in [
        ("spark.driver.memory", "3g"),
        ("spark.jars.packages", "a:b:1"),
        ("spark.sql.warehouse.dir", "/tmp/wh"),
        ("Spark.UI.Enabled", "false"),
    ]:
        assert f"-- {key} = {value} (static: given to the session builder)" in printed
        assert f"spark.conf.set('{key}'" not in printed
    assert "spark.conf.set('spark.sql.shuffle.partitions', '3')" in printed
    script = sqlstream.compile(STATIC_SET).to_pyspark()
    assert ".config('spark.driver.memory', '3g')" in script
    assert ".config('spark.sql.shuffle.partitions', '3')" in script
