"""A longer fuzzing run than the test suite's (``tests/frontend/test_robustness.py``).

Runs the three fuzz properties of :mod:`tests.support.fuzzing` — grammar-built programs, text
mutations and byte mutations of the corpus — with a random seed (or ``--seed``) and
``--examples`` examples each; prints the failing input and exits 1 at the first failure.

    python tools/fuzz.py --examples 5000            # about 10 minutes on one core
    python tools/fuzz.py --examples 500 --seed 7    # reproducible
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.support.fuzzing import assert_file_robust, assert_robust, byte_mutants, mutants, programs  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="examples per property")
    parser.add_argument("--seed", type=int, default=None, help="a fixed seed (default: random)")
    args = parser.parse_args(argv)
    config = settings(max_examples=args.examples, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
    def text_property(text: str) -> None:
        assert_robust(text)

    def bytes_property(data: bytes) -> None:
        assert_file_robust(data)

    properties = [("grammar-built programs", given(programs())(text_property)),
                  ("mutated corpus text", given(mutants())(text_property)),
                  ("mutated corpus bytes", given(byte_mutants())(bytes_property))]
    for name, test in properties:
        test = config(test)
        if args.seed is not None:
            test = seed(args.seed)(test)
        started = time.perf_counter()
        try:
            test()
        except Exception as error:  # noqa: BLE001 - its notes hold the falsifying example
            traceback.print_exception(error)
            print(f"{name}: FAILED: {type(error).__name__}: {error}")
            return 1
        print(f"{name}: {args.examples} examples passed in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
