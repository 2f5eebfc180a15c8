"""The wall time of ``sqlstream verify`` on one example once the SparkSession is up
(issue 34 item 5: under 30 s for the batch oracle and 6 streaming runs).

    PYTHONPATH=$PWD python bench/verify_time.py [--splits 4] [--seed 1] [--repeat 2]

Runs ``examples/flights/hourly_delays.ssql`` on the input of its test file with the
session of ``sqlstream test`` (:func:`sqlstream.testing.suite.test_session`), and prints
the seconds of the whole verify, of the oracle and of each streaming run, and the
machine's load average (1 minute, ``os.getloadavg``) before and after each verify: the
machine is shared, and the times mean little without it.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--splits", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    from sqlstream.testing import verify as verify_module
    from sqlstream.testing.harness import Harness
    from sqlstream.testing.suite import test_session
    from sqlstream.testing.verify_run import from_test, verify

    started = time.monotonic()
    harness = Harness(test_session())
    print(f"session: {time.monotonic() - started:.1f} s")
    folder = ROOT / "examples" / "flights"
    _, (target,) = from_test(folder / "hourly_delays.test.yaml", {}, False)
    pipeline, data = target.pipeline, target.data
    timings: list[tuple[str, float]] = []
    stream, expected = verify_module.Verifier.stream, verify_module.Verifier.expected

    def timed_stream(self, run):
        begin = time.monotonic()
        try:
            return stream(self, run)
        finally:
            timings.append((run.name, time.monotonic() - begin))

    def timed_expected(self, kept):
        begin, cached = time.monotonic(), tuple(kept) in self._oracles
        try:
            return expected(self, kept)
        finally:
            if not cached:
                timings.append(("oracle", time.monotonic() - begin))

    verify_module.Verifier.stream = timed_stream  # type: ignore[method-assign]
    verify_module.Verifier.expected = timed_expected  # type: ignore[method-assign]
    for attempt in range(args.repeat):
        timings.clear()
        load = os.getloadavg()[0]
        begin = time.monotonic()
        report = verify(harness, pipeline, data, args.splits, args.seed)
        total = time.monotonic() - begin
        runs = ", ".join(f"{name} {seconds:.1f}" for name, seconds in timings)
        streams = sum(name != "oracle" for name, _ in timings)
        oracles = len(timings) - streams
        print(
            f"verify #{attempt + 1}: {total:.1f} s ({streams} streaming runs, {oracles} "
            f"oracle runs: {runs}); result {[q.result for q in report.queries]}; "
            f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
        )


if __name__ == "__main__":
    main()
