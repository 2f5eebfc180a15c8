"""The compiler's reason for a difference ``sqlstream verify`` finds in a query: the
arrival-order warnings of ``check`` (``SS361``, ``SS362``,
:mod:`sqlstream.analysis.arrival_order`) nearest to the query in the plan."""

from __future__ import annotations

from sqlstream.ir import plan as p
from sqlstream.testing.pipeline import PipelineUnderTest

__all__ = ["reason"]


def reason(pipeline: PipelineUnderTest, query: p.Query) -> str | None:
    """The compiler's explanation of a difference in ``query``: its ``SS361`` / ``SS362``
    warnings (:mod:`sqlstream.analysis.arrival_order`) in the statement of the query or in
    a view it reads (by the span of the statement), else the file's."""
    found = [w for w in pipeline.plan.warnings if getattr(w, "code", None) in ("SS361", "SS362")]
    if not found:
        return None
    inside = [
        w for w in found if w.span and query.span.start <= w.span.start < max(query.span.end, 1)
    ]
    views = {r.name.lower() for r in query.reads}
    near = inside or [
        w
        for w in found
        if any(
            isinstance(r, p.SqlView)
            and r.name.lower() in views
            and w.span
            and r.span.start <= w.span.start < r.span.end
            for r in pipeline.plan.relations
        )
    ]
    chosen = near or found
    return "; ".join(
        f"{w.code} (line {w.span.line if w.span else '?'}): {w.message}" for w in chosen
    )
