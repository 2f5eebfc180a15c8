"""Lifecycle pieces without a JVM: stop signals, --timeout, rate with EMIT ONCE (SS360).

The same behaviour through a real ``sqlstream exec`` process is in tests/test_exec_process.py.
"""

from __future__ import annotations

import os
import signal

from click.testing import CliRunner

import sqlstream
from sqlstream.cli import main
from sqlstream.runner import StopSignals, empty_available_now

RATE = "CREATE STREAM ticks WITH (connector = '{connector}', {option} = 5);\n" \
       "CREATE SINK o WITH (connector = 'noop');\n" \
       "INSERT INTO o SELECT value FROM ticks{emit};\n"


def test_stop_signals_record_instead_of_ending_the_process():
    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with StopSignals() as signals:
        assert StopSignals.current() is signals
        os.kill(os.getpid(), signal.SIGTERM)  # would end the process without the handler
        os.kill(os.getpid(), signal.SIGINT)   # would raise KeyboardInterrupt
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

    assert [_duration(None, None, v) for v in ("90", "30s", "5m", "1h30m", "500ms", "1.5s")] == \
        [90, 30, 300, 5400, 0.5, 1.5]


def test_rate_with_emit_once_is_a_positioned_warning():
    text = RATE.format(connector="rate", option="rows_per_second", emit=" EMIT ONCE")
    (finding,) = sqlstream.check(text, path="ticks.ssql")
    assert (finding.code, finding.severity, finding.span.line, finding.span.column) == \
        ("SS360", "warning", 3, 39)
    assert "rate_micro_batch" in finding.hint
    # the rate-per-micro-batch source supports AvailableNow (a batch of N rows per run)
    assert sqlstream.check(RATE.format(connector="rate_micro_batch", option="rows_per_batch",
                                       emit=" EMIT ONCE")) == []
    # without EMIT ONCE, the rate source is fine; exec --available-now warns at run time
    plan = sqlstream.compile(RATE.format(connector="rate", option="rows_per_second", emit=""),
                             path="ticks.ssql").plan
    (warning,) = empty_available_now(plan)
    assert warning.code == "SS360" and warning.span.line == 3
    assert "--available-now" in warning.render()
