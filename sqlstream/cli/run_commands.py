"""The commands of ``sqlstream`` that run on Spark: ``exec`` (start a pipeline's queries
and follow them, :class:`sqlstream.Session`) and ``state`` (read the state a query keeps in
its checkpoint, :mod:`sqlstream.runtime.state_reader`). Registered on the group
:func:`sqlstream.cli.main` when :mod:`sqlstream.cli` is imported.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings

import click

from sqlstream import api
from sqlstream.cli import _common, _duration, _errors, _format, _pairs_option, main
from sqlstream.ir.context import trusted
from sqlstream.session import Session


def _exec_renderer(log_format: str, plan, say):
    """The progress renderer of ``exec``: JSON lines; a live table when stderr is a terminal
    (and no console sink writes to a terminal on stdout); plain lines otherwise."""
    from sqlstream.runtime.progress import ProgressRenderer

    if log_format == "json":
        return ProgressRenderer(say, "json")
    from sqlstream.connectors import connector

    console_on_tty = sys.stdout.isatty() and any(
        connector(q.sink.connector).prints_rows for q in plan.queries
    )
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

    return click.option(
        "--remote",
        metavar="sc://HOST:PORT",
        callback=check,
        help="Run through a Spark Connect server instead of a local "
        "driver (paths are resolved by the server).",
    )(wrapper)


def _session_options(master_help: str):
    """The session's options of the commands that start Spark: ``--master URL`` (its help
    ``master_help``), ``--remote`` (:func:`_remote_option`) and ``--conf KEY=VALUE``."""

    def decorate(command):
        command = _pairs_option(
            "--conf", "conf", "KEY=VALUE", "Spark configuration for the session (repeatable)."
        )(command)
        command = _remote_option(command)
        return click.option("--master", metavar="URL", help=master_help)(command)

    return decorate


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("query", required=False)
@_common
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    help="Root of checkpoint locations, as given to exec.",
)
@click.option(
    "--rows",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also show the first N rows of state of each store, by key.",
)
@click.option(
    "--batch-id",
    type=click.IntRange(min=0),
    metavar="N",
    help="The state as of committed batch N (Spark's batchId), not the latest.",
)
@click.option(
    "--changes-from",
    type=click.IntRange(min=0),
    metavar="N",
    help="The changes of state from batch N on, one row per put or delete "
    "(Spark's readChangeFeed); --rows shows them by batch.",
)
@click.option(
    "--changes-to",
    type=click.IntRange(min=0),
    metavar="M",
    help="With --changes-from: the last batch of changes (default: the latest).",
)
@click.option(
    "--snapshot-batch-id",
    type=click.IntRange(min=0),
    metavar="S",
    help="With --partition: rebuild that partition's state from the snapshot its "
    "state store wrote at batch S, replaying the deltas after it up to --batch-id "
    "or the latest (Spark's snapshotStartBatchId).",
)
@click.option(
    "--partition",
    type=click.IntRange(min=0),
    metavar="P",
    help="With --snapshot-batch-id: the state partition to read (Spark's snapshotPartitionId).",
)
@_format(["text", "json"], "text: tables per query; json: a list of objects.")
@_session_options("Spark master (default local[*]).")
@_errors
def state(
    file: str,
    query: str | None,
    variables: dict[str, str],
    state_dir: str | None,
    rows: int,
    batch_id: int | None,
    changes_from: int | None,
    changes_to: int | None,
    snapshot_batch_id: int | None,
    partition: int | None,
    fmt: str,
    master: str | None,
    remote: str | None,
    conf: dict[str, str],
) -> None:
    """Show the state QUERY (default: every stateful query of FILE) keeps in its
    checkpoint: stateful operators, rows of state per partition, the latest committed batch
    and its watermark, and with --rows N the first N rows (e.g. open windows and their
    partial aggregates). Read-only (Spark's state data source); works while the pipeline
    is stopped. --batch-id N reads an older batch's state, --changes-from N the changes of
    state batch by batch, --snapshot-batch-id S --partition P one partition's state rebuilt
    from an older snapshot. Options that do not go together are refused before Spark
    starts.
    """
    from sqlstream.runtime.state_options import ReadOptions

    options = ReadOptions(batch_id, changes_from, changes_to, snapshot_batch_id, partition)
    problem = options.problem()
    if problem:
        raise click.UsageError(problem)
    from sqlstream.runtime import state_reader, state_text

    plan = api.compile_file(file, variables, state_dir, trusted()).plan
    queries = state_reader.select(plan, query)
    with Session(master=master, remote=remote, conf=conf) as session:
        states = state_reader.read(session.spark_for(plan), plan, queries, rows, options)
    if fmt == "json":
        click.echo(json.dumps([s.to_dict() for s in states], indent=2))
    else:
        click.echo(state_text.render(states), nl=False)


@main.command(name="exec")
@click.argument("file", type=click.Path(dir_okay=False))
@_common
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False),
    help="Root of checkpoint locations (default: .sqlstream/checkpoints beside FILE).",
)
@click.option(
    "--available-now",
    is_flag=True,
    help="Run every query with trigger(availableNow=True): process what is there, stop.",
)
@_session_options("Spark master (default local[*]; spark://host:port for a standalone cluster).")
@click.option(
    "--packages",
    metavar="COORDS",
    help="Spark packages (group:artifact:version,…) "
    "for the session: spark.jars.packages; replaces the Kafka/Avro package exec adds.",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: a live table of every query's micro-batches on a terminal, one line "
    "per event otherwise; json: one JSON object per event (micro-batch progress, "
    "warnings, summaries). Written to stderr.",
)
@click.option(
    "--timeout",
    type=str,
    callback=_duration,
    metavar="DURATION",
    help="Stop every query cleanly after this time (30s, 5m, 1h30m; a number: seconds) and exit 0.",
)
@click.option(
    "--allow-incompatible-restart",
    is_flag=True,
    help="Start queries despite changes Spark does not allow on their checkpoints "
    "(other keys, aggregates, sources, sink path, …), at your own risk: each change "
    "is printed and the new state signature recorded.",
)
@_errors
def exec_(
    file: str,
    variables: dict[str, str],
    state_dir: str | None,
    available_now: bool,
    master: str | None,
    remote: str | None,
    conf: dict[str, str],
    packages: str | None,
    log_format: str,
    timeout: float | None,
    allow_incompatible_restart: bool,
) -> None:
    """Run every query of FILE on Spark and wait for them, showing their progress.

    Exits 0 when all queries finished (e.g. EMIT … ONCE), or after stopping them cleanly on
    Ctrl-C, SIGTERM (once or repeated) or --timeout; 1 with the failing statement and
    Spark's reason when a query fails (the others are stopped), when a query changed in
    a way Spark does not allow on its checkpoint, or when another run is using a query's
    checkpoint (nothing is started; the JVM neither).
    """
    if packages:
        conf = {**conf, "spark.jars.packages": packages}
    source = {"redact": lambda line: line}  # the plan's redaction once it is compiled

    def say(line: str) -> None:
        click.echo(source["redact"](line), err=True)

    def jvm_line(line: str) -> None:
        say(json.dumps({"event": "jvm_output", "line": line}) if log_format == "json" else line)

    from sqlstream.runtime.events import Notice
    from sqlstream.runtime.redacted_output import redacted_output
    from sqlstream.runtime.signals import StopSignals

    pipeline = api.compile_file(file, variables, state_dir, trust=True)  # it runs them
    plan = pipeline.plan
    source["redact"] = plan.source.redact
    with (
        StopSignals(restore=False),
        _exec_renderer(log_format, plan, say) as renderer,
        warnings.catch_warnings(),
    ):
        # Python warnings (PySpark 4.2+ warns about pandas 3 when it starts) are notices of
        # the renderer, so --log-format json keeps one JSON object per line
        warnings.showwarning = lambda message, category, *_: renderer(
            Notice(f"{category.__name__}: {message}")
        )
        renderer(
            Notice(
                f"sqlstream: {plan.name}: {len(plan.relations)} relations, "
                f"{len(plan.queries)} queries"
            )
        )
        for warning in plan.warnings:
            renderer(Notice(warning.render()))
        with (
            redacted_output(plan.source),
            Session(
                master=master, remote=remote, conf=conf, listeners=[renderer], jvm_output=jvm_line
            ) as session,
        ):
            session.run(
                pipeline,
                available_now,
                timeout=timeout,
                allow_incompatible_restart=allow_incompatible_restart,
            )
