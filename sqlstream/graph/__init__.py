"""The pipeline picture (``sqlstream graph``): a compiled plan in, a drawing out.

What enters is a :class:`~sqlstream.ir.plan.Plan` (from :func:`sqlstream.api.compile`):
its sources, views, deduplications and queries. :mod:`.model` turns it into a
:class:`~sqlstream.graph.model.Graph` of nodes (streams, tables, views, queries, sinks)
and edges (reads, stream-stream join inputs, dead-letter paths), with each query's output
mode, trigger, stateful operators and keys and each stream's watermark; the compiler's
internal views (``__…``) are contracted away. What leaves is text: Graphviz DOT
(:mod:`.dot`), Mermaid for Markdown, and SVG, PNG or a self-contained HTML page rendered
from the DOT by Graphviz's ``dot`` program (:mod:`.render`). No Spark, no pyspark import.
"""
