"""Crash recovery, the long run: SIGKILL ``sqlstream exec`` many times, check the sinks.

The harness of ``tests/runtime/test_crash_recovery.py`` (``tests/support/crash_harness.py``) with
more days and kills: the flights stream into a stateless filter and an hourly windowed
aggregation (parquet files sinks) and, with ``--sinks``, the filter into a ``table`` sink
and a ``kafka`` topic (a broker started here, ``tests/support/kafka_broker.py``) and the
aggregation upserted into a ``postgres`` table (a server started here,
``tests/support/postgres_server.py``) — all queries of one ``exec`` process — killed with SIGKILL
(driver and JVM) at seeded random points of the stream, restarted each time, then left to
finish. Each files sink is read through its ``_spark_metadata`` log (``spark.read.parquet``
in batch) and compared with the plain-Python oracle; the part files a plain ``*.parquet``
glob would read on top (batches killed before their commit) are counted, and such a glob
read is tried with pyarrow to show why a file sink must be read through its log. The
table is read with ``spark.read.table``, the PostgreSQL table with psycopg (both must
equal the oracle); the topic with confluent-kafka (at least once: nothing missing or
wrong, duplicates counted and traced to the interrupted micro-batches).

    python bench/crash_recovery.py --days 31 --kills 12 --seed 7
    python bench/crash_recovery.py --days 10 --kills 3 --seed 12   # the CI case

Prints one JSON object (see ``bench/README.md`` for measured results). Exit 1 when a
sink differs from its oracle (for Kafka: a row missing or wrong, or a duplicate that no
interrupted micro-batch explains).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.crash_harness import (  # noqa: E402
    HOURLY_READ,
    LATE_READ,
    committed_files,
    expected_hourly,
    expected_late,
    kafka_report,
    postgres_hourly,
    prepare,
    run_until_done,
    table_rows,
    topic_records,
    uncommitted_files,
)


def _plain_glob_read(sink: Path) -> str:
    """What reading ``sink/*.parquet`` without the log gives: rows, or the error."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return "pyarrow not installed"
    try:
        table = pq.ParquetDataset([str(p) for p in sorted(sink.glob("*.parquet"))]).read()
        return f"{table.num_rows} rows"
    except Exception as error:  # noqa: BLE001 - the point is to show the error
        return f"fails: {type(error).__name__}: {str(error)[:160]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=31)
    parser.add_argument("--kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--max-delay",
        type=float,
        default=2.0,
        help="kill up to this many seconds after the drawn number of committed batches",
    )
    parser.add_argument("--files-per-batch", type=int, default=1)
    parser.add_argument(
        "--sinks",
        default="table,kafka,postgres",
        help="sinks besides the two files sinks, comma-separated "
        "(table, kafka, postgres; '' for none)",
    )
    parser.add_argument("--work", type=Path, default=None, help="folder (default: a temporary one)")
    args = parser.parse_args(argv)
    sinks = tuple(s.strip() for s in args.sinks.split(",") if s.strip())
    work = args.work or Path(tempfile.mkdtemp(prefix="crash-"))
    with ExitStack() as stack:
        exec_args, env, broker, topic, server = [], {}, None, None, None
        if "kafka" in sinks:
            from tests.support.kafka_broker import KafkaBroker, spark_jars

            broker = stack.enter_context(KafkaBroker())
            topic = broker.create_topic(f"crash-late-{uuid.uuid4().hex[:8]}")
            exec_args += [
                "--var",
                f"servers={broker.bootstrap_servers}",
                "--var",
                f"topic={topic}",
                "--conf",
                "spark.jars=" + ",".join(spark_jars()),
            ]
        if "postgres" in sinks:
            from tests.support.postgres_server import running_server

            server = stack.enter_context(running_server())
            exec_args += ["--var", f"pg_url={server.url}", "--var", "pg_table=crash_hourly"]
            env["PG_PASSWORD"] = server.password
        files = prepare(work, args.days, args.files_per_batch, extra=sinks)
        report = run_until_done(
            work,
            args.kills,
            args.seed,
            args.max_delay,
            args=tuple(exec_args),
            env=env,
            batches=-(-args.days // args.files_per_batch),
        )
        result, ok = _check(work, files, sinks, report, broker, topic, server)
    result = {
        "days": args.days,
        "files_per_batch": args.files_per_batch,
        "seed": args.seed,
        "sinks": ["late", "hourly", *sinks],
        "kill_points": report.kills,
        "runs": report.runs,
        "wall_s": report.seconds,
        **result,
        "work": str(work),
    }
    print(json.dumps(result, indent=2))
    return 0 if ok else 1


def _check(
    work: Path, files: list[Path], sinks: tuple[str, ...], report, broker, topic, server
) -> tuple[dict, bool]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    late_expected = expected_late(files)
    late = spark.read.parquet(str(work / "out" / "late")).selectExpr(*LATE_READ).collect()
    hourly = spark.read.parquet(str(work / "out" / "hourly")).selectExpr(*HOURLY_READ).collect()
    result = {
        "late_rows": len(late),
        "late_equals_oracle": sorted(map(tuple, late)) == late_expected,
        "hourly_windows": len(hourly),
        "hourly_equals_oracle": sorted(map(tuple, hourly), key=repr)
        == sorted(expected_hourly(files), key=repr),
        "uncommitted_part_files": {
            s: [p.name for p in uncommitted_files(work / "out" / s)] for s in ("late", "hourly")
        },
        "plain_glob_read": {s: _plain_glob_read(work / "out" / s) for s in ("late", "hourly")},
    }
    ok = result["late_equals_oracle"] and result["hourly_equals_oracle"]
    if "table" in sinks:
        location = work / ".sqlstream" / "warehouse" / "late_flights"
        rows, read = table_rows(spark, location)
        result["table_equals_oracle"] = rows == late_expected
        result["table_reads_the_logged_files"] = read == committed_files(location)
        result["table_uncommitted_part_files"] = len(uncommitted_files(location))
        ok &= result["table_equals_oracle"] and result["table_reads_the_logged_files"]
    spark.stop()
    if "kafka" in sinks:
        kafka = kafka_report(
            work,
            topic_records(broker.bootstrap_servers, topic),
            late_expected,
            report.replayed.get("late_kafka", []),
        )
        result["kafka"] = kafka
        ok &= (kafka["missing"], kafka["wrong"], kafka["outside_replays"]) == (0, 0, 0)
    if "postgres" in sinks:
        rows = postgres_hourly(server, "crash_hourly")
        result["postgres_windows"] = len(rows)
        result["postgres_equals_oracle"] = rows == sorted(
            expected_hourly(files, final=False), key=repr
        )
        ok &= result["postgres_equals_oracle"]
    result["replayed_batches"] = {q: sorted(set(b)) for q, b in sorted(report.replayed.items())}
    return result, bool(ok)


if __name__ == "__main__":
    sys.exit(main())
