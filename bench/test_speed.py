"""Speed of ``sqlstream test`` on the Spark-suite set (a benchmark, not a test; pytest does
not collect bench/).

One run, in this process, of what ``sqlstream test tests/fixtures/spark_suites`` runs
(:func:`sqlstream.testing.suite.run`, one SparkSession for every test), timed from before
``import sqlstream`` to the last result. Where the time goes is read from the runner's own
objects, wrapped here (nothing in sqlstream changes):

* **JVM start**: the session factory the runner calls once (JVM, SparkContext, defaults);
* **query start**: each ``_Query.start`` (``writeStream … start()``: analysis, checkpoint
  folder, source and sink set-up), counted per start (once per query per test, again after
  each ``restart`` step);
* **micro-batches**: ``durationMs.triggerExecution`` of every micro-batch in the queries'
  progress (``StreamingQueryProgress``), and their number;
* **the rest** of a test: waiting in ``processAllAvailable`` between triggers, the feed's
  files, captures' ``collect``, checks, stopping queries.

Goals (issue 21): each test after the first < 2 s; the whole set < 60 s.

    .venv/bin/python bench/test_speed.py [--conf KEY=VALUE …] [PATH…]
                                         # default: tests/fixtures/spark_suites

``--conf`` sets a Spark conf of the run's session over ``sqlstream test``'s (to compare
settings side by side: run the two one after the other, alternating).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

STARTED = time.perf_counter()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from sqlstream.testing import harness, suite  # noqa: E402


def main(paths: list[str], conf: dict[str, str]) -> None:
    timings = {"jvm": 0.0, "starts": [], "batches": {}}

    def session():
        began = time.perf_counter()
        spark = suite.test_session(conf=conf)
        timings["jvm"] = time.perf_counter() - began
        return spark

    start, collect = harness._Query.start, harness._Query.collect_progress

    def timed_start(self, spark):
        began = time.perf_counter()
        try:
            start(self, spark)
        finally:
            timings["starts"].append(time.perf_counter() - began)

    def collecting(self):
        collect(self)
        for progress in self.progress.values():
            key = (progress.get("runId"), progress.get("batchId"))
            timings["batches"][key] = (progress.get("durationMs") or {}).get("triggerExecution", 0)

    harness._Query.start, harness._Query.collect_progress = timed_start, collecting
    load = os.getloadavg()
    if conf:
        print("conf: " + ", ".join(f"{k}={v}" for k, v in conf.items()))
    results = suite.run(
        paths,
        session=session,
        on_result=lambda r: print(
            f"{r.status:7} {r.seconds:6.1f} s  {r.path.name}::{r.name}", flush=True
        ),
    )
    wall = time.perf_counter() - STARTED
    seconds = [r.seconds for r in results]
    after_first = seconds[1:]
    batches = list(timings["batches"].values())
    print()
    print(f"tests: {len(results)} ({sum(r.status == 'passed' for r in results)} passed)")
    print(f"wall time, import and JVM start included: {wall:.1f} s  (goal < 60 s)")
    print(f"JVM start (session): {timings['jvm']:.1f} s")
    print(f"first test: {seconds[0]:.1f} s")
    if after_first:
        print(
            f"median per test after the first: {statistics.median(after_first):.1f} s "
            f"(min {min(after_first):.1f}, max {max(after_first):.1f}; goal < 2 s)"
        )
    print(
        f"query starts: {len(timings['starts'])}, {sum(timings['starts']):.1f} s in all, "
        f"median {statistics.median(timings['starts']):.2f} s"
    )
    print(
        f"micro-batches: {len(batches)}, {sum(batches) / 1000:.1f} s in all, "
        f"median {statistics.median(batches) / 1000:.2f} s"
    )
    rest = sum(seconds) - sum(timings["starts"]) - sum(batches) / 1000
    if rest >= 0:
        print(f"rest of the tests' time (waits, feed, captures, checks, stops): {rest:.1f} s")
    else:  # a test's queries run their micro-batches at the same time
        print(
            f"(the micro-batches of a test's queries overlap: their sum exceeds the tests' "
            f"{sum(seconds):.1f} s)"
        )
    print(
        f"load average before / after: {load[0]:.1f} / {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        default=[os.path.join(ROOT, "tests", "fixtures", "spark_suites")],
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark conf of the run's session, over sqlstream test's",
    )
    arguments = parser.parse_args()
    main(arguments.paths, dict(item.partition("=")[::2] for item in arguments.conf))
