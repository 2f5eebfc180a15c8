"""Planning: AST → :class:`~sqlstream.ir.plan.Plan`.

Enters: a :class:`~sqlstream.frontend.ast.Script` (and, from the language server, the
stores its compiles answer from).
Leaves: a :class:`~sqlstream.ir.plan.Plan` (sources read, temporary views, queries with
their compiled records, :mod:`~sqlstream.planning.compiled_query`, settings) or the
findings that stop it (:meth:`~sqlstream.planning.planner.Planner.result`: both, the plan
partial). The planner makes the file's :class:`~sqlstream.ir.context.CompileContext` and
passes it to every step. The catalog keeps one
record per declared name; each query body goes through one compile path
(:func:`~sqlstream.planning.compiler.compile_query`: parse → names → rewrite → schema →
facts → checks); declarations, ``SET`` statements and malformed-record handling
(``on_error``) become plan steps here.
"""
