"""The parts of ``sqlstream verify`` that need no Spark: the runs planned from a seed, the
row diff, delta debugging, a run restricted to some rows, the oracle's SQL for a keep-first
deduplication, and the usage errors (exit 2, positioned)."""

from __future__ import annotations

from click.testing import CliRunner

from sqlstream.cli import main
from sqlstream.ir import plan as p
from sqlstream.testing.oracle import batch_plan, keep_first_sql
from sqlstream.testing.pipeline import Read, compile_pipeline
from sqlstream.testing.shrink import ddmin, restrict
from sqlstream.testing.verify import Input, Run, diff, plan_runs
from tests.conftest import FIXTURES

VERIFY = FIXTURES / "verify"


def test_runs_are_seeded_cuts_of_the_input_in_arrival_order():
    data = Input([("s", (i,)) for i in range(7)], [[0, 1, 2], [3], [4, 5, 6]])
    runs = plan_runs(data, 3, seed=11)
    assert [r.name for r in runs] == ["one-batch", "per-step", "split-1", "split-2", "split-3"]
    assert runs[0].batches == ((0, 1, 2, 3, 4, 5, 6),)
    assert runs[1].batches == ((0, 1, 2), (3,), (4, 5, 6))
    assert runs[0].restart is None  # one micro-batch: no boundary with a batch after it
    for run in runs:
        assert [i for b in run.batches for i in b] == list(range(7))
    for run in runs[1:]:  # restarted after a micro-batch that has another after it
        assert run.restart is not None and 0 <= run.restart < len(run.batches) - 1
    assert all(2 <= len(r.batches) <= 5 for r in runs[2:])
    assert plan_runs(data, 3, seed=11) == runs
    assert plan_runs(data, 3, seed=12) != runs
    # a query without state is not restarted: the same cuts, no restart
    stateless = plan_runs(data, 3, seed=11, restarts=False)
    assert [r.batches for r in stateless] == [r.batches for r in runs]
    assert all(r.restart is None for r in stateless)


def test_a_run_identical_to_an_earlier_one_is_not_run_again():
    # one input step: per-step is the one-batch run (one micro-batch, no restart)
    one_step = Input([("s", (i,)) for i in range(3)], [[0, 1, 2]])
    assert [r.name for r in plan_runs(one_step, 0, seed=1)] == ["one-batch"]
    # one row: every cut is that one micro-batch
    one_row = Input([("s", (0,))], [[0]])
    assert [r.name for r in plan_runs(one_row, 4, seed=1)] == ["one-batch"]
    # two rows in two steps: a cut drawn twice is run once
    two = Input([("s", (0,)), ("s", (1,))], [[0], [1]])
    runs = plan_runs(two, 4, seed=1)
    assert [r.name for r in runs] == ["one-batch", "per-step"]
    assert runs[1] == Run("per-step", ((0,), (1,)), 0)


def test_diff_is_a_multiset_difference_within_the_tolerance():
    missing, unexpected = diff(
        [("a", 1.0), ("a", 1.0), ("b", 2.0)], [("a", 1.0 + 1e-12), ("c", 3.0)]
    )
    assert missing == [("a", 1.0), ("b", 2.0)]
    assert unexpected == [("c", 3.0)]
    assert diff([("x", 0.1 + 0.2)], [("x", 0.3)]) == ([], [])


def test_ddmin_finds_the_rows_that_together_fail_within_its_budget():
    calls = []

    def fails(rows):
        calls.append(rows)
        return 3 in rows and 8 in rows

    budget = [50]
    assert ddmin(list(range(10)), fails, budget) == [3, 8]
    assert budget[0] == 50 - len(calls)
    tight = [2]
    assert len(ddmin(list(range(10)), fails, tight)) > 2 and tight[0] == 0


def test_a_restricted_run_keeps_its_restart_after_the_batches_left():
    run = Run("split-1", ((0, 1), (2,), (3, 4)), 1)
    assert restrict(run, {0, 3}) == Run("split-1", ((0,), (3,)), 0)
    assert restrict(run, {2, 4}) == Run("split-1", ((2,), (4,)), 0)
    assert restrict(run, {4}) == Run("split-1", ((4,),), None)


def test_the_oracle_runs_a_keep_first_by_event_time_as_row_number():
    pipeline = compile_pipeline(VERIFY / "first_flight.ssql", {})
    (dedup,) = [r for r in pipeline.plan.relations if isinstance(r, p.Deduplicate)]
    assert dedup.order == "time_hour" and dedup.keys == ("origin",)
    sql = keep_first_sql(dedup)
    assert "ROW_NUMBER() OVER (PARTITION BY `origin` ORDER BY `time_hour`)" in sql
    plan = batch_plan(pipeline, Read("json", "/nowhere"), {})
    assert all(r.bounded for r in plan.relations if isinstance(r, p.SourceRelation))
    (view,) = [r for r in plan.relations if r.name == dedup.name]
    assert isinstance(view, p.SqlView) and view.sql == sql


def test_usage_errors_exit_2_at_the_pipeline():
    ssql = str(VERIFY / "first_flight.ssql")
    runner = CliRunner()
    neither = runner.invoke(main, ["verify", ssql])
    assert neither.exit_code == 2
    assert "SS218" in neither.stderr and "first_flight.ssql:1:1" in neither.stderr
    negative = runner.invoke(main, ["verify", ssql, "--input", "flights=x", "--splits", "-1"])
    assert negative.exit_code == 2 and "SS218" in negative.stderr
    other = runner.invoke(main, ["verify", ssql, "--test", str(VERIFY / "random_sample.test.yaml")])
    assert other.exit_code == 2 and "SS218" in other.stderr and "random_sample" in other.stderr


def test_an_input_for_an_undeclared_stream_or_a_missing_path_exits_2(tmp_path):
    ssql = str(VERIFY / "first_flight.ssql")
    runner = CliRunner()
    unknown = runner.invoke(main, ["verify", ssql, "--input", f"flight={tmp_path}"])
    assert unknown.exit_code == 2
    assert "SS217" in unknown.stderr and "no stream 'flight'" in unknown.stderr
    missing = runner.invoke(main, ["verify", ssql, "--input", f"flights={tmp_path}/none"])
    assert missing.exit_code == 2 and "SS217" in missing.stderr
    assert "first_flight.ssql:3:1" in missing.stderr  # at the stream's CREATE STREAM


def test_update_mode_keys_are_the_aggregations_grouping_keys_from_the_plan():
    from sqlstream.testing.loading import load
    from sqlstream.testing.verify_keys import key_names

    def keys(stem: str, query: str):
        _, pipelines = load(FIXTURES / "spark_suites" / f"{stem}.test.yaml")
        plan = next(iter(pipelines.values())).plan
        return key_names(plan, next(q for q in plan.queries if q.name == query))

    # window and word (the count is the aggregate)
    assert keys("guide_late_data", "updated_counts") == ["window_start", "window_end", "word"]
    # a function of the window key is a key column; an alias of a key too
    assert keys("watermark", "updated") == ["start"]
    assert keys("dedup", "sums") == ["str"]
    # a query that does not aggregate has no grouping key
    assert keys("dedup", "first_per_key") is None


def test_k_picks_tests_of_the_test_file_and_exits_2_when_none_matches():
    from sqlstream.testing.verify_run import from_test

    suite = FIXTURES / "spark_suites" / "dedup.test.yaml"
    _, every = from_test(suite, {}, False)
    assert len(every) == 5 and all(t.data.rows for t in every)
    _, picked = from_test(suite, {}, False, "WithinWatermarkSuite")
    assert [t.name for t in picked] == [t.name for t in every if "WithinWatermark" in t.name]
    runner = CliRunner()
    ssql = str(FIXTURES / "spark_suites" / "dedup.ssql")
    none = runner.invoke(main, ["verify", ssql, "--test", str(suite), "-k", "no such test"])
    assert none.exit_code == 2
    assert "SS216" in none.stderr and "no test whose name contains 'no such test'" in none.stderr
    alone = runner.invoke(main, ["verify", ssql, "--input", "words=x", "-k", "a"])
    assert alone.exit_code == 2 and "SS218" in alone.stderr
