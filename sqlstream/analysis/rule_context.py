"""What a streaming rule sees of one query (:class:`Context`), what it yields
(:class:`Finding`) and the two questions most rules ask first (:func:`stateful`,
:func:`watermarked`): shared by the output-mode inference (:mod:`sqlstream.analysis.output_modes`),
the streaming rules (:mod:`sqlstream.analysis.checks`) and real-time mode's rules
(:mod:`sqlstream.analysis.realtime`). A finding carries its code and the node to point at;
the compiler places it in the file (its severity is the code's, registered in
:mod:`sqlstream.diagnostics.codes`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlstream.analysis.facts import QueryInfo
from sqlstream.analysis.operators import Operators
from sqlstream.diagnostics.codes import code


@dataclass(frozen=True)
class Finding:
    """One rule violation.

    Attributes:
        code: the rule's stable code (``SS3xx``); its severity is the registry's
            (:mod:`sqlstream.diagnostics.codes`).
        message: what is wrong, one sentence.
        hint: how to fix it, one sentence.
        node: the sqlglot node to point at, or ``None`` (the query, or ``at``).
        at: ``"emit"`` to point at the EMIT clause, ``"query"`` for the whole query.
    """

    code: str
    message: str
    hint: str
    node: exp.Expr | None = None
    at: str = "query"

    @property
    def severity(self) -> str:
        """``error`` or ``warning``, from the code's registry entry."""
        return code(self.code).severity


@dataclass(frozen=True)
class Context:
    """What the rules see of one query.

    Attributes:
        info, ops: facts from :func:`sqlstream.analysis.facts.analyze` and
            :func:`sqlstream.analysis.operators.collect_operators`.
        mode: the output mode in force; ``requested``: whether it came from ``EMIT``.
        sink_connector: the sink's connector name; ``sink_modes`` the modes it supports.
        trigger_kind: ``processing_time``, ``available_now``, ``continuous``,
            ``real_time`` or ``None``.
        not_continuous_sources: connector names of the streams the query reads that
            Spark's continuous processing cannot read; ``continuous_sources`` those it can
            (connectors' ``continuous_source``).
        continuous_sink: the sink accepts a continuous query (not a V1 sink such as files:
            Spark starts the query, then fails it at once).
        empty_available_now_sources: connector names of the streams the query reads that
            yield no rows under ``EMIT … ONCE`` on a new checkpoint (``rate``).
        not_real_time_sources, real_time_sink: the same for Spark's real-time mode
            (:mod:`sqlstream.analysis.realtime`): the sources it cannot read, whether it
            may write the sink.
        spark_version: the Spark major.minor judged for (the compile context's).
    """

    info: QueryInfo
    ops: Operators
    mode: str
    requested: bool
    sink_connector: str
    sink_modes: frozenset[str]
    trigger_kind: str | None
    not_continuous_sources: frozenset[str]
    continuous_sources: tuple[str, ...]
    continuous_sink: bool
    spark_version: str
    empty_available_now_sources: frozenset[str] = frozenset()
    not_real_time_sources: frozenset[str] = frozenset()
    real_time_sink: bool = False


WATERMARK_HINT = (  # the hint of an aggregation Spark cannot close (SS301, SS305, SS350)
    "add WATERMARK FOR <event time> to the stream and GROUP BY a window on it "
    "(e.g. TUMBLE), then EMIT FINAL; or use EMIT CHANGES / EMIT COMPLETE"
)


def stateful(info: QueryInfo, ops: Operators) -> bool:
    """Whether the query aggregates: an aggregation, or a ``SELECT DISTINCT`` (Spark plans
    it as one).

    Args:
        info, ops: the query's facts and operators (those of the views it reads merged in).
    """
    return info.aggregate or ops.distinct is not None


def watermarked(info: QueryInfo, ops: Operators) -> bool:
    """Whether Spark can close the aggregation's groups: every aggregation groups by a
    watermarked column or a window on it; a ``SELECT DISTINCT`` selects the watermarked
    column.

    Args:
        info, ops: as for :func:`stateful`.
    """
    return info.watermarked_key if info.aggregate else bool(info.watermarks)
