"""Analysis: what a rewritten query means on Spark, found statically (no JVM).

Enters: a rewritten sqlglot tree (:mod:`sqlstream.sql`), the schemas of the relations it
reads, and the compile context (:class:`~sqlstream.ir.context.CompileContext`: the Spark
minor judged for, the user functions defined so far, the stores), passed explicitly.
Leaves: the query's output schema and column types (:mod:`~sqlstream.analysis.schema`,
:mod:`~sqlstream.analysis.spark_types`; the typing rules of
:mod:`~sqlstream.analysis.type_rules` and :mod:`~sqlstream.analysis.function_types` applied
by :mod:`~sqlstream.analysis.type_annotation`), its facts — streaming or not, stateful operators
and their keys, watermarks, deduplication, output mode
(:mod:`~sqlstream.analysis.facts`, :mod:`~sqlstream.analysis.operators`,
:mod:`~sqlstream.analysis.dedup`) — its output mode
(:mod:`~sqlstream.analysis.output_modes`), its state signature
(:mod:`~sqlstream.analysis.state_signature`; keys and aggregates also by meaning over the
sources' columns, :mod:`~sqlstream.analysis.lineage`), and the findings of Spark's streaming rules
(:mod:`~sqlstream.analysis.checks`, :mod:`~sqlstream.analysis.realtime`; what they see and
yield: :mod:`~sqlstream.analysis.rule_context`).
"""
