"""Spark's physical plan of every query of a pipeline (``sqlstream explain --physical``),
planned in a local SparkSession without starting anything."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable

from sqlstream.lowering.lowered import Lowered
from sqlstream.runtime.binder import define_relations
from sqlstream.runtime.spark_session import create_session


def physical_plans(pipeline: Lowered, report: Callable[[str], None]) -> list[str]:
    """Spark's ``explain(mode="formatted")`` of every query of ``pipeline`` (secrets
    redacted): a local SparkSession (an active one is reused), the functions and views of
    its program defined (:func:`~sqlstream.runtime.binder.define_relations`), each query's
    SQL planned — nothing is started (``explain --physical``). Spark's notices, redacted,
    go to ``report``.

    Returns:
        One text per query of the plan, in file order, as ``DataFrame.explain`` prints it.
    """
    plan = pipeline.plan

    def say(line: str) -> None:
        report(plan.source.redact(line))

    spark, created = create_session(plan, None, {}, say)
    try:
        define_relations(spark, pipeline, say)
        plans = []
        for query in plan.queries:
            captured = io.StringIO()
            with contextlib.redirect_stdout(captured):  # DataFrame.explain prints
                # select("*"): Spark 4.1 refuses explain on spark.sql's own streaming
                # DataFrame ("must be executed with writeStream.start()"), not on one
                # derived from it; the optimizer removes the projection again
                spark.sql(plan.source.unseal(query.sql, sql=True)).select("*").explain(
                    mode="formatted"
                )
            plans.append(plan.source.redact(captured.getvalue()))
        return plans
    finally:
        if created:
            spark.stop()
