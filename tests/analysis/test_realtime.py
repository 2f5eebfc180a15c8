"""``EMIT … REAL TIME`` (Spark's real-time mode) judged per Spark version, without a JVM:
the allow-list of :mod:`sqlstream.analysis.realtime` (SS340–SS343), the update mode it
implies, and the ``trigger(realTime=…)`` call ``translate`` prints and ``explain`` shows."""

from __future__ import annotations

import pytest

import sqlstream
from sqlstream.lowering.explain import describe


def _described(text: str) -> dict:
    findings, plan = sqlstream.check_plan(text, path="rt.ssql", spark_version="4.3")
    assert plan is not None, findings
    (query,) = describe(plan)
    return query


KAFKA = "connector = 'kafka', bootstrap_servers = 'localhost:9092'"
HEADER = f"""CREATE STREAM clicks (user_id STRING, url STRING, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '10' SECONDS)
WITH ({KAFKA}, topic = 'clicks', format = 'json');
CREATE STREAM views (user_id STRING, page STRING, vts TIMESTAMP,
    WATERMARK FOR vts AS vts - INTERVAL '10' SECONDS)
WITH ({KAFKA}, topic = 'views', format = 'json');
CREATE STREAM files_in (user_id STRING, ts TIMESTAMP)
WITH (connector = 'files', path = '/tmp/in', format = 'json');
CREATE STREAM ticks WITH (connector = 'rate');
CREATE TABLE users (user_id STRING, name STRING)
WITH (connector = 'files', path = '/tmp/users', format = 'json');
CREATE SINK out WITH ({KAFKA}, topic = 'out');
CREATE SINK shown WITH (connector = 'console');
CREATE SINK batches WITH (connector = 'foreach_batch', function = 'tests.foreach_batch_functions:collect');
CREATE SINK kept WITH (connector = 'files', path = '/tmp/out', format = 'json');
"""


def _errors(body: str, version: str) -> list[tuple[str, str]]:
    findings = sqlstream.check(HEADER + body, path="rt.ssql", spark_version=version)
    return [(f.code, f.message) for f in findings if f.severity == "error"]


def _codes(body: str, version: str) -> list[str]:
    return [code for code, _ in _errors(body, version)]


MAP = "INSERT INTO out SELECT user_id, upper(url) AS url FROM clicks WHERE url <> '/x' {emit};"


@pytest.mark.parametrize("version", ["4.2", "4.3"])
@pytest.mark.parametrize(
    "body",
    [
        MAP,
        "INSERT INTO shown SELECT user_id, explode(split(url, '/')) AS part FROM clicks {emit};",
        "INSERT INTO out SELECT user_id, url AS page FROM clicks UNION ALL "
        "SELECT user_id, page FROM views {emit};",
        "INSERT INTO out SELECT c.user_id, u.name FROM clicks c JOIN users u "
        "ON c.user_id = u.user_id {emit};",
    ],
)
def test_stateless_queries_run_in_real_time_mode_from_4_2(body, version):
    for emit in ("EMIT CHANGES REAL TIME", "EMIT REAL TIME CHECKPOINT EVERY INTERVAL '10' SECONDS"):
        assert _codes(body.format(emit=emit), version) == []


@pytest.mark.parametrize("version", ["4.0", "4.1"])
def test_versions_without_real_time_mode_are_refused_at_emit_with_the_version_that_has_it(version):
    text = HEADER + MAP.format(emit="EMIT CHANGES REAL TIME")
    (error,) = [
        f
        for f in sqlstream.check(text, path="rt.ssql", spark_version=version)
        if f.severity == "error"
    ]
    assert error.code == "SS340" and f"PySpark {version} does not have" in error.message
    assert "Spark 4.2 or newer" in error.hint
    assert (error.span.line, error.span.column) == (
        text.count("\n", 0, text.index("EMIT")) + 1,
        text.index("EMIT") - text.rindex("\n", 0, text.index("EMIT")),
    )


def test_output_mode_is_update_only():
    assert _codes(MAP.format(emit="EMIT FINAL REAL TIME"), "4.3") == ["SS341"]
    query = _described(HEADER + MAP.format(emit="EMIT REAL TIME"))
    assert (query["output_mode"], query["output_mode_reason"]) == (
        "update",
        "real-time mode (EMIT … REAL TIME) writes in update mode only",
    )


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ("INSERT INTO out SELECT user_id FROM files_in EMIT CHANGES REAL TIME;", "files source"),
        ("INSERT INTO shown SELECT value FROM ticks EMIT CHANGES REAL TIME;", "rate source"),
        (
            "INSERT INTO batches SELECT user_id FROM clicks EMIT CHANGES REAL TIME;",
            "foreach_batch sink",
        ),
    ],
)
def test_sources_and_sinks_outside_the_allow_list(body, word):
    errors = _errors(body, "4.3")
    assert [code for code, _ in errors] == ["SS342"] and word in errors[0][1]


def test_files_sink_is_refused_for_its_mode_and_for_real_time():
    codes = _codes("INSERT INTO kept SELECT user_id FROM clicks EMIT CHANGES REAL TIME;", "4.3")
    assert codes == ["SS304", "SS342"]


AGGREGATE = (
    "INSERT INTO out SELECT window_start, count(*) AS n FROM "
    "TUMBLE(clicks, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end "
    "EMIT CHANGES REAL TIME;"
)
DEDUP = "INSERT INTO out SELECT DISTINCT ON (user_id, ts) user_id, url, ts FROM clicks EMIT CHANGES REAL TIME;"
DEDUP_WITHIN = "INSERT INTO out SELECT DISTINCT ON (user_id) user_id, url, ts FROM clicks EMIT CHANGES REAL TIME;"


@pytest.mark.parametrize("body", [AGGREGATE, DEDUP])
def test_aggregations_and_deduplication_need_4_3(body):
    errors = _errors(body, "4.2")
    assert [code for code, _ in errors] == ["SS343"] and "Spark 4.2" in errors[0][1]
    assert _codes(body, "4.3") == []


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (DEDUP_WITHIN, "dropDuplicatesWithinWatermark"),
        (
            "INSERT INTO out SELECT user_id, count(*) AS n FROM SESSION(TABLE clicks PARTITION BY "
            "(user_id), DESCRIPTOR(ts), INTERVAL '5' MINUTES) GROUP BY user_id, window_start, window_end "
            "EMIT CHANGES REAL TIME;",
            "session window",
        ),
        (
            "INSERT INTO out SELECT c.user_id, v.page FROM clicks c JOIN views v ON c.user_id = v.user_id "
            "AND v.vts BETWEEN c.ts AND c.ts + INTERVAL '1' MINUTE EMIT CHANGES REAL TIME;",
            "join of two streams",
        ),
    ],
)
def test_stateful_operators_4_3_does_not_run(body, what):
    messages = [message for code, message in _errors(body, "4.3") if code == "SS343"]
    assert len(messages) == 1 and what in messages[0]


def test_translate_prints_and_explain_shows_the_real_time_trigger():
    text = HEADER + MAP.format(emit="EMIT CHANGES REAL TIME CHECKPOINT EVERY INTERVAL '30' SECONDS")
    assert ".trigger(realTime='30 seconds')" in sqlstream.translate(text)
    trigger = _described(text)["trigger"]
    assert (trigger["kind"], trigger["interval"], trigger["call"]) == (
        "real_time",
        "30 seconds",
        "trigger(realTime='30 seconds')",
    )
    assert "a checkpoint every 30 seconds" in trigger["reason"]
    default = sqlstream.translate(HEADER + MAP.format(emit="EMIT CHANGES REAL TIME"))
    assert ".trigger(realTime='5 minutes')" in default
