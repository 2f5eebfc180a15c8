"""Front end: `.ssql` text → AST.

Enters: the text of a `.ssql` file and the variables given with ``--var``.
Leaves: a :class:`~sqlstream.frontend.ast.Script` of frozen statement nodes, each with the
:class:`~sqlstream.diagnostics.source_text.Span` it came from; query bodies keep their raw
text. Also the literal readers (durations, intervals) and the nesting limits every later
stage relies on. Variables are substituted here (``${name}``, ``${env:NAME}``), and each
secret keeps the ``${env:…}`` reference it came from. Nothing here depends on the Spark
version a file is judged for: that is the compile context's (:mod:`sqlstream.ir.context`).
"""
