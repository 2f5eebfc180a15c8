"""A longer fuzzing run than the test suite's (``tests/frontend/test_robustness.py``).

Runs the fuzz properties of :mod:`tests.support.fuzzing` — grammar-built programs, text
mutations and byte mutations of the corpus, every expression kind nested (up to
``--max-depth`` levels) in every place, statement-level parentheses, NUL bytes after valid
prefixes, the command line on paths that cannot be read or written, and ``*.test.yaml``
files (:mod:`tests.support.fuzz_test_files`: hostile YAML built to a test file's shape,
and mutations of the project's test files), and the language server's requests
(:mod:`tests.support.fuzz_lsp`: corpus programs and edits of them analysed as the server
does, then hover, completion, definition, references, the outline and rename at random
positions) — with a random
seed (or ``--seed``) and ``--examples`` examples each; every compile must finish within
``tests.support.fuzzing.SECONDS`` (5 s). Prints the failing input and exits 1 at the first
failure.

    python tools/fuzz.py --examples 5000            # about 10 minutes on one core
    python tools/fuzz.py --examples 500 --seed 7    # reproducible
    python tools/fuzz.py --only "test files"        # the test-file campaign alone
    python tools/fuzz.py --only "language server"   # the requests campaign alone
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.support.fuzz_lsp import assert_requests_robust, edited_documents  # noqa: E402
from tests.support.fuzz_test_files import (  # noqa: E402
    assert_test_file_robust,
    hostile_test_files,
    mutated_test_files,
)
from tests.support.fuzzing import (  # noqa: E402
    assert_cli_robust,
    assert_file_robust,
    assert_robust,
    byte_mutants,
    cli_invocations,
    cli_paths,
    mutants,
    nestings,
    nul_after_prefix,
    programs,
    statement_parens,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="examples per property")
    parser.add_argument("--seed", type=int, default=None, help="a fixed seed (default: random)")
    parser.add_argument("--max-depth", type=int, default=200, help="deepest nesting generated")
    parser.add_argument("--only", default=None, help="only the properties whose name holds it")
    args = parser.parse_args(argv)
    config = settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )

    def text_property(text: str) -> None:
        assert_robust(text)

    def bytes_property(data: bytes) -> None:
        assert_file_robust(data)

    folder = Path(tempfile.mkdtemp(prefix="sqlstream-fuzz-"))
    paths = cli_paths(folder)

    def cli_property(arguments: list[str]) -> None:
        assert_cli_robust(arguments)

    def test_file_property(text: str) -> None:
        with tempfile.TemporaryDirectory() as project:
            assert_test_file_robust(text, Path(project))

    def requests_property(document) -> None:
        assert_requests_robust(*document)

    properties = [
        ("grammar-built programs", given(programs())(text_property)),
        ("mutated corpus text", given(mutants())(text_property)),
        ("mutated corpus bytes", given(byte_mutants())(bytes_property)),
        ("nested expressions", given(nestings(args.max_depth))(text_property)),
        ("statement-level parentheses", given(statement_parens())(text_property)),
        ("NUL bytes after valid prefixes", given(nul_after_prefix())(text_property)),
        ("command-line paths", given(cli_invocations(paths))(cli_property)),
        ("hostile test files", given(hostile_test_files())(test_file_property)),
        ("mutated test files", given(mutated_test_files())(test_file_property)),
        ("language server requests", given(edited_documents())(requests_property)),
    ]
    if args.only:
        properties = [(n, t) for n, t in properties if args.only in n]
    try:
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
            print(
                f"{name}: {args.examples} examples passed in {time.perf_counter() - started:.0f} s"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
