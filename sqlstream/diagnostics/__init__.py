"""Diagnostics: where things were written and what is wrong with them.

Enters: nothing of sqlstream (this is the ground floor every other stage stands on).
Leaves: :class:`~sqlstream.diagnostics.source_text.Span` (file, line, column and offsets of
a piece of source text), :class:`~sqlstream.diagnostics.errors.SqlStreamError` and its
subclasses (a code, a message, a span, ``to_dict()`` and the rendered ``path:line:col: CODE``
form with a caret), and the registry of finding codes
(:data:`~sqlstream.diagnostics.codes.CODES`: severity, title and documentation of each).
"""
