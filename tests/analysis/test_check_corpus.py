"""The check corpus: every streaming rule of :mod:`sqlstream.analysis.checks` and every schema finding
of :mod:`sqlstream.analysis.schema` against Spark itself.

``tests/fixtures/check/NNN_name.ssql`` are small complete pipelines. Each starts with::

    -- <what it shows>
    -- expect: ok | SS311[, SS350 …]      codes of every finding `check` reports (errors and warnings)
    -- spark: runs | rejects | differs: <why the result differs from what the SQL means>

and, where a Spark version judges it otherwise (a rule or a function list that changed),
lines for that version (``X.Y`` one of :data:`sqlstream.ir.spark_versions.SUPPORTED`)::

    -- expect 4.3: SS353                  what `check --spark-version 4.3` reports
    -- spark 4.3: rejects                 what Spark 4.3 does

and the verdicts observed on each version, written by ``tools/probe_check_corpus.py``::

    -- probed: 4.0 runs, 4.1 runs, 4.2 runs, 4.3 rejects

Two tests per program:

* ``test_check`` (no JVM), for every supported Spark version: the codes
  :func:`sqlstream.check` returns judging for that version are the header's ``expect`` for
  it, and the header agrees with itself — a program with an error must be one Spark
  ``rejects`` or one whose result ``differs`` on that version; one without errors must
  ``runs`` — and with the ``probed`` verdict recorded for that version.
* ``test_on_spark`` (marked ``spark``): the program runs on the shared SparkSession over
  the small data of :func:`corpus_data`. ``runs``: compiled normally and started (with
  ``availableNow``, or for a few seconds for ``rate`` sources and continuous triggers); no
  query may fail, and the columns ``check`` computed for every relation and query are
  Spark's (:func:`_static_columns_agree`). ``rejects``: compiled with ``checks=False`` (rule errors become
  warnings; the query is planned with its EMIT mode, or append when no mode fits) and
  Spark must refuse it when it starts or fail it while it runs. ``differs``: compiled with
  ``checks=False``, it runs, and the difference the header names is asserted against a
  batch computation of the same SQL over the same files (:data:`DIFFERS`). The header
  read is the one for the installed Spark's version. With ``$SQLSTREAM_CORPUS_RECORD`` set
  (by ``tools/probe_check_corpus.py``), what Spark did is appended to that file first.

The agreement is counted and printed at the end of the module (and stated in docs/testing.md#agreement-with-spark).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

import sqlstream
from sqlstream.analysis.schema import UNKNOWN, spark_type
from sqlstream.diagnostics.codes import CODES
from sqlstream.diagnostics.errors import OptionError, QueryFailedError
from sqlstream.ir import spark_versions
from tests.conftest import settings_kept
from tests.support.check_corpus import (
    CHECK_VARIABLES,
    CLICKS,
    MIN_PROGRAMS,
    PROGRAMS,
    USERS,
    USERS_STRUCT,
    VIEWS,
    Program,
    json_files,
)

# Programs `check` gets wrong for a reason outside the rules, by stem, with the reason
# (marked xfail, strict: remove an entry once the program passes). None today.
KNOWN_GAPS: dict[str, str] = {}


def _ids(program: Program) -> str:
    return program.stem


def _fast_cases():
    return [
        pytest.param(p, id=p.stem, marks=pytest.mark.xfail(reason=KNOWN_GAPS[p.stem], strict=True))
        if p.stem in KNOWN_GAPS
        else pytest.param(p, id=p.stem)
        for p in PROGRAMS
    ]


# ---- fast: check() against the headers (no JVM) ------------------------------------------------


# The codes the corpus covers: the streaming rules (SS3xx, but SS352: an option Spark
# ignores), the schema findings (SS205–SS209), and SS203 for a watermark on a column that is
# not a TIMESTAMP (declared or computed). A code registered in these ranges needs a program.
# SS309 (a query over tables only) stops the plan instead, so no query reaches Spark; its
# golden file is tests/fixtures/errors/reads_no_stream.
# SS335 (FOR SYSTEM_TIME AS OF other than a lookup join) stops the rewrite: its golden files
# are tests/fixtures/rewrite/27–30 and errors/lookup_*, and tests/examples/test_joins_spark.py shows
# Spark refusing the time travel such a program would leave.
RULE_CODES = [
    c
    for c in CODES
    if ("SS300" < c < "SS352" and c not in ("SS309", "SS335"))
    or "SS205" <= c <= "SS209"
    or c == "SS203"
]


def test_corpus_covers_every_rule():
    """Every rule has a program: an error code one that Spark rejects (or runs with another
    result), a warning code one that Spark runs; and valid programs are a good part of it."""
    assert len(PROGRAMS) >= MIN_PROGRAMS
    for code in RULE_CODES:
        spark = {
            p.spark_for(v)
            for p in PROGRAMS
            for v in spark_versions.SUPPORTED
            if code in p.expect_for(v)
        }
        wanted = {"runs"} if CODES[code].severity == "warning" else {"rejects", "differs"}
        assert spark & wanted, f"{code} has no program that Spark {' or '.join(sorted(wanted))}"
    assert sum(p.spark == "runs" and not p.expect for p in PROGRAMS) >= len(PROGRAMS) // 4


@pytest.mark.parametrize("program", _fast_cases())
def test_check(program: Program):
    for version in spark_versions.SUPPORTED:
        findings = sqlstream.check(
            program.text, CHECK_VARIABLES, str(program.path), spark_version=version
        )
        codes = {f.code for f in findings}
        rendered = "\n".join(f.render() for f in findings)
        assert codes == set(program.expect_for(version)), (
            f"Spark {version}: {rendered or 'no findings'}"
        )
        errors = [f for f in findings if f.severity == "error"]
        verdict = program.spark_for(version)
        assert dict(program.probed).get(version, verdict) == verdict, (
            f"Spark {version} was probed to do otherwise: update the header"
        )
        if errors:
            assert verdict in ("rejects", "differs"), (
                f"check rejects this program for Spark {version}: Spark must reject it or give "
                "another result"
            )
            pipeline = sqlstream.compile(
                program.text,
                CHECK_VARIABLES,
                str(program.path),
                checks=False,
                spark_version=version,
            )
            for query in pipeline.plan.queries:
                assert query.output_mode_reason == "from EMIT" or "SS305" in codes, (
                    "a rejected program says its output mode (EMIT …) so Spark is asked about that mode"
                )
        else:
            assert verdict == "runs", (
                f"check accepts this program for Spark {version}: Spark must run it"
            )


# ---- Spark ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_data(tmp_path_factory) -> Path:
    """``clicks/`` and ``views/`` (JSON, 3 and 2 files), ``users.csv`` (a table) and
    ``users_struct/`` (a JSON table with struct columns).

    The click ``(u1, /a, 10:00:00)`` is in the first and the second file (a duplicate in a
    later trigger); ``u3``'s click, ``u1``'s at 10:01:10, ``u2``'s at 10:05 and ``u5``'s view
    have no partner within a minute (outer joins pad them with NULLs); the last file of
    each stream moves the event time 20 minutes on, so watermarks close the early windows.
    """
    root = tmp_path_factory.mktemp("check_corpus")
    json_files(root / "clicks", CLICKS, ("user_id", "url", "ts"))
    json_files(root / "views", VIEWS, ("user_id", "page", "ts"))
    (root / "users.csv").write_text("user_id,name\n" + "".join(f"{u},{n}\n" for u, n in USERS))
    (root / "users_struct").mkdir()
    (root / "users_struct" / "part-0.json").write_text("\n".join(USERS_STRUCT) + "\n")
    return root


@dataclass
class Outcome:
    """What Spark did with a program: ``ran``, ``rejected at start`` or ``failed at run time``."""

    status: str
    message: str = ""


def _wall_clock(pipeline) -> bool:
    """Rate sources never end, and continuous and real-time triggers would be lost to
    availableNow: run for a while."""
    sources = {r.connector for r in pipeline.plan.relations if hasattr(r, "connector")}
    return bool(sources & {"rate", "rate_micro_batch"}) or any(
        q.trigger is not None and q.trigger.kind in ("continuous", "real_time")
        for q in pipeline.plan.queries
    )


def _progressed(spark, query) -> bool:
    """A wall-clock query has processed rows (its progress says so, or its memory table)."""
    if any(p.get("numInputRows") for p in query.recentProgress or []):
        return True
    try:
        return spark.table(query.name).limit(1).count() > 0
    except Exception:  # noqa: BLE001 - not a memory sink
        return False


def _run(spark, pipeline, seconds: float = 6.0, at_least: float = 1.5) -> Outcome:
    from pyspark.errors import StreamingQueryException

    from sqlstream.runtime.binder import spark_message

    wall_clock = _wall_clock(pipeline)
    try:
        queries = pipeline.start(spark, available_now=not wall_clock)
    except (QueryFailedError, OptionError) as error:  # OptionError: Spark refused a SET
        return Outcome("rejected at start", error.message)
    try:
        if wall_clock:  # until rows went through (at least `at_least` s), at most `seconds`
            started = time.time()
            while time.time() < started + seconds and all(q.isActive for q in queries):
                if time.time() > started + at_least and all(_progressed(spark, q) for q in queries):
                    break
                time.sleep(0.2)
        else:
            for query in queries:
                with contextlib.suppress(StreamingQueryException):  # query.exception() below
                    query.awaitTermination(120)
        for query in queries:
            failure = query.exception()
            if failure is not None:
                return Outcome("failed at run time", spark_message(failure))
            if wall_clock:
                assert query.isActive, f"query {query.name} stopped without an error"
            else:
                assert not query.isActive, f"query {query.name} did not finish"
        return Outcome("ran")
    finally:
        for query in queries:
            query.stop()


def _batch(spark, pipeline):
    """The program's (only) query as a batch query over the same files: what the SQL means
    (its streams read as batches on the plan, then lowered and bound as any plan)."""
    from sqlstream.ir import plan as p
    from sqlstream.lowering.lowered import Lowered
    from sqlstream.runtime.binder import define_relations

    relations = tuple(
        dataclasses.replace(r, bounded=True) if isinstance(r, p.SourceRelation) else r
        for r in pipeline.plan.relations
    )
    batch = Lowered(dataclasses.replace(pipeline.plan, relations=relations))
    define_relations(spark, batch, lambda _: None)
    (query,) = pipeline.plan.queries
    return spark.sql(query.sql)


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _null_padded(rows: list[tuple], index: int) -> list[tuple]:
    return [r for r in rows if r[index] is None]


# Programs whose header says `differs`: run with checks=False, then show the difference.
# Columns of the join programs: c.user_id, c.url, c.ts, view_user, v.page, view_ts.


def _duplicate_written_twice(row):
    def verify(spark, program, pipeline):
        stream = _rows(spark.table(program.query_name))
        batch = _rows(_batch(spark, pipeline))
        assert len(set(stream)) == len(batch), "the same distinct rows as the batch query"
        assert len(stream) > len(batch), "but a row is written again when its duplicate arrives"
        assert stream.count(row) >= 2

    return verify


def _deduplicated(spark, program, pipeline):
    """A deduplication (dropDuplicates) writes each row once, even when its duplicate
    arrives in a later trigger: the batch query's rows. For DISTINCT ON / ROW_NUMBER, one
    row per key (the first that arrived: within one micro-batch, any of them)."""
    stream = _rows(spark.table(program.query_name))
    assert len(stream) == len(set(stream)), "no row written twice"
    if "DISTINCT ON" in program.text or "ROW_NUMBER" in program.text:
        keys = [r[0] for r in stream]
        assert len(keys) == len(set(keys)), "one row per key"
        assert {r[0] for r in stream} == {user for rows in CLICKS for user, _, _ in rows}
    else:
        assert stream == _rows(_batch(spark, pipeline)), "the batch query's rows"


def _no_null_padded(*indexes):
    def verify(spark, program, pipeline):
        stream = _rows(spark.table(program.query_name))
        batch = _rows(_batch(spark, pipeline))
        for index in indexes:
            padded = _null_padded(batch, index)
            assert padded, "the SQL means some rows are padded with NULLs"
            assert not _null_padded(stream, index), "Spark never writes them"
        assert stream, "the matched rows are written"

    return verify


def _lookup_of_future_rows(spark, program, pipeline):
    """A lookup join as of the click's time sees, per user, the latest view at or before the
    click (Flink's temporal join); joined as two streams, clicks meet views after them too."""
    stream = _rows(spark.table(program.query_name))
    views = [(u, p, t) for rows in VIEWS for u, p, t in rows]
    as_of = set()
    for user, url, ts in (click for rows in CLICKS for click in rows):
        earlier = [(t, p) for u, p, t in views if u == user and t <= ts]
        if earlier:
            as_of.add((user, url, ts, max(earlier)[1], max(earlier)[0]))
    got = {
        (u, url, ts.strftime("%H:%M:%S"), page, vts.strftime("%H:%M:%S"))
        for u, url, ts, page, vts in stream
    }
    assert any(vts > ts for _, _, ts, _, vts in got), "views later than the click are matched"
    assert got != as_of


DIFFERS = {
    "252_lookup_join_stream": _lookup_of_future_rows,
    "215_union_distinct_changes": _duplicate_written_twice(("u1",)),
    "125_ss_left_nullable_watermark_only": _no_null_padded(3),
    "132_ss_right_nullable_watermark_only": _no_null_padded(0),
    "135_ss_full_one_watermark": _no_null_padded(0, 3),
    "136_ss_full_one_bound": _no_null_padded(0),
}


def _has_null_padded(*indexes):
    """For the valid neighbours of the `differs` joins: with watermarks on both sides, the
    unmatched rows are written (so the difference above is the missing watermark's)."""

    def verify(spark, program, pipeline):
        stream = _rows(spark.table(program.query_name))
        for index in indexes:
            assert _null_padded(stream, index), f"null-padded rows in column {index}"

    return verify


def _closed_windows(end_column: int, watermark: str):
    """Chained stateful operators in append mode: the rows the batch query gives for the
    windows that end at or before the final watermark (``watermark``, the time of the last
    click minus the delay; the windows after it are still open when the input ends)."""

    def verify(spark, program, pipeline):
        stream = _rows(spark.table(program.query_name))
        limit = datetime.fromisoformat(watermark)
        batch = [r for r in _rows(_batch(spark, pipeline)) if r[end_column] <= limit]
        assert batch, "some windows are closed"
        assert stream == batch

    return verify


def _batch_rows(spark, program, pipeline):
    """The streaming result is the batch query's (a stream-static join writes every row)."""
    assert _rows(spark.table(program.query_name)) == _rows(_batch(spark, pipeline))


VERIFY = {
    "331_dedup_window_window_final": _closed_windows(1, "2024-01-01 10:20:00"),
    "250_lookup_join_table": _batch_rows,
    "251_lookup_left_join_table": _batch_rows,
    **{
        stem: _deduplicated
        for stem in (
            "075_distinct_inferred",
            "076_distinct_changes",
            "078_distinct_final",
            "204_distinct_on_stream",
            "206_qualify_stream",
            "207_distinct_on_watermark",
        )
    },
    "123_ss_left_watermarks_range": _has_null_padded(3),
    "130_ss_right_watermarks_range": _has_null_padded(0),
    "133_ss_full_watermarks_range": _has_null_padded(0, 3),
}


@pytest.fixture(scope="module")
def agreement(request):
    """Count ``check``'s verdict against Spark's and print the table when the module ends."""
    tally: dict[tuple[str, str], list[str]] = {}
    yield tally
    if not tally:
        return
    lines = [f"check corpus against Spark ({sum(map(len, tally.values()))} programs):"]
    for (verdict, spark), stems in sorted(tally.items()):
        agree = (verdict == "accepts") == (spark == "ran")
        lines.append(
            f"  check {verdict}, Spark {spark}: {len(stems)}"
            + ("" if agree else f"  DISAGREE: {', '.join(stems)}")
        )
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:  # pragma: no cover
        print("\n".join(lines))
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for line in lines:
            reporter.write_line(line)


def _static_columns_agree(spark, pipeline) -> None:
    """The columns ``check`` knows statically are Spark's: names, and types where known.

    Compared with ``df.schema`` of every relation and query of a started pipeline (its
    temporary views are registered). Spark's type names are read with the same
    :func:`~sqlstream.analysis.schema.spark_type` as declared types.
    """
    from sqlstream.ir import plan as p

    steps = [
        (r.name, r.columns, lambda r=r: spark.table(r.name))
        for r in pipeline.plan.relations
        if isinstance(r, (p.SourceRelation, p.SqlView, p.Deduplicate))
    ]
    steps += [(q.name, q.columns, lambda q=q: spark.sql(q.sql)) for q in pipeline.plan.queries]
    for name, columns, frame in steps:
        if columns is None:
            continue
        actual = [(f.name, spark_type(f.dataType.simpleString())) for f in frame().schema.fields]
        assert [n for n, _ in columns] == [n for n, _ in actual], f"{name}: column names"
        for (column, static), (_, real) in zip(columns, actual, strict=True):
            assert static in (UNKNOWN, real), f"{name}.{column}: check says {static}, Spark {real}"


SPARK_VERDICTS = {
    "ran": "ran",
    "rejected at start": "rejected it at start",
    "failed at run time": "failed it in a batch",
}


@pytest.mark.spark
@pytest.mark.parametrize("program", PROGRAMS, ids=_ids)
def test_on_spark(spark, program: Program, corpus_data, tmp_path, agreement):
    version = spark_versions.major_minor(spark.version)
    variables = {"data": str(corpus_data), "out": str(tmp_path / "out")}
    path = str(tmp_path / program.path.name)
    errors = [
        f
        for f in sqlstream.check(program.text, variables, path, spark_version=version)
        if f.severity == "error"
    ]
    verdict = program.spark_for(version)
    pipeline = sqlstream.compile(
        program.text, variables, path, checks=verdict == "runs", spark_version=version
    )
    with settings_kept(spark, pipeline):
        outcome = _run(spark, pipeline)
        record = os.environ.get("SQLSTREAM_CORPUS_RECORD")
        if record:  # tools/probe_check_corpus.py
            with open(record, "a", encoding="utf-8") as out:
                out.write(f"{program.stem} {version} {outcome.status.replace(' ', '_')}\n")
        _verify(spark, program, pipeline, outcome, agreement, errors, verdict)


def _verify(
    spark, program: Program, pipeline, outcome: Outcome, agreement, errors, verdict: str
) -> None:
    """Hold Spark's outcome to the header's ``verdict`` for this Spark, run the program's
    result check, count it."""
    spark_verdict = SPARK_VERDICTS[outcome.status]
    if verdict == "runs":
        assert outcome.status == "ran", f"check accepts it, but Spark: {outcome}"
        _static_columns_agree(spark, pipeline)
        if program.stem in VERIFY:
            VERIFY[program.stem](spark, program, pipeline)
    elif verdict == "rejects":
        assert outcome.status != "ran", "check rejects it, but Spark ran it without an error"
    else:
        assert program.stem in DIFFERS, "a `differs` program needs its check in DIFFERS"
        assert outcome.status == "ran", f"Spark does not run it ({outcome}): say 'rejects'"
        DIFFERS[program.stem](spark, program, pipeline)
        spark_verdict = "ran it with a result other than the SQL's"
    verdict = "rejects" if errors else "accepts"
    agreement.setdefault((verdict, spark_verdict), []).append(program.stem)
