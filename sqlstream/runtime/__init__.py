"""Runtime: a program of binding calls run on Spark.

Enters: a compiled pipeline, its plan and the :class:`~sqlstream.ir.calls.Program` lowered
from it once (:class:`~sqlstream.lowering.lowered.Lowered`; nothing here lowers), and a
SparkSession (local, on a cluster or over Spark Connect).
Leaves: started ``StreamingQuery`` objects and typed events
(:mod:`~sqlstream.runtime.events`) of what they do, rendered as progress; restart checks
against what a checkpoint recorded (:mod:`~sqlstream.runtime.restarts`), one run per
checkpoint (:mod:`~sqlstream.runtime.checkpoint_lock`) and the state a checkpoint keeps
(:mod:`~sqlstream.runtime.state_reader`). The only stage that imports
pyspark.
"""
