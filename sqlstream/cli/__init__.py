"""The ``sqlstream`` command: thin click commands over the API.

This module holds the group (:func:`main`), the options shared by the commands and the
commands that compile without running (``translate``, ``check``, ``explain``, ``graph``,
``lsp``, ``test``); :mod:`sqlstream.cli.run_commands` holds those that run a pipeline's
queries or read their checkpoints on Spark (``exec``, ``state``). ``python -m
sqlstream.cli`` runs it (:mod:`sqlstream.cli.__main__`).

Exit codes: 0 success, 1 an error in the pipeline or a failed query, 2 a usage error.
Errors print ``path:line:col: CODE message``, the line and a caret — never a traceback
(``--debug`` re-raises for developers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import sys
from pathlib import Path

import click

from sqlstream import api
from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend.literals import seconds
from sqlstream.ir.context import trusted


def _parse_pairs(ctx, param, values) -> dict[str, str]:
    pairs = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", ctx, param)
        pairs[key.strip()] = value
    return pairs


def _pairs_option(flag: str, dest: str, metavar: str, help: str):
    """A repeatable ``FLAG NAME=VALUE`` option, into the dict parameter ``dest``."""
    return click.option(
        flag, dest, multiple=True, callback=_parse_pairs, metavar=metavar, help=help
    )


def _common(command):
    """Options shared by every command that compiles a file."""
    command = _pairs_option(
        "--var", "variables", "NAME=VALUE", "Value for ${NAME} in the file (repeatable)."
    )(command)
    command = click.option(
        "--debug", is_flag=True, hidden=True, help="Show Python tracebacks (for developers)."
    )(command)
    return command


def _trust(command):
    """``--trust``: the project's Python modules may be imported (their code runs); also
    ``SQLSTREAM_TRUST=1`` (:func:`sqlstream.ir.context.trusted`)."""
    return click.option(
        "--trust",
        is_flag=True,
        help="Trust the project: import the Python modules the file names (CREATE "
        "FUNCTION, foreach_batch) to check them, which runs their code (also "
        "SQLSTREAM_TRUST=1). Default: no code of the project runs.",
    )(command)


def _format(choices: list[str], help: str):
    """``--format``: one of ``choices`` (the first is the default), into the ``fmt``
    parameter; the one declaration of the option every command shares."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=choices[0],
        show_default=True,
        help=help,
    )


def _errors(command):
    """Print SqlStreamError for users and exit 1; unexpected errors say how to report them."""

    @functools.wraps(command)
    def wrapper(*args, debug=False, **kwargs):
        try:
            return command(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click prints them: usage errors exit 2, file errors 1
        except SqlStreamError as error:
            if debug:
                raise
            click.echo(error.render(), err=True)
            sys.exit(1)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except Exception as error:  # noqa: BLE001 - last resort: no traceback for users
            if debug:
                raise
            click.echo(
                f"internal error: {type(error).__name__}: {error}\n"
                "  this is a bug in sqlstream; rerun with --debug for the traceback",
                err=True,
            )
            sys.exit(1)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sqlstream", prog_name="sqlstream")
def main() -> None:
    """Compile streaming SQL (.ssql) pipelines and run them on Spark Structured Streaming."""


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@click.option(
    "--to",
    "target",
    type=click.Choice(["text", "pyspark"]),
    default="text",
    show_default=True,
    help="text: the binding calls with comments; pyspark: a standalone PySpark script.",
)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to this file.")
@click.option(
    "--master", metavar="URL", help="--to pyspark: the script's Spark master (default local[*])."
)
@click.option(
    "--conf",
    "conf",
    multiple=True,
    callback=_parse_pairs,
    metavar="KEY=VALUE",
    help="--to pyspark: Spark configuration of the script's session (repeatable).",
)
@click.option(
    "--available-now",
    is_flag=True,
    help="--to pyspark: every query with trigger(availableNow=True).",
)
@_trust
@_errors
def translate(
    file: str,
    variables: dict[str, str],
    target: str,
    output: str | None,
    master: str | None,
    conf: dict[str, str],
    available_now: bool,
    trust: bool,
) -> None:
    """Print the PySpark calls that run FILE (no JVM is started).

    --to text (default): per statement, its columns, Spark SQL and readStream/writeStream
    calls. --to pyspark: the same calls as a Python script that runs without sqlstream,
    with the session defaults of exec; secrets from ${env:…} are shown as ***.
    """
    pipeline = api.compile_file(file, variables, trust=trusted(trust))
    if target == "pyspark":
        text = pipeline.to_pyspark(master, conf, available_now)
    else:
        text = pipeline.translate()
    if output:
        _write(output, text)
    else:
        click.echo(text, nl=False)


def _write(path: str, text: str | bytes) -> None:
    """Write ``text`` to ``path`` (UTF-8 for a ``str``; bytes as they are).

    Raises:
        click.FileError: the file cannot be written (a missing folder, no permission, a full
            disk: the operating system's reason); click prints it and exits 1.
    """
    try:
        if isinstance(text, bytes):
            with open(path, "wb") as handle:
                handle.write(text)
        else:
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as error:
        raise click.FileError(path, hint=error.strerror or str(error)) from None


def _spark_version(ctx, param, value):
    """``--spark-version``: a supported major.minor (``4.2``; ``4.2.1`` is read as ``4.2``)."""
    from sqlstream.ir import spark_versions

    if value is None:
        return None
    found = spark_versions.supported(value)
    if found is None:
        raise click.BadParameter(
            f"'{value}' is not a supported Spark version ({', '.join(spark_versions.SUPPORTED)})"
        )
    return found


def _check_text(
    text: str,
    variables: dict[str, str],
    path: str,
    spark_version: str | None = None,
    trust: bool = False,
):
    """``(findings, queries, expectations)``: every finding, each query's output mode,
    why, columns and state signature, and the expectations of each stream and sink
    (:func:`~sqlstream.lowering.expectation_listing.guarded`), secrets redacted, judged
    for Spark ``spark_version``."""
    from sqlstream.lowering.expectation_listing import guarded

    findings, plan = api.check_plan(text, variables, path, spark_version, trust)
    queries = (
        [
            {
                "name": q.name,
                "output_mode": q.output_mode,
                "output_mode_reason": q.output_mode_reason,
                "columns": None
                if q.columns is None
                else [{"name": n, "type": t} for n, t in q.columns],
                "state": None
                if q.state is None
                else plan.source.redact_value(dataclasses.asdict(q.state)),
            }
            for q in plan.queries
        ]
        if plan is not None
        else []
    )
    return findings, queries, guarded(plan) if plan is not None else []


def _expectations_text(guarded_relation: dict) -> str:
    """The lines of check's summary for one stream's or sink's expectations (a
    :func:`~sqlstream.lowering.expectation_listing.guarded` entry): a head line, then one
    ``name EXPECT (condition) [ON VIOLATION …]`` line per rule."""
    from sqlstream.lowering.expectation_listing import rule_line

    rules = guarded_relation["expectations"]
    lines = [
        f"  {guarded_relation['kind']} {guarded_relation['relation']}: {len(rules)} expectation(s)"
    ]
    lines += [f"    {rule_line(rule)}" for rule in rules]
    return "\n".join(lines)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_common
@_format(["text", "json"], "text: one block per finding; json: one document.")
@click.option("--strict", is_flag=True, help="Warnings fail the check too.")
@click.option(
    "--spark-version",
    metavar="X.Y",
    callback=_spark_version,
    help="Judge for this Spark version (4.0 … 4.3; overrides SET "
    "'sqlstream.spark_version'; default: the installed PySpark's).",
)
@_trust
@_errors
def check(
    files: tuple[str, ...],
    variables: dict[str, str],
    fmt: str,
    strict: bool,
    spark_version: str | None,
    trust: bool,
) -> None:
    """Check FILES without running them (no JVM): report every finding of every file.

    Exit 0: no errors (warnings are printed); 1: errors (or warnings with --strict).
    """
    report, failed = [], False
    for file in files:
        try:
            text = api.read_pipeline(file, trusted(trust))
        except SqlStreamError as error:
            findings, queries, rules = [error], [], []
        else:
            findings, queries, rules = _check_text(
                text, variables, file, spark_version, trusted(trust)
            )
        failed = failed or any(f.severity == "error" or strict for f in findings)
        report.append((file, findings, queries, rules))
    if fmt == "json":
        click.echo(
            json.dumps(
                [
                    {
                        "path": file,
                        "findings": [f.to_dict() for f in findings],
                        "queries": queries,
                        "expectations": rules,
                    }
                    for file, findings, queries, rules in report
                ],
                indent=2,
            )
        )
    else:
        for file, findings, queries, rules in report:
            for finding in findings:  # the report itself: stdout, like other linters
                click.echo(finding.render())
            errors = sum(f.severity == "error" for f in findings)
            warnings = len(findings) - errors
            click.echo(
                f"{file}: " + (f"{errors} error(s), {warnings} warning(s)" if findings else "ok")
            )
            for query in queries:
                click.echo(
                    f"  query {query['name']}: {query['output_mode']} "
                    f"({query['output_mode_reason']})"
                )
            for guarded_relation in rules:
                click.echo(_expectations_text(guarded_relation))
    if failed:
        sys.exit(1)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@_format(["text", "json"], "text: a block per query; json: a list of objects.")
@click.option(
    "--physical",
    is_flag=True,
    help="Add Spark's explain(mode='formatted') plan of each query (starts a "
    "local SparkSession; no query is started).",
)
@_trust
@_errors
def explain(file: str, variables: dict[str, str], fmt: str, physical: bool, trust: bool) -> None:
    """Explain each query of FILE: output mode and trigger with the reason, stateful
    operators and their state keys, watermarks, sources and sink with options (secrets
    as ***). No JVM unless --physical.
    """
    from sqlstream.lowering.explain import describe, render

    # --physical defines the program's functions in a session, as exec does: it trusts
    pipeline = api.compile_file(file, variables, trust=trusted(trust) or physical)
    plan = pipeline.plan
    described = describe(plan)
    from sqlstream.runtime.redacted_output import redacted_output

    with redacted_output(plan.source):
        if physical:
            from sqlstream.runtime.physical_plans import physical_plans
        plans = (
            physical_plans(pipeline, lambda line: click.echo(line, err=True)) if physical else None
        )
    if fmt == "json":
        if plans is not None:
            described = [
                {**d, "physical_plan": text} for d, text in zip(described, plans, strict=True)
            ]
        click.echo(json.dumps(described, indent=2))
    else:
        click.echo(render(described, plans), nl=False)


def _duration(ctx, param, value) -> float | None:
    """``--timeout``: ``90`` (seconds), ``30s``, ``5m``, ``2h``, ``1h30m``, ``500ms`` or a
    Spark duration string (``'5 minutes'``) → seconds
    (:func:`sqlstream.frontend.literals.seconds`)."""
    if value is None:
        return None
    try:
        return seconds(value)
    except ValueError as error:
        raise click.BadParameter(
            f"expected a duration such as 30s, 5m, 1h30m or 90: {error}", ctx, param
        ) from None


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@_format(
    ["svg", "png", "dot", "mermaid", "html"],
    "svg/png: drawn by Graphviz; dot: its input; mermaid: for Markdown; "
    "html: a self-contained page with the SVG.",
)
@click.option(
    "--output", "-o", type=click.Path(dir_okay=False), help="Write to this file (default: stdout)."
)
@_trust
@_errors
def graph(file: str, variables: dict[str, str], fmt: str, output: str | None, trust: bool) -> None:
    """Draw FILE's pipeline: sources -> views -> queries -> sinks, each query with its
    output mode, trigger and stateful operators, each stream with its watermark (no JVM;
    svg, png and html need Graphviz's dot program).
    """
    from sqlstream.graph.model import build
    from sqlstream.graph.render import GraphvizMissing, render

    try:
        plan = api.compile_file(file, variables, trust=trusted(trust)).plan
        data = render(build(plan), fmt)
    except GraphvizMissing as error:
        raise click.ClickException(str(error)) from None
    if output:
        _write(output, data)
    else:
        click.echo(data, nl=False)


@main.command()
@click.option(
    "--var",
    "var_file",
    type=click.Path(dir_okay=False, exists=True),
    help="A file of NAME=VALUE lines: values for ${NAME} in every document "
    "(the sqlstream.variables setting of the editor adds to them).",
)
@_trust
def lsp(var_file: str | None, trust: bool) -> None:
    """Run the language server on stdin/stdout (for editors: diagnostics as you type,
    hover, completion, go to definition, references, outline, rename). Untrusted, it
    imports no module of the project, unless the client's initializationOptions say
    {"trust": true}."""
    from sqlstream.lsp.server import serve

    serve(var_file, trusted(trust))


@main.command(name="test")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-k", "keyword", metavar="TEXT", help="Run the tests whose name contains TEXT.")
@_common
@_format(["text", "json", "junit"], "Report format (junit: JUnit XML for CI systems).")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option(
    "--record",
    is_flag=True,
    help="Write the actual results into the test files "
    "as their expectations (review the change like code).",
)
@_trust
@_errors
def test(
    paths: tuple[str, ...],
    keyword: str | None,
    variables: dict[str, str],
    fmt: str,
    output: str | None,
    record: bool,
    trust: bool,
) -> None:
    """Run pipeline tests (*.test.yaml files in PATHS, default: the current directory),
    micro-batch by micro-batch on one local SparkSession.

    Exits 0 when every test passed, 1 when a test failed, 2 for a usage error or a test
    file with errors.
    """
    import time

    from sqlstream.testing import report, suite

    started = time.monotonic()
    # a JSON or JUnit report on stdout is machine-read: what the pipelines' code prints
    # while the tests run goes to stderr
    machine_read = fmt != "text" and not output
    try:
        with contextlib.redirect_stdout(sys.stderr) if machine_read else contextlib.nullcontext():
            results = suite.run(
                paths or (".",),
                keyword,
                variables,
                record=record,
                trust=trusted(trust),
                on_result=lambda r: click.echo(report.result_line(r), err=fmt != "text"),
            )
    except SqlStreamError as error:
        click.echo(error.render(), err=True)
        sys.exit(2)
    seconds = time.monotonic() - started
    render = {"text": report.text, "json": report.to_json, "junit": report.junit}[fmt]
    if output:
        Path(output).write_text(render(results, seconds), encoding="utf-8")
        if fmt != "text":
            click.echo(report.text(results, seconds), err=True)
    else:
        click.echo(render(results, seconds))
    sys.exit(suite.exit_code(results))


# the commands that run on Spark, registered on main by importing them
from sqlstream.cli import run_commands, verify_command  # noqa: E402, F401
