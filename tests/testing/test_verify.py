"""``sqlstream verify`` on Spark: a pipeline that streams its batch meaning reports
``equal``; a keep-first deduplication by event time with an earlier row arriving later
reports ``differs`` (``batch``, SS361) with a counterexample ``sqlstream test`` fails on;
``rand()`` differs between runs (``split``, SS362).

The pipelines read flights of examples/flights/data (nycflights13, CC0). Each verify costs
several streaming runs, so the runs are few (``--splits 1``) and the seeds fixed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sqlstream.cli import main
from tests.conftest import FIXTURES, ROOT

pytestmark = pytest.mark.spark

VERIFY = FIXTURES / "verify"


def _copy(tmp_path: Path, stem: str) -> tuple[Path, Path]:
    """The fixture pipeline ``stem`` and its test file copied to ``tmp_path`` (where the
    counterexample is written)."""
    shutil.copy(VERIFY / f"{stem}.ssql", tmp_path)
    shutil.copy(VERIFY / f"{stem}.test.yaml", tmp_path)
    return tmp_path / f"{stem}.ssql", tmp_path / f"{stem}.test.yaml"


def _verify(*args: str):
    result = CliRunner().invoke(main, ["verify", *args, "--splits", "1", "--seed", "7"])
    return result


def test_hourly_delays_streams_its_batch_meaning(spark, tmp_path):
    folder = ROOT / "examples" / "flights"
    result = _verify(
        str(folder / "hourly_delays.ssql"),
        "--test",
        str(folder / "hourly_delays.test.yaml"),
        "--format",
        "json",
        "--counterexamples",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["seed"] == 7
    (query,) = document["queries"]
    assert query["query"] == "hourly" and query["result"] == "equal"
    assert query["property"] is None and query["counterexample"] is None
    # all rows in one micro-batch: the watermark ends at 07:00 - 1 hour; the windows of
    # 04:00 and 05:00 (EWR) are final, JFK's 07:00 window is not
    assert (query["final_rows"], query["not_final_rows"]) == (2, 1)
    # one micro-batch per step: the 04:00 flight arrives after the watermark passed 06:00
    assert query["late_rows"]["one-batch"] == 0 and query["late_rows"]["per-step"] == 1
    assert set(query["late_rows"]) == {"one-batch", "per-step", "split-1"}
    assert query["late"]["per-step"] == [
        {
            "batch": 3,
            "stream": "flights",
            "row": {"origin": "EWR", "dep_delay": 1.0, "time_hour": "2013-01-01 04:00:00"},
        }
    ]
    assert query["dropped_by_spark"]["per-step"] == 1
    assert set(document["tests"][0]["runs"]) == {"one-batch", "per-step", "split-1"}


def test_keep_first_by_event_time_differs_from_its_batch_meaning(spark, tmp_path):
    pipeline, test = _copy(tmp_path, "first_flight")
    result = _verify(str(pipeline), "--test", str(test))
    assert result.exit_code == 1, result.output
    assert "first_flights: DIFFERS (batch)" in result.stdout
    assert "SS361" in result.stdout
    # the batch query keeps EWR's earliest flight, UA 1545 at 10:00; the stream the first
    # to arrive, B6 507 at 11:00
    assert "- {carrier: UA, flight: 1545, origin: EWR" in result.stdout
    assert "+ {carrier: B6, flight: 507, origin: EWR" in result.stdout
    counterexample = tmp_path / "first_flight.first_flights.counterexample.test.yaml"
    assert f"smallest input: {counterexample}" in result.stdout
    text = counterexample.read_text(encoding="utf-8")
    # shrunk to the two EWR flights; JFK's is not needed to show it
    assert "1545" in text and "507" in text and "1141" not in text
    failed = CliRunner().invoke(main, ["test", str(counterexample)])
    assert failed.exit_code == 1, failed.output
    assert "missing:    {carrier: UA, flight: 1545" in failed.output


def test_rand_differs_between_runs(spark, tmp_path):
    pipeline, test = _copy(tmp_path, "random_sample")
    result = _verify(str(pipeline), "--test", str(test), "--format", "json")
    assert result.exit_code == 1, result.output
    (query,) = json.loads(result.stdout)["queries"]
    assert (query["result"], query["property"]) == ("differs", "split")
    assert query["reason"].startswith("SS362") and "rand()" in query["reason"]
    assert query["against"] == "one-batch" and query["final_rows"] == 3
    assert Path(query["counterexample"]).exists()


def test_input_from_a_folder_of_day_files(spark, tmp_path):
    """--input: the first 40 flights of two day files, one micro-batch per file; the
    windows compared are counted in Python from the same CSV rows."""
    import csv
    import datetime as dt

    days = tmp_path / "days"
    days.mkdir()
    groups = set()
    for day in ("2013-01-01", "2013-01-02"):
        source = ROOT / "examples" / "flights" / "data" / "flights" / f"{day}.csv"
        lines = source.read_text(encoding="utf-8").splitlines()[:41]
        (days / f"{day}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for row in csv.DictReader(lines):
            groups.add((row["origin"], dt.datetime.fromisoformat(row["time_hour"])))
    mark = max(hour for _, hour in groups) - dt.timedelta(hours=1)
    final = {g for g in groups if g[1] + dt.timedelta(hours=1) <= mark}
    result = _verify(
        str(ROOT / "examples" / "flights" / "hourly_delays.ssql"),
        "--input",
        f"flights={days}",
        "--format",
        "json",
        "--counterexamples",
        str(tmp_path),
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    (query,) = document["queries"]
    assert query["result"] == "equal"
    assert (query["final_rows"], query["not_final_rows"]) == (len(final), len(groups - final))
    assert document["tests"][0]["runs"]["per-step"]["batches"] == [40, 40]


def test_an_outer_join_held_back_by_a_restart_is_not_yet_final(spark, tmp_path):
    """guide_ad_clicks restarted between the impressions and the clicks: Spark keeps only
    the global watermark in the checkpoint, so after the restart the left outer join still
    holds ad 3 (no click), which the run without the restart has written with a NULL; the
    run is compared modulo that row (not yet final), not reported as ``split``."""
    from sqlstream.testing.suite import run

    test = VERIFY / "ad_clicks_restart.test.yaml"
    pipeline = FIXTURES / "spark_suites" / "guide_ad_clicks.ssql"
    # the stream with the restart writes ad 9 only (the test file's expectations)
    (result,) = run([test])
    assert result.status == "passed", [f.message for f in result.failures]
    found = CliRunner().invoke(
        main,
        ["verify", str(pipeline), "--test", str(test), "--splits", "0", "--seed", "0"]
        + ["--no-shrink", "--format", "json", "--counterexamples", str(tmp_path)],
    )
    assert found.exit_code == 0, found.output
    document = json.loads(found.stdout)
    (runs,) = [t["runs"] for t in document["tests"]]
    assert runs["per-step"] == {"batches": [1, 1, 2], "restart_after": 1}
    assert runs["one-batch"]["restart_after"] is None
    assert {q["query"]: q["result"] for q in document["queries"]} == {
        "clicked": "equal",
        "impressions_and_clicks": "equal",
    }
