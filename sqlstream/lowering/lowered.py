"""A compiled pipeline as the later stages take it: its plan and its program, lowered once.

:class:`Lowered` is what ``compile`` returns (:class:`sqlstream.Pipeline` is one) and what
the readers of a program take: ``translate`` prints :attr:`Lowered.program`
(:mod:`sqlstream.lowering.printer`), and the runtime — ``exec``, :class:`sqlstream.Session`,
``explain --physical``, the test harness — runs that same program with the binder
(:mod:`sqlstream.runtime.binder`), which never lowers. So what ``translate`` prints is what
runs.

The program is lowered on first use and kept (a cached property of the immutable record):
``check`` and the language server, which read only the plan, never pay for lowering (about
a twentieth of the compile time of a large file); every reader after the first reads the
same :class:`~sqlstream.ir.calls.Program` object.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from sqlstream.ir.calls import Program
from sqlstream.ir.plan import Plan
from sqlstream.lowering.lower import lower


@dataclass(frozen=True)
class Lowered:
    """A plan and its program.

    Attributes:
        plan: the :class:`~sqlstream.ir.plan.Plan` (sources, views, queries).
    """

    plan: Plan

    @cached_property
    def program(self) -> Program:
        """The plan's binding calls (:func:`sqlstream.lowering.lower.lower`), lowered on first
        use, once: later reads return the same object. Secrets are not redacted (the
        printers redact; the binder puts in their values)."""
        return lower(self.plan)

    def available_now(self) -> Lowered:
        """This pipeline with every query's trigger ``availableNow``
        (:meth:`~sqlstream.ir.plan.Plan.available_now`; ``exec --available-now``): a record of
        the same type with the new plan, whose program is lowered from it (once, on first
        use)."""
        return replace(self, plan=self.plan.available_now())
