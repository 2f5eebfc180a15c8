"""The ``sqlstream`` command: thin click commands over the API.

Exit codes: 0 success, 1 an error in the pipeline or a failed query, 2 a usage error.
Errors print ``path:line:col: CODE message``, the line and a caret — never a traceback
(``--debug`` re-raises for developers).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import sys
import threading
import warnings
from pathlib import Path

import click

import sqlstream
from sqlstream.diagnostics.errors import SqlStreamError


def _parse_pairs(ctx, param, values) -> dict[str, str]:
    pairs = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", ctx, param)
        pairs[key.strip()] = value
    return pairs


def _common(command):
    """Options shared by every command that compiles a file."""
    command = click.option(
        "--var", "variables", multiple=True, callback=_parse_pairs, metavar="NAME=VALUE",
        help="Value for ${NAME} in the file (repeatable).",
    )(command)
    command = click.option("--debug", is_flag=True, hidden=True,
                           help="Show Python tracebacks (for developers).")(command)
    return command


def _errors(command):
    """Print SqlStreamError for users and exit 1; unexpected errors say how to report them."""

    @functools.wraps(command)
    def wrapper(*args, debug=False, **kwargs):
        try:
            return command(*args, **kwargs)
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
            click.echo(f"internal error: {type(error).__name__}: {error}\n"
                       "  this is a bug in sqlstream; rerun with --debug for the traceback",
                       err=True)
            sys.exit(1)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(sqlstream.__version__, prog_name="sqlstream")
def main() -> None:
    """Compile streaming SQL (.ssql) pipelines and run them on Spark Structured Streaming."""


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@click.option("--to", "target", type=click.Choice(["text", "pyspark"]), default="text",
              show_default=True,
              help="text: the binding calls with comments; pyspark: a standalone PySpark script.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to this file.")
@click.option("--master", metavar="URL", help="--to pyspark: the script's Spark master "
              "(default local[*]).")
@click.option("--conf", "conf", multiple=True, callback=_parse_pairs, metavar="KEY=VALUE",
              help="--to pyspark: Spark configuration of the script's session (repeatable).")
@click.option("--available-now", is_flag=True,
              help="--to pyspark: every query with trigger(availableNow=True).")
@_errors
def translate(file: str, variables: dict[str, str], target: str, output: str | None,
              master: str | None, conf: dict[str, str], available_now: bool) -> None:
    """Print the PySpark calls that run FILE (no JVM is started).

    --to text (default): per statement, its columns, Spark SQL and readStream/writeStream
    calls. --to pyspark: the same calls as a Python script that runs without sqlstream,
    with the session defaults of exec; secrets from ${env:…} are shown as ***.
    """
    pipeline = sqlstream.compile_file(file, variables)
    if target == "pyspark":
        text = pipeline.to_pyspark(master, conf, available_now)
    else:
        text = pipeline.translate()
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _spark_version(ctx, param, value):
    """``--spark-version``: a supported major.minor (``4.2``; ``4.2.1`` is read as ``4.2``)."""
    from sqlstream.frontend import spark_versions

    if value is None:
        return None
    found = spark_versions.supported(value)
    if found is None:
        raise click.BadParameter(
            f"'{value}' is not a supported Spark version ({', '.join(spark_versions.SUPPORTED)})")
    return found


def _check_text(text: str, variables: dict[str, str], path: str, spark_version: str | None = None):
    """``(findings, queries)``: every finding, and each query's output mode, why, columns
    and state signature (secrets redacted), judged for Spark ``spark_version``."""
    findings, plan = sqlstream.check_plan(text, variables, path, spark_version=spark_version)
    queries = [{"name": q.name, "output_mode": q.output_mode,
                "output_mode_reason": q.output_mode_reason,
                "columns": None if q.columns is None else [{"name": n, "type": t} for n, t in q.columns],
                "state": None if q.state is None else plan.source.redact_value(dataclasses.asdict(q.state))}
               for q in (plan.queries if plan else ())]
    return findings, queries


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_common
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: one block per finding; json: one document.")
@click.option("--strict", is_flag=True, help="Warnings fail the check too.")
@click.option("--spark-version", metavar="X.Y", callback=_spark_version,
              help="Judge for this Spark version (4.0 … 4.3; overrides SET "
                   "'sqlstream.spark_version'; default: the installed PySpark's).")
@_errors
def check(files: tuple[str, ...], variables: dict[str, str], fmt: str, strict: bool,
          spark_version: str | None) -> None:
    """Check FILES without running them (no JVM): report every finding of every file.

    Exit 0: no errors (warnings are printed); 1: errors (or warnings with --strict).
    """
    report, failed = [], False
    for file in files:
        try:
            text = sqlstream.read_file(file)
        except SqlStreamError as error:
            findings, queries = [error], []
        else:
            findings, queries = _check_text(text, variables, file, spark_version)
        failed = failed or any(f.severity == "error" or strict for f in findings)
        report.append((file, findings, queries))
    if fmt == "json":
        click.echo(json.dumps([
            {"path": file, "findings": [f.to_dict() for f in findings], "queries": queries}
            for file, findings, queries in report], indent=2))
    else:
        for file, findings, queries in report:
            for finding in findings:  # the report itself: stdout, like other linters
                click.echo(finding.render())
            errors = sum(f.severity == "error" for f in findings)
            warnings = len(findings) - errors
            click.echo(f"{file}: " + (f"{errors} error(s), {warnings} warning(s)"
                                      if findings else "ok"))
            for query in queries:
                click.echo(f"  query {query['name']}: {query['output_mode']} "
                           f"({query['output_mode_reason']})")
    if failed:
        sys.exit(1)


@contextlib.contextmanager
def _redacted_output(source):
    """While the block runs, everything written to file descriptors 1 and 2 — by Python,
    and by the Spark JVM started in the block, which inherits them for good (its log
    lines, uncaught exceptions, console sink rows; PySpark's own loggers) — passes through
    a pipe whose reader replaces the pipeline's secrets with ``***``
    (:meth:`~sqlstream.diagnostics.source_text.Source.redact`) before it reaches the terminal. Nothing to do
    when the pipeline has no secret. A line is held until its ``\\n`` or ``\\r`` (so a
    secret cannot be split between two writes), at most 64 KiB."""
    if not source.secrets:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pumps = []
    for fd in (1, 2):
        saved = os.dup(fd)
        read, write = os.pipe()
        os.dup2(write, fd)
        os.close(write)
        pump = threading.Thread(target=_pump, args=(read, saved, source.redact), daemon=True,
                                name=f"sqlstream-redact-{fd}")
        pump.start()
        pumps.append((fd, saved))
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        # Python writes directly again; the JVM keeps writing into the pipes until it exits
        for fd, saved in pumps:
            os.dup2(saved, fd)


def _pump(read: int, out: int, redact) -> None:
    pending = b""
    while chunk := os.read(read, 65536):
        pending += chunk
        cut = max(pending.rfind(b"\n"), pending.rfind(b"\r")) + 1
        if not cut and len(pending) > 65536:
            cut = len(pending)
        if cut:
            text = redact(pending[:cut].decode("utf-8", "replace"))
            os.write(out, text.encode("utf-8"))
            pending = pending[cut:]
    if pending:
        os.write(out, redact(pending.decode("utf-8", "replace")).encode("utf-8"))
    os.close(read)
    os.close(out)


def _physical_plans(plan) -> list[str]:
    """Spark's ``explain(mode="formatted")`` of every query of ``plan`` (secrets redacted):
    a local SparkSession (an active one is reused), the plan's views defined, each query's
    SQL planned — nothing is started. Spark's notices go to stderr."""
    import io

    from sqlstream.runtime.binder import define_relations
    from sqlstream.runtime.spark_session import create_session

    def say(line: str) -> None:
        click.echo(plan.source.redact(line), err=True)

    spark, created = create_session(plan, None, {}, say)
    try:
        define_relations(spark, plan, say)
        plans = []
        for query in plan.queries:
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):  # DataFrame.explain prints
                # select("*"): Spark 4.1 refuses explain on spark.sql's own streaming
                # DataFrame ("must be executed with writeStream.start()"), not on one
                # derived from it; the optimizer removes the projection again
                spark.sql(query.sql).select("*").explain(mode="formatted")
            plans.append(plan.source.redact(captured.getvalue()))
        return plans
    finally:
        if created:
            spark.stop()


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: a block per query; json: a list of objects.")
@click.option("--physical", is_flag=True,
              help="Add Spark's explain(mode='formatted') plan of each query (starts a "
              "local SparkSession; no query is started).")
@_errors
def explain(file: str, variables: dict[str, str], fmt: str, physical: bool) -> None:
    """Explain each query of FILE: output mode and trigger with the reason, stateful
    operators and their state keys, watermarks, sources and sink with options (secrets
    as ***). No JVM unless --physical.
    """
    from sqlstream.lowering.explain import describe, render

    plan = sqlstream.compile_file(file, variables).plan
    described = describe(plan)
    with _redacted_output(plan.source):
        plans = _physical_plans(plan) if physical else None
    if fmt == "json":
        if plans is not None:
            described = [{**d, "physical_plan": text} for d, text in zip(described, plans)]
        click.echo(json.dumps(described, indent=2))
    else:
        click.echo(render(described, plans), nl=False)


def _duration(ctx, param, value) -> float | None:
    """``--timeout``: ``90`` (seconds), ``30s``, ``5m``, ``2h``, ``1h30m``, ``500ms`` → seconds."""
    if value is None:
        return None
    import re

    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
    text = value.strip().lower().replace(" ", "")
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?", text)
    if not text or "".join(n + u for n, u in parts) != text or (len(parts) > 1 and not all(u for _, u in parts)):
        raise click.BadParameter(f"expected a duration such as 30s, 5m, 1h30m or 90, got {value!r}",
                                 ctx, param)
    seconds = sum(float(n) * units[u or "s"] for n, u in parts)
    if seconds <= 0:
        raise click.BadParameter(f"the duration must be more than 0, got {value!r}", ctx, param)
    return seconds


def _exec_renderer(log_format: str, plan, say):
    """The progress renderer of ``exec``: JSON lines; a live table when stderr is a terminal
    (and no console sink writes to a terminal on stdout); plain lines otherwise."""
    from sqlstream.runtime.progress import ProgressRenderer

    if log_format == "json":
        return ProgressRenderer(say, "json")
    from sqlstream.connectors import connector

    console_on_tty = sys.stdout.isatty() and any(connector(q.sink.connector).prints_rows
                                                 for q in plan.queries)
    if sys.stderr.isatty() and not console_on_tty:
        from rich.console import Console

        return ProgressRenderer(say, "live", console=Console(stderr=True))
    return ProgressRenderer(say, "plain")


def _remote_option(command):
    """``--remote sc://host:port``: run through Spark Connect (not with ``--master``)."""

    def check(ctx, param, value):
        if value and not value.startswith("sc://"):
            raise click.BadParameter(f"expected sc://host:port, got {value!r}", ctx, param)
        return value

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        if kwargs.get("remote") and kwargs.get("master"):
            raise click.UsageError("--master and --remote exclude each other")
        return command(*args, **kwargs)

    return click.option("--remote", metavar="sc://HOST:PORT", callback=check,
                        help="Run through a Spark Connect server instead of a local "
                        "driver (paths are resolved by the server).")(wrapper)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("query", required=False)
@_common
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Root of checkpoint locations, as given to exec.")
@click.option("--rows", type=click.IntRange(min=0), default=0, show_default=True,
              help="Also show the first N rows of state of each store, by key.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: tables per query; json: a list of objects.")
@click.option("--master", metavar="URL", help="Spark master (default local[*]).")
@_remote_option
@click.option("--conf", "conf", multiple=True, callback=_parse_pairs, metavar="KEY=VALUE",
              help="Spark configuration for the session (repeatable).")
@_errors
def state(file: str, query: str | None, variables: dict[str, str], state_dir: str | None,
          rows: int, fmt: str, master: str | None, remote: str | None,
          conf: dict[str, str]) -> None:
    """Show the state QUERY (default: every stateful query of FILE) keeps in its
    checkpoint: stateful operators, rows of state per partition, the latest committed batch
    and its watermark, and with --rows N the first N rows (e.g. open windows and their
    partial aggregates). Read-only (Spark's state data source); works while the pipeline
    is stopped.
    """
    from sqlstream.runtime import state_reader

    plan = sqlstream.compile_file(file, variables, state_dir).plan
    queries = state_reader.select(plan, query)
    with sqlstream.Session(master=master, remote=remote, conf=conf) as session:
        states = state_reader.read(session.spark_for(plan), plan, queries, rows)
    if fmt == "json":
        click.echo(json.dumps([s.to_dict() for s in states], indent=2))
    else:
        click.echo(state_reader.render(states), nl=False)


@main.command(name="exec")
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@click.option("--state-dir", type=click.Path(file_okay=False),
              help="Root of checkpoint locations (default: .sqlstream/checkpoints beside FILE).")
@click.option("--available-now", is_flag=True,
              help="Run every query with trigger(availableNow=True): process what is there, stop.")
@click.option("--master", metavar="URL", help="Spark master (default local[*]; "
              "spark://host:port for a standalone cluster).")
@_remote_option
@click.option("--conf", "conf", multiple=True, callback=_parse_pairs, metavar="KEY=VALUE",
              help="Spark configuration for the session (repeatable).")
@click.option("--packages", metavar="COORDS", help="Spark packages (group:artifact:version,…) "
              "for the session: spark.jars.packages; replaces the Kafka/Avro package exec adds.")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="text: a live table of every query's micro-batches on a terminal, one line "
              "per event otherwise; json: one JSON object per event (micro-batch progress, "
              "warnings, summaries). Written to stderr.")
@click.option("--timeout", type=str, callback=_duration, metavar="DURATION",
              help="Stop every query cleanly after this time (30s, 5m, 1h30m; a number: "
              "seconds) and exit 0.")
@click.option("--allow-incompatible-restart", is_flag=True,
              help="Start queries despite changes Spark does not allow on their checkpoints "
              "(other keys, aggregates, sources, sink path, …), at your own risk: each change "
              "is printed and the new state signature recorded.")
@_errors
def exec_(file: str, variables: dict[str, str], state_dir: str | None, available_now: bool,
          master: str | None, remote: str | None, conf: dict[str, str], packages: str | None,
          log_format: str, timeout: float | None, allow_incompatible_restart: bool) -> None:
    """Run every query of FILE on Spark and wait for them, showing their progress.

    Exits 0 when all queries finished (e.g. EMIT … ONCE), or after stopping them cleanly on
    Ctrl-C, SIGTERM (once or repeated) or --timeout; 1 with the failing statement and
    Spark's reason when a query fails (the others are stopped), or when a query changed in
    a way Spark does not allow on its checkpoint (nothing is started).
    """
    from sqlstream.runtime.events import Notice
    from sqlstream.runtime.runner import StopSignals

    pipeline = sqlstream.compile_file(file, variables, state_dir)
    plan = pipeline.plan
    if packages:
        conf = {**conf, "spark.jars.packages": packages}

    def say(line: str) -> None:
        click.echo(plan.source.redact(line), err=True)

    def jvm_line(line: str) -> None:
        say(json.dumps({"event": "jvm_output", "line": line}) if log_format == "json" else line)

    with StopSignals(restore=False), _exec_renderer(log_format, plan, say) as renderer, \
            warnings.catch_warnings():
        # Python warnings (PySpark 4.2+ warns about pandas 3 when it starts) are notices of
        # the renderer, so --log-format json keeps one JSON object per line
        warnings.showwarning = lambda message, category, *_: renderer(
            Notice(f"{category.__name__}: {message}"))
        renderer(Notice(f"sqlstream: {plan.name}: {len(plan.relations)} relations, "
                        f"{len(plan.queries)} queries"))
        for warning in plan.warnings:
            renderer(Notice(warning.render()))
        with _redacted_output(plan.source), sqlstream.Session(
                master=master, remote=remote, conf=conf, listeners=[renderer],
                jvm_output=jvm_line) as session:
            session.run(pipeline, available_now, timeout=timeout,
                        allow_incompatible_restart=allow_incompatible_restart)


if __name__ == "__main__":  # pragma: no cover
    main()
