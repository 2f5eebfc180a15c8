"""The language server (``sqlstream lsp``): an editor's `.ssql` text in, LSP answers out.

What enters is the unsaved text of each open document, with ``${…}`` values from the
editor's ``sqlstream.variables`` setting or a ``--var`` file. :mod:`.analysis` checks it
as ``sqlstream check`` does (the parser and the planner, no JVM) and indexes it: every
finding with its span, the declared streams, tables, views and sinks with their columns,
every reference to them, and each query's plan. :mod:`.features` answers from that index
(hover, completion, definition, references, document symbols, rename), and
:mod:`.server` speaks the Language Server Protocol over stdin/stdout with pygls. What
leaves is LSP messages: diagnostics with exact ranges, severities and code links, and
the answers to requests. No Spark, no pyspark import.
"""
