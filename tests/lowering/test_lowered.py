"""A compiled pipeline is its plan and its program, lowered once: ``check`` never lowers,
``translate`` and the runtime read the same :class:`~sqlstream.ir.calls.Program` object."""

from __future__ import annotations

import sqlstream
from sqlstream.lowering import lowered

TEXT = """CREATE STREAM s (a INT, ts TIMESTAMP)
    WITH (connector = 'files', path = 'in', format = 'json');
CREATE SINK o WITH (connector = 'console');
INSERT INTO o SELECT a FROM s EMIT EVERY INTERVAL '10' SECONDS;
"""


def _counted(monkeypatch) -> list:
    calls: list = []
    real = lowered.lower
    monkeypatch.setattr(lowered, "lower", lambda plan: calls.append(plan) or real(plan))
    return calls


def test_check_does_not_lower(monkeypatch):
    calls = _counted(monkeypatch)
    assert sqlstream.check(TEXT) == []
    sqlstream.compile(TEXT)
    assert calls == []


def test_the_program_is_lowered_once_and_is_what_translate_prints(monkeypatch):
    from sqlstream.lowering.printer import render_program

    calls = _counted(monkeypatch)
    pipeline = sqlstream.compile(TEXT)
    text = pipeline.translate()
    program = pipeline.program
    assert calls == [pipeline.plan]
    assert pipeline.program is program
    assert text == render_program(program)
    pipeline.to_pyspark()
    assert len(calls) == 1


def test_available_now_is_a_pipeline_with_its_own_program():
    pipeline = sqlstream.compile(TEXT)
    once = pipeline.available_now()
    assert isinstance(once, sqlstream.Pipeline)
    assert once.plan == pipeline.plan.available_now()
    assert "trigger(processingTime='10 seconds')" in pipeline.translate()
    assert "trigger(availableNow=True)" in once.translate()
    assert once.program is not pipeline.program
