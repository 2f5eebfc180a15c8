"""Lifecycle pieces without a JVM: stop signals, --timeout, rate with EMIT ONCE (SS360),
the filter of the JVM's stderr.

The same behaviour through a real ``sqlstream exec`` process is in
tests/runtime/test_exec_process.py.
"""

from __future__ import annotations

import os
import signal

from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.runtime.runner import empty_available_now
from sqlstream.runtime.signals import StopSignals
from sqlstream.runtime.spark_session import JvmStderr
from tests.conftest import FIXTURES

RATE = (
    "CREATE STREAM ticks WITH (connector = '{connector}', {option} = 5);\n"
    "CREATE SINK o WITH (connector = 'noop');\n"
    "INSERT INTO o SELECT value FROM ticks{emit};\n"
)


def test_stop_signals_record_instead_of_ending_the_process():
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with StopSignals() as signals:
        assert StopSignals.current() is signals
        os.kill(os.getpid(), signal.SIGTERM)  # would end the process without the handler
        os.kill(os.getpid(), signal.SIGINT)  # would raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGINT)
        assert signals.received == ["SIGTERM", "SIGINT", "SIGINT"]
    assert StopSignals.current() is None
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == previous


def test_timeout_takes_durations_and_refuses_others(tmp_path):
    runner = CliRunner()
    path = tmp_path / "p.ssql"
    path.write_text(RATE.format(connector="rate", option="rows_per_second", emit=""))
    for bad in ("soon", "5x", "0s", "-3s", "m5", ""):
        result = runner.invoke(main, ["exec", str(path), "--timeout", bad])
        assert result.exit_code == 2, (bad, result.output)
        assert "expected a duration" in result.output or "more than 0" in result.output
    from sqlstream.cli import _duration

    assert [_duration(None, None, v) for v in ("90", "30s", "5m", "1h30m", "500ms", "1.5s")] == [
        90,
        30,
        300,
        5400,
        0.5,
        1.5,
    ]


def test_rate_with_emit_once_is_a_positioned_warning():
    text = RATE.format(connector="rate", option="rows_per_second", emit=" EMIT ONCE")
    (finding,) = sqlstream.check(text, path="ticks.ssql")
    assert (finding.code, finding.severity, finding.span.line, finding.span.column) == (
        "SS360",
        "warning",
        3,
        39,
    )
    assert "rate_micro_batch" in finding.hint
    # the rate-per-micro-batch source supports AvailableNow (a batch of N rows per run)
    assert (
        sqlstream.check(
            RATE.format(connector="rate_micro_batch", option="rows_per_batch", emit=" EMIT ONCE")
        )
        == []
    )
    # without EMIT ONCE, the rate source is fine; exec --available-now warns at run time
    plan = sqlstream.compile(
        RATE.format(connector="rate", option="rows_per_second", emit=""), path="ticks.ssql"
    ).plan
    (warning,) = empty_available_now(plan)
    assert warning.code == "SS360" and warning.span.line == 3
    assert "--available-now" in warning.render()
    # one message for both ways of running available-now (analysis/checks.py)
    assert warning.message == "query 'o': " + finding.message.replace(
        "EMIT … ONCE", "--available-now"
    )


def test_jvm_stderr_drops_start_up_noise_and_the_ivy_report():
    """:class:`sqlstream.runtime.spark_session.JvmStderr` over the stderr of a real ``spark-submit`` that
    resolved ``spark.jars.packages`` (recorded from ``sqlstream exec`` with pyspark 4.1,
    home and venv paths shortened: tests/fixtures/jvm/ivy_resolved.txt) passes none of it
    on; once the JVM started, its own lines (a stack trace too) pass. The failed
    resolution (SS510 with Ivy's reason, no stack trace) is
    tests/connectors/test_kafka_spark.py::test_exec_names_a_package_that_does_not_resolve."""
    passed = []
    output = JvmStderr(passed.append)
    recorded = (FIXTURES / "jvm" / "ivy_resolved.txt").read_text(encoding="utf-8").splitlines()
    assert any(line.startswith(":: resolution report ::") for line in recorded)
    for line in recorded:
        output.line(line)
    output.line("\tat org.apache.spark.deploy.SparkSubmit.main(SparkSubmit.scala)")  # starting
    assert passed == [] and output.unresolved == []
    output.starting = False
    after = [
        'Exception in thread "shutdown" java.lang.IllegalStateException: stopped',
        "\tat org.apache.spark.SparkContext.stop(SparkContext.scala:2300)",
    ]
    for line in after:
        output.line(line)
    assert passed == after
