"""Expectations on Spark (docs/dialect.md#expectations), on the bundled nycflights13 day
files: the counts of every rule in every micro-batch equal a count over the same CSV files
in plain Python; ``DROP ROW`` rows are not written (and are dead letters, with the rule's
name, when the source has them); ``FAIL UPDATE`` stops the query in the micro-batch of the
violating row with nothing of it committed, and a restart stops there again.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

import sqlstream
from sqlstream.diagnostics.errors import QueryFailedError
from sqlstream.runtime.events import BatchProgress
from sqlstream.runtime.progress import ProgressRenderer
from sqlstream.runtime.progress_tracker import QuerySummary, Tracker
from tests.support.flights import DAYS, FLIGHT_COLUMNS, copy_days

pytestmark = pytest.mark.spark

HUBS = ("ATL", "ORD", "LAX")


def _rows(day: Path) -> list[dict]:
    with open(day, newline="") as handle:
        return list(csv.DictReader(handle))


def _delay(row: dict) -> float | None:
    return None if row["dep_delay"] == "NA" else float(row["dep_delay"])


def _run(spark, tmp_path: Path, text: str) -> list:
    events: list = []
    tracker = Tracker()
    session = sqlstream.Session(
        spark, listeners=[events.append, lambda e: events.extend(tracker.observe(e))]
    )
    pipeline = session.compile(text, path=str(tmp_path / "quality.ssql"))
    session.run(pipeline, available_now=True)
    return events


def test_every_rule_counted_per_micro_batch_and_drop_row_rows_not_written(spark, tmp_path):
    days = DAYS[:3]
    copy_days(tmp_path, days)
    events = _run(
        spark,
        tmp_path,
        f"""
        CREATE STREAM flights ({FLIGHT_COLUMNS},
            CONSTRAINT to_hub EXPECT (dest IN ('ATL', 'ORD', 'LAX')),
            CONSTRAINT departed EXPECT (dep_time IS NOT NULL) ON VIOLATION DROP ROW,
            CONSTRAINT small_delay EXPECT (dep_delay < 100) ON VIOLATION DROP ROW
        ) WITH (connector = 'files', path = 'data/flights', format = 'csv', header = true,
                nullValue = 'NA', maxFilesPerTrigger = 1);
        CREATE SINK jfk (CONSTRAINT short EXPECT (distance < 1000))
            WITH (connector = 'files', path = 'out/jfk', format = 'parquet');
        INSERT INTO jfk SELECT carrier, flight, dest, distance FROM flights WHERE origin = 'JFK';
        """,
    )
    expected, written = [], Counter()
    for day in days:  # the oracle: plain Python over the same files, a file per micro-batch
        rows = _rows(day)
        kept = [
            r
            for r in rows
            if r["dep_time"] != "NA" and not (_delay(r) is not None and _delay(r) >= 100)
        ]
        jfk = [r for r in kept if r["origin"] == "JFK"]
        expected.append(
            {
                "to_hub": sum(r["dest"] not in HUBS for r in rows),
                "departed": sum(r["dep_time"] == "NA" for r in rows),
                "small_delay": sum(_delay(r) is not None and _delay(r) >= 100 for r in rows),
                "short": sum(float(r["distance"]) >= 1000 for r in jfk),
            }
        )
        written.update((r["carrier"], int(r["flight"]), r["dest"]) for r in jfk)
    batches = [e for e in events if isinstance(e, BatchProgress)]
    assert [dict(b.expectations) for b in batches] == expected
    assert all(sum(e[rule] for e in expected) > 0 for rule in expected[0])  # each one breaks
    (summary,) = [e for e in events if isinstance(e, QuerySummary)]
    assert dict(summary.expectations) == {k: sum(e[k] for e in expected) for k in expected[0]}
    assert batches[0].to_dict()["expectations"] == expected[0]  # the JSON progress
    out = spark.read.parquet(str(tmp_path / "out" / "jfk")).collect()
    assert Counter((r.carrier, r.flight, r.dest) for r in out) == written
    _rendered(events, expected)


def _rendered(events: list, expected: list[dict]) -> None:
    """The run's events as ``exec`` shows them: each plain progress line and the summary
    line end with the counts; on a terminal, a line above the live table per micro-batch
    and the run's totals under the summary table."""
    from rich.console import Console

    run = [e for e in events if not isinstance(e, QuerySummary)]  # the renderer derives it
    lines: list[str] = []
    with ProgressRenderer(write=lines.append, fmt="plain") as plain:
        for event in run:
            plain.on_event(event)
    shown = [", ".join(f"{k} {v:,}" for k, v in e.items()) for e in expected]
    batch_lines = [line for line in lines if " batch " in line]
    assert [line.split("; expectations violated: ")[1] for line in batch_lines] == shown
    totals = ", ".join(f"{k} {sum(e[k] for e in expected):,}" for k in expected[0])
    assert any(line.endswith(f"expectations violated: {totals}") for line in lines)
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=200, color_system=None)
    with ProgressRenderer(write=lambda _: None, fmt="live", console=console) as live:
        for event in run:
            live.on_event(event)
    text = screen.getvalue()
    assert all(f"expectations violated: {line}" in text for line in shown)
    assert f"jfk: expectations violated: {totals}" in text


def test_fail_update_stops_in_the_micro_batch_and_again_after_a_restart(
    spark, tmp_path, monkeypatch
):
    days = DAYS[7:9]  # 2013-01-08, then 2013-01-09 with HA 51 leaving 1301 minutes late
    violating = [r for r in _rows(days[1]) if (_delay(r) or 0) >= 1000]
    assert [(r["carrier"], r["flight"]) for r in violating] == [("HA", "51")]
    assert not any((_delay(r) or 0) >= 1000 for r in _rows(days[0]))
    monkeypatch.setenv("SQLSTREAM_TEST_TAIL", violating[0]["tailnum"])
    copy_days(tmp_path, days)
    text = f"""
        CREATE STREAM flights ({FLIGHT_COLUMNS},
            CONSTRAINT not_that_plane EXPECT (tailnum <> '${{env:SQLSTREAM_TEST_TAIL}}'),
            CONSTRAINT not_late EXPECT (dep_delay < 1000) ON VIOLATION DROP ROW,
            CONSTRAINT sane_delay EXPECT (dep_delay < 1000) ON VIOLATION FAIL UPDATE
        ) WITH (connector = 'files', path = 'data/flights', format = 'csv', header = true,
                nullValue = 'NA', maxFilesPerTrigger = 1);
        CREATE SINK out WITH (connector = 'files', path = 'out/all', format = 'parquet');
        INSERT INTO out SELECT carrier, flight, dep_delay FROM flights;
        """  # not_late would drop the row: every rule is checked before any row is dropped
    for _ in range(2):  # the first run, then a restart on the same checkpoint
        with pytest.raises(QueryFailedError) as failed:
            _run(spark, tmp_path, text)
        error = failed.value
        assert error.code == "SS560"
        assert "expectation 'sane_delay'" in error.message
        assert '"carrier":"HA"' in error.message and '"dep_delay":1301.0' in error.message
        rendered = error.render()
        assert violating[0]["tailnum"] not in rendered  # the secret's value redacted
        assert "CONSTRAINT sane_delay" in rendered  # positioned at the rule
        out = spark.read.parquet(str(tmp_path / "out" / "all")).collect()
        assert len(out) == len(_rows(days[0]))  # only the first day's micro-batch committed
        commits = tmp_path / ".sqlstream" / "checkpoints" / "quality" / "out" / "commits"
        assert sorted(p.name for p in commits.iterdir() if not p.name.startswith(".")) == ["0"]


def test_drop_row_rows_are_dead_letters_named_by_the_rule(spark, tmp_path):
    day = DAYS[0]
    folder = tmp_path / "data" / "flights"
    folder.mkdir(parents=True)
    lines = day.read_text().splitlines()
    (folder / day.name).write_text("\n".join([*lines, "2013,1,1,not a number"]) + "\n")
    _run(
        spark,
        tmp_path,
        f"""
        CREATE STREAM flights ({FLIGHT_COLUMNS},
            CONSTRAINT departed EXPECT (dep_time IS NOT NULL) ON VIOLATION DROP ROW,
            CONSTRAINT to_hub EXPECT (dest IN ('ATL', 'ORD', 'LAX'))
        ) WITH (connector = 'files', path = 'data/flights', format = 'csv', header = true,
                nullValue = 'NA', on_error = 'dead_letter', dead_letter_path = 'dead');
        CREATE SINK out WITH (connector = 'files', path = 'out/all', format = 'parquet');
        INSERT INTO out SELECT carrier, flight, dep_time FROM flights;
        """,
    )
    rows = _rows(day)
    cancelled = [line for line, r in zip(lines[1:], rows, strict=True) if r["dep_time"] == "NA"]
    assert cancelled
    letters = [
        json.loads(line)
        for path in (tmp_path / "dead").glob("part-*.json")
        for line in path.read_text().splitlines()
    ]
    by_reason = Counter(letter["reason"] for letter in letters)
    assert by_reason["departed"] == len(cancelled)
    assert sorted(x["raw"] for x in letters if x["reason"] == "departed") == sorted(cancelled)
    assert [x["raw"] for x in letters if x["reason"].startswith("malformed")] == [
        "2013,1,1,not a number"
    ]
    assert len(letters) == len(cancelled) + 1  # to_hub keeps its rows: no dead letter
    out = spark.read.parquet(str(tmp_path / "out" / "all")).collect()
    assert len(out) == len(rows) - len(cancelled)
