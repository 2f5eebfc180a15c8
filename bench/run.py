"""Benchmarks for sqlstream (not tests: nothing here runs under pytest).

1. Job ratio: the flights example (``examples/flights/hourly_delays.ssql``) through
   sqlstream against the same job written by hand in PySpark
   (``bench/handwritten_flights.py``), on the same copy of the data, each run into fresh
   output and checkpoint directories under ``bench/out/run/``, alternated round by
   round (sqlstream, handwritten | handwritten, sqlstream | ...) so that machine load
   and warm-up trends hit both:

   a. in-process: one shared SparkSession (local[2], equal shuffle partitions, UI off,
      UTC); ``sqlstream.compile_file(...)`` + ``pipeline.start(spark)`` +
      ``awaitTermination`` against ``handwritten_flights.run(...)``;
   b. end-to-end CLI: ``sqlstream exec FILE --state-dir DIR --available-now`` against
      ``python bench/handwritten_flights.py ...``, each a subprocess with its own JVM.

   Prints the median wall seconds and the ratio sqlstream / handwritten (goal <= 1.05),
   with CPU seconds (JVM + Python) beside them, and checks that both produced the same
   rows (count + exceptAll both ways). The CLI runs come first, so that no other JVM of
   this script is alive during them; the in-process session then checks all outputs.

2. translate latency: ``sqlstream translate FILE`` as a process for every ``.ssql`` under
   ``examples/`` and ``tests/fixtures/translate/`` (median of ``--repeat`` runs; goal
   < 0.3 s), with ``python -c pass`` and ``python -c "import sqlstream"`` as baselines.

Run from anywhere with the project's interpreter, e.g.::

    .venv/bin/python bench/run.py --rounds 3            # all 365 days
    .venv/bin/python bench/run.py --rounds 1 --days 31  # quick

Standard library + pyspark only.
"""

from __future__ import annotations

import argparse
import calendar
import ctypes
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "flights" / "hourly_delays.ssql"
DAY_FILES = REPO / "examples" / "flights" / "data" / "flights"
OUT = REPO / "bench" / "out" / "run"
HANDWRITTEN = REPO / "bench" / "handwritten_flights.py"
TRANSLATE_DIRS = [REPO / "examples", REPO / "tests" / "fixtures" / "translate"]

MASTER = "local[2]"
SHUFFLE_PARTITIONS = 2
# The example's maxFilesPerTrigger; the hand-written job is given the same value.
MAX_FILES_PER_TRIGGER = 31
RATIO_GOAL = 1.05
TRANSLATE_GOAL = 0.3

sys.path.insert(0, str(HANDWRITTEN.parent))  # import handwritten_flights


def fmt(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f}"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def load1() -> float:
    return os.getloadavg()[0]


def say(text: str = "") -> None:
    print(text, flush=True)


# --------------------------------------------------------------------------- data


def prepare_data(days: int | None) -> Path:
    """Copy the first ``days`` day files to bench/out/run/data/flights, mtime = their date.

    Spark's file source takes files in modification-time order; a copy gets "now" as
    mtime, so each copy's mtime is set to midnight UTC of its date (as prepare_data.py
    --touch does for the originals), otherwise days can be read out of order and dropped
    as late data.
    """
    files = sorted(DAY_FILES.glob("*.csv"))
    if days is not None:
        files = files[:days]
    if not files:
        raise SystemExit(f"no day files in {DAY_FILES}")
    target = OUT / "data" / "flights"
    target.mkdir(parents=True)
    for src in files:
        dst = target / src.name
        shutil.copyfile(src, dst)
        stamp = calendar.timegm(time.strptime(src.stem, "%Y-%m-%d"))
        os.utime(dst, (stamp, stamp))
    return target


def sqlstream_workdir(name: str, data_root: Path) -> Path:
    """A fresh directory holding a copy of the example and a ``data`` symlink.

    The example's relative paths (``data/flights``, ``out/hourly``) are resolved against
    the folder of the file, so the copy reads the shared data copy and writes its own
    ``out/hourly``. The symlink's target files keep their mtimes.
    """
    work = OUT / name
    work.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, work / EXAMPLE.name)
    # data_root is .../data/flights; the example reads data/flights beside the file.
    os.symlink(data_root.parent.resolve(), work / "data", target_is_directory=True)
    return work


# --------------------------------------------------------------------------- results


@dataclass
class Run:
    impl: str  # "sqlstream" | "handwritten"
    round: int
    seconds: float
    load_before: float
    output: Path
    cpu: float | None = None  # CPU seconds (user + system) of the JVM and Python, if known
    batches: int | None = None
    input_rows: int | None = None
    note: str = ""


@dataclass
class Mode:
    name: str
    runs: list[Run] = field(default_factory=list)

    def times(self, impl: str) -> list[float]:
        return [r.seconds for r in self.runs if r.impl == impl]

    def median(self, impl: str) -> float | None:
        times = self.times(impl)
        return statistics.median(times) if times else None

    def cpu_median(self, impl: str) -> float | None:
        cpus = [r.cpu for r in self.runs if r.impl == impl]
        return statistics.median(cpus) if cpus and None not in cpus else None

    def paired_ratios(self) -> list[float]:
        """sqlstream / handwritten per round: the two runs of a round ran back to back."""
        ratios = []
        for rnd in sorted({r.round for r in self.runs}):
            pair = {r.impl: r.seconds for r in self.runs if r.round == rnd}
            if {"sqlstream", "handwritten"} <= set(pair):
                ratios.append(pair["sqlstream"] / pair["handwritten"])
        return ratios


def progress_totals(query) -> tuple[int, int]:
    progress = query.recentProgress or []
    return len(progress), sum(int(p.get("numInputRows", 0)) for p in progress)


def proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def session_cpu_seconds(spark) -> float | None:
    """CPU seconds used so far by the session's JVM plus this Python process."""
    proc = getattr(
        spark.sparkContext._gateway, "proc", None
    )  # None if the JVM was not launched here
    jvm = proc_cpu_seconds(proc.pid) if proc is not None else None
    return None if jvm is None else jvm + time.process_time()


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux prctl PR_SET_CHILD_SUBREAPER).

    PySpark does not wait for its JVM: when a job's Python process exits, the JVM is
    orphaned and its CPU time never reaches RUSAGE_CHILDREN. As a subreaper this process
    inherits the JVM and can reap it, so the CPU time of each CLI run is complete.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap_orphans(timeout: float = 60.0) -> None:
    """Wait (up to ``timeout`` s) for every adopted descendant, e.g. a JVM shutting down.

    Only called while this process has no children of its own (the CLI runs come
    before the in-process SparkSession is created).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.05)


# --------------------------------------------------------------------------- in-process


def make_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(MASTER)
        .appName("sqlstream-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def inprocess_sqlstream(spark, name: str, data_root: Path) -> tuple[float, Path, int, int]:
    import sqlstream

    work = sqlstream_workdir(name, data_root)
    cpu0 = session_cpu_seconds(spark)
    started = time.perf_counter()
    pipeline = sqlstream.compile_file(work / EXAMPLE.name, state_dir=str(work / "state"))
    queries = pipeline.start(spark)
    for query in queries:
        query.awaitTermination()
    elapsed = time.perf_counter() - started
    cpu1 = session_cpu_seconds(spark)
    for query in queries:
        if query.exception() is not None:
            raise SystemExit(f"sqlstream query failed: {query.exception()}")
    (query,) = queries
    batches, rows = progress_totals(query)
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return elapsed, cpu, work / "out" / "hourly", batches, rows


def inprocess_handwritten(spark, name: str, data_root: Path) -> tuple[float, Path, int, int]:
    import handwritten_flights

    work = OUT / name
    work.mkdir(parents=True)
    out = work / "out" / "hourly"
    cpu0 = session_cpu_seconds(spark)
    started = time.perf_counter()
    query = handwritten_flights.run(
        spark, data_root, out, work / "checkpoint", MAX_FILES_PER_TRIGGER
    )
    elapsed = time.perf_counter() - started
    cpu1 = session_cpu_seconds(spark)
    if query.exception() is not None:
        raise SystemExit(f"handwritten query failed: {query.exception()}")
    batches, rows = progress_totals(query)
    cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return elapsed, cpu, out, batches, rows


def round_order(jobs: list[tuple[str, object]], rnd: int) -> list[tuple[str, object]]:
    """A B, B A, A B, ...: alternate who goes first, so that a trend over the run
    (a JVM still warming up, load rising or falling) does not favour one side."""
    return jobs if rnd % 2 == 1 else jobs[::-1]


def bench_inprocess(spark, data_root: Path, rounds: int, warmup_days: int) -> Mode:
    mode = Mode("in-process")
    if warmup_days:
        # The first streaming queries of a JVM pay for class loading and JIT (a 31-day
        # warm-up still left round 1 ~1.5x slower than round 3); run both jobs once,
        # untimed, on the first warmup_days days (default: all of them).
        warm = OUT / "warmup" / "data" / "flights"
        warm.mkdir(parents=True)
        for src in sorted(data_root.glob("*.csv"))[:warmup_days]:
            os.link(src, warm / src.name)  # a hard link keeps the mtime
        started = time.perf_counter()
        inprocess_sqlstream(spark, "warmup/sqlstream", warm)
        inprocess_handwritten(spark, "warmup/handwritten", warm)
        say(
            f"  warm-up ({warmup_days} days, both jobs, untimed): {time.perf_counter() - started:.1f} s"
        )
    for rnd in range(1, rounds + 1):
        jobs = [("sqlstream", inprocess_sqlstream), ("handwritten", inprocess_handwritten)]
        for impl, job in round_order(jobs, rnd):
            before = load1()
            elapsed, cpu, out, batches, rows = job(spark, f"inproc/{impl}_r{rnd}", data_root)
            mode.runs.append(Run(impl, rnd, elapsed, before, out, cpu, batches, rows))
            say(
                f"  round {rnd} {impl:<11} {elapsed:7.2f} s wall, {fmt(cpu)} s CPU  ({batches} "
                f"micro-batches, {rows} input rows, load1 before {before:.2f})"
            )
    return mode


# --------------------------------------------------------------------------- CLI


def sqlstream_command() -> list[str]:
    beside = Path(sys.executable).parent / "sqlstream"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("sqlstream")
    if found:
        return [found]
    return [sys.executable, "-m", "sqlstream.cli"]


def timed_process(
    command: list[str], log: Path, subreaper: bool
) -> tuple[float, float | None, int]:
    """Run ``command``; wall seconds until it exits, CPU seconds of it and its descendants.

    The wall time stops when the command exits (what a user waits for); the CPU time
    also counts a JVM that outlives it (only known when this process is a subreaper).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with open(log, "wb") as sink:
        done = subprocess.run(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    elapsed = time.perf_counter() - started
    if subreaper:
        reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (
        (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) if subreaper else None
    )
    return elapsed, cpu, done.returncode


def cli_sqlstream(
    name: str, data_root: Path, subreaper: bool
) -> tuple[float, float | None, Path, str]:
    work = sqlstream_workdir(name, data_root)
    command = sqlstream_command() + [
        "exec",
        str(work / EXAMPLE.name),
        "--state-dir",
        str(work / "state"),
        "--available-now",
        "--master",
        MASTER,
        "--conf",
        f"spark.sql.shuffle.partitions={SHUFFLE_PARTITIONS}",
    ]
    elapsed, cpu, code = timed_process(command, work / "exec.log", subreaper)
    text = (work / "exec.log").read_text(errors="replace")
    if code != 0:
        raise SystemExit(
            f"sqlstream exec failed ({code}), see {work / 'exec.log'}:\n{text[-2000:]}"
        )
    found = re.search(r"finished: (\d+) micro-batches, (\d+) input rows", text)
    note = f"{found.group(1)} micro-batches, {found.group(2)} input rows" if found else ""
    return elapsed, cpu, work / "out" / "hourly", note


def cli_handwritten(
    name: str, data_root: Path, subreaper: bool
) -> tuple[float, float | None, Path, str]:
    work = OUT / name
    work.mkdir(parents=True)
    out = work / "out" / "hourly"
    command = [
        sys.executable,
        str(HANDWRITTEN),
        "--data",
        str(data_root),
        "--out",
        str(out),
        "--checkpoint",
        str(work / "checkpoint"),
        "--max-files-per-trigger",
        str(MAX_FILES_PER_TRIGGER),
        "--master",
        MASTER,
        "--shuffle-partitions",
        str(SHUFFLE_PARTITIONS),
        "--no-count",
    ]
    elapsed, cpu, code = timed_process(command, work / "run.log", subreaper)
    text = (work / "run.log").read_text(errors="replace")
    if code != 0:
        raise SystemExit(
            f"handwritten job failed ({code}), see {work / 'run.log'}:\n{text[-2000:]}"
        )
    found = re.search(r"done in ([\d.]+)s", text)
    note = f"streaming part {found.group(1)} s" if found else ""
    return elapsed, cpu, out, note


def bench_cli(data_root: Path, rounds: int) -> Mode:
    mode = Mode("CLI (process)")
    subreaper = become_subreaper()
    for rnd in range(1, rounds + 1):
        jobs = [("sqlstream", cli_sqlstream), ("handwritten", cli_handwritten)]
        for impl, job in round_order(jobs, rnd):
            before = load1()
            elapsed, cpu, out, note = job(f"cli/{impl}_r{rnd}", data_root, subreaper)
            mode.runs.append(Run(impl, rnd, elapsed, before, out, cpu, note=note))
            say(
                f"  round {rnd} {impl:<11} {elapsed:7.2f} s wall, {fmt(cpu)} s CPU  "
                f"({note}; load1 before {before:.2f})"
            )
    return mode


# --------------------------------------------------------------------------- checks


def compare_outputs(spark, mode: Mode) -> list[str]:
    """Each round's sqlstream output against the same round's hand-written output."""
    from pyspark.sql import functions as F

    warnings = []
    for rnd in sorted({r.round for r in mode.runs}):
        pair = {r.impl: r for r in mode.runs if r.round == rnd}
        if set(pair) != {"sqlstream", "handwritten"}:
            continue
        ours = spark.read.parquet(str(pair["sqlstream"].output))
        theirs = spark.read.parquet(str(pair["handwritten"].output))
        if ours.columns != theirs.columns:
            warnings.append(
                f"WARNING: {mode.name} round {rnd}: columns differ: {ours.columns} vs {theirs.columns}"
            )
            continue
        if ours.schema != theirs.schema:
            warnings.append(
                f"WARNING: {mode.name} round {rnd}: schemas differ: "
                f"{ours.schema.simpleString()} vs {theirs.schema.simpleString()}"
            )
        n_ours, n_theirs = ours.count(), theirs.count()
        missing, extra = theirs.exceptAll(ours).count(), ours.exceptAll(theirs).count()
        line = (
            f"{mode.name} round {rnd}: sqlstream {n_ours} rows, handwritten {n_theirs} rows, "
            f"{extra} only in sqlstream, {missing} only in handwritten"
        )
        if n_ours != n_theirs or missing or extra:
            rounded = [
                df.withColumn("avg_dep_delay", F.round("avg_dep_delay", 9)) for df in (ours, theirs)
            ]
            still = (
                rounded[0].exceptAll(rounded[1]).count() + rounded[1].exceptAll(rounded[0]).count()
            )
            warnings.append(
                f"WARNING: {line} ({still} rows differ with avg_dep_delay rounded to 9 digits)"
            )
        else:
            say(f"  ok: {line}")
        if n_ours == 0:
            warnings.append(f"WARNING: {mode.name} round {rnd}: no output rows")
    for warning in warnings:
        say(f"  {warning}")
    return warnings


# --------------------------------------------------------------------------- translate


# What tests/lowering/test_golden.py gives the fixtures (some fail to compile without them).
TRANSLATE_VARS = ["--var", "dir=/data", "--var", "threshold=15"]
TRANSLATE_ENV = {"SECRET_TOKEN": "s3cr3t-value"}


def median_process_time(command: list[str], repeat: int) -> tuple[float, float, int]:
    times, code = [], 0
    env = {**os.environ, **TRANSLATE_ENV}
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(
            command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        times.append(time.perf_counter() - started)
        code = code or done.returncode
    return statistics.median(times), min(times), code


def bench_translate(repeat: int) -> list[tuple[str, float, float, int]]:
    rows = []
    for label, command in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ('python -c "import sqlstream"', [sys.executable, "-c", "import sqlstream"]),
    ):
        rows.append((label, *median_process_time(command, repeat)))
    files = []
    for folder in TRANSLATE_DIRS:
        files += sorted(
            f for f in folder.rglob("*.ssql") if "out" not in f.relative_to(folder).parts
        )
    for ssql in files:
        label = f"sqlstream translate {ssql.relative_to(REPO)}"
        command = sqlstream_command() + ["translate", *TRANSLATE_VARS, str(ssql.relative_to(REPO))]
        rows.append((label, *median_process_time(command, repeat)))
    return rows


# --------------------------------------------------------------------------- report


def ratio_table(modes: list[Mode]) -> list[str]:
    lines = [
        "| measurement | sqlstream median wall (s) | handwritten median wall (s) | **ratio** (medians) "
        "| median of per-round ratios | min wall sqlstream / handwritten (s) "
        "| median CPU sqlstream / handwritten (s) | CPU ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for mode in modes:
        ours, theirs = mode.median("sqlstream"), mode.median("handwritten")
        if ours is None or theirs is None:
            continue
        ratio = ours / theirs
        flag = "" if ratio <= RATIO_GOAL else " (over goal)"
        paired = statistics.median(mode.paired_ratios())
        cpu_ours, cpu_theirs = mode.cpu_median("sqlstream"), mode.cpu_median("handwritten")
        cpu_ratio = f"{cpu_ours / cpu_theirs:.3f}" if cpu_ours and cpu_theirs else "?"
        lines.append(
            f"| {mode.name} | {ours:.2f} | {theirs:.2f} | **{ratio:.3f}**{flag} | {paired:.3f} "
            f"| {min(mode.times('sqlstream')):.2f} / {min(mode.times('handwritten')):.2f} "
            f"| {fmt(cpu_ours)} / {fmt(cpu_theirs)} | {cpu_ratio} |"
        )
    lines.append("")
    lines.append(
        "all runs, in order (wall s, sqlstream / handwritten per round, load1 before each):"
    )
    for mode in modes:
        for rnd in sorted({r.round for r in mode.runs}):
            pair = {r.impl: r for r in mode.runs if r.round == rnd}
            lines.append(
                f"  {mode.name} round {rnd}: "
                + " / ".join(
                    f"{pair[i].seconds:.2f} (load {pair[i].load_before:.1f})"
                    for i in ("sqlstream", "handwritten")
                    if i in pair
                )
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="alternating sqlstream/handwritten rounds per measurement (default 3)",
    )
    parser.add_argument(
        "--days", type=int, default=None, help="use only the first N day files (default: all 365)"
    )
    parser.add_argument(
        "--warmup-days",
        type=int,
        default=None,
        help="days for the untimed in-process warm-up of both jobs "
        "(0: none; default: the same days as the timed runs)",
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per translate/import timing (median; default 5)"
    )
    parser.add_argument("--skip-inprocess", action="store_true", help="skip the in-process ratio")
    parser.add_argument("--skip-cli", action="store_true", help="skip the end-to-end CLI ratio")
    parser.add_argument("--skip-translate", action="store_true", help="skip translate latency")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    say(f"sqlstream benchmarks, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC")
    say(
        f"machine: {os.cpu_count()} cores, {platform.platform()}, Python {platform.python_version()}"
    )
    try:
        import pyspark

        say(
            f"pyspark {pyspark.__version__}, master {MASTER}, "
            f"spark.sql.shuffle.partitions={SHUFFLE_PARTITIONS}, maxFilesPerTrigger={MAX_FILES_PER_TRIGGER}"
        )
    except ImportError:
        pass
    say(f"load average (1/5/15 min) at start: {load()}")

    modes: list[Mode] = []
    warnings: list[str] = []
    run_job = not (args.skip_inprocess and args.skip_cli)
    if run_job:
        if OUT.exists():
            shutil.rmtree(OUT)
        data_root = prepare_data(args.days)
        n_files = len(list(data_root.glob("*.csv")))
        say(
            f"\n== job ratio: {EXAMPLE.relative_to(REPO)} vs {HANDWRITTEN.relative_to(REPO)}, "
            f"{n_files} day files, {args.rounds} rounds =="
        )
        say(f"data copy (mtimes = dates): {data_root.relative_to(REPO)}")
        cli_mode = None
        if not args.skip_cli:
            # CLI first, so that the in-process session (started afterwards) is not an
            # extra JVM during the CLI runs; it then also checks the CLI outputs.
            say(
                f"\n-- (b) end-to-end CLI: sqlstream exec vs python {HANDWRITTEN.relative_to(REPO)} "
                "(own JVM each) --"
            )
            say(f"load average before: {load()}")
            cli_mode = bench_cli(data_root, args.rounds)
            say(f"load average after: {load()}")
        spark = make_session()
        try:
            inproc_mode = None
            if not args.skip_inprocess:
                say(
                    "\n-- (a) in-process: one SparkSession, compile_file+start vs handwritten_flights.run --"
                )
                say(f"load average before: {load()}")
                inproc_mode = bench_inprocess(
                    spark,
                    data_root,
                    args.rounds,
                    n_files if args.warmup_days is None else min(args.warmup_days, n_files),
                )
                say(f"load average after: {load()}")
            say("\n-- output check (same rows: count + exceptAll both ways) --")
            for mode in (inproc_mode, cli_mode):
                if mode is not None:
                    modes.append(mode)
                    warnings += compare_outputs(spark, mode)
        finally:
            spark.stop()

    translate_rows = []
    if not args.skip_translate:
        say(
            f"\n== translate latency (median of {args.repeat} process runs; goal < {TRANSLATE_GOAL} s) =="
        )
        say(f"load average before: {load()}")
        translate_rows = bench_translate(args.repeat)

    say(
        f"\n== summary ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {os.cpu_count()} cores, "
        f"load average now {load()}) =="
    )
    if modes:
        say("")
        for line in ratio_table(modes):
            say(line)
        say(f"\nratio goal: <= {RATIO_GOAL}")
    if translate_rows:
        say("\n| command | median (s) | min (s) | exit |")
        say("| --- | ---: | ---: | ---: |")
        for label, median, fastest, code in translate_rows:
            over = "" if label.startswith("python") or median < TRANSLATE_GOAL else " (over goal)"
            say(f"| `{label}` | {median:.3f}{over} | {fastest:.3f} | {code} |")
    for warning in warnings:
        say(warning)
    say(f"\ntotal bench time {time.perf_counter() - started:.0f} s")
    return 1 if warnings else 0


if __name__ == "__main__":
    sys.exit(main())
