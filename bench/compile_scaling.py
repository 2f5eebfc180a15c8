"""Compile time against program size: statements per second, and how time grows with
chained CTEs, chained views, long ``AND`` chains and deep nesting (issue 12, item 1).

Goal: time linear in the size of the program (the growth exponent, the slope of
log(time) over log(size), near 1) and at least 1,000 statements a second in-process.
Uses only the standard library and sqlstream (no JVM). See ``bench/README.md``.

    python bench/compile_scaling.py            # every measurement, best of 3
    python bench/compile_scaling.py --repeat 1 --quick
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sqlstream
from tests.support.long_files import HEAD
from tests.support.long_files import mixed_file as statements_file

__all__ = ["HEAD", "statements_file"]  # the "mixed" file: one text for the bench and the tests


def light_file(n: int) -> str:
    """``n`` statements in pairs: a sink and an insert that filters and projects the stream."""
    return HEAD + "".join(
        f"CREATE SINK o{i} WITH (connector = 'console');\n"
        f"INSERT INTO o{i} SELECT a, upper(b) AS b FROM s WHERE a > {i};\n"
        for i in range((n - 2) // 2)
    )


def ctes(n: int) -> str:
    body = "WITH c0 AS (SELECT a, ts FROM s)" + "".join(
        f", c{i} AS (SELECT a, ts FROM c{i - 1} WHERE a > {i})" for i in range(1, n)
    )
    return HEAD + f"INSERT INTO o {body} SELECT a FROM c{n - 1};\n"


def views(n: int) -> str:
    chain = "".join(
        f"CREATE VIEW v{i} AS SELECT a, ts FROM {'s' if i == 0 else f'v{i - 1}'} WHERE a > {i};\n"
        for i in range(n)
    )
    return HEAD + chain + f"INSERT INTO o SELECT a FROM v{n - 1};\n"


def ands(n: int) -> str:
    return (
        HEAD
        + "INSERT INTO o SELECT a FROM s WHERE "
        + " AND ".join(f"a <> {i}" for i in range(n))
        + ";\n"
    )


def parens(n: int) -> str:
    return HEAD + "INSERT INTO o SELECT " + "(" * n + "a" + ")" * n + " AS x FROM s;\n"


def subqueries(n: int) -> str:
    return HEAD + "INSERT INTO o SELECT a FROM " + "(SELECT a FROM " * n + "s" + ")" * n + ";\n"


def nested_types(n: int) -> str:
    return (
        f"CREATE STREAM s (a {'STRUCT<f: ' * n}INT{'>' * n}, b INT) "
        "WITH (connector = 'files', path = 'in', format = 'json');\nSELECT b FROM s;\n"
    )


def timed(text: str, repeat: int) -> tuple[float, str]:
    """Best wall time of ``sqlstream.check(text)`` over ``repeat`` runs, and its outcome."""
    best, outcome = math.inf, ""
    for _ in range(repeat):
        started = time.perf_counter()
        findings = sqlstream.check(text)
        best = min(best, time.perf_counter() - started)
        errors = [f.code for f in findings if f.severity == "error"]
        outcome = "ok" if not errors else ",".join(sorted(set(errors)))
    return best, outcome


def series(name: str, build, sizes, repeat: int) -> None:
    """Time ``build(n)`` for each size; print the time per unit and the growth exponent."""
    print(f"\n{name}")
    print("| size | seconds | ms per unit | outcome |\n| ---: | ---: | ---: | --- |")
    points = []
    for n in sizes:
        seconds, outcome = timed(build(n), repeat)
        if outcome == "ok":  # a size refused at a limit is shown, not fitted
            points.append((n, seconds))
        print(f"| {n:,} | {seconds:.3f} | {1000 * seconds / n:.3f} | {outcome} |", flush=True)
    (n0, t0), (n1, t1) = points[0], points[-1]
    print(
        f"growth exponent {n0:,} → {n1:,}: {math.log(t1 / t0) / math.log(n1 / n0):.2f} (1 = linear)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="compile time against program size")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args(argv)
    sqlstream.check(statements_file(10))  # imports, grammar tables, sqlglot dialect
    scale = 4 if args.quick else 1

    n = 1000 // scale
    for label, build in (("mixed", statements_file), ("light", light_file)):
        text = build(n)
        count = text.count(";")
        seconds, outcome = timed(text, args.repeat)
        print(
            f"{count:,}-statement {label} file ({len(text) / 1e3:.0f} kB): {seconds:.2f} s, "
            f"{count / seconds:,.0f} statements/s in-process ({outcome}); goal ≥ 1,000"
        )
    series(
        "statements (file of n statements)",
        statements_file,
        [s // scale for s in (250, 500, 1000, 2000)],
        args.repeat,
    )
    series("chained CTEs", ctes, [s // scale for s in (125, 250, 500, 1000)], args.repeat)
    series("chained views", views, [s // scale for s in (250, 500, 1000, 2000)], args.repeat)
    series("AND terms", ands, [s // scale for s in (1250, 2500, 5000, 10000)], args.repeat)
    series("nested parentheses (limit 1,000)", parens, (250, 500, 1000, 1001), args.repeat)
    series("nested subqueries (limit 256)", subqueries, (64, 128, 256, 257), args.repeat)
    series("nested STRUCT types (limit 1,000)", nested_types, (250, 500, 1000, 1001), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
