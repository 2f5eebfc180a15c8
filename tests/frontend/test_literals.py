"""Durations as Spark reads them and as a command line takes them: one parser
(:mod:`sqlstream.frontend.literals`) for both."""

from __future__ import annotations

import pytest

from sqlstream.frontend.literals import Duration, duration, seconds


def test_duration_reads_spark_duration_strings():
    assert duration("1 hour 30 minutes") == Duration(0, 0, 5_400_000_000)
    assert duration("interval 2 days") == Duration(0, 2, 0)
    assert duration("1.5 seconds") == Duration(0, 0, 1_500_000)
    with pytest.raises(ValueError, match="only seconds"):
        duration("1.5 hours")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90", 90),
        ("30s", 30),
        ("5m", 300),
        ("1h30m", 5400),
        ("500ms", 0.5),
        ("1.5h", 5400),
        ("1d", 86_400),
        ("5 minutes", 300),  # Spark's own spelling, read by duration()
        ("1 day 1 second", 86_401),
    ],
)
def test_seconds_takes_the_short_form_and_spark_durations(text, expected):
    assert seconds(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("soon", "cannot read"),
        ("m5", "cannot read"),
        ("1m30", "cannot read"),  # a unit on every term of several
        ("", "no amount"),
        ("0s", "not more than 0"),
        ("-3 seconds", "not more than 0"),
        ("1 month", "months or years"),
    ],
)
def test_seconds_refuses_what_is_no_length_of_time(text, why):
    with pytest.raises(ValueError, match=why):
        seconds(text)
