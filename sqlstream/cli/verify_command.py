"""``sqlstream verify``: the pipeline streamed in many ways against its batch meaning
(:mod:`sqlstream.testing.verify_run`), registered on :func:`sqlstream.cli.main` when
:mod:`sqlstream.cli` is imported."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from sqlstream.cli import _common, _parse_pairs, _trust, main
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.ir.context import trusted


def _usage(message: str, file: str) -> SqlStreamError:
    """An ``SS218`` error at the start of the pipeline ``file`` (when it can be read)."""
    from sqlstream.diagnostics.source_text import Source, Span

    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError:
        return SqlStreamError(message, code="SS218")
    return SqlStreamError(message, Span(0, 0, 1, 1, file), Source(text, file), code="SS218")


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--test",
    "test_path",
    type=click.Path(dir_okay=False),
    help="Take the input from each test of this *.test.yaml file (its input steps).",
)
@click.option(
    "-k", "keyword", metavar="TEXT", help="With --test: verify the tests whose name contains TEXT."
)
@click.option(
    "--input",
    "inputs",
    multiple=True,
    callback=_parse_pairs,
    metavar="STREAM=PATH",
    help="Read STREAM's rows from a file or folder (one micro-batch per file; repeatable).",
)
@_common
@click.option("--splits", type=int, default=5, show_default=True, help="Random cuts to run.")
@click.option("--seed", type=int, default=None, help="Seed of the cuts (default: random, printed).")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--shrink/--no-shrink",
    "shrinking",
    default=True,
    show_default=True,
    help="Shrink each difference to its smallest input and write it as a test file.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option(
    "--counterexamples",
    type=click.Path(file_okay=False),
    help="Folder for the test file of each difference (default: the pipeline's folder).",
)
@_trust
def verify(
    file: str,
    test_path: str | None,
    keyword: str | None,
    inputs: dict[str, str],
    variables: dict[str, str],
    splits: int,
    seed: int | None,
    fmt: str,
    output: str | None,
    shrinking: bool,
    counterexamples: str | None,
    trust: bool,
    debug: bool = False,
) -> None:
    """Stream FILE in many ways (one micro-batch, one per input step or file, --splits
    random cuts; each run of several micro-batches restarted once where a query has
    state) and compare every query with the same SQL run as a
    batch query over the same input: each test of --test (or those -k picks), or the
    files of --input.

    Exits 0 when every query is equal, 1 when one differs (its smallest input is written
    as a test file), 2 for a usage error or a pipeline that fails.
    """
    import random

    from sqlstream.testing.harness import Harness
    from sqlstream.testing.suite import test_session
    from sqlstream.testing.verify_report import FileReport
    from sqlstream.testing.verify_run import Target, from_files, from_test
    from sqlstream.testing.verify_run import verify as run_verify

    seed = random.SystemRandom().randrange(1 << 31) if seed is None else seed
    try:
        if bool(test_path) == bool(inputs):
            raise _usage("give the input with either --test FILE or --input STREAM=PATH", file)
        if splits < 0:
            raise _usage(f"--splits must be 0 or more, got {splits}", file)
        machine_read = fmt == "json" and not output
        with contextlib.redirect_stdout(sys.stderr) if machine_read else contextlib.nullcontext():
            if keyword and not test_path:
                raise _usage("-k picks tests of --test FILE; there is no --test", file)
            if test_path:
                test_file, targets = from_test(Path(test_path), variables, trusted(trust), keyword)
                if Path(file).resolve() != Path(test_file.pipeline).resolve():
                    raise _usage(f"{test_path} tests {test_file.pipeline}, not {file}", file)
            else:
                test_file = None
                pipeline, data = from_files(
                    Path(file), inputs, variables, trusted(trust), test_session
                )
                if not data.rows:
                    raise SqlStreamError(
                        "no input rows to verify with",
                        pipeline.plan.queries[0].span if pipeline.plan.queries else None,
                        pipeline.plan.source,
                        code="SS216",
                    )
                targets = [Target("", pipeline, data)]
            harness = Harness(test_session())
            click.echo(f"verify: seed {seed}", err=True)
            many = len(targets) > 1
            report = FileReport(seed, [])
            for number, target in enumerate(targets, 1):
                report.reports.append(
                    run_verify(
                        harness,
                        target.pipeline,
                        target.data,
                        splits,
                        seed,
                        Path(counterexamples) if counterexamples else None,
                        test_file,
                        target.name or None,
                        number if many else None,
                        shrinking,
                    )
                )
    except SqlStreamError as error:
        if debug:
            raise
        click.echo(error.render(), err=True)
        sys.exit(2)
    text = report.to_json() if fmt == "json" else report.text()
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
        if fmt == "json":
            click.echo(report.text(), err=True)
    else:
        click.echo(text)
    sys.exit(report.exit_code)
