"""Floating point values of a test's expected rows against the rows a sink received
(:func:`sqlstream.testing.values.equal`): a check must be able to fail. Found by the
second probe of issue 32: with a relative tolerance, ``inf`` was "equal" to any large
finite value and to ``-inf`` (``|inf - x| <= tolerance * inf``). No JVM."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sqlstream.testing.values import equal

INF, NAN = float("inf"), float("nan")
TOLERANCES = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(st.floats(allow_nan=False, allow_infinity=False), TOLERANCES)
def test_an_infinity_equals_no_finite_value(finite: float, tolerance: float):
    for infinity in (INF, -INF):
        assert not equal(infinity, finite, tolerance)
        assert not equal(finite, infinity, tolerance)


@given(TOLERANCES)
def test_an_infinity_equals_itself_only(tolerance: float):
    assert equal(INF, INF, tolerance) and equal(-INF, -INF, tolerance)
    assert not equal(INF, -INF, tolerance) and not equal(-INF, INF, tolerance)
    assert not equal(INF, NAN, tolerance) and not equal(NAN, -INF, tolerance)
    assert equal(NAN, NAN, tolerance)


@given(
    st.floats(min_value=0, max_value=1e300),
    st.floats(min_value=0, max_value=0.1),
)
def test_finite_values_within_the_relative_tolerance(value: float, tolerance: float):
    assert equal(value, value, tolerance) and equal(-value, -value, tolerance)
    assert not equal(value, NAN, tolerance)
    other = value * (1 + 3 * tolerance) + max(1.0, value * 1e-12)  # beyond the tolerance
    assert not equal(value, other, tolerance) and not equal(-other, -value, tolerance)
    assert equal(value, value * (1 + tolerance / 2), tolerance)
    assert equal((1.7e308, "a"), (1.7e308, "a"), tolerance)
    assert not equal((INF, "a"), (1.7e308, "a"), tolerance)  # inside rows too
