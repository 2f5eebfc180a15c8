"""Rows of ``sqlstream verify`` compared as multisets, doubles within the tests' relative
tolerance of ``1e-9`` (9 significant digits)."""

from __future__ import annotations

from collections import Counter

__all__ = ["diff"]


def _key(row: tuple) -> tuple:
    """A row as a comparison key: doubles rounded to 9 significant digits (the tests'
    relative tolerance of ``1e-9``)."""
    return tuple(float(f"{v:.9g}") if isinstance(v, float) and v == v else v for v in row)


def diff(want: list[tuple], got: list[tuple]) -> tuple[list[tuple], list[tuple]]:
    """``(missing, unexpected)``: the rows of ``want`` not in ``got`` and of ``got`` not in
    ``want``, as multisets."""
    a, b = Counter(map(_key, want)), Counter(map(_key, got))
    missing = [r for r in want if (a - b)[_key(r)] > 0]
    unexpected = [r for r in got if (b - a)[_key(r)] > 0]
    return _once(missing, a - b), _once(unexpected, b - a)


def _once(rows: list[tuple], counts: Counter) -> list[tuple]:
    left, out = Counter(counts), []
    for row in rows:
        if left[_key(row)] > 0:
            left[_key(row)] -= 1
            out.append(row)
    return out


def _drop(rows: list[tuple], counts: Counter) -> list[tuple]:
    """``rows`` less ``counts[key]`` rows of each key (the first ones met)."""
    left, out = Counter(counts), []
    for row in rows:
        if left[_key(row)] > 0:
            left[_key(row)] -= 1
        else:
            out.append(row)
    return out
