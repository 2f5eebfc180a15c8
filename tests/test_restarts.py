"""Restart safety (``sqlstream.restarts``): the state signature recorded in a checkpoint and
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
from sqlstream import restarts
from sqlstream.errors import IncompatibleRestartError
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
    "window size": ([WINDOW], "grouping keys of the aggregation",
                    "window(time_hour, '2 hour')"),
    "other key": ([("GROUP BY window_start, window_end, origin",
                    "GROUP BY window_start, window_end, carrier"),
                   ("window_end, origin, COUNT", "window_end, carrier, COUNT")],
                  "grouping keys of the aggregation", "carrier"),
    "key added": ([("GROUP BY window_start, window_end, origin",
                    "GROUP BY window_start, window_end, origin, carrier"),
                   ("window_end, origin, COUNT", "window_end, origin, carrier, COUNT")],
                  "grouping keys of the aggregation", "origin, carrier"),
    "aggregate": ([("COUNT(*) AS flights", "SUM(distance) AS flights")],
                  "aggregates of the aggregation", "SUM(distance)"),
    "sink path": ([("path = 'out/hourly'", "path = 'out/hourly2'")], "sink directory",
                  "/w/out/hourly2"),
    "sink format": ([("format = 'parquet'", "format = 'json'")], "sink directory", "json"),
    "source path": ([("path = 'data/flights'", "path = 'data/other'")],
                    "input of source 'flights'", "/w/data/other"),
    "event-time column": ([("WATERMARK FOR time_hour AS time_hour", "WATERMARK FOR ts AS ts"),
                           ("time_hour TIMESTAMP", "time_hour TIMESTAMP, ts AS time_hour"),
                           ("TUMBLE(flights, time_hour", "TUMBLE(flights, ts")],
                          "watermark of flights", "ts - 1 hour"),
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
    for pairs in ([("GROUP BY", "WHERE dep_delay IS NOT NULL GROUP BY")],  # filter
                  [("maxFilesPerTrigger = 31", "maxFilesPerTrigger = 1")],  # rate limit
                  [("EMIT FINAL ONCE", "EMIT FINAL EVERY INTERVAL '1' MINUTE")],  # trigger
                  [("AS flights", "AS n")]):  # projection keeping the state
        assert _changes(_variant(*pairs)) == [], pairs
    (delay,) = _changes(_variant(("time_hour - INTERVAL '1' HOUR", "time_hour - INTERVAL '2' HOUR")))
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
        "join type of the stream-stream join", "inner", "left", False)
    keys = joined.replace("a.k = b.k", "a.k = b.k AND a.j = b.j")
    (change,) = restarts.diff(_record(joined), _record(keys))
    assert change.what == "join keys of the stream-stream join" and "a.j = b.j" in change.new

    memory = _variant(("connector = 'files', path = 'out/hourly', format = 'parquet'",
                       "connector = 'memory', checkpoint_location = 'cp'"))
    update = memory.replace("EMIT FINAL ONCE", "EMIT CHANGES ONCE")
    (change,) = restarts.diff(_record(memory), _record(update))
    assert (change.what, change.old, change.new, change.allowed) == (
        "output mode", "append", "update", False)
    stateless = _variant(("SELECT window_start, window_end, origin, COUNT(*) AS flights, "
                          "AVG(dep_delay) AS avg_dep_delay\nFROM TUMBLE(flights, time_hour, "
                          "INTERVAL '1' HOUR)\nGROUP BY window_start, window_end, origin",
                          "SELECT origin, time_hour FROM flights"))
    (change,) = _changes(stateless)
    assert change.what == "stateful operators" and change.new == "(none)"

    rocks = {**SETTINGS, "state_store_provider": "RocksDBStateStoreProvider"}
    (change,) = _changes(_text(), settings=rocks)
    assert change.what == "state store provider" and not change.allowed
    assert restarts.diff(_record(stateless), _record(stateless, rocks)) == []  # no state


def test_files_sink_to_other_sinks_and_back():
    console = _variant(("connector = 'files', path = 'out/hourly', format = 'parquet'",
                        "connector = 'console', checkpoint_location = 'cp'"))
    (out,) = _changes(console)
    assert out.allowed and out.what == "sink"
    (back,) = restarts.diff(_record(console), _record(_text()))
    assert not back.allowed


def test_record_is_json_with_absolute_paths_and_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_DIR", "hidden")
    text = _variant(("path = 'data/flights'", "path = 'data/${env:SECRET_DIR}'"))
    (query,) = sqlstream.compile(text, path=str(tmp_path / "p.ssql")).plan.queries
    pipeline = sqlstream.compile(text, path=str(tmp_path / "p.ssql"))
    data = restarts.record(query.state, SETTINGS, pipeline.plan.source.redact)
    assert json.loads(json.dumps(data)) == data
    assert data["sources"][0]["target"] == str(tmp_path / "data" / "***")
    assert data["sink"] == {"connector": "files", "format": "parquet",
                            "path": str(tmp_path / "out" / "hourly")}
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
    assert ("grouping keys of the aggregation: window(time_hour, '1 hour'), origin → "
            "window(time_hour, '2 hour'), origin") in rendered
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
