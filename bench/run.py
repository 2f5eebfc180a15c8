"""Benchmarks for sqlstream (not tests: nothing here runs under pytest).

1. Job ratio: the flights example (``examples/flights/hourly_delays.ssql``) through
   sqlstream against the same job written by hand in PySpark
   (``bench/handwritten_flights.py``), on the same copy of the data, each run into fresh
   output and checkpoint directories under ``bench/out/run/``, alternated round by
   round (sqlstream, handwritten | handwritten, sqlstream | ...) so that machine load
   and warm-up trends hit both:

   a. in-process: one shared SparkSession (local[2], equal shuffle partitions, UI off,
      UTC); ``sqlstream.compile_file(...)`` + ``pipeline.start(spark)`` +
      ``awaitTermination`` against ``handwritten_flights.run(...)``;
   b. end-to-end CLI: ``sqlstream exec FILE --state-dir DIR --available-now`` against
      ``python bench/handwritten_flights.py ...``, each a subprocess with its own JVM.

   Prints the median wall seconds and the ratio sqlstream / handwritten (goal <= 1.05),
   with CPU seconds (JVM + Python) beside them, and checks that both produced the same
   rows (count + exceptAll both ways). The CLI runs come first, so that no other JVM of
   this script is alive during them; the in-process session then checks all outputs.

2. translate latency: ``sqlstream translate FILE`` as a process for every ``.ssql`` under
   ``examples/`` and ``tests/fixtures/translate/`` (median of ``--repeat`` runs; goal
   < 0.3 s), with ``python -c pass`` and ``python -c "import sqlstream"`` as baselines.

Run from anywhere with the project's interpreter, e.g.::

    .venv/bin/python bench/run.py --rounds 3            # all 365 days
    .venv/bin/python bench/run.py --rounds 1 --days 31  # quick

The measurements are in ``flights_job.py`` (the job ratio's runs), ``ratio_report.py`` (its
output check and table), ``translate_latency.py`` and ``timing.py`` (wall and CPU seconds of
a process). Standard library + pyspark only.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from datetime import datetime, timezone

from flights_job import (
    EXAMPLE,
    HANDWRITTEN,
    MASTER,
    MAX_FILES_PER_TRIGGER,
    OUT,
    SHUFFLE_PARTITIONS,
    Mode,
    bench_cli,
    bench_inprocess,
    make_session,
    prepare_data,
)
from ratio_report import RATIO_GOAL, compare_outputs, ratio_table
from timing import REPO, load, say
from translate_latency import TRANSLATE_GOAL, bench_translate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="alternating sqlstream/handwritten rounds per measurement (default 3)",
    )
    parser.add_argument(
        "--days", type=int, default=None, help="use only the first N day files (default: all 365)"
    )
    parser.add_argument(
        "--warmup-days",
        type=int,
        default=None,
        help="days for the untimed in-process warm-up of both jobs "
        "(0: none; default: the same days as the timed runs)",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per translate/import timing (median; default 5)"
    )
    parser.add_argument("--skip-inprocess", action="store_true", help="skip the in-process ratio")
    parser.add_argument("--skip-cli", action="store_true", help="skip the end-to-end CLI ratio")
    parser.add_argument("--skip-translate", action="store_true", help="skip translate latency")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    say(f"sqlstream benchmarks, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    say(
        f"machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}"
    )
    try:
        import pyspark

        say(
            f"pyspark {pyspark.__version__}, master {MASTER}, "
            f"spark.sql.shuffle.partitions={SHUFFLE_PARTITIONS}, maxFilesPerTrigger={MAX_FILES_PER_TRIGGER}"
        )
    except ImportError:
        pass
    say(f"load average (1/5/15 min) at start: {load()}")

    modes: list[Mode] = []
    warnings: list[str] = []
    run_job = not (args.skip_inprocess and args.skip_cli)
    if run_job:
        if OUT.exists():
            shutil.rmtree(OUT)
        data_root = prepare_data(args.days)
        n_files = len(list(data_root.glob("*.csv")))
        say(
            f"\n== job ratio: {EXAMPLE.relative_to(REPO)} vs {HANDWRITTEN.relative_to(REPO)}, "
            f"{n_files} day files, {args.rounds} rounds =="
        )
        say(f"data copy (mtimes = dates): {data_root.relative_to(REPO)}")
        cli_mode = None
        if not args.skip_cli:
            # CLI first, so that the in-process session (started afterwards) is not an
            # extra JVM during the CLI runs; it then also checks the CLI outputs.
            say(
                f"\n-- (b) end-to-end CLI: sqlstream exec vs python {HANDWRITTEN.relative_to(REPO)} "
                "(own JVM each) --"
            )
            say(f"load average before: {load()}")
            cli_mode = bench_cli(data_root, args.rounds)
            say(f"load average after: {load()}")
        spark = make_session()
        try:
            inproc_mode = None
            if not args.skip_inprocess:
                say(
                    "\n-- (a) in-process: one SparkSession, compile_file+start vs handwritten_flights.run --"
                )
                say(f"load average before: {load()}")
                inproc_mode = bench_inprocess(
                    spark,
                    data_root,
                    args.rounds,
                    n_files if args.warmup_days is None else min(args.warmup_days, n_files),
                )
                say(f"load average after: {load()}")
            say("\n-- output check (same rows: count + exceptAll both ways) --")
            for mode in (inproc_mode, cli_mode):
                if mode is not None:
                    modes.append(mode)
                    warnings += compare_outputs(spark, mode)
        finally:
            spark.stop()

    translate_rows = []
    if not args.skip_translate:
        say(
            f"\n== translate latency (median of {args.repeat} process runs; goal < {TRANSLATE_GOAL} s) =="
        )
        say(f"load average before: {load()}")
        translate_rows = bench_translate(args.repeat)

    say(
        f"\n== summary ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"load average now {load()}) =="
    )
    if modes:
        say("")
        for line in ratio_table(modes):
            say(line)
        say(f"\nratio goal: <= {RATIO_GOAL}")
    if translate_rows:
        say("\n| command | median (s) | min (s) | exit |")
        say("| --- | ---: | ---: | ---: |")
        for label, median, fastest, code in translate_rows:
            over = "" if label.startswith("python") or median < TRANSLATE_GOAL else " (over goal)"
            say(f"| `{label}` | {median:.3f}{over} | {fastest:.3f} | {code} |")
    for warning in warnings:
        say(warning)
    say(f"\ntotal bench time {time.perf_counter() - started:.0f} s")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
