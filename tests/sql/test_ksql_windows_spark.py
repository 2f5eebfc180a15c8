"""ksqlDB's spellings and several INSERTs into one sink, run on Spark, against computations that
do not use the streaming code under test:

* ``WINDOW TUMBLING``, ``HOPPING`` and ``SESSION`` (EMIT FINAL) over page views in two files
  (one micro-batch each; the second moves the watermark past every window of the first)
  against the windows computed in plain Python from the same rows;
* ksqlDB's ``CREATE TABLE … AS SELECT … EMIT CHANGES``: the last update of each key against
  a Spark batch ``GROUP BY`` over the same files;
* two ``INSERT INTO`` one files sink from two streams: the files written equal a Spark batch
  ``UNION ALL`` of the two inputs.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime, timedelta

import pytest

import sqlstream

pytestmark = pytest.mark.spark

START = datetime(2024, 3, 1, 8, 0)
# (minutes after START, page, user): gaps of 3 to 40 minutes, so sessions of 20 minutes split
VIEWS = [
    (m, ("home", "cart", "help")[i % 3], ("ann", "bob")[i % 2])
    for i, m in enumerate(
        [
            0,
            3,
            7,
            12,
            19,
            25,
            31,
            38,
            52,
            61,
            64,
            70,
            95,
            99,
            103,
            140,
            146,
            151,
            170,
            199,
            203,
            230,
            236,
            239,
        ]
    )
]
LATE = (600, "home", "ann")  # the second file: moves the watermark (1 minute) past the rest

PROGRAM = """\
CREATE STREAM pageviews (ts TIMESTAMP, pageid STRING, userid STRING,
    WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)
WITH (connector = 'files', path = 'views', format = 'json', maxFilesPerTrigger = 1);
CREATE SINK ksql_tumbling WITH (connector = 'memory');
CREATE SINK ksql_hopping WITH (connector = 'memory');
CREATE SINK ksql_sessions WITH (connector = 'memory');
CREATE SINK ksql_table WITH (connector = 'memory');

INSERT INTO ksql_tumbling
SELECT pageid, WINDOWSTART, WINDOWEND, COUNT(*) AS views
FROM pageviews WINDOW TUMBLING (SIZE 1 HOUR, GRACE PERIOD 1 MINUTE)
GROUP BY pageid EMIT FINAL;

INSERT INTO ksql_hopping
SELECT pageid, WINDOWSTART, WINDOWEND, COUNT(*) AS views
FROM pageviews WINDOW HOPPING (SIZE 1 HOUR, ADVANCE BY 20 MINUTES)
GROUP BY pageid EMIT FINAL;

INSERT INTO ksql_sessions
SELECT userid, WINDOWSTART, WINDOWEND, COUNT(*) AS views
FROM pageviews WINDOW SESSION (20 MINUTES)
GROUP BY userid EMIT FINAL;

CREATE TABLE ksql_table AS
SELECT userid, pageid, COUNT(*) AS views FROM pageviews GROUP BY userid, pageid EMIT CHANGES;
"""


def _write(folder, name, rows, stamp):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w", encoding="utf-8") as handle:
        for minutes, page, user in rows:
            at = (START + timedelta(minutes=minutes)).isoformat()
            handle.write(json.dumps({"ts": at, "pageid": page, "userid": user}) + "\n")
    os.utime(folder / name, (stamp, stamp))


def _windows(size: int, slide: int):
    """(page, start, end) → count of the hopping windows of ``size`` minutes every ``slide``
    minutes (aligned to the epoch, as ksqlDB's and Spark's are) holding each view."""
    counts = Counter()
    epoch = datetime(1970, 1, 1)
    for minutes, page, _ in VIEWS:
        t = START + timedelta(minutes=minutes)
        last = t - (t - epoch) % timedelta(minutes=slide)
        start = last
        while start > t - timedelta(minutes=size):
            counts[(page, start, start + timedelta(minutes=size))] += 1
            start -= timedelta(minutes=slide)
    return counts


def _sessions(gap: int):
    """(user, start, end) → count: a user's views closer than ``gap`` minutes share a session,
    which ends ``gap`` minutes after its last view."""
    counts = Counter()
    for user in {u for _, _, u in VIEWS}:
        times = sorted(START + timedelta(minutes=m) for m, _, u in VIEWS if u == user)
        first = previous = times[0]
        size = 0
        for t in times:
            if t >= previous + timedelta(minutes=gap):
                counts[(user, first, previous + timedelta(minutes=gap))] = size
                first, size = t, 0
            previous, size = t, size + 1
        counts[(user, first, previous + timedelta(minutes=gap))] = size
    return counts


def test_ksql_windows_and_table_equal_python_and_spark_batch(spark, tmp_path):
    _write(tmp_path / "views", "1.json", VIEWS, 1_000_000)
    _write(tmp_path / "views", "2.json", [LATE], 2_000_000)
    path = tmp_path / "ksql.ssql"
    path.write_text(PROGRAM, encoding="utf-8")
    for query in sqlstream.compile_file(path).start(spark, available_now=True):
        query.awaitTermination()
        assert query.exception() is None

    def written(sink):
        rows = spark.sql(f"SELECT * FROM {sink}").collect()
        return {tuple(r[:-1]): r[-1] for r in rows if r[2] <= START + timedelta(hours=6)}

    assert written("ksql_tumbling") == _windows(60, 60)
    assert written("ksql_hopping") == _windows(60, 20)
    assert written("ksql_sessions") == _sessions(20)
    assert len(_sessions(20)) >= 4  # the sessions do split

    last = {}
    for userid, pageid, views in spark.sql("SELECT * FROM ksql_table").collect():
        last[(userid, pageid)] = max(views, last.get((userid, pageid), 0))  # counts only grow
    batch = (
        spark.read.schema("ts TIMESTAMP, pageid STRING, userid STRING")
        .json(str(tmp_path / "views"))
        .groupBy("userid", "pageid")
        .count()
        .collect()
    )
    assert last == {(r["userid"], r["pageid"]): r["count"] for r in batch}


TWO_INSERTS = """\
CREATE STREAM eu (id STRING, amount DOUBLE) WITH (connector = 'files', path = 'eu', format = 'json');
CREATE STREAM us (id STRING, amount DOUBLE) WITH (connector = 'files', path = 'us', format = 'json');
CREATE SINK all_orders WITH (connector = 'files', path = 'out', format = 'json');
EXECUTE STATEMENT SET BEGIN
    INSERT INTO all_orders SELECT id, amount FROM eu WHERE amount > 10;
    INSERT INTO all_orders SELECT id, amount * 2 AS amount FROM us;
END;
"""


def test_two_inserts_into_one_files_sink_equal_a_batch_union(spark, tmp_path):
    for region, count in (("eu", 30), ("us", 20)):
        (tmp_path / region).mkdir()
        with open(tmp_path / region / "1.json", "w", encoding="utf-8") as handle:
            for i in range(count):
                handle.write(json.dumps({"id": f"{region}{i}", "amount": float(i * 7 % 23)}) + "\n")
    path = tmp_path / "two.ssql"
    path.write_text(TWO_INSERTS, encoding="utf-8")
    pipeline = sqlstream.compile_file(path)
    assert len(pipeline.plan.queries) == 1
    (query,) = pipeline.start(spark, available_now=True)
    query.awaitTermination()
    assert query.exception() is None
    schema = "id STRING, amount DOUBLE"
    eu = spark.read.schema(schema).json(str(tmp_path / "eu"))
    us = spark.read.schema(schema).json(str(tmp_path / "us"))
    expected = eu.where("amount > 10").unionAll(us.selectExpr("id", "amount * 2 AS amount"))
    actual = spark.read.schema(schema).json(str(tmp_path / "out"))
    assert sorted(map(tuple, actual.collect())) == sorted(map(tuple, expected.collect()))
    assert actual.count() > 20
