"""Testing: pipeline tests (``*.test.yaml``) run micro-batch by micro-batch on Spark.

Enters: test files (steps of input micro-batches and restarts, with the rows each sink
must receive, the watermark, state rows, rows dropped as late and expected errors), the
`.ssql` pipeline each names (compiled as ``exec`` compiles it) and a SparkSession.
Leaves: one result per test (passed, failed with the checks that failed and a row diff,
or an error in the test file at its line and column), rendered as text, JSON or JUnit
XML; with ``--record``, the test file rewritten with the actual results as expectations.
:mod:`~sqlstream.testing.loading`, :mod:`~sqlstream.testing.values`,
:mod:`~sqlstream.testing.compare` and :mod:`~sqlstream.testing.report` import no pyspark;
:mod:`~sqlstream.testing.feed` (the Spark streaming source of the test rows) and
:mod:`~sqlstream.testing.harness` do.
"""
