"""Restart safety (``sqlstream.runtime.restarts``): the state signature recorded in a checkpoint and
the changes Spark's guide does not allow between restarts (*Recovery Semantics after
Changes in a Streaming Query*).

Fast tests diff the records of compiled variants of one pipeline. Spark tests run a first
pipeline on a few days of the flights data, then a changed one on more days on the same
checkpoint: a refused change raises ``SS401`` at its statement and Spark writes no new
offsets or commits; an allowed change runs and its output equals a batch computation of
the same SQL over the same files.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone

import pytest

import sqlstream
from sqlstream.diagnostics.errors import IncompatibleRestartError
from sqlstream.runtime import restarts
from tests.conftest import ROOT

DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))
COLUMNS = """year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE,
    arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING,
    distance DOUBLE, time_hour TIMESTAMP"""

HOURLY = """CREATE STREAM flights ({columns},
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = '{data}', format = 'csv', header = true,
        nullValue = 'NA', maxFilesPerTrigger = 31);
CREATE SINK hourly WITH (connector = 'files', path = '{out}', format = 'parquet');
INSERT INTO hourly
SELECT window_start, window_end, origin, COUNT(*) AS flights, AVG(dep_delay) AS avg_dep_delay
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT FINAL ONCE;
"""

SETTINGS = {"state_store_provider": "HDFSBackedStateStoreProvider", "shuffle_partitions": "2"}


def _text(template=HOURLY, data="data/flights", out="out/hourly") -> str:
    return template.format(columns=COLUMNS, data=data, out=out)


def _variant(*pairs, **kw) -> str:
    text = _text(**kw)
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _record(text, settings=SETTINGS, path="/w/hourly.ssql"):
    (query,) = sqlstream.compile(text, path=path).plan.queries
    return restarts.record(query.state, settings)


def _changes(new_text, old_text=None, settings=SETTINGS):
    return restarts.diff(_record(old_text or _text()), _record(new_text, settings))


# ---- the diff, without Spark ----------------------------------------------------------------

WINDOW = ("INTERVAL '1' HOUR)", "INTERVAL '2' HOUR)")
REFUSED = {
    "window size": ([WINDOW], "grouping keys of the aggregation", "window(time_hour, '2 hour')"),
    "other key": (
        [
            (
                "GROUP BY window_start, window_end, origin",
                "GROUP BY window_start, window_end, carrier",
            ),
            ("window_end, origin, COUNT", "window_end, carrier, COUNT"),
        ],
        "grouping keys of the aggregation",
        "carrier",
    ),
    "key added": (
        [
            (
                "GROUP BY window_start, window_end, origin",
                "GROUP BY window_start, window_end, origin, carrier",
            ),
            ("window_end, origin, COUNT", "window_end, origin, carrier, COUNT"),
        ],
        "grouping keys of the aggregation",
        "origin, carrier",
    ),
    "aggregate": (
        [("COUNT(*) AS flights", "SUM(distance) AS flights")],
        "aggregates of the aggregation",
        "SUM(distance)",
    ),
    "sink path": (
        [("path = 'out/hourly'", "path = 'out/hourly2'")],
        "sink directory",
        "/w/out/hourly2",
    ),
    "sink format": ([("format = 'parquet'", "format = 'json'")], "sink directory", "json"),
    "source path": (
        [("path = 'data/flights'", "path = 'data/other'")],
        "input of source 'flights'",
        "/w/data/other",
    ),
    "event-time column": (
        [
            ("WATERMARK FOR time_hour AS time_hour", "WATERMARK FOR ts AS ts"),
            ("time_hour TIMESTAMP", "time_hour TIMESTAMP, ts AS time_hour"),
            ("TUMBLE(flights, time_hour", "TUMBLE(flights, ts"),
        ],
        "watermark of flights",
        "ts - 1 hour",
    ),
    "operator removed": (
        [
            (
                "SELECT window_start, window_end, origin, COUNT(*) AS flights, "
                "AVG(dep_delay) AS avg_dep_delay\nFROM TUMBLE(flights, time_hour, "
                "INTERVAL '1' HOUR)\nGROUP BY window_start, window_end, origin",
                "SELECT origin, time_hour FROM flights",
            )
        ],
        "stateful operators",
        "(none)",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_changes_are_named_old_to_new(case):
    pairs, what, new = REFUSED[case]
    changes = _changes(_variant(*pairs))
    (change,) = [c for c in changes if c.what == what]
    assert not change.allowed, changes
    assert new in change.new or new in change.old, change
    assert f"{change.old} → {change.new}" in change.text()


def test_allowed_changes_are_not_in_the_signature_or_allowed():
    for pairs in (
        [("GROUP BY", "WHERE dep_delay IS NOT NULL GROUP BY")],  # filter
        [("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 1")],  # rate limit
        [("EMIT FINAL ONCE", "EMIT FINAL EVERY INTERVAL '1' MINUTE")],  # trigger
        [("AS flights", "AS n")],
    ):  # projection keeping the state
        assert _changes(_variant(*pairs)) == [], pairs
    (delay,) = _changes(
        _variant(("time_hour - INTERVAL '1' HOUR", "time_hour - INTERVAL '2' HOUR"))
    )
    assert delay.allowed and delay.what == "delay of the watermark of flights"
    (partitions,) = _changes(_text(), settings={**SETTINGS, "shuffle_partitions": "8"})
    assert partitions.allowed and (partitions.old, partitions.new) == ("2", "8")


def test_operators_join_type_and_keys_output_mode_provider():
    joined = """CREATE STREAM a (k STRING, j STRING, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) WITH (connector = 'files', path = 'a', format = 'json');
CREATE STREAM b (k STRING, j STRING, ts TIMESTAMP,
    WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) WITH (connector = 'files', path = 'b', format = 'json');
CREATE SINK o WITH (connector = 'files', path = 'o', format = 'json');
INSERT INTO o SELECT a.k, a.ts FROM a JOIN b ON a.k = b.k
  AND b.ts BETWEEN a.ts - INTERVAL '5' MINUTES AND a.ts;
"""
    left = joined.replace("FROM a JOIN b", "FROM a LEFT JOIN b")
    (change,) = restarts.diff(_record(joined), _record(left))
    assert (change.what, change.old, change.new, change.allowed) == (
        "join type of the stream-stream join",
        "inner",
        "left",
        False,
    )
    keys = joined.replace("a.k = b.k", "a.k = b.k AND a.j = b.j")
    (change,) = restarts.diff(_record(joined), _record(keys))
    assert change.what == "join keys of the stream-stream join" and "a.j = b.j" in change.new

    memory = _variant(
        (
            "connector = 'files', path = 'out/hourly', format = 'parquet'",
            "connector = 'memory', checkpoint_location = 'cp'",
        )
    )
    update = memory.replace("EMIT FINAL ONCE", "EMIT CHANGES ONCE")
    (change,) = restarts.diff(_record(memory), _record(update))
    assert (change.what, change.old, change.new, change.allowed) == (
        "output mode",
        "append",
        "update",
        False,
    )
    stateless = _variant(
        (
            "SELECT window_start, window_end, origin, COUNT(*) AS flights, "
            "AVG(dep_delay) AS avg_dep_delay\nFROM TUMBLE(flights, time_hour, "
            "INTERVAL '1' HOUR)\nGROUP BY window_start, window_end, origin",
            "SELECT origin, time_hour FROM flights",
        )
    )
    (change,) = _changes(stateless)
    assert change.what == "stateful operators" and change.new == "(none)"

    rocks = {**SETTINGS, "state_store_provider": "RocksDBStateStoreProvider"}
    (change,) = _changes(_text(), settings=rocks)
    assert change.what == "state store provider" and not change.allowed
    assert restarts.diff(_record(stateless), _record(stateless, rocks)) == []  # no state


def test_files_sink_to_other_sinks_and_back():
    console = _variant(
        (
            "connector = 'files', path = 'out/hourly', format = 'parquet'",
            "connector = 'console', checkpoint_location = 'cp'",
        )
    )
    (out,) = _changes(console)
    assert out.allowed and out.what == "sink"
    (back,) = restarts.diff(_record(console), _record(_text()))
    assert not back.allowed


def test_record_is_json_with_absolute_paths_and_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_DIR", "hidden")
    text = _variant(("path = 'data/flights'", "path = 'data/${env:SECRET_DIR}'"))
    (query,) = sqlstream.compile(text, path=str(tmp_path / "p.ssql")).plan.queries
    pipeline = sqlstream.compile(text, path=str(tmp_path / "p.ssql"))
    data = restarts.record(query.state, SETTINGS, pipeline.plan.source)
    assert json.loads(json.dumps(data)) == data
    assert data["sources"][0]["target"] == str(tmp_path / "data" / "***")
    assert data["sink"] == {
        "connector": "files",
        "format": "parquet",
        "path": str(tmp_path / "out" / "hourly"),
    }
    restarts.write(str(tmp_path / "cp"), data)
    assert restarts.read(str(tmp_path / "cp")) == data
    assert os.listdir(tmp_path / "cp" / "sqlstream") == ["state_signature.json"]
    assert restarts.read(str(tmp_path / "none")) is None


def test_prepare_refuses_before_anything_starts(tmp_path):
    checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "hourly" / "hourly"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1\n")
    path = str(tmp_path / "hourly.ssql")
    notes = []
    first = sqlstream.compile(_text(), path=path).plan
    decided = restarts.prepare(first, SETTINGS, report=notes.append)  # legacy: adopted
    assert "has no state signature" in notes[0]
    decided["hourly"].commit()
    changed = sqlstream.compile(_variant(WINDOW), path=path).plan
    with pytest.raises(IncompatibleRestartError) as caught:
        restarts.prepare(changed, SETTINGS, report=notes.append)
    error = caught.value
    assert error.code == "SS401" and error.span == changed.queries[0].span
    rendered = error.render()
    assert f"cannot restart from checkpoint {checkpoint}" in rendered
    assert (
        "grouping keys of the aggregation: window(time_hour, '1 hour'), origin → "
        "window(time_hour, '2 hour'), origin"
    ) in rendered
    assert "new checkpoint_location" in rendered and "--allow-incompatible-restart" in rendered
    assert "INSERT INTO hourly" in rendered and "^" in rendered

    notes.clear()
    decided = restarts.prepare(changed, SETTINGS, allow=True, report=notes.append)
    assert "refused change allowed by the flag: grouping keys" in notes[0]
    recorded = restarts.read(str(checkpoint))
    assert recorded != decided["hourly"].record  # written only once the query started
    decided["hourly"].commit()
    assert restarts.read(str(checkpoint)) == decided["hourly"].record
    assert restarts.prepare(changed, SETTINGS, report=notes.append)["hourly"].changes == ()

    (checkpoint / restarts.SIGNATURE_FILE).write_text("{not json")
    with pytest.raises(IncompatibleRestartError, match="cannot read the state signature"):
        restarts.prepare(changed, SETTINGS)


# ---- on Spark -------------------------------------------------------------------------------


def _copy_days(folder, days):
    """Copy day files with the mtime of their day (Spark reads new files by mtime)."""
    folder.mkdir(parents=True, exist_ok=True)
    for day in days:
        shutil.copy(day, folder / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(folder / day.name, (stamp, stamp))


def _files(folder) -> list[str]:
    """Every file under ``folder`` (relative paths, sorted): Spark's logs and the output."""
    return sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file())


def _start(spark, work, text, **kw):
    """Run ``text`` as ``work/hourly.ssql`` until its queries end (``EMIT … ONCE``)."""
    pipeline = sqlstream.compile(text, path=str(work / "hourly.ssql"))
    queries = pipeline.start(spark, **kw)
    for query in queries:
        query.awaitTermination()
        assert query.exception() is None
    return queries


def _checkpoint(work, name="hourly"):
    return work / ".sqlstream" / "checkpoints" / "hourly" / name


@pytest.fixture(scope="module")
def hourly(spark, tmp_path_factory):
    """The hourly aggregation run on 3 days; 2 more days arrived since."""
    work = tmp_path_factory.mktemp("hourly")
    _copy_days(work / "data" / "flights", DAYS[:3])
    _copy_days(work / "data" / "other", DAYS[:3])
    _start(spark, work, _text())
    assert (_checkpoint(work) / restarts.SIGNATURE_FILE).exists()
    _copy_days(work / "data" / "flights", DAYS[3:5])
    return work


SPARK_REFUSED = [
    "window size",
    "other key",
    "key added",
    "aggregate",
    "sink path",
    "sink format",
    "source path",
    "event-time column",
    "operator removed",
]


@pytest.mark.spark
@pytest.mark.parametrize("case", SPARK_REFUSED)
def test_refused_change_starts_nothing_and_writes_nothing(spark, hourly, case):
    pairs, what, _ = REFUSED[case]
    before = _files(hourly)
    with pytest.raises(IncompatibleRestartError) as caught:
        _start(spark, hourly, _variant(*pairs))
    assert f"{what}: " in caught.value.message
    assert str(_checkpoint(hourly)) in caught.value.message
    assert _files(hourly) == before  # no offsets, commits, output or record written
    assert not spark.streams.active


@pytest.mark.spark
def test_refused_through_the_session_emits_no_start(spark, hourly):
    events = []
    session = sqlstream.Session(spark, listeners=[events.append])
    pipeline = session.compile(_variant(WINDOW), path=str(hourly / "hourly.ssql"))
    before = _files(hourly)
    with pytest.raises(IncompatibleRestartError):
        session.run(pipeline)
    assert not any(type(e).__name__ == "QueryStarted" for e in events)
    assert _files(hourly) == before


def _oracle(spark, parts, delay_hours=1):
    """The hourly aggregation as a batch job: ``parts`` is ``[(files, where), …]``."""
    from pyspark.sql import functions as F

    frames = []
    for files, where in parts:
        flights = (
            spark.read.option("header", True)
            .option("nullValue", "NA")
            .schema(COLUMNS.replace("\n", " "))
            .csv([str(f) for f in files])
        )
        if where:
            flights = flights.where(where)
        frames.append(
            flights.groupBy(F.window("time_hour", "1 hour"), "origin")
            .agg(F.count("*").alias("flights"), F.avg("dep_delay").alias("avg_dep_delay"))
            .select(
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                "origin",
                "flights",
                "avg_dep_delay",
            )
        )
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _assert_output(spark, work, expected, last_day):
    """The output equals ``expected`` up to its last window, which is after the start of
    ``last_day``; no window is written twice."""
    from pyspark.sql import functions as F

    out = spark.read.parquet(str(work / "out" / "hourly"))
    assert out.select("window_start", "origin").distinct().count() == out.count()
    end = out.agg(F.max("window_end")).first()[0]
    assert end > datetime.strptime(last_day.stem, "%Y-%m-%d")  # the new days were read
    expected = expected.where(F.col("window_end") <= F.lit(end))
    rounded = lambda df: df.withColumn("avg_dep_delay", F.round("avg_dep_delay", 6))  # noqa: E731
    assert out.count() == expected.count()
    assert rounded(out).exceptAll(rounded(expected)).count() == 0


def _first_run(spark, tmp_path):
    work = tmp_path / "work"
    _copy_days(work / "data" / "flights", DAYS[:3])
    _start(spark, work, _text())
    _copy_days(work / "data" / "flights", DAYS[3:5])
    return work


@pytest.mark.spark
def test_rate_limit_and_trigger_changes_run_and_stay_right(spark, tmp_path):
    work = _first_run(spark, tmp_path)
    text = _variant(
        ("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 1"),
        ("EMIT FINAL ONCE", "EMIT FINAL EVERY INTERVAL '1' SECOND"),
    )
    (query,) = sqlstream.compile(text, path=str(work / "hourly.ssql")).start(spark)
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert query.exception() is None
    assert [p["numInputRows"] > 0 for p in query.recentProgress].count(True) == 2  # 1 file each
    _assert_output(spark, work, _oracle(spark, [(DAYS[:5], None)]), DAYS[4])


@pytest.mark.spark
def test_filter_added_runs_and_applies_to_new_rows(spark, tmp_path):
    work = _first_run(spark, tmp_path)
    _start(spark, work, _variant(("GROUP BY", "WHERE origin <> 'LGA' GROUP BY")))
    expected = _oracle(spark, [(DAYS[:3], None), (DAYS[3:5], "origin <> 'LGA'")])
    _assert_output(spark, work, expected, DAYS[4])


@pytest.mark.spark
def test_watermark_delay_change_runs_and_stays_right(spark, tmp_path):
    work = _first_run(spark, tmp_path)
    events = []
    session = sqlstream.Session(spark, listeners=[events.append])
    text = _variant(("time_hour - INTERVAL '1' HOUR", "time_hour - INTERVAL '3' HOUR"))
    session.run(session.compile(text, path=str(work / "hourly.ssql")))
    notes = [e.message for e in events if type(e).__name__ == "Notice"]
    assert any("allowed: delay of the watermark of flights: 1 hour → 3 hour" in n for n in notes)
    _assert_output(spark, work, _oracle(spark, [(DAYS[:5], None)]), DAYS[4])


@pytest.mark.spark
def test_allow_incompatible_restart_runs_and_records_the_new_signature(spark, tmp_path):
    work = _first_run(spark, tmp_path)
    events = []
    session = sqlstream.Session(spark, listeners=[events.append])
    session.run(
        session.compile(_variant(WINDOW), path=str(work / "hourly.ssql")),
        allow_incompatible_restart=True,
    )
    notes = [e.message for e in events if type(e).__name__ == "Notice"]
    assert any("refused change allowed by the flag: grouping keys" in n for n in notes)
    assert any(type(e).__name__ == "QueryStarted" for e in events)
    (operator,) = restarts.read(str(_checkpoint(work)))["operators"]
    assert operator["keys"] == ["window(time_hour, '2 hour')", "origin"]


JOINED = """CREATE STREAM a ({columns},
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = 'data/a', format = 'csv', header = true, nullValue = 'NA');
CREATE STREAM b ({columns},
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = 'data/b', format = 'csv', header = true, nullValue = 'NA');
CREATE SINK j WITH (connector = 'files', path = 'out/j', format = 'json');
CREATE SINK d WITH (connector = 'files', path = 'out/d', format = 'json');
INSERT INTO j
SELECT a.carrier, a.flight, a.time_hour, b.dep_delay FROM a JOIN b
  ON a.carrier = b.carrier AND a.flight = b.flight
 AND b.time_hour BETWEEN a.time_hour - INTERVAL '1' HOUR AND a.time_hour
EMIT ONCE;
INSERT INTO d SELECT DISTINCT origin, dest, time_hour FROM a EMIT ONCE;
"""

JOIN_REFUSED = {
    "join type": (
        ("FROM a JOIN b", "FROM a LEFT JOIN b"),
        "j",
        "join type of the stream-stream join: inner → left",
    ),
    "join keys": (
        ("ON a.carrier = b.carrier AND a.flight", "ON a.flight"),
        "j",
        "join keys of the stream-stream join: a.carrier = b.carrier, a.flight = b.flight"
        " → a.flight = b.flight",
    ),
    "distinct columns": (
        ("DISTINCT origin, dest, time_hour", "DISTINCT origin, time_hour"),
        "d",
        "keys of the deduplication: origin, dest, time_hour → origin, time_hour",
    ),
}


@pytest.fixture(scope="module")
def joined(spark, tmp_path_factory):
    """A stream-stream join and a SELECT DISTINCT run on 2 days; 1 more day arrived since."""
    work = tmp_path_factory.mktemp("joined")
    for side in ("a", "b"):
        _copy_days(work / "data" / side, DAYS[:2])
    _start(spark, work, JOINED.format(columns=COLUMNS))
    for side in ("a", "b"):
        _copy_days(work / "data" / side, DAYS[2:3])
    return work


@pytest.mark.spark
@pytest.mark.parametrize("case", sorted(JOIN_REFUSED))
def test_refused_join_and_distinct_changes_start_no_query(spark, joined, case):
    (old, new), query, change = JOIN_REFUSED[case]
    text = JOINED.format(columns=COLUMNS)
    assert old in text
    before = _files(joined)
    with pytest.raises(IncompatibleRestartError) as caught:
        _start(spark, joined, text.replace(old, new, 1))
    assert f"query '{query}' cannot restart" in caught.value.message
    assert change in caught.value.message
    assert _files(joined) == before  # neither query started: no offsets, no output
    assert not spark.streams.active


@pytest.mark.spark
def test_another_state_store_provider_is_refused(spark, hourly):
    key = "spark.sql.streaming.stateStore.providerClass"
    package = "org.apache.spark.sql.execution.streaming.state."
    (signature,) = hourly.rglob("state_signature.json")
    recorded = json.loads(signature.read_text())["spark"]["state_store_provider"]
    other = package + (
        "HDFSBackedStateStoreProvider" if "RocksDB" in recorded else "RocksDBStateStoreProvider"
    )
    before, files = spark.conf.get(key), _files(hourly)
    try:
        with pytest.raises(IncompatibleRestartError) as caught:
            _start(spark, hourly, f"SET '{key}' = '{other}';\n" + _text())
    finally:
        spark.conf.set(key, before)
    assert f"state store provider: {recorded} → {other}" in caught.value.message
    assert _files(hourly) == files


def test_exec_passes_allow_incompatible_restart_to_the_session(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from sqlstream.cli import main, run_commands

    calls = []

    class FakeSession:
        def __init__(self, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def run(self, pipeline, available_now, **kwargs):
            calls.append(kwargs)

    monkeypatch.setattr(run_commands, "Session", FakeSession)
    (tmp_path / "p.ssql").write_text(_text(), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["exec", str(tmp_path / "p.ssql")]).exit_code == 0
    result = runner.invoke(main, ["exec", str(tmp_path / "p.ssql"), "--allow-incompatible-restart"])
    assert result.exit_code == 0, result.output
    assert calls == [
        {"timeout": None, "allow_incompatible_restart": False},
        {"timeout": None, "allow_incompatible_restart": True},
    ]


# ---- meaning, not text (issue 32, item 6) ---------------------------------------------------

VIEWED = HOURLY.replace("CREATE STREAM flights", "CREATE STREAM raw").replace(
    "CREATE SINK hourly",
    "CREATE VIEW flights AS SELECT origin, time_hour, dep_delay FROM raw;\nCREATE SINK hourly",
)


@pytest.mark.spark
def test_a_key_replaced_through_a_view_is_refused_and_nothing_written(spark, tmp_path):
    work = tmp_path / "work"
    _copy_days(work / "data" / "flights", DAYS[:2])
    _start(spark, work, _text(VIEWED))
    _copy_days(work / "data" / "flights", DAYS[2:3])
    before = _files(work)
    renamed = _text(VIEWED).replace("SELECT origin, time_hour", "SELECT dest AS origin, time_hour")
    with pytest.raises(IncompatibleRestartError) as caught:
        _start(spark, work, renamed)
    message = caught.value.message
    assert "grouping keys of the aggregation: window(time_hour, '1 hour'), origin (resolved: " in (
        message
    )
    assert "raw.origin" in message and "raw.dest" in message
    assert _files(work) == before  # no offsets, commits, output or record written
    assert not spark.streams.active


@pytest.mark.spark
def test_equal_spellings_restart_and_stay_right(spark, tmp_path):
    work = _first_run(spark, tmp_path)
    events = []
    session = sqlstream.Session(spark, listeners=[events.append])
    text = _variant(
        ("INTERVAL '1' HOUR)", "INTERVAL '60' MINUTES)"),
        ("COUNT(*)", "COUNT(1)"),
        ("AVG(dep_delay)", "avg(DEP_DELAY)"),
        ("time_hour - INTERVAL '1' HOUR", "time_hour - INTERVAL '3600' SECONDS"),
    )
    session.run(session.compile(text, path=str(work / "hourly.ssql")))
    assert not [e for e in events if type(e).__name__ == "Notice" and "allowed" in e.message]
    _assert_output(spark, work, _oracle(spark, [(DAYS[:5], None)]), DAYS[4])


@pytest.mark.spark
def test_another_session_time_zone_is_refused(spark, hourly):
    key = "spark.sql.session.timeZone"
    (signature,) = hourly.rglob("state_signature.json")
    recorded = json.loads(signature.read_text())["spark"]["time_zone"]
    other = "Asia/Tokyo" if recorded != "Asia/Tokyo" else "America/New_York"
    before, files = spark.conf.get(key), _files(hourly)
    try:
        with pytest.raises(IncompatibleRestartError) as caught:
            _start(spark, hourly, f"SET '{key}' = '{other}';\n" + _text())
    finally:
        spark.conf.set(key, before)
    assert f"spark.sql.session.timeZone: {recorded} → {other}" in caught.value.message
    assert _files(hourly) == files


@pytest.mark.spark
def test_a_second_checkpoint_on_a_files_sink_path_is_refused(spark, hourly, tmp_path):
    before = _files(hourly)
    pipeline = sqlstream.compile(
        _text(), path=str(hourly / "hourly.ssql"), state_dir=str(tmp_path / "fresh")
    )
    with pytest.raises(IncompatibleRestartError) as caught:
        pipeline.start(spark)
    message = caught.value.message
    assert f"is written by checkpoint {_checkpoint(hourly)}" in message
    assert str(tmp_path / "fresh") in message and caught.value.code == "SS401"
    assert _files(hourly) == before  # the output and the owner's checkpoint untouched
    assert not list((tmp_path / "fresh").rglob("offsets"))  # only the run lock was taken
    assert not spark.streams.active


@pytest.mark.spark
def test_a_malformed_signature_is_ss401(spark, hourly):
    (signature,) = hourly.rglob("state_signature.json")
    kept = signature.read_bytes()
    try:
        signature.write_bytes(kept[: len(kept) // 2])  # truncated
        before = _files(hourly)
        with pytest.raises(IncompatibleRestartError) as caught:
            _start(spark, hourly, _text())
    finally:
        signature.write_bytes(kept)
    assert caught.value.code == "SS401"
    assert f"cannot read the state signature {signature}" in caught.value.message
    assert "truncated?" in caught.value.message
    assert _files(hourly) == before
    assert not spark.streams.active


TWO_STREAMS = HOURLY.replace(
    "CREATE SINK hourly",
    HOURLY[: HOURLY.index("CREATE SINK")].replace("CREATE STREAM flights", "CREATE STREAM again")
    + "CREATE VIEW both_streams AS SELECT origin, time_hour, dep_delay FROM flights\n"
    "UNION ALL SELECT origin, time_hour, dep_delay FROM again;\n"
    "CREATE SINK hourly",
).replace("TUMBLE(flights,", "TUMBLE(both_streams,")
"""``flights`` and ``again``: two streams declared over one input, read as a union."""


@pytest.mark.spark
def test_a_union_of_two_streams_of_one_input_swapped_restarts_and_stays_right(spark, tmp_path):
    """Second probe of issue 32: the branches swapped read the same rows into the same
    keys (``flights.origin`` and ``again.origin`` are one input's column): the restart runs
    and the output equals the batch result (every row twice: each stream reads every file)."""
    work = tmp_path / "work"
    _copy_days(work / "data" / "flights", DAYS[:3])
    _start(spark, work, _text(TWO_STREAMS))
    _copy_days(work / "data" / "flights", DAYS[3:5])
    swapped = _text(TWO_STREAMS).replace(
        "FROM flights\nUNION ALL SELECT origin, time_hour, dep_delay FROM again;",
        "FROM again\nUNION ALL SELECT origin, time_hour, dep_delay FROM flights;",
    )
    assert swapped != _text(TWO_STREAMS)
    _start(spark, work, swapped)
    from pyspark.sql import functions as F

    twice = _oracle(spark, [(DAYS[:5], None)]).withColumn("flights", F.col("flights") * 2)
    _assert_output(spark, work, twice, DAYS[4])  # each row twice: the average is the same
    assert not spark.streams.active
