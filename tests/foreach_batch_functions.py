"""Functions that ``foreach_batch`` pipelines of the tests name (``function =
'tests.foreach_batch_functions:…'``): real callables, imported by the compiler and
called by Spark's ``foreachBatch``."""

from __future__ import annotations

# batch id -> rows (dicts) of each micro-batch that ``collect`` received, per run.
BATCHES: dict[int, list[dict]] = {}


def collect(df, batch_id):
    """Keep the rows of micro-batch ``batch_id``."""
    BATCHES[batch_id] = [row.asDict() for row in df.collect()]


class Writer:
    """A callable object: ``Writer.instance`` is one."""

    def __call__(self, df, batch_id, *extra):
        collect(df, batch_id)


instance = Writer()


def one_argument(df):
    """Wrong: ``foreachBatch`` passes two arguments."""


NOT_CALLABLE = 42
