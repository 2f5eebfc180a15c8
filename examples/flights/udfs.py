"""The functions of examples/flights/udfs.ssql: plain Python, run by Spark's Python workers.

``carrier_group`` and ``delay_class`` are scalar functions (one call per row);
``hhmm_to_minutes`` takes and returns a ``pandas.Series`` (one call per Arrow batch of
rows), so sqlstream registers it as a pandas UDF. Nothing here imports pyspark.
"""

from __future__ import annotations

import pandas as pd

LEGACY = {"AA", "DL", "UA", "US"}
LOW_COST = {"B6", "WN", "F9", "FL", "VX"}


def carrier_group(code):
    """``'UA'`` → ``'legacy'``, ``'B6'`` → ``'low cost'``, any other code → ``'regional'``;
    ``None`` for a missing code."""
    if code is None:
        return None
    code = code.strip().upper()
    return "legacy" if code in LEGACY else "low cost" if code in LOW_COST else "regional"


def delay_class(delay: float) -> str:
    """Minutes of departure delay → ``'early'`` (< 0), ``'on time'`` (<= 15), ``'late'``;
    ``'unknown'`` when the delay is missing (a cancelled flight)."""
    if delay is None:
        return "unknown"
    return "early" if delay < 0 else "on time" if delay <= 15 else "late"


def hhmm_to_minutes(hhmm: pd.Series) -> pd.Series:
    """Clock times written ``hhmm`` (``517`` is 05:17) → minutes after midnight (``317.0``);
    missing stays missing."""
    return (hhmm // 100) * 60 + hhmm % 100
