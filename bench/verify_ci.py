"""The cost of verifying what we ship: ``tests/testing/test_verify_shipped.py`` (every
example's and Spark-suite test file through ``sqlstream verify --splits 0 --no-shrink``)
run whole on two trees, one after the other, each in a pytest process of its own (its own
JVM): this checkout and an earlier one (``--before``, e.g. ``git worktree add /tmp/before
555487d``). Prints each run's wall time, the CPU time of the process and its JVM (user +
system, children included), the 1-minute load average at its start and end, each test's
call time, and the ratios before / after.

    PYTHONPATH=$PWD .venv/bin/python bench/verify_ci.py --before /tmp/before

The machine's other work changes the times; the CPU time depends less on it than the
wall time (both are printed), and the order (``--after-first``) can be swapped to see
how much the load moved between the two runs.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

TEST = "tests/testing/test_verify_shipped.py"


def run(tree: Path) -> dict:
    """One pytest run of :data:`TEST` in ``tree`` (its code first on ``PYTHONPATH``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = os.getloadavg()[0]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST, "--durations=0"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    calls = {
        m.group(2): float(m.group(1))
        for m in re.finditer(r"([\d.]+)s call .*\[(.+?)\]", done.stdout)
    }
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    return {
        "wall": wall,
        "cpu": cpu,
        "load": (load, os.getloadavg()[0]),
        "calls": calls,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the earlier checkout")
    parser.add_argument("--after-first", action="store_true", help="run this checkout first")
    args = parser.parse_args()
    here = Path(__file__).resolve().parent.parent
    order = [("after", here), ("before", args.before.resolve())]
    if not args.after_first:
        order.reverse()
    found = {}
    for name, tree in order:
        found[name] = run(tree)
        r = found[name]
        print(
            f"{name}: {r['summary']}; wall {r['wall']:.1f} s, cpu {r['cpu']:.1f} s, "
            f"load {r['load'][0]:.1f} -> {r['load'][1]:.1f}",
            flush=True,
        )
    before, after = found["before"], found["after"]
    for test in sorted(set(before["calls"]) | set(after["calls"])):
        b, a = before["calls"].get(test), after["calls"].get(test)
        ratio = f"{b / a:.2f}" if a and b else "-"
        print(f"  {test:40s} before {b or 0:6.1f} s  after {a or 0:6.1f} s  ratio {ratio}")
    print(
        f"ratio before/after: wall {before['wall'] / after['wall']:.2f}, "
        f"cpu {before['cpu'] / after['cpu']:.2f}"
    )


if __name__ == "__main__":
    main()
