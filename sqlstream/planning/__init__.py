"""Planning: AST → :class:`~sqlstream.ir.plan.Plan`.

Enters: a :class:`~sqlstream.frontend.ast.Script`.
Leaves: a :class:`~sqlstream.ir.plan.Plan` (sources read, temporary views, queries with
their compiled records, settings) or the findings that stop it. The catalog keeps one
record per declared name; each query body goes through one compile path
(:func:`~sqlstream.planning.compiler.compile_query`: parse → names → rewrite → schema →
facts → checks); declarations, ``SET`` statements and malformed-record handling
(``on_error``) become plan steps here.
"""
