"""Flink's window TVFs on Spark, with Flink's meaning.

Flink's documentation ("Windowing table-valued functions", the ``Bid`` table) shows the
rows and aggregates of TUMBLE, HOP and CUMULATE over six bids; they are typed in here
(``FLINK_*``) and each query must produce exactly them, in append mode (a second file holds
one later bid that moves the watermark past every documented window and opens none of
them) and in update mode (the last value written for each window). Then CUMULATE with an
offset over three days of flights, one file per micro-batch, against the cumulating windows
computed in plain Python from the CSV rows (the windows closed by the final watermark).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections import defaultdict
from datetime import datetime, timedelta, timezone

import pytest

import sqlstream
from tests.conftest import ROOT

pytestmark = pytest.mark.spark

BIDS = [
    ("2020-04-15 08:05:00", 4.0, "C"),
    ("2020-04-15 08:07:00", 2.0, "A"),
    ("2020-04-15 08:09:00", 5.0, "D"),
    ("2020-04-15 08:11:00", 3.0, "B"),
    ("2020-04-15 08:13:00", 1.0, "E"),
    ("2020-04-15 08:17:00", 6.0, "F"),
]
LATER_BID = ("2020-04-15 08:40:00", 100.0, "Z")  # watermark 08:39:59: closes every window above

FLINK_TUMBLE = [("08:00", "08:10", 11.0), ("08:10", "08:20", 10.0)]
FLINK_HOP = [
    ("08:00", "08:10", 11.0),
    ("08:05", "08:15", 15.0),
    ("08:10", "08:20", 10.0),
    ("08:15", "08:25", 6.0),
]
FLINK_CUMULATE = [
    ("08:00", "08:06", 4.0),
    ("08:00", "08:08", 6.0),
    ("08:00", "08:10", 11.0),
    ("08:10", "08:12", 3.0),
    ("08:10", "08:14", 4.0),
    ("08:10", "08:16", 4.0),
    ("08:10", "08:18", 10.0),
    ("08:10", "08:20", 10.0),
]
# SELECT * FROM CUMULATE(…): (bidtime, item, window_start, window_end) of each row
FLINK_CUMULATE_ROWS = [
    ("08:05", "C", "08:00", "08:06"),
    ("08:05", "C", "08:00", "08:08"),
    ("08:05", "C", "08:00", "08:10"),
    ("08:07", "A", "08:00", "08:08"),
    ("08:07", "A", "08:00", "08:10"),
    ("08:09", "D", "08:00", "08:10"),
    ("08:11", "B", "08:10", "08:12"),
    ("08:11", "B", "08:10", "08:14"),
    ("08:11", "B", "08:10", "08:16"),
    ("08:11", "B", "08:10", "08:18"),
    ("08:11", "B", "08:10", "08:20"),
    ("08:13", "E", "08:10", "08:14"),
    ("08:13", "E", "08:10", "08:16"),
    ("08:13", "E", "08:10", "08:18"),
    ("08:13", "E", "08:10", "08:20"),
    ("08:17", "F", "08:10", "08:18"),
    ("08:17", "F", "08:10", "08:20"),
]

BID_PROGRAM = """\
CREATE STREAM bid (bidtime TIMESTAMP, price DOUBLE, item STRING,
    WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND)
WITH (connector = 'files', path = 'bids', format = 'json', maxFilesPerTrigger = 1);
CREATE SINK {p}_tumble WITH (connector = 'memory');
CREATE SINK {p}_hop WITH (connector = 'memory');
CREATE SINK {p}_cumulate WITH (connector = 'memory');
CREATE SINK {p}_rows WITH (connector = 'memory');

INSERT INTO {p}_tumble
SELECT window_start, window_end, SUM(price) AS price
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
GROUP BY window_start, window_end EMIT {emit};

INSERT INTO {p}_hop
SELECT window_start, window_end, SUM(price) AS price
FROM TABLE(HOP(DATA => TABLE bid, TIMECOL => DESCRIPTOR(bidtime),
               SLIDE => INTERVAL '5' MINUTES, SIZE => INTERVAL '10' MINUTES))
GROUP BY window_start, window_end EMIT {emit};

INSERT INTO {p}_cumulate
SELECT window_start, window_end, window_time, SUM(price) AS price
FROM TABLE(CUMULATE(TABLE bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))
GROUP BY window_start, window_end EMIT {emit};

INSERT INTO {p}_rows
SELECT bidtime, item, window_start, window_end, window_time
FROM CUMULATE(DATA => TABLE bid, TIMECOL => DESCRIPTOR(bidtime),
              STEP => INTERVAL '2' MINUTES, SIZE => INTERVAL '10' MINUTES);
"""


def _at(clock: str) -> datetime:
    return datetime.strptime(f"2020-04-15 {clock}", "%Y-%m-%d %H:%M")


def _write_bids(folder, name, bids, stamp):
    folder.mkdir(exist_ok=True)
    with open(folder / name, "w", encoding="utf-8") as handle:
        for bidtime, price, item in bids:
            handle.write(json.dumps({"bidtime": bidtime, "price": price, "item": item}) + "\n")
    os.utime(folder / name, (stamp, stamp))


def _run_bids(spark, tmp_path, prefix, emit):
    _write_bids(tmp_path / "bids", "1.json", BIDS, 1_000_000)
    _write_bids(tmp_path / "bids", "2.json", [LATER_BID], 2_000_000)
    path = tmp_path / f"{prefix}.ssql"
    path.write_text(BID_PROGRAM.format(p=prefix, emit=emit), encoding="utf-8")
    pipeline = sqlstream.compile_file(path)
    for query in pipeline.start(spark, available_now=True):
        query.awaitTermination()
        assert query.exception() is None

    def rows(sink):
        return [tuple(r) for r in spark.sql(f"SELECT * FROM {prefix}_{sink}").collect()]

    return rows


def _windows(expected):
    return sorted((_at(start), _at(end), total) for start, end, total in expected)


def _last_update(rows):
    """Update mode: the last value written for each window (the memory sink keeps them all)."""
    last = {}
    for row in rows:
        last[row[:2]] = row
    return [row for row in last.values() if row[1] <= _at("08:30")]  # not the later bid's


def test_flink_bid_examples_in_append_mode(spark, tmp_path):
    rows = _run_bids(spark, tmp_path, "bid_append", "FINAL")
    assert sorted(rows("tumble")) == _windows(FLINK_TUMBLE)
    assert sorted(rows("hop")) == _windows(FLINK_HOP)
    cumulate = sorted(rows("cumulate"))
    assert [(s, e, total) for s, e, _, total in cumulate] == _windows(FLINK_CUMULATE)
    assert all(time == end - timedelta(microseconds=1) for _, end, time, _ in cumulate)
    per_row = sorted(r for r in rows("rows") if r[1] != "Z")
    assert [(b, i, s, e) for b, i, s, e, _ in per_row] == sorted(
        (_at(b), i, _at(s), _at(e)) for b, i, s, e in FLINK_CUMULATE_ROWS
    )
    assert all(time == end - timedelta(microseconds=1) for *_, end, time in per_row)


def test_flink_bid_examples_in_update_mode(spark, tmp_path):
    rows = _run_bids(spark, tmp_path, "bid_update", "CHANGES")
    assert sorted(_last_update(rows("tumble"))) == _windows(FLINK_TUMBLE)
    assert sorted(_last_update(rows("hop"))) == _windows(FLINK_HOP)
    cumulate = [(s, e, total) for s, e, _, total in _last_update(rows("cumulate"))]
    assert sorted(cumulate) == _windows(FLINK_CUMULATE)


# ---- flights: CUMULATE with an offset against plain Python -------------------------------------

DAYS = sorted((ROOT / "examples" / "flights" / "data" / "flights").glob("*.csv"))[:3]
STEP, SIZE, OFFSET = timedelta(hours=4), timedelta(days=1), timedelta(hours=5)
EPOCH = datetime(1970, 1, 1)

FLIGHTS_PROGRAM = """\
CREATE STREAM flights (dep_delay DOUBLE, origin STRING, time_hour TIMESTAMP,
    WATERMARK FOR time_hour AS time_hour - INTERVAL '1' HOUR)
WITH (connector = 'files', path = 'data/flights', format = 'csv', header = true,
      nullValue = 'NA', maxFilesPerTrigger = 1);
CREATE SINK cumulative_flights WITH (connector = 'memory');
INSERT INTO cumulative_flights
SELECT window_start, window_end, origin, COUNT(*) AS flights, SUM(dep_delay) AS delay
FROM CUMULATE(flights, time_hour, INTERVAL '4' HOURS, INTERVAL '1' DAY, INTERVAL '5' HOURS) AS f
GROUP BY window_start, window_end, origin
EMIT FINAL;
"""


def _cumulating_windows(t: datetime):
    """Flink's CUMULATE windows of a row at ``t``: the size-aligned start ``S`` (shifted by
    the offset), then ``[S, S + i·step)`` for each ``i`` whose window holds ``t``."""
    start = t - (t - EPOCH - OFFSET) % SIZE
    for i in range(1, SIZE // STEP + 1):
        if start + i * STEP > t:
            yield start, start + i * STEP


def test_cumulate_with_offset_equals_plain_python_on_the_flights(spark, tmp_path):
    target = tmp_path / "data" / "flights"
    target.mkdir(parents=True)
    expected = defaultdict(lambda: [0, None])
    for day in DAYS:
        shutil.copy(day, target / day.name)
        stamp = datetime.strptime(day.stem, "%Y-%m-%d").replace(tzinfo=timezone.utc).timestamp()
        os.utime(target / day.name, (stamp, stamp))
        with open(day, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle):
                t = datetime.strptime(row["time_hour"], "%Y-%m-%dT%H:%M:%SZ")
                delay = None if row["dep_delay"] == "NA" else float(row["dep_delay"])
                for start, end in _cumulating_windows(t):
                    total = expected[(start, end, row["origin"])]
                    total[0] += 1
                    if delay is not None:
                        total[1] = (total[1] or 0.0) + delay
    path = tmp_path / "cumulate_flights.ssql"
    path.write_text(FLIGHTS_PROGRAM, encoding="utf-8")
    (query,) = sqlstream.compile_file(path).start(spark, available_now=True)
    query.awaitTermination()
    assert query.exception() is None
    watermark = datetime.strptime(
        query.recentProgress[-1]["eventTime"]["watermark"], "%Y-%m-%dT%H:%M:%S.%fZ"
    )
    closed = {key: value for key, value in expected.items() if key[1] <= watermark}
    written = {
        tuple(r[:3]): [r[3], r[4]] for r in spark.sql("SELECT * FROM cumulative_flights").collect()
    }
    starts = {k[0] for k in closed}
    assert len(starts) >= 2 and len({k[1] for k in closed}) > 2 * len(starts)  # windows grow
    assert all((s - EPOCH - OFFSET) % SIZE == timedelta(0) for s in starts)  # offset applied
    assert written.keys() == closed.keys()
    for key, (count, delay) in closed.items():
        assert written[key][0] == count
        assert abs(written[key][1] - delay) < 1e-6 * max(1.0, abs(delay))
