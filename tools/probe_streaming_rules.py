#!/usr/bin/env python
"""Probe which streaming queries Spark accepts, rejects, or fails on at run time.

Runs one local SparkSession and, for every case below, builds the query (Spark SQL
over streaming temp views, or a DataFrame call), starts it with ``writeStream`` in the
given output mode / sink / trigger, lets it process the available data, stops it and
records the verdict:

* ``define``  - rejected while building the DataFrame (``spark.sql`` / analysis)
* ``start``   - rejected by ``writeStream ... start()``
* ``runtime`` - started, then the query died (StreamingQueryException)
* ``ok``      - ran to completion

For accepted cases that write to a sink we can read back (memory, parquet,
foreachBatch), the streaming result is compared with the same SQL run as a batch query
over static copies of the same data, so surprising results stand out.

Each case carries the verdict observed on Spark 4.1.4 (``expect``); a run on another
Spark version prints ``CHANGED`` next to every case whose verdict differs, so the rules
of ``sqlstream check`` can be re-verified after an upgrade. The findings are written up
in docs/streaming-rules.md.

Usage::

    .venv/bin/python tools/probe_streaming_rules.py [--out results.json] [--only A0,J2]
                                                    [--md table.md]

Results go to JSON (default: <tmp>/probe_streaming_rules.json) and a markdown table
to stdout (or --md). Spark 4.x only. Takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import functions as F

# --------------------------------------------------------------------------- data

DAY = "2024-01-01"

EVENTS = [  # k, v, ts  -- one list per file, read one file per micro-batch
    [("a", 1, "10:00:05"), ("b", 2, "10:00:30"), ("a", 3, "10:00:50")],
    [("a", 4, "10:01:10"), ("b", 5, "10:01:40"), ("a", 1, "10:00:05")],  # exact duplicate
    [("c", 7, "10:03:00"), ("a", 8, "10:03:30"), ("a", 0, "09:58:00")],  # last row is late
    [("a", 9, "10:06:00")],
]
CLICKS = [  # k, c, cts
    [("a", 100, "10:00:20"), ("b", 200, "10:00:45"), ("z", 300, "10:00:10")],
    [("a", 101, "10:01:30"), ("c", 102, "10:03:10")],
    [("a", 103, "10:06:30")],
]
DIM = [("a", "Alpha"), ("b", "Beta"), ("d", "Delta")]

EV_SCHEMA = "k STRING, v INT, ts TIMESTAMP"
CK_SCHEMA = "k STRING, c INT, cts TIMESTAMP"


def write_csv_files(dirname: str, batches: list[list[tuple]]) -> None:
    os.makedirs(dirname, exist_ok=True)
    base = time.time() - 1000
    for i, rows in enumerate(batches):
        p = os.path.join(dirname, f"part-{i}.csv")
        with open(p, "w") as f:
            for r in rows:
                f.write(",".join([str(r[0]), str(r[1]), f"{DAY} {r[2]}"]) + "\n")
        os.utime(p, (base + 10 * i, base + 10 * i))  # file source orders by mtime


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    id: str
    desc: str
    sql: str | None = None
    build: Callable[[Callable[[str], Any]], Any] | None = None  # t(name) -> DataFrame
    mode: str = "append"
    sink: str = "memory"  # memory|console|noop|parquet|parquet_nockpt|foreachBatch
    trigger: str = "availableNow"  # availableNow|processingTime|continuous
    conf: dict[str, str] = field(default_factory=dict)
    compare: str = "multiset"  # multiset|count|ordered|none
    expect: str = ""  # verdict observed on Spark 4.1.4: ok|define|start|runtime
    note: str = ""


CASES: list[Case] = []


def case(*args, **kw) -> None:
    CASES.append(Case(*args, **kw))


WIN = "window(e.ts, '1 minute')"
AGG_NOWM = "SELECT e.k, count(*) AS n, sum(e.v) AS s FROM ev e GROUP BY e.k"
AGG_WM_KEY = "SELECT e.k, count(*) AS n FROM ev_wm e GROUP BY e.k"
AGG_WIN = f"SELECT {WIN} AS w, e.k, count(*) AS n, sum(e.v) AS s FROM ev_wm e GROUP BY {WIN}, e.k"
MAP = "SELECT e.k, e.v, e.ts FROM ev e WHERE e.v >= 0"
SESS = (
    "SELECT session_window(e.ts, '1 minute') AS sw, e.k, count(*) AS n FROM ev_wm e "
    "GROUP BY session_window(e.ts, '1 minute'), e.k"
)
SESS_ONLY = (
    "SELECT session_window(e.ts, '1 minute') AS sw, count(*) AS n FROM ev_wm e "
    "GROUP BY session_window(e.ts, '1 minute')"
)
CHAIN_WIN = (
    "SELECT window(window_time(w), '5 minutes') AS w5, sum(n) AS n FROM ("
    + AGG_WIN
    + ") GROUP BY window(window_time(w), '5 minutes')"
)
CHAIN_NOWM = f"SELECT n, count(*) AS keys FROM ({AGG_NOWM}) GROUP BY n"
CHAIN_WIN_THEN_KEY = f"SELECT k, sum(n) AS n FROM ({AGG_WIN}) GROUP BY k"

# ---- A: output mode x query shape
case("A01", "map-only, append", MAP, mode="append", expect="ok")
case("A02", "map-only, update", MAP, mode="update", expect="ok")
case("A03", "map-only, complete", MAP, mode="complete", expect="start")
case("A04", "aggregation, no watermark, append", AGG_NOWM, mode="append", expect="start")
case("A05", "aggregation, no watermark, update", AGG_NOWM, mode="update", expect="ok")
case("A06", "aggregation, no watermark, complete", AGG_NOWM, mode="complete", expect="ok")
case("A07", "agg grouped by window(wm col), k; append", AGG_WIN, mode="append", expect="ok")
case("A08", "agg grouped by window(wm col), k; update", AGG_WIN, mode="update", expect="ok")
case("A09", "agg grouped by window(wm col), k; complete", AGG_WIN, mode="complete", expect="ok")
case("A10", "watermark, but grouped by k only; append", AGG_WM_KEY, mode="append", expect="start")
case("A11", "watermark, but grouped by k only; update", AGG_WM_KEY, mode="update", expect="ok")
case(
    "A12",
    "agg grouped by the watermarked column itself; append",
    "SELECT e.ts, count(*) AS n FROM ev_wm e GROUP BY e.ts",
    mode="append",
    expect="ok",
)
case(
    "A13",
    "grouped by window.start/end projected in a subquery (TUMBLE-like); append",
    "SELECT window_start, window_end, k, count(*) AS n FROM ("
    "SELECT w.start AS window_start, w.end AS window_end, k FROM ("
    f"SELECT {WIN} AS w, e.k FROM ev_wm e)) GROUP BY window_start, window_end, k",
    mode="append",
    expect="start",
)
case(
    "A14",
    "grouped by window, start/end projected after the aggregation; append",
    f"SELECT w.start AS window_start, w.end AS window_end, k, n FROM ({AGG_WIN})",
    mode="append",
    expect="ok",
)
case(
    "A15",
    "grouped by date_trunc('minute', wm col); append",
    "SELECT date_trunc('minute', e.ts) AS m, count(*) AS n FROM ev_wm e "
    "GROUP BY date_trunc('minute', e.ts)",
    mode="append",
    expect="start",
)
case(
    "A16",
    "wm col renamed in a projection, then window(renamed); append",
    "SELECT window(et, '1 minute') AS w, count(*) AS n FROM "
    "(SELECT e.ts AS et, e.k FROM ev_wm e) GROUP BY window(et, '1 minute')",
    mode="append",
    expect="ok",
)
case(
    "A17",
    "global aggregate (no GROUP BY) with watermark; append",
    "SELECT count(*) AS n FROM ev_wm e",
    mode="append",
    expect="start",
)
case(
    "A18",
    "global aggregate (no GROUP BY); update",
    "SELECT count(*) AS n FROM ev e",
    mode="update",
    expect="ok",
)
case(
    "A19",
    "sliding window(ts, 2 min, 1 min); append",
    "SELECT window(e.ts, '2 minutes', '1 minute') AS w, count(*) AS n FROM ev_wm e "
    "GROUP BY window(e.ts, '2 minutes', '1 minute')",
    mode="append",
    expect="ok",
)
case("A20", "session window + k; append", SESS, mode="append", expect="ok")
case("A21", "session window + k; update", SESS, mode="update", expect="start")
case("A22", "session window + k; complete", SESS, mode="complete", expect="ok")
case(
    "A23", "session window as only grouping key; append", SESS_ONLY, mode="append", expect="runtime"
)
case(
    "A24",
    "session window as only grouping key; complete",
    SESS_ONLY,
    mode="complete",
    expect="runtime",
)
case(
    "A25",
    "session window without watermark + k; complete",
    "SELECT session_window(e.ts, '1 minute') AS sw, e.k, count(*) AS n FROM ev e "
    "GROUP BY session_window(e.ts, '1 minute'), e.k",
    mode="complete",
    expect="ok",
)
case(
    "A26",
    "chained aggregation (window over window_time), append",
    CHAIN_WIN,
    mode="append",
    expect="ok",
)
case(
    "A27",
    "chained aggregation (window over window_time), update",
    CHAIN_WIN,
    mode="update",
    expect="start",
)
case(
    "A28",
    "chained aggregation (window over window_time), complete",
    CHAIN_WIN,
    mode="complete",
    expect="start",
)
case(
    "A29",
    "chained aggregation, update, checkCorrectness=false",
    CHAIN_WIN,
    mode="update",
    conf={"spark.sql.streaming.statefulOperator.checkCorrectness.enabled": "false"},
    expect="ok",
)
case(
    "A30",
    "chained aggregation, complete, checkCorrectness=false",
    CHAIN_WIN,
    mode="complete",
    conf={"spark.sql.streaming.statefulOperator.checkCorrectness.enabled": "false"},
    expect="ok",
)
case(
    "A31",
    "chained aggregation without watermark, append",
    CHAIN_NOWM,
    mode="append",
    expect="start",
)
case(
    "A32",
    "chained aggregation without watermark, complete",
    CHAIN_NOWM,
    mode="complete",
    expect="start",
)
case(
    "A33",
    "chained aggregation without watermark, complete, checkCorrectness=false",
    CHAIN_NOWM,
    mode="complete",
    conf={"spark.sql.streaming.statefulOperator.checkCorrectness.enabled": "false"},
    expect="ok",
)
case(
    "A34",
    "chained agg: windowed inner, outer grouped by k only; append",
    CHAIN_WIN_THEN_KEY,
    mode="append",
    expect="start",
)
case(
    "A35",
    "count(DISTINCT v) GROUP BY k; update",
    "SELECT e.k, count(DISTINCT e.v) AS n FROM ev e GROUP BY e.k",
    mode="update",
    expect="start",
)
case(
    "A36",
    "approx_count_distinct(v) GROUP BY k; update",
    "SELECT e.k, approx_count_distinct(e.v) AS n FROM ev e GROUP BY e.k",
    mode="update",
    expect="ok",
)
case(
    "A37",
    "GROUP BY ROLLUP(k, v); update",
    "SELECT e.k, e.v, count(*) AS n FROM ev e GROUP BY ROLLUP(e.k, e.v)",
    mode="update",
    expect="ok",
)
case(
    "A38",
    "GROUPING SETS ((k), ()); complete",
    "SELECT e.k, count(*) AS n FROM ev e GROUP BY GROUPING SETS ((e.k), ())",
    mode="complete",
    expect="ok",
)
case(
    "A39",
    "two different window() in one aggregate",
    "SELECT window(e.ts, '1 minute') AS w1, window(e.ts, '2 minutes') AS w2, count(*) AS n "
    "FROM ev_wm e GROUP BY window(e.ts, '1 minute'), window(e.ts, '2 minutes')",
    mode="update",
    expect="define",
)
case(
    "A40",
    "PIVOT on a stream; update",
    "SELECT * FROM (SELECT k, v FROM ev) PIVOT (sum(v) FOR k IN ('a', 'b'))",
    mode="update",
    expect="start",
)
case(
    "A41",
    "watermark defined after an aggregation without one, then window agg; append",
    "SELECT window(ts, '1 minute') AS w, sum(n) AS n FROM "
    "(SELECT e.ts, e.k, count(*) AS n FROM ev e GROUP BY e.ts, e.k) "
    "WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY window(ts, '1 minute')",
    mode="append",
    expect="runtime",
)
case(
    "A43",
    "window struct aliased in a subquery, grouped by the alias; append",
    "SELECT w.start AS window_start, w.end AS window_end, k, count(*) AS n FROM ("
    f"SELECT {WIN} AS w, e.k FROM ev_wm e) GROUP BY w, k",
    mode="append",
    expect="ok",
)
case(
    "A44",
    "grouped by window_time(window) of a windowed subquery (no new window); append",
    "SELECT window_time(w) AS wt, count(*) AS n FROM ("
    f"SELECT {WIN} AS w, e.k FROM ev_wm e) GROUP BY window_time(w)",
    mode="append",
    expect="ok",
)
case(
    "A42",
    "aggregation with watermark, ts among keys, then ORDER BY; complete",
    AGG_WIN + " ORDER BY w, k",
    mode="complete",
    compare="ordered",
    expect="ok",
)

# ---- L: LIMIT / OFFSET
case(
    "L01", "LIMIT, map-only, append", MAP + " LIMIT 3", mode="append", compare="count", expect="ok"
)
case("L02", "LIMIT, map-only, update", MAP + " LIMIT 3", mode="update", expect="start")
case("L03", "LIMIT, map-only, complete", MAP + " LIMIT 3", mode="complete", expect="start")
case(
    "L04",
    "LIMIT after aggregation, complete",
    AGG_NOWM + " LIMIT 2",
    mode="complete",
    compare="count",
    expect="ok",
)
case("L05", "LIMIT after aggregation, update", AGG_NOWM + " LIMIT 2", mode="update", expect="start")
case(
    "L06",
    "LIMIT after windowed aggregation, append",
    AGG_WIN + " LIMIT 2",
    mode="append",
    compare="count",
    expect="ok",
)
case(
    "L07",
    "ORDER BY + LIMIT after aggregation, complete (top-N)",
    AGG_NOWM + " ORDER BY n DESC, k LIMIT 2",
    mode="complete",
    compare="ordered",
    expect="ok",
)
case(
    "L08",
    "LIMIT inside subquery, aggregation over it, complete",
    "SELECT k, count(*) AS n FROM (SELECT * FROM ev LIMIT 5) GROUP BY k",
    mode="complete",
    compare="count",
    expect="ok",
)
case(
    "L09",
    "LIMIT 3 OFFSET 1, map-only, append",
    MAP + " LIMIT 3 OFFSET 1",
    mode="append",
    expect="start",
)
case(
    "L10",
    "LIMIT on the static side of a stream-static join; update",
    "SELECT e.k, e.v, d.name FROM ev e JOIN (SELECT * FROM dim ORDER BY k LIMIT 2) d ON e.k = d.k",
    mode="update",
    expect="ok",
)
case(
    "L11",
    "OFFSET on the static side of a stream-static join; append",
    "SELECT e.k, e.v, d.name FROM ev e JOIN (SELECT * FROM dim ORDER BY k LIMIT 2 OFFSET 1) d "
    "ON e.k = d.k",
    expect="start",
)

# ---- O: ORDER BY
case("O01", "ORDER BY, map-only, append", MAP + " ORDER BY e.v", mode="append", expect="start")
case("O02", "ORDER BY, map-only, update", MAP + " ORDER BY e.v", mode="update", expect="start")
case(
    "O03",
    "ORDER BY after aggregation, complete",
    AGG_NOWM + " ORDER BY n DESC, k",
    mode="complete",
    compare="ordered",
    expect="ok",
)
case(
    "O04",
    "ORDER BY after aggregation, update",
    AGG_NOWM + " ORDER BY n DESC",
    mode="update",
    expect="start",
)
case(
    "O05",
    "ORDER BY after windowed aggregation, append",
    AGG_WIN + " ORDER BY w",
    mode="append",
    expect="start",
)
case(
    "O06",
    "ORDER BY in subquery below aggregation, complete",
    "SELECT k, count(*) AS n FROM (SELECT * FROM ev ORDER BY v) GROUP BY k",
    mode="complete",
    expect="start",
)
case(
    "O07",
    "SORT BY (partition-local), map-only, append",
    MAP + " SORT BY e.v",
    mode="append",
    expect="start",
)
case(
    "O08",
    "ORDER BY on the static side of a stream-static join; append",
    "SELECT e.k, e.v, d.name FROM ev e JOIN (SELECT * FROM dim ORDER BY name) d ON e.k = d.k",
    expect="ok",
)

# ---- D: DISTINCT / dedup / window functions
DIST = "SELECT DISTINCT e.k, e.v FROM ev e"
case("D01", "SELECT DISTINCT k, v; append", DIST, mode="append", expect="start")
case("D02", "SELECT DISTINCT k, v; update", DIST, mode="update", expect="ok")
case("D03", "SELECT DISTINCT k, v; complete", DIST, mode="complete", expect="ok")
case(
    "D04",
    "SELECT DISTINCT k, v, ts (wm col) on watermarked stream; append",
    "SELECT DISTINCT e.k, e.v, e.ts FROM ev_wm e",
    mode="append",
    expect="ok",
)
case(
    "D05",
    "SELECT DISTINCT k on watermarked stream; append",
    "SELECT DISTINCT e.k FROM ev_wm e",
    mode="append",
    expect="start",
)
case(
    "D06",
    "dropDuplicates(k, v), no watermark; append",
    build=lambda t: t("ev").dropDuplicates(["k", "v"]),
    mode="append",
    expect="ok",
)
case(
    "D07",
    "dropDuplicates(k, v), no watermark; update",
    build=lambda t: t("ev").dropDuplicates(["k", "v"]),
    mode="update",
    expect="ok",
)
case(
    "D08",
    "dropDuplicates(k, v); complete",
    build=lambda t: t("ev").dropDuplicates(["k", "v"]),
    mode="complete",
    expect="start",
)
case(
    "D09",
    "dropDuplicates(k, v, ts) with watermark; append",
    build=lambda t: t("ev_wm").dropDuplicates(["k", "v", "ts"]),
    mode="append",
    expect="ok",
)
case(
    "D10",
    "dropDuplicatesWithinWatermark(k, v) with watermark; append",
    build=lambda t: t("ev_wm").dropDuplicatesWithinWatermark(["k", "v"]),
    mode="append",
    compare="none",
    expect="ok",
)
case(
    "D11",
    "dropDuplicatesWithinWatermark(k, v) without watermark; append",
    build=lambda t: t("ev").dropDuplicatesWithinWatermark(["k", "v"]),
    mode="append",
    expect="start",
)
case(
    "D12",
    "dropDuplicates(k, v, ts) then windowed count; append",
    build=lambda t: (
        t("ev_wm").dropDuplicates(["k", "v", "ts"]).groupBy(F.window("ts", "1 minute")).count()
    ),
    mode="append",
    expect="ok",
)
case(
    "D13",
    "ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) ... WHERE rn = 1; append",
    "SELECT k, v, ts FROM (SELECT e.*, ROW_NUMBER() OVER (PARTITION BY e.k ORDER BY e.ts) "
    "AS rn FROM ev e) WHERE rn = 1",
    mode="append",
    expect="start",
)
case(
    "D14",
    "sum(v) OVER (PARTITION BY k); append",
    "SELECT e.k, sum(e.v) OVER (PARTITION BY e.k) AS s FROM ev e",
    mode="append",
    expect="start",
)
case(
    "D15",
    "ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts); update with aggregation",
    "SELECT k, n, ROW_NUMBER() OVER (PARTITION BY k ORDER BY n) AS rn FROM (" + AGG_NOWM + ")",
    mode="complete",
    expect="start",
)
case(
    "D16",
    "SELECT DISTINCT in a subquery, then count per key; update",
    "SELECT k, count(*) AS n FROM (SELECT DISTINCT k, v FROM ev) GROUP BY k",
    mode="update",
    expect="start",
)
case(
    "D17",
    "dropDuplicates(k, v) then count per key (count distinct); update",
    build=lambda t: t("ev").dropDuplicates(["k", "v"]).groupBy("k").count(),
    mode="update",
    expect="ok",
)
case(
    "D18",
    "dropDuplicates(k, v) then count per key; complete",
    build=lambda t: t("ev").dropDuplicates(["k", "v"]).groupBy("k").count(),
    mode="complete",
    expect="ok",
)

# ---- S: sinks x modes
case("S01", "parquet sink, map-only, append", MAP, sink="parquet", mode="append", expect="ok")
case(
    "S02",
    "parquet sink, aggregation, update",
    AGG_NOWM,
    sink="parquet",
    mode="update",
    expect="start",
)
case(
    "S03",
    "parquet sink, aggregation, complete",
    AGG_NOWM,
    sink="parquet",
    mode="complete",
    expect="start",
)
case(
    "S04",
    "parquet sink, windowed aggregation, append",
    AGG_WIN,
    sink="parquet",
    mode="append",
    expect="ok",
)
case(
    "S05",
    "parquet sink without checkpointLocation",
    MAP,
    sink="parquet_nockpt",
    mode="append",
    expect="start",
)
case(
    "S06",
    "parquet sink, map-only, update (no aggregation)",
    MAP,
    sink="parquet",
    mode="update",
    expect="start",
)
case(
    "S07",
    "memory sink, aggregation, complete",
    AGG_NOWM,
    sink="memory",
    mode="complete",
    expect="ok",
)
case("S08", "memory sink, aggregation, update", AGG_NOWM, sink="memory", mode="update", expect="ok")
case("S09", "console sink, map-only, append", MAP, sink="console", mode="append", expect="ok")
case(
    "S10", "console sink, aggregation, update", AGG_NOWM, sink="console", mode="update", expect="ok"
)
case(
    "S11",
    "console sink, aggregation, complete",
    AGG_NOWM,
    sink="console",
    mode="complete",
    expect="ok",
)
case("S12", "noop sink, map-only, append", MAP, sink="noop", mode="append", expect="ok")
case("S13", "noop sink, aggregation, update", AGG_NOWM, sink="noop", mode="update", expect="ok")
case("S14", "noop sink, aggregation, complete", AGG_NOWM, sink="noop", mode="complete", expect="ok")
case(
    "S15",
    "foreachBatch, aggregation, update",
    AGG_NOWM,
    sink="foreachBatch",
    mode="update",
    expect="ok",
)
case(
    "S16",
    "foreachBatch, aggregation, complete",
    AGG_NOWM,
    sink="foreachBatch",
    mode="complete",
    expect="ok",
)
case(
    "S17",
    "foreachBatch, aggregation without watermark, append",
    AGG_NOWM,
    sink="foreachBatch",
    mode="append",
    expect="start",
)
case(
    "S18",
    "memory sink, map-only, processingTime trigger",
    MAP,
    trigger="processingTime",
    expect="ok",
)
case(
    "S19",
    "memory sink, windowed agg, append, processingTime trigger",
    AGG_WIN,
    trigger="processingTime",
    expect="ok",
)
case("S20", "json sink, aggregation, update", AGG_NOWM, sink="json", mode="update", expect="start")

# ---- J: joins


def ss(left_stream: bool, jt: str) -> str:
    if left_stream:
        return f"SELECT e.k, e.v, d.name FROM ev e {jt} JOIN dim d ON e.k = d.k"
    return f"SELECT d.k AS dk, d.name, e.k, e.v FROM dim d {jt} JOIN ev e ON e.k = d.k"


for i, (jt, ok_l, ok_r) in enumerate(
    [
        ("INNER", "ok", "ok"),
        ("LEFT OUTER", "ok", "start"),
        ("RIGHT OUTER", "start", "ok"),
        ("FULL OUTER", "start", "start"),
        ("LEFT SEMI", "ok", "start"),
        ("LEFT ANTI", "ok", "start"),
    ]
):
    lsql, rsql = ss(True, jt), ss(False, jt)
    if jt in ("LEFT SEMI", "LEFT ANTI"):
        lsql = f"SELECT e.k, e.v FROM ev e {jt} JOIN dim d ON e.k = d.k"
        rsql = f"SELECT d.k, d.name FROM dim d {jt} JOIN ev e ON e.k = d.k"
    case(f"J{2 * i + 1:02d}", f"stream {jt} JOIN static (stream on the left)", lsql, expect=ok_l)
    case(f"J{2 * i + 2:02d}", f"static {jt} JOIN stream (stream on the right)", rsql, expect=ok_r)
case(
    "J13",
    "stream CROSS JOIN static",
    "SELECT e.k, d.k AS dk FROM ev e CROSS JOIN dim d",
    expect="ok",
)
case(
    "J14",
    "stream-static inner join + aggregation; complete",
    "SELECT d.name, count(*) AS n FROM ev e JOIN dim d ON e.k = d.k GROUP BY d.name",
    mode="complete",
    expect="ok",
)
case(
    "J15",
    "stream-static inner join, map-only; update",
    ss(True, "INNER"),
    mode="update",
    expect="ok",
)

RANGE = "c.cts BETWEEN e.ts AND e.ts + INTERVAL 1 MINUTE"


def sj(jt: str, left: str = "ev_wm", right: str = "ck_wm", cond: str = RANGE) -> str:
    on = "e.k = c.k" + (f" AND {cond}" if cond else "")
    if jt in ("LEFT SEMI", "LEFT ANTI"):
        return f"SELECT e.k, e.v, e.ts FROM {left} e {jt} JOIN {right} c ON {on}"
    return f"SELECT e.k, e.v, e.ts, c.k AS ck, c.c, c.cts FROM {left} e {jt} JOIN {right} c ON {on}"


case(
    "J20",
    "stream-stream INNER, no watermarks, equi-join only; append",
    sj("INNER", "ev", "ck", ""),
    expect="ok",
)
case(
    "J21",
    "stream-stream INNER, no watermarks; update",
    sj("INNER", "ev", "ck", ""),
    mode="update",
    expect="start",
)
case(
    "J22",
    "stream-stream INNER + aggregation; complete",
    "SELECT e.k, count(*) AS n FROM ev e JOIN ck c ON e.k = c.k GROUP BY e.k",
    mode="complete",
    expect="start",
)
case("J23", "stream-stream INNER, watermarks both + time range; append", sj("INNER"), expect="ok")
case(
    "J24",
    "stream-stream INNER, watermark on left only + range; append",
    sj("INNER", "ev_wm", "ck"),
    expect="ok",
)
case(
    "J25",
    "stream-stream LEFT OUTER, no watermarks; append",
    sj("LEFT OUTER", "ev", "ck", ""),
    expect="start",
)
case(
    "J26",
    "stream-stream LEFT OUTER, watermarks both, no time range; append",
    sj("LEFT OUTER", cond=""),
    expect="start",
)
case(
    "J27",
    "stream-stream LEFT OUTER, watermarks both + time range; append",
    sj("LEFT OUTER"),
    expect="ok",
)
case(
    "J28",
    "stream-stream LEFT OUTER, wm on left (preserved) only + range; append",
    sj("LEFT OUTER", "ev_wm", "ck"),
    expect="start",
)
case(
    "J29",
    "stream-stream LEFT OUTER, wm on right (nullable) only + range; append",
    sj("LEFT OUTER", "ev", "ck_wm"),
    expect="ok",
)
case(
    "J30",
    "stream-stream LEFT OUTER, watermarks both + range; update",
    sj("LEFT OUTER"),
    mode="update",
    expect="start",
)
case(
    "J31",
    "stream-stream RIGHT OUTER, no watermarks; append",
    sj("RIGHT OUTER", "ev", "ck", ""),
    expect="start",
)
case(
    "J32",
    "stream-stream RIGHT OUTER, watermarks both + range; append",
    sj("RIGHT OUTER"),
    expect="ok",
)
case(
    "J33",
    "stream-stream RIGHT OUTER, wm on left (nullable) only + range; append",
    sj("RIGHT OUTER", "ev_wm", "ck"),
    expect="ok",
)
case(
    "J34",
    "stream-stream FULL OUTER, no watermarks; append",
    sj("FULL OUTER", "ev", "ck", ""),
    expect="start",
)
case(
    "J35",
    "stream-stream FULL OUTER, watermarks both + range; append",
    sj("FULL OUTER"),
    expect="ok",
)
case(
    "J36",
    "stream-stream LEFT SEMI, no watermarks; append",
    sj("LEFT SEMI", "ev", "ck", ""),
    expect="start",
)
case(
    "J37", "stream-stream LEFT SEMI, watermarks both + range; append", sj("LEFT SEMI"), expect="ok"
)
case(
    "J38",
    "stream-stream LEFT ANTI, watermarks both + range; append",
    sj("LEFT ANTI"),
    expect="start",
)
case(
    "J39",
    "stream-stream LEFT OUTER, wm both, equality on event times (wm in keys)",
    sj("LEFT OUTER", cond="c.cts = e.ts"),
    expect="ok",
)
case(
    "J40",
    "stream-stream LEFT OUTER on window keys (wm in join keys), no range",
    "SELECT e.k, e.w, e.n, c.n AS cn FROM "
    "(SELECT window(ts, '1 minute') AS w, k, count(*) AS n FROM ev_wm "
    " GROUP BY window(ts, '1 minute'), k) e LEFT OUTER JOIN "
    "(SELECT window(cts, '1 minute') AS w, k, count(*) AS n FROM ck_wm "
    " GROUP BY window(cts, '1 minute'), k) c ON e.k = c.k AND e.w = c.w",
    expect="ok",
)
case(
    "J41",
    "stream-stream INNER then windowed aggregation on e.ts; append",
    "SELECT window(e.ts, '1 minute') AS w, count(*) AS n FROM ev_wm e JOIN ck_wm c "
    f"ON e.k = c.k AND {RANGE} GROUP BY window(e.ts, '1 minute')",
    expect="ok",
)
case(
    "J42",
    "stream-stream INNER, range condition but no equality key; append",
    f"SELECT e.k, c.k AS ck FROM ev_wm e JOIN ck_wm c ON {RANGE}",
    expect="runtime",
)
case(
    "J43",
    "stream-stream LEFT OUTER, wm both, one-sided c.cts >= e.ts only",
    sj("LEFT OUTER", cond="c.cts >= e.ts"),
    expect="start",
)
case(
    "J44",
    "stream-stream LEFT OUTER, wm both, one-sided c.cts <= e.ts + 1 min only",
    sj("LEFT OUTER", cond="c.cts <= e.ts + INTERVAL 1 MINUTE"),
    expect="ok",
)
case(
    "J45",
    "stream-stream FULL OUTER, wm on right only + range; append",
    sj("FULL OUTER", "ev", "ck_wm"),
    expect="ok",
)
case(
    "J46",
    "stream-stream LEFT SEMI, wm on right only + range; append",
    sj("LEFT SEMI", "ev", "ck_wm"),
    expect="ok",
)
case(
    "J47",
    "stream-stream LEFT OUTER, wm both, range given in months",
    sj("LEFT OUTER", cond="c.cts BETWEEN e.ts AND e.ts + INTERVAL 1 MONTH"),
    expect="start",
)

# ---- C: continuous trigger (rate source unless noted)
case(
    "C01",
    "continuous, rate, map-only, console",
    "SELECT value, timestamp FROM rt WHERE value % 2 = 0",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="ok",
)
case(
    "C02",
    "continuous, rate, map-only, memory",
    "SELECT value FROM rt",
    sink="memory",
    trigger="continuous",
    compare="none",
    expect="ok",
)
case(
    "C03",
    "continuous, rate, map-only, noop",
    "SELECT value FROM rt",
    sink="noop",
    trigger="continuous",
    compare="none",
    expect="ok",
)
case(
    "C04",
    "continuous, rate, map-only, foreachBatch",
    "SELECT value FROM rt",
    sink="foreachBatch",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C05",
    "continuous, rate, map-only, parquet",
    "SELECT value FROM rt",
    sink="parquet",
    trigger="continuous",
    compare="none",
    expect="runtime",
)
case(
    "C06",
    "continuous, rate, aggregation, update",
    "SELECT value % 3 AS m, count(*) AS n FROM rt GROUP BY value % 3",
    mode="update",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C07",
    "continuous, file source, map-only",
    MAP,
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C08",
    "continuous, rate, current_timestamp()",
    "SELECT value, current_timestamp() AS now FROM rt",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C09",
    "continuous, rate, current_date()",
    "SELECT value, current_date() AS d FROM rt",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C10",
    "continuous, rate-micro-batch source",
    "SELECT value FROM rmb",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C11",
    "continuous, rate with withWatermark, map-only",
    "SELECT value FROM rt_wm",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C12",
    "continuous, rate, stream-static join",
    "SELECT r.value, d.name FROM rt r JOIN dim d ON CAST(r.value % 3 AS STRING) = d.k",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C13",
    "continuous, UNION ALL of two rate streams",
    "SELECT value FROM rt UNION ALL SELECT value FROM rt2",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C14",
    "continuous, rate, map-only, update mode",
    "SELECT value FROM rt",
    mode="update",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="ok",
)
case(
    "C15",
    "continuous, rate, dropDuplicates",
    build=lambda t: t("rt").dropDuplicates(["value"]),
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C16",
    "continuous, rate, explode (Generate)",
    "SELECT value, x FROM rt LATERAL VIEW explode(array(1, 2)) t AS x",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C17",
    "continuous, rate, cast/functions/CASE (map-like)",
    "SELECT CASE WHEN value % 2 = 0 THEN 'even' ELSE 'odd' END AS p, "
    "upper(CAST(value AS STRING)) AS s, to_date(timestamp) AS d FROM rt",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="ok",
)
case(
    "C20",
    "continuous over a temp view created by SQL CREATE TEMP VIEW",
    "SELECT value FROM rt_sqlview",
    sink="console",
    trigger="continuous",
    compare="none",
    expect="start",
)
case(
    "C21",
    "continuous, rate, memory sink, update mode",
    "SELECT value FROM rt",
    mode="update",
    sink="memory",
    trigger="continuous",
    compare="none",
    expect="ok",
)
case(
    "C18",
    "microbatch, rate, current_timestamp(), processingTime",
    "SELECT value, current_timestamp() AS now FROM rt",
    sink="memory",
    trigger="processingTime",
    compare="none",
    expect="ok",
)
case(
    "C19",
    "microbatch, rate, windowed agg with watermark, update, processingTime",
    "SELECT window(timestamp, '1 second') AS w, count(*) AS n FROM rt_wm "
    "GROUP BY window(timestamp, '1 second')",
    mode="update",
    trigger="processingTime",
    compare="none",
    expect="ok",
)

# ---- W: watermarks
case(
    "W01",
    "withWatermark on a non-timestamp column (DataFrame API)",
    build=lambda t: t("ev").withWatermark("v", "1 minute"),
    expect="define",
)
case(
    "W02",
    "SQL WATERMARK clause on a view in FROM + window agg; append",
    "SELECT window(e.ts, '1 minute') AS w, count(*) AS n "
    "FROM ev WATERMARK ts DELAY OF INTERVAL 1 MINUTE AS e GROUP BY window(e.ts, '1 minute')",
    expect="ok",
)
case(
    "W03",
    "SQL WATERMARK clause on a non-timestamp column",
    "SELECT * FROM ev WATERMARK v DELAY OF INTERVAL 1 MINUTE",
    expect="define",
)
case(
    "W04",
    "SQL WATERMARK clause on an expression without a name",
    "SELECT * FROM ev WATERMARK ts + INTERVAL 1 SECOND DELAY OF INTERVAL 1 MINUTE",
    expect="define",
)
case(
    "W05",
    "SQL WATERMARK clause on an expression with a name",
    "SELECT window(t2, '1 minute') AS w, count(*) AS n FROM ev "
    "WATERMARK ts + INTERVAL 1 SECOND AS t2 DELAY OF INTERVAL 1 MINUTE "
    "GROUP BY window(t2, '1 minute')",
    expect="ok",
)
case(
    "W06",
    "temp view defined with the SQL WATERMARK clause + window agg; append",
    "SELECT window(ts, '1 minute') AS w, count(*) AS n FROM ev_wsql "
    "GROUP BY window(ts, '1 minute')",
    expect="ok",
)
case(
    "W07",
    "SQL WATERMARK clause on a subquery + window agg; append",
    "SELECT window(ts, '1 minute') AS w, count(*) AS n FROM (SELECT * FROM ev WHERE v > 0) "
    "WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY window(ts, '1 minute')",
    expect="ok",
)
case(
    "W08",
    "two watermarked streams UNION ALL, window agg; default policy (min)",
    "SELECT window(t, '1 minute') AS w, count(*) AS n FROM ("
    "SELECT ts AS t FROM ev_wm UNION ALL SELECT cts AS t FROM ck_wm) "
    "GROUP BY window(t, '1 minute')",
    expect="ok",
)
case(
    "W09",
    "same with multipleWatermarkPolicy=max",
    "SELECT window(t, '1 minute') AS w, count(*) AS n FROM ("
    "SELECT ts AS t FROM ev_wm UNION ALL SELECT cts AS t FROM ck_wm) "
    "GROUP BY window(t, '1 minute')",
    conf={"spark.sql.streaming.multipleWatermarkPolicy": "max"},
    expect="ok",
)
case(
    "W10",
    "multipleWatermarkPolicy=avg (invalid value)",
    MAP,
    conf={"spark.sql.streaming.multipleWatermarkPolicy": "avg"},
    expect="define",
)
case(
    "W11",
    "withWatermark on an already watermarked stream (re-definition)",
    build=lambda t: t("ev_wm").withWatermark("ts", "2 minutes"),
    expect="runtime",
)
case(
    "W12",
    "withWatermark with a negative delay",
    build=lambda t: t("ev").withWatermark("ts", "-1 minute"),
    expect="define",
)
case(
    "W13",
    "window() on a non-timestamp column",
    "SELECT window(e.v, '1 minute') AS w, count(*) AS n FROM ev_wm e "
    "GROUP BY window(e.v, '1 minute')",
    mode="update",
    expect="define",
)
case(
    "W14",
    "SQL WATERMARK clause on a static table",
    "SELECT * FROM dim WATERMARK k DELAY OF INTERVAL 1 MINUTE",
    expect="start",
)
case(
    "W15",
    "WATERMARK clause with delay not an interval literal",
    "SELECT * FROM ev WATERMARK ts DELAY OF 60",
    expect="define",
)
case(
    "W16",
    "SQL WATERMARK clause on a STRING column of a static table joined to a stream",
    "SELECT e.k, d.name FROM ev e JOIN dim WATERMARK k DELAY OF INTERVAL 1 MINUTE AS d "
    "ON e.k = d.k",
    expect="ok",
)
case(
    "W17",
    "SQL WATERMARK clause on a TIMESTAMP_NTZ expression + window agg; append",
    "SELECT window(tn, '1 minute') AS w, count(*) AS n FROM ev "
    "WATERMARK CAST(ts AS TIMESTAMP_NTZ) AS tn DELAY OF INTERVAL 1 MINUTE "
    "GROUP BY window(tn, '1 minute')",
    expect="define",
)
case(
    "W18",
    "SQL WATERMARK clause with a negative delay",
    "SELECT * FROM ev WATERMARK ts DELAY OF INTERVAL -1 MINUTE",
    expect="define",
)
case(
    "W19",
    "SQL WATERMARK clause with a month interval delay",
    "SELECT window(ts, '1 minute') AS w, count(*) AS n FROM ev "
    "WATERMARK ts DELAY OF INTERVAL 1 MONTH GROUP BY window(ts, '1 minute')",
    expect="ok",
)

# ---- X: other operators / static errors
case(
    "X01",
    "UNION ALL stream with static",
    "SELECT k FROM ev UNION ALL SELECT k FROM dim",
    expect="start",
)
case(
    "X02",
    "UNION ALL stream with stream",
    "SELECT k FROM ev UNION ALL SELECT k FROM ck",
    expect="ok",
)
case(
    "X03",
    "UNION (distinct) stream with stream; append",
    "SELECT k FROM ev UNION SELECT k FROM ck",
    expect="start",
)
case(
    "X04",
    "UNION (distinct) stream with stream; update",
    "SELECT k FROM ev UNION SELECT k FROM ck",
    mode="update",
    expect="ok",
)
case(
    "X05",
    "INTERSECT stream with static",
    "SELECT k FROM ev INTERSECT SELECT k FROM dim",
    mode="update",
    expect="start",
)
case(
    "X06",
    "stream EXCEPT static; append",
    "SELECT k FROM ev EXCEPT SELECT k FROM dim",
    expect="runtime",
)
case(
    "X07",
    "stream EXCEPT static; update",
    "SELECT k FROM ev EXCEPT SELECT k FROM dim",
    mode="update",
    expect="ok",
)
case(
    "X08",
    "stream EXCEPT ALL static; append",
    "SELECT k FROM ev EXCEPT ALL SELECT k FROM dim",
    expect="runtime",
)
case(
    "X09",
    "static EXCEPT stream",
    "SELECT k FROM dim EXCEPT SELECT k FROM ev",
    mode="update",
    expect="start",
)
case("X10", "TABLESAMPLE on a stream", "SELECT * FROM ev TABLESAMPLE (50 PERCENT)", expect="start")
case(
    "X11",
    "monotonically_increasing_id() on a stream",
    "SELECT k, monotonically_increasing_id() AS id FROM ev",
    expect="start",
)
case(
    "X12",
    "scalar subquery over a stream inside a streaming query",
    "SELECT k, (SELECT max(v) FROM ev) AS m FROM ev",
    expect="define",
)
case(
    "X13",
    "IN (subquery over static) in a streaming query",
    "SELECT * FROM ev WHERE k IN (SELECT k FROM dim)",
    expect="ok",
)
case(
    "X14",
    "static WHERE k IN (subquery over stream)",
    "SELECT * FROM dim WHERE k IN (SELECT k FROM ev)",
    expect="define",
)
case(
    "X15",
    "EXISTS (correlated subquery over static)",
    "SELECT * FROM ev e WHERE EXISTS (SELECT 1 FROM dim d WHERE d.k = e.k)",
    expect="ok",
)
case("X16", "writeStream on a batch-only query", "SELECT * FROM dim", expect="start")
case("X17", "unknown table", "SELECT * FROM nope", expect="define")
case("X18", "unknown column", "SELECT nope FROM ev", expect="define")
case("X19", "unknown function", "SELECT nope(k) FROM ev", expect="define")
case("X20", "type error: ts + 1", "SELECT ts + 1 FROM ev", expect="define")
case(
    "X21",
    "current_timestamp() in micro-batch; append",
    "SELECT k, current_timestamp() AS now FROM ev",
    compare="count",
    expect="ok",
)
case(
    "X22",
    "LATERAL VIEW explode on a stream; append",
    "SELECT k, x FROM ev LATERAL VIEW explode(array(v, v + 1)) t AS x",
    expect="ok",
)
case(
    "X23",
    "CTE over a stream; windowed agg append",
    "WITH x AS (SELECT * FROM ev_wm) SELECT window(ts, '1 minute') AS w, count(*) AS n "
    "FROM x GROUP BY window(ts, '1 minute')",
    expect="ok",
)
case(
    "X24",
    "stream-stream join + aggregation; update",
    f"SELECT e.k, count(*) AS n FROM ev_wm e JOIN ck_wm c ON e.k = c.k AND {RANGE} GROUP BY e.k",
    mode="update",
    expect="start",
)
case(
    "X25",
    "aggregation then stream-static join; complete",
    f"SELECT a.k, a.n, d.name FROM ({AGG_NOWM}) a JOIN dim d ON a.k = d.k",
    mode="complete",
    expect="ok",
)
case(
    "X26",
    "aggregation then stream-static LEFT join; update",
    f"SELECT a.k, a.n, d.name FROM ({AGG_NOWM}) a LEFT JOIN dim d ON a.k = d.k",
    mode="update",
    expect="ok",
)
case(
    "X27",
    "dedup (dropDuplicates with ts) then agg; update",
    build=lambda t: t("ev_wm").dropDuplicates(["k", "v", "ts"]).groupBy("k").count(),
    mode="update",
    expect="ok",
)
case(
    "X28",
    "agg (update) then dropDuplicates with event time; update",
    build=lambda t: (
        t("ev_wm")
        .groupBy(F.window("ts", "1 minute").alias("w"))
        .count()
        .select("w.start", "count")
        .withColumnRenamed("start", "ws")
        .dropDuplicates(["ws"])
    ),
    mode="update",
    expect="ok",
)


# --------------------------------------------------------------------------- running

SKIP_FRAME = re.compile(
    r"errors\.|ErrorAt|ExtendedAnalysisException|\.throwError|\.throwErrorIf|"
    r"SparkException|\$anonfun\$throw|AnalysisException\.|failAnalysis|QueryCompilationErrors|"
    r"QueryExecutionErrors|SparkThrowable|ErrorClass|withOrigin|CurrentOrigin|"
    r"runtime\.StreamExecution"
)


def exc_info(e: BaseException) -> dict[str, Any]:
    msg = str(e).strip()
    first = msg.splitlines()[0] if msg else ""
    cond = None
    for getter in ("getCondition", "getErrorClass"):
        try:
            cond = getattr(e, getter)()
            if cond:
                break
        except Exception:
            pass
    m = re.match(r"\[([A-Z0-9_.]+)\]", first)
    if not cond and m:
        cond = m.group(1)
    # StreamingQueryException: report the cause, not the "[STREAM_FAILED] Query [id=...]" wrapper
    m = re.search(r"terminated with exception: (.*)", first)
    if m:
        first = m.group(1)
        mc = re.match(r"\[([A-Z0-9_.]+)\]", first)
        cond = f"{cond or 'STREAM_FAILED'} / {mc.group(1) if mc else '-'}"
    stack = getattr(e, "_stackTrace", None) or ""
    if not stack:
        desc = getattr(e, "_desc", "") or ""
        stack = desc
    frames = []
    for line in str(stack).splitlines():
        line = line.strip()
        if not line.startswith("at org.apache.spark"):
            continue
        if SKIP_FRAME.search(line):
            continue
        frames.append(line[3:])
        if len(frames) >= 3:
            break
    return {"exc": type(e).__name__, "condition": cond, "message": first[:400], "frames": frames}


def row_key(r: Any) -> str:
    return repr(tuple(r)) if r is not None else "None"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--out", default=os.path.join(tempfile.gettempdir(), "probe_streaming_rules.json")
    )
    ap.add_argument("--md", default=None, help="write the markdown table here")
    ap.add_argument("--only", default=None, help="comma-separated id prefixes")
    ap.add_argument(
        "--followup",
        action="store_true",
        help="also run the follow-up experiment when --only is given",
    )
    args = ap.parse_args()

    from pyspark.sql import SparkSession

    work = tempfile.mkdtemp(prefix="probe_ssql_")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("probe_streaming_rules")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")
    import pyspark

    print(
        f"# Spark {spark.version} / PySpark {pyspark.__version__}; work dir {work}", file=sys.stderr
    )

    ev_dir, ck_dir = os.path.join(work, "events"), os.path.join(work, "clicks")
    write_csv_files(ev_dir, EVENTS)
    write_csv_files(ck_dir, CLICKS)

    def rs(path: str, schema: str):
        return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).csv(path)

    def rb(path: str, schema: str):
        return spark.read.schema(schema).csv(path)

    ev, ck = rs(ev_dir, EV_SCHEMA), rs(ck_dir, CK_SCHEMA)
    ev.createOrReplaceTempView("ev")
    ev.withWatermark("ts", "1 minute").createOrReplaceTempView("ev_wm")
    ck.createOrReplaceTempView("ck")
    ck.withWatermark("cts", "1 minute").createOrReplaceTempView("ck_wm")
    evb, ckb = rb(ev_dir, EV_SCHEMA), rb(ck_dir, CK_SCHEMA)
    evb.createOrReplaceTempView("ev_b")
    evb.withWatermark("ts", "1 minute").createOrReplaceTempView("ev_wm_b")
    ckb.createOrReplaceTempView("ck_b")
    ckb.withWatermark("cts", "1 minute").createOrReplaceTempView("ck_wm_b")
    spark.createDataFrame(DIM, "k STRING, name STRING").createOrReplaceTempView("dim")
    setup_notes = {}
    for name, src in (("ev_wsql", "ev"), ("ev_wsql_b", "ev_b")):
        try:
            spark.sql(
                f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {src} "
                "WATERMARK ts DELAY OF INTERVAL 1 MINUTE"
            )
            setup_notes[name] = "created"
        except Exception as e:  # recorded, cases using it will fail at define
            setup_notes[name] = exc_info(e)
    rate = spark.readStream.format("rate").option("rowsPerSecond", 20).load()
    rate.createOrReplaceTempView("rt")
    spark.readStream.format("rate").option("rowsPerSecond", 5).load().createOrReplaceTempView("rt2")
    rate.withWatermark("timestamp", "2 seconds").createOrReplaceTempView("rt_wm")
    spark.sql("CREATE OR REPLACE TEMP VIEW rt_sqlview AS SELECT value, timestamp FROM rt")
    spark.readStream.format("rate-micro-batch").option(
        "rowsPerBatch", 10
    ).load().createOrReplaceTempView("rmb")

    stream_views = ["ev_wsql", "ev_wm", "ck_wm", "ev", "ck"]
    batch_re = re.compile(r"\b(" + "|".join(stream_views) + r")\b")

    def to_batch_sql(sql: str) -> str:
        return batch_re.sub(lambda m: m.group(1) + "_b", sql)

    def t_stream(name: str):
        return spark.table(name)

    def t_batch(name: str):
        return spark.table(name + "_b")

    selected = CASES
    if args.only:
        prefixes = [p.strip() for p in args.only.split(",") if p.strip()]
        selected = [c for c in CASES if any(c.id.startswith(p) for p in prefixes)]

    results = []
    t_all = time.time()
    for c in selected:
        t0 = time.time()
        rec: dict[str, Any] = {
            "id": c.id,
            "desc": c.desc,
            "sql": c.sql,
            "api": None if c.build is None else "DataFrame API",
            "mode": c.mode,
            "sink": c.sink,
            "trigger": c.trigger,
            "conf": c.conf,
            "expect": c.expect,
        }
        saved = {}
        for k in c.conf:
            saved[k] = spark.conf.get(k, None)
        q = None
        fb_rows: list = []
        out_dir = os.path.join(work, "out", c.id)
        ckpt = os.path.join(work, "ckpt", c.id)
        qname = f"q_{c.id}"
        try:
            try:
                for k, v in c.conf.items():
                    spark.conf.set(k, v)
                df = spark.sql(c.sql) if c.sql is not None else c.build(t_stream)
                rec["is_streaming"] = df.isStreaming
            except Exception as e:
                rec.update(verdict="define", **exc_info(e))
                raise _Done() from e
            try:
                w = df.writeStream.outputMode(c.mode).queryName(qname)
                if c.sink == "memory":
                    w = w.format("memory")
                elif c.sink == "console":
                    w = w.format("console").option("numRows", 3).option("truncate", False)
                elif c.sink == "noop":
                    w = w.format("noop")
                elif c.sink in ("parquet", "json"):
                    w = w.format(c.sink).option("path", out_dir)
                elif c.sink == "parquet_nockpt":
                    w = w.format("parquet").option("path", out_dir)
                elif c.sink == "foreachBatch":

                    def fb(bdf, bid, _rows=fb_rows):
                        _rows.append((bid, [tuple(r) for r in bdf.collect()]))

                    w = w.foreachBatch(fb)
                if c.sink != "parquet_nockpt":
                    w = w.option("checkpointLocation", ckpt)
                if c.trigger == "availableNow":
                    w = w.trigger(availableNow=True)
                elif c.trigger == "processingTime":
                    w = w.trigger(processingTime="200 milliseconds")
                elif c.trigger == "continuous":
                    w = w.trigger(continuous="1 second")
                q = w.start()
            except Exception as e:
                rec.update(verdict="start", **exc_info(e))
                raise _Done() from e
            try:
                uses_rate = c.id.startswith("C") or (
                    c.sql is not None and re.search(r"\b(rt|rt2|rt_wm|rmb|rt_sqlview)\b", c.sql)
                )
                if c.trigger == "continuous" or uses_rate:
                    time.sleep(4)  # unbounded source: let it run a few seconds
                elif c.trigger == "processingTime":
                    q.processAllAvailable()
                else:
                    if not q.awaitTermination(90):
                        rec["timeout"] = True
                exc = q.exception()
                if exc is not None:
                    raise exc
                rec["verdict"] = "ok"
            except Exception as e:
                rec.update(verdict="runtime", **exc_info(e))
                raise _Done() from e
        except _Done:
            pass
        except Exception as e:  # probe bug
            rec.update(verdict="probe-error", message=repr(e), trace=traceback.format_exc()[-800:])
        finally:
            if q is not None:
                try:
                    prog = q.recentProgress
                    rec["batches"] = len(prog)
                    rec["input_rows"] = sum(p.get("numInputRows", 0) for p in prog)
                    if prog:
                        rec["watermark"] = prog[-1].get("eventTime", {}).get("watermark")
                        so = prog[-1].get("stateOperators") or []
                        rec["state_ops"] = [s.get("operatorName") for s in so]
                        rec["late_dropped"] = sum(
                            s.get("numRowsDroppedByWatermark", 0)
                            for p in prog
                            for s in (p.get("stateOperators") or [])
                        )
                except Exception:
                    pass
                try:
                    if q.isActive:
                        q.stop()
                except Exception:
                    pass
                if rec.get("verdict") == "ok":
                    try:
                        exc = q.exception()
                        if exc is not None:
                            rec.update(verdict="runtime", **exc_info(exc))
                    except Exception:
                        pass
            for k in c.conf:
                try:
                    if saved.get(k) is None:
                        spark.conf.unset(k)
                    else:
                        spark.conf.set(k, saved[k])
                except Exception:
                    pass
        # ---- read the result back and compare with the batch query
        if rec.get("verdict") == "ok" and c.sink in ("memory", "parquet", "foreachBatch"):
            try:
                if c.sink == "memory":
                    got = [tuple(r) for r in spark.table(qname).collect()]
                elif c.sink == "parquet":
                    got = [tuple(r) for r in spark.read.parquet(out_dir).collect()]
                else:
                    if c.mode == "complete":
                        got = fb_rows[-1][1] if fb_rows else []
                    else:
                        got = [r for _, rows in fb_rows for r in rows]
                rec["out_rows"] = len(got)
                rec["out_sample"] = [repr(r) for r in got[:6]]
                if c.compare == "none":
                    raise _NoCompare()
                try:
                    bdf = spark.sql(to_batch_sql(c.sql)) if c.sql is not None else c.build(t_batch)
                    exp = [tuple(r) for r in bdf.collect()]
                except Exception as e:
                    exp = None
                    rec["batch_error"] = exc_info(e)["message"]
                if exp is not None:
                    rec["batch_rows"] = len(exp)
                    rec["batch_sample"] = [repr(r) for r in exp[:6]]
                    rec["semantics"] = compare(got, exp, c)
                    if c.compare == "multiset":
                        from collections import Counter

                        g, e_ = Counter(map(row_key, got)), Counter(map(row_key, exp))
                        rec["missing_sample"] = list((e_ - g).elements())[:4]
                        rec["extra_sample"] = list((g - e_).elements())[:4]
            except _NoCompare:
                pass
            except Exception as e:
                rec["semantics"] = f"could not read result: {exc_info(e)['message']}"
        if c.sink == "memory":
            with contextlib.suppress(Exception):
                spark.catalog.dropTempView(qname)
        rec["seconds"] = round(time.time() - t0, 1)
        results.append(rec)
        flag = (
            ""
            if c.expect in ("", rec.get("verdict"))
            else f"  (CHANGED: Spark 4.1.4 gave {c.expect})"
        )
        print(
            f"{c.id:4} {rec.get('verdict'):8} {rec.get('condition') or '':45.45} "
            f"{rec['seconds']:5}s {c.desc}{flag}",
            file=sys.stderr,
            flush=True,
        )

    for q in spark.streams.active:
        q.stop()
    followup = None
    if not args.only or args.followup:
        followup = followup_outer_join_one_sided_watermark(spark, work)
        print(f"# follow-up (outer joins, watermark on one side): {followup}", file=sys.stderr)
    meta = {
        "spark": spark.version,
        "setup": setup_notes,
        "followup": followup,
        "total_seconds": round(time.time() - t_all, 1),
    }
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1, default=str)
    md = to_markdown(results)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md)
    else:
        print(md)
    print(f"# wrote {args.out}; {len(results)} cases in {meta['total_seconds']}s", file=sys.stderr)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 0


def followup_outer_join_one_sided_watermark(spark, work: str) -> dict[str, Any]:
    """J27/J29/J33/J45 again, but keep the queries running and push both streams 1 h and
    then 2 h ahead, to see whether unmatched rows are ever written null-padded."""
    import shutil as _sh

    cond = "e.k = c.k AND c.cts BETWEEN e.ts AND e.ts + INTERVAL 1 MINUTE"
    out: dict[str, Any] = {}
    for name, lw, rw, jt in [
        ("J27", True, True, "left_outer"),
        ("J29", False, True, "left_outer"),
        ("J33", True, False, "right_outer"),
        ("J45", False, True, "full_outer"),
    ]:
        base = os.path.join(work, "followup", name)
        ev_dir, ck_dir = os.path.join(base, "ev"), os.path.join(base, "ck")
        write_csv_files(ev_dir, EVENTS)
        write_csv_files(ck_dir, CLICKS)
        e = spark.readStream.schema(EV_SCHEMA).option("maxFilesPerTrigger", 1).csv(ev_dir)
        c = spark.readStream.schema(CK_SCHEMA).option("maxFilesPerTrigger", 1).csv(ck_dir)
        if lw:
            e = e.withWatermark("ts", "1 minute")
        if rw:
            c = c.withWatermark("cts", "1 minute")
        df = (
            e.alias("e")
            .join(c.alias("c"), F.expr(cond), jt)
            .select("e.k", "e.v", "e.ts", F.col("c.k").alias("ck"), "c.c")
        )
        qn = f"followup_{name}"
        q = (
            df.writeStream.format("memory")
            .queryName(qn)
            .option("checkpointLocation", os.path.join(base, "cp"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        try:
            q.processAllAvailable()
            for n, hh in ((7, "11:00:00"), (8, "12:00:00")):
                for d in (ev_dir, ck_dir):
                    tmp = d + f"_tmp{n}"
                    write_csv_files(tmp, [[("q", 1, hh)]])
                    dst = os.path.join(d, f"part-{n}.csv")
                    _sh.move(os.path.join(tmp, "part-0.csv"), dst)
                    os.utime(dst)
                q.processAllAvailable()
                time.sleep(1.5)
                q.processAllAvailable()
            rows = [tuple(r) for r in spark.table(qn).collect()]
            out[name] = {
                "rows": len(rows),
                "null_padded": sum(1 for r in rows if None in r),
                "watermark": (q.lastProgress or {}).get("eventTime", {}).get("watermark"),
            }
        except Exception as ex:  # recorded, not fatal
            out[name] = {"error": exc_info(ex)["message"]}
        finally:
            q.stop()
            spark.catalog.dropTempView(qn)
    return out


class _Done(Exception):
    pass


class _NoCompare(Exception):
    pass


def compare(got: list[tuple], exp: list[tuple], c: Case) -> str:
    from collections import Counter

    g, e = Counter(map(row_key, got)), Counter(map(row_key, exp))
    if c.compare == "count":
        return (
            "same row count"
            if len(got) == len(exp)
            else f"row count {len(got)} vs batch {len(exp)}"
        )
    if c.compare == "ordered":
        return (
            "same rows, same order"
            if list(map(row_key, got)) == list(map(row_key, exp))
            else "differs from batch (order or rows)"
        )
    if g == e:
        return "same as batch"
    missing, extra = e - g, g - e
    parts = []
    if missing:
        parts.append(f"missing {sum(missing.values())} batch rows")
    if extra:
        parts.append(f"{sum(extra.values())} extra rows")
    if c.mode == "update" and not missing:
        parts.append("(update mode: memory sink keeps every emitted version)")
    return "; ".join(parts)


def to_markdown(results: list[dict]) -> str:
    lines = [
        "| id | case | mode | sink / trigger | verdict | exception / condition | message |"
        " result vs batch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        exc = r.get("exc") or ""
        cond = r.get("condition") or ""
        msg = (r.get("message") or "").replace("|", "\\|")
        if len(msg) > 160:
            msg = msg[:157] + "..."
        sem = r.get("semantics") or ""
        if r.get("verdict") == "ok" and r.get("out_rows") is not None:
            sem = f"{r['out_rows']} rows ({r.get('batch_rows', '?')} batch); {sem}"
        lines.append(
            f"| {r['id']} | {r['desc']} | {r['mode']} | {r['sink']} / {r['trigger']} | "
            f"{r.get('verdict')} | {exc} {('`' + cond + '`') if cond else ''} | {msg} | "
            f"{sem} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
