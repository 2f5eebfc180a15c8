"""The restart guard judges meaning, not text (``sqlstream.runtime.state_changes``,
``sqlstream.runtime.sink_owner``), without Spark: the diff of the records of compiled
variants of one pipeline, records of the previous format, malformed records in a real
checkpoint folder, and a files sink's output directory owned by one checkpoint.
"""

from __future__ import annotations

import json
import os

import pytest

import sqlstream
from sqlstream.diagnostics.errors import IncompatibleRestartError
from sqlstream.runtime import restarts, sink_owner

TEXT = """CREATE STREAM raw (origin STRING, dest STRING, dep_delay DOUBLE, time_hour TIMESTAMP,
    computed AS dep_delay * 2,
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR
) WITH (connector = 'files', path = 'data', format = 'csv', header = true);
CREATE VIEW flights AS SELECT origin, time_hour, dep_delay, computed FROM raw;
CREATE SINK hourly WITH (connector = 'files', path = 'out/hourly', format = 'parquet');
INSERT INTO hourly
SELECT window_start, origin, COUNT(*) AS n, AVG(dep_delay) AS d, SUM(computed) AS c
FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)
GROUP BY window_start, window_end, origin
EMIT FINAL;
"""

SETTINGS = {
    "state_store_provider": "HDFSBackedStateStoreProvider",
    "shuffle_partitions": "2",
    "time_zone": "UTC",
    "case_sensitive": "false",
}


def _record(text, settings=SETTINGS):
    (query,) = sqlstream.compile(text, path="/w/hourly.ssql").plan.queries
    return restarts.record(query.state, settings)


def _variant(*pairs) -> str:
    text = TEXT
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def _changes(text, settings=SETTINGS, old=None):
    return restarts.diff(old or _record(TEXT), _record(text, settings))


def test_a_key_replaced_through_a_view_is_refused():
    (change,) = _changes(_variant(("SELECT origin, time_hour", "SELECT dest AS origin, time_hour")))
    assert change.what == "grouping keys of the aggregation" and not change.allowed
    assert "raw.origin" in change.old and "raw.dest" in change.new  # one text, two meanings
    assert change.old.startswith("window(time_hour, '1 hour'), origin (resolved: ")


def test_a_computed_column_redefined_is_refused():
    (change,) = _changes(_variant(("computed AS dep_delay * 2", "computed AS dep_delay * 3")))
    assert change.what == "aggregates of the aggregation" and not change.allowed
    assert "SUM(raw.dep_delay * 3)" in change.new


@pytest.mark.parametrize(
    "pairs",
    [
        [("INTERVAL '1' HOUR)", "INTERVAL '60' MINUTES)")],
        [("AVG(dep_delay)", "avg(DEP_DELAY)")],
        [("COUNT(*)", "COUNT(1)")],
        [("COUNT(*)", "COUNT(42)")],
        [("time_hour - INTERVAL '1' HOUR", "time_hour - INTERVAL '60' MINUTES")],
    ],
)
def test_equal_spellings_restart(pairs):
    assert _changes(_variant(*pairs)) == []


def test_case_sensitive_names_compare_as_written():
    sensitive = {**SETTINGS, "case_sensitive": "true"}
    old = _record(TEXT, sensitive)
    (change,) = _changes(_variant(("AVG(dep_delay)", "avg(DEP_DELAY)")), sensitive, old)
    assert change.what == "aggregates of the aggregation" and not change.allowed


def test_the_session_time_zone_is_refused_for_time_derived_state():
    (change,) = _changes(TEXT, {**SETTINGS, "time_zone": "America/New_York"})
    assert (change.what, change.old, change.new, change.allowed) == (
        "spark.sql.session.timeZone",
        "UTC",
        "America/New_York",
        False,
    )
    stateless = _variant(
        (
            "SELECT window_start, origin, COUNT(*) AS n, AVG(dep_delay) AS d, SUM(computed) AS c\n"
            "FROM TUMBLE(flights, time_hour, INTERVAL '1' HOUR)\n"
            "GROUP BY window_start, window_end, origin",
            "SELECT origin, time_hour FROM flights",
        )
    )
    assert (
        restarts.diff(
            _record(stateless), _record(stateless, {**SETTINGS, "time_zone": "Asia/Tokyo"})
        )
        == []
    )


def test_a_record_of_format_1_loads_and_compares_by_what_it_holds(tmp_path):
    old = _record(TEXT)
    for operator in old["operators"]:
        for key in ("resolved_keys", "resolved_aggregates", "zoned"):
            del operator[key]
    for key in ("time_zone", "case_sensitive"):
        del old["spark"][key]
    old["format"] = 1
    restarts.write(str(tmp_path), old)
    assert restarts.read(str(tmp_path)) == old  # loads
    # the format grew: nothing refused for that alone, nor for the time zone it lacks
    assert _changes(TEXT, {**SETTINGS, "time_zone": "Asia/Tokyo"}, old) == []
    (change,) = _changes(_variant(("INTERVAL '1' HOUR)", "INTERVAL '2' HOUR)")), old=old)
    assert change.what == "grouping keys of the aggregation"  # compared as written


def _checkpoint(tmp_path):
    checkpoint = tmp_path / ".sqlstream" / "checkpoints" / "hourly" / "hourly"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1\n")
    (checkpoint / "sqlstream").mkdir()
    return checkpoint


MALFORMED = {
    "bad JSON": (b"{not json", "it is not JSON (Expecting property name"),
    "truncated": (b'{"format": 2, "sources": [', "truncated?"),
    "a list": (b"[1, 2]", "the record is a list, not an object"),
    "no operators": (b'{"format": 2, "sources": []}', "operators is null, not a list"),
    "wrong type": (
        json.dumps(
            {
                "sources": [],
                "operators": [{"kind": "aggregation", "keys": "origin", "aggregates": []}],
            }
        ).encode(),
        "operators[0].keys is a string, not a list of strings",
    ),
    "newer format": (b'{"format": 99}', "format 99, written by a newer sqlstream"),
    "not UTF-8": (b'{"format": "\xff"}', "it is not UTF-8 text"),
    "nested": (b"[" * 100_000 + b"]" * 100_000, "nested too deep"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_signature_is_ss401(tmp_path, case):
    content, message = MALFORMED[case]
    checkpoint = _checkpoint(tmp_path)
    (checkpoint / restarts.SIGNATURE_FILE).write_bytes(content)
    plan = sqlstream.compile(TEXT, path=str(tmp_path / "hourly.ssql")).plan
    with pytest.raises(IncompatibleRestartError) as caught:
        restarts.prepare(plan, SETTINGS)
    error = caught.value
    assert error.code == "SS401" and error.span == plan.queries[0].span
    assert f"cannot read the state signature {checkpoint / restarts.SIGNATURE_FILE}" in (
        error.message
    )
    assert message in error.message, error.message
    assert "INSERT INTO hourly" in error.render()


def test_a_fifo_signature_is_ss401_without_blocking(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    os.mkfifo(checkpoint / restarts.SIGNATURE_FILE)
    plan = sqlstream.compile(TEXT, path=str(tmp_path / "hourly.ssql")).plan
    with pytest.raises(IncompatibleRestartError, match="it is not a regular file"):
        restarts.prepare(plan, SETTINGS)


def _spark_metadata(output, batches=1):
    log = output / "_spark_metadata"
    log.mkdir(parents=True)
    for batch in range(batches):
        (log / str(batch)).write_text('v1\n{"path":"part-0.parquet"}\n')


def test_a_files_sink_written_by_another_checkpoint_is_refused(tmp_path):
    output = tmp_path / "out" / "hourly"
    plan = sqlstream.compile(TEXT, path=str(tmp_path / "hourly.ssql")).plan
    decided = restarts.prepare(plan, SETTINGS)  # a first start: no output yet
    decided["hourly"].commit()
    owner = str(tmp_path / ".sqlstream" / "checkpoints" / "hourly" / "hourly")
    assert sink_owner.owner(str(output)) == owner
    _spark_metadata(output, 2)

    other = sqlstream.compile(TEXT, path=str(tmp_path / "hourly.ssql"), state_dir="fresh").plan
    with pytest.raises(IncompatibleRestartError) as caught:
        restarts.prepare(other, SETTINGS)
    message = caught.value.message
    assert f"output directory {output} is written by checkpoint {owner}" in message
    assert "skips every batch id" in message and caught.value.code == "SS401"
    assert "new path" in caught.value.hint

    notes: list[str] = []
    allowed = restarts.prepare(other, SETTINGS, allow=True, report=notes.append)
    assert "refused start allowed by the flag: output directory" in notes[0]
    assert allowed["hourly"].output == str(output)


def test_a_fresh_checkpoint_on_an_output_with_batches_is_refused(tmp_path):
    output = tmp_path / "out" / "hourly"
    _spark_metadata(output)  # written before owners were recorded, or the owner deleted
    plan = sqlstream.compile(TEXT, path=str(tmp_path / "hourly.ssql")).plan
    with pytest.raises(IncompatibleRestartError, match="another checkpoint \\(not recorded\\)"):
        restarts.prepare(plan, SETTINGS)
    checkpoint = _checkpoint(tmp_path)  # the checkpoint with progress: adopted
    assert restarts.prepare(plan, SETTINGS, report=lambda _: None)["hourly"].directory == str(
        checkpoint
    )
    assert sink_owner.conflict(str(tmp_path / "empty"), str(checkpoint), False) is None


def test_a_stream_renamed_on_the_same_input_keeps_its_meaning():
    renamed = _variant(("CREATE STREAM raw", "CREATE STREAM src"), ("FROM raw", "FROM src"))
    assert _changes(renamed) == []
    swapped = _variant(  # the new name on another input: a change of source and of keys
        ("CREATE STREAM raw", "CREATE STREAM src"),
        ("FROM raw", "FROM src"),
        ("path = 'data'", "path = 'other'"),
    )
    assert {c.what for c in _changes(swapped)} >= {
        "sources",
        "grouping keys of the aggregation",
        "aggregates of the aggregation",
    }


RAW2 = TEXT[: TEXT.index("CREATE VIEW")].replace("CREATE STREAM raw", "CREATE STREAM raw2")
"""A second stream declared over the same input as ``raw`` (same connector, path, format)."""
UNION = "FROM raw UNION ALL SELECT origin, time_hour, dep_delay, computed FROM raw2;"
SWAPPED = "FROM raw2 UNION ALL SELECT origin, time_hour, dep_delay, computed FROM raw;"


def test_a_key_reached_through_two_streams_of_one_input_is_one_key():
    """Second probe of issue 32: ``raw.origin`` and ``raw2.origin`` over one input were
    two keys, so the branches of a union swapped (same rows, same state) were refused."""
    both = RAW2 + TEXT
    assert _changes(both.replace("FROM raw;", "FROM raw2;"), old=_record(both)) == []
    union = both.replace("FROM raw;", UNION)
    swapped = both.replace("FROM raw;", SWAPPED)
    assert _changes(swapped, old=_record(union)) == []
    # a key that is another column of that input is still refused, however it is reached
    other_key = swapped.replace(
        "SELECT origin, time_hour, dep_delay, computed FROM raw;",
        "SELECT dest AS origin, time_hour, dep_delay, computed FROM raw;",
    )
    assert other_key != swapped
    assert "grouping keys of the aggregation" in {
        c.what for c in _changes(other_key, old=_record(union)) if not c.allowed
    }
    # one stream read twice is one source in Spark: from two sources to one is refused
    self_union = both.replace("FROM raw;", UNION.replace("FROM raw UNION", "FROM raw2 UNION"))
    assert [c.what for c in _changes(self_union, old=_record(union))] == ["sources"]


def test_two_streams_of_one_input_with_other_watermarks_stay_apart():
    both = RAW2.replace("INTERVAL '1' HOUR", "INTERVAL '2' HOUR") + TEXT
    union = both.replace("FROM raw;", UNION)
    swapped = both.replace(
        "FROM raw;", "FROM raw2 UNION ALL SELECT origin, time_hour, dep_delay, computed FROM raw;"
    )
    assert _changes(swapped, old=_record(union)) == []
    moved = union.replace("INTERVAL '2' HOUR", "INTERVAL '3' HOUR")
    (change,) = _changes(moved, old=_record(union))
    assert change.what == "delay of the watermark of raw2" and change.allowed


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("UTC", "Etc/UTC"),
        ("UTC", "Z"),
        ("UTC", "+00:00"),
        ("GMT", "UTC"),
        ("+01:00", "+01"),
        ("+0530", "UTC+05:30"),
        ("US/Eastern", "America/New_York"),
        ("Asia/Calcutta", "Asia/Kolkata"),
    ],
)
def test_spellings_of_one_time_zone_restart(old, new):
    """Second probe of issue 32: the zone respelled was refused like another zone."""
    record = _record(TEXT, {**SETTINGS, "time_zone": old})
    assert _changes(TEXT, {**SETTINGS, "time_zone": new}, record) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("UTC", "Europe/London"),  # UTC in winter only
        ("+01:00", "Europe/Paris"),
        ("America/New_York", "America/Detroit"),  # other rules before 1975
        ("+05:30", "+05:00"),
        ("Etc/GMT+5", "GMT+5"),  # POSIX's inverted sign: UTC-5 and UTC+5
        ("UTC", "no/such/zone"),
    ],
)
def test_other_time_zones_are_refused(old, new):
    record = _record(TEXT, {**SETTINGS, "time_zone": old})
    (change,) = _changes(TEXT, {**SETTINGS, "time_zone": new}, record)
    assert change.what == "spark.sql.session.timeZone" and not change.allowed
