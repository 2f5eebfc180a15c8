"""The ``delta`` sink's JVM path (Delta's Spark writer, ``DeltaSparkWriter``) killed with
SIGKILL at seeded random points, as ``tests/connectors/test_lakehouse_spark.py`` does for
the Python path: ``sqlstream exec`` (its own JVM, with the Delta package ``exec`` adds)
killed twice and restarted (``tests/support/crash_harness.py``; the first kill lands
while a micro-batch is planned and not committed, so a batch is run again), one day file
of flights per micro-batch, into two Delta tables:

* ``late_delta``: a stateless filter appended (``txnAppId`` / ``txnVersion`` on Delta's
  write): every flight of the batch oracle once, none twice;
* ``latest_delta``: every flight upserted by ``origin`` (a ``MERGE`` per micro-batch with
  ``spark.databricks.delta.write.txnAppId`` / ``txnVersion``): each origin's row is the
  last flight of that origin in the files' order — the last day file, and in it the last
  row, which is the micro-batch's order (one file, one partition) — so a replayed batch
  and the rule that picks one row per key in a batch are both checked against the oracle.

Runs on the PySpark minors whose Delta package runs (4.0-4.2; CI runs it on 4.1).
"""

from __future__ import annotations

import csv
import datetime as dt
from pathlib import Path

import pyspark
import pytest

from sqlstream.connectors.delta import DeltaWriter
from sqlstream.connectors.lakehouse_jvm import DELTA_PACKAGES
from tests.support.crash_harness import PIPELINE, expected_late, prepare, run_until_done

pytestmark = pytest.mark.spark

MINOR = ".".join(pyspark.__version__.split(".")[:2])
COLUMNS = "year, month, day, flight, carrier, origin, dep_delay, time_hour"
SINKS = f"""
CREATE SINK late_delta WITH (connector = 'delta', path = 'out/late');
CREATE SINK latest_delta WITH (connector = 'delta', path = 'out/latest',
    mode = 'upsert', key_columns = 'origin');

INSERT INTO late_delta SELECT {COLUMNS} FROM flights WHERE dep_delay > 30 EMIT ONCE;
INSERT INTO latest_delta SELECT origin, carrier, flight, time_hour FROM flights EMIT ONCE;
"""


def _utc_text(value: dt.datetime) -> str:
    return str(value.astimezone(dt.timezone.utc).replace(tzinfo=None))


def _latest_per_origin(files: list[Path]) -> dict[str, tuple]:
    """The oracle of ``latest_delta``: per origin, the last row in the files' order."""
    latest: dict[str, tuple] = {}
    for path in files:
        with path.open() as handle:
            for r in csv.DictReader(handle):
                hour = dt.datetime.strptime(r["time_hour"], "%Y-%m-%dT%H:%M:%SZ")
                latest[r["origin"]] = (r["carrier"], int(r["flight"]), str(hour))
    return latest


@pytest.mark.skipif(
    MINOR not in DELTA_PACKAGES, reason=f"no Delta Spark package runs on PySpark {MINOR}"
)
def test_sigkill_on_the_jvm_path_commits_each_micro_batch_once(tmp_path):
    files = prepare(tmp_path, 5)
    stream = PIPELINE[: PIPELINE.index("CREATE SINK")].replace("{files_per_batch}", "1")
    (tmp_path / "p.ssql").write_text(stream + SINKS)
    report = run_until_done(tmp_path, kills=2, seed=47, between_logs=True)
    assert len(report.kills) == 2, report
    assert "DeltaSparkSessionExtension" in (tmp_path / "run-1.log").read_text()

    late = DeltaWriter(str(tmp_path / "out" / "late")).table().to_pyarrow_table()
    rows = [
        (*(r[c] for c in ("year", "month", "day", "flight", "carrier", "origin", "dep_delay")),)
        + (_utc_text(r["time_hour"]),)
        for r in late.to_pylist()
    ]
    assert sorted(rows) == expected_late(files)  # no row lost, none twice

    latest = DeltaWriter(str(tmp_path / "out" / "latest")).table().to_pyarrow_table()
    got = {
        r["origin"]: (r["carrier"], r["flight"], _utc_text(r["time_hour"]))
        for r in latest.to_pylist()
    }
    assert latest.num_rows == len(got)  # one row per key
    assert got == _latest_per_origin(files)
    print(f"kills {report.kills}; replayed {report.replayed}; {report.seconds} s")
