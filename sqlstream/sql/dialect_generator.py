"""The generator of the sqlstream dialect (:class:`~sqlstream.sql.dialect.SqlStream`): Spark's
generator with its tree rewrites turned off, printing literals, formats and units as they
were written (as sqlglot keeps ``generators/spark.py`` beside its dialect).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.generators.spark import SparkGenerator

from sqlstream.sql.expressions import TVF_PARAMS, Watermark, WindowTVF

# Node types whose printing in sqlglot's Spark generator is a tree rewrite
# (``transforms.preprocess``); sqlstream prints them as they are (see SqlStreamGenerator).
GENERATOR_REWRITES = (exp.Select, exp.Table)


def _verbatim(node: exp.Expr) -> str | None:
    """The text a string literal was written with, while its value is the one parsed."""
    recorded = node.meta.get("verbatim") if node._meta else None
    return recorded[1] if recorded and recorded[0] == node.this else None


_FORMAT_CALLS = {
    exp.TsOrDsToDate: "TO_DATE",
    exp.StrToDate: "TO_DATE",
    exp.StrToTime: "TO_TIMESTAMP",
    exp.UnixToStr: "FROM_UNIXTIME",
    exp.StrToUnix: "UNIX_TIMESTAMP",
}
_UNIT_CALLS = {exp.TimestampTrunc: ("DATE_TRUNC", True), exp.DateTrunc: ("TRUNC", False)}


def _format_call(kind: type[exp.Func]):
    name, fallback = _FORMAT_CALLS[kind], SparkGenerator.TRANSFORMS.get(kind)

    def sql(self, node: exp.Expr) -> str:
        written = node.args.get("format")
        if written is not None and _verbatim(written) is not None:
            return self.func(name, node.this, written)
        return fallback(self, node) if fallback else self.function_fallback_sql(node)

    return sql


def _unit_call(kind: type[exp.Func]):
    (name, unit_first), fallback = _UNIT_CALLS[kind], SparkGenerator.TRANSFORMS[kind]

    def sql(self, node: exp.Expr) -> str:
        written = node.meta.get("unit_literal") if node._meta else None
        if written is None or _verbatim(written) is None:
            return fallback(self, node)
        return self.func(name, *((written, node.this) if unit_first else (node.this, written)))

    return sql


class SqlStreamGenerator(SparkGenerator):
    """Spark's generator; prints :class:`Watermark` in place and window TVFs in Flink's spelling.

    Spark's generator also rewrites trees while printing them (``QUALIFY`` → subquery,
    ``DISTINCT ON`` → ``ROW_NUMBER()``, ``UNNEST`` → ``explode`` …). Those tree
    transforms are turned off here (:data:`GENERATOR_REWRITES` lists them): the ones
    sqlstream needs are explicit steps of :data:`sqlstream.sql.rewrite.REWRITES`, which run
    before the checks, so the SQL the checks judged is the SQL that is printed and run.
    """

    TRANSFORMS = {
        **{
            kind: transform
            for kind, transform in SparkGenerator.TRANSFORMS.items()
            if kind not in GENERATOR_REWRITES
        },
        Watermark: lambda self, e: self.watermark_sql(e),
        WindowTVF: lambda self, e: self.windowtvf_sql(e),
        exp.ToChar: lambda self, e: self.func("TO_CHAR", e.this, e.args.get("format")),
        **{kind: _format_call(kind) for kind in _FORMAT_CALLS},
        **{kind: _unit_call(kind) for kind in _UNIT_CALLS},
    }

    def format_time(
        self, expression: exp.Expr, inverse_time_mapping=None, inverse_time_trie=None
    ) -> str | None:
        return self.sql(expression, "format") or None

    def literal_sql(self, expression: exp.Literal) -> str:
        return _verbatim(expression) or super().literal_sql(expression)

    def rawstring_sql(self, expression: exp.RawString) -> str:
        return _verbatim(expression) or super().rawstring_sql(expression)

    def struct_sql(self, expression: exp.Struct) -> str:
        if not expression.meta.get("named_struct") if expression._meta else True:
            # sqlglot's struct_sql, except that a named field's value is moved into its
            # alias, not copied: copying made struct(struct(…)) time quadratic in the
            # depth (measured: 400 levels 15 s). The tree printed is already a copy.
            expression.set(
                "expressions",
                [
                    exp.alias_(e.expression, e.name if e.this.is_string else e.this, copy=False)
                    if isinstance(e, exp.PropertyEQ)
                    else e
                    for e in expression.expressions
                ],
            )
            return self.function_fallback_sql(expression)
        args = []
        for field in expression.expressions:
            name = field.meta.get("name_literal") if field._meta else None
            args += [
                self.sql(
                    name
                    if name is not None and name.name == field.name
                    else exp.Literal.string(field.name)
                ),
                self.sql(field, "expression"),
            ]
        return self.func("NAMED_STRUCT", *args)

    def watermark_sql(self, expression: Watermark) -> str:
        return f"WATERMARK {self.sql(expression, 'this')} DELAY OF {self.sql(expression, 'expression')}"

    def windowtvf_sql(self, expression: WindowTVF) -> str:
        relation = expression.this
        relation_sql = self.sql(relation)
        if isinstance(relation, exp.Table):
            relation_sql = f"TABLE {relation_sql}"
        partition = self.expressions(expression, key="partition_by", flat=True)
        if len(expression.args.get("partition_by") or []) > 1:
            partition = f"({partition})"
        if partition:
            relation_sql = f"{relation_sql} PARTITION BY {partition}"
        kind = expression.kind
        names = ["time_column", *TVF_PARAMS[kind][0]]
        args = [relation_sql, f"DESCRIPTOR({self.sql(expression, 'time_column')})"]
        args += [self.sql(expression, n) for n in names[1:] if expression.args.get(n) is not None]
        alias = self.sql(expression, "alias")
        alias = f" AS {alias}" if alias else ""
        joins = self.expressions(expression, key="joins", sep="", flat=True)
        return f"{kind}({', '.join(args)}){alias}{joins}"

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        watermark = expression.args.get("watermark")
        if watermark is None:
            return super().table_sql(expression, sep)
        if expression.args.get("alias"):
            return super().table_sql(expression, f" {self.sql(watermark)}{sep}")
        return f"{super().table_sql(expression, sep)} {self.sql(watermark)}"

    def subquery_sql(self, expression: exp.Subquery, sep: str = " AS ") -> str:
        watermark = expression.args.get("watermark")
        if watermark is None:
            return super().subquery_sql(expression, sep)
        alias = self.sql(expression, "alias")
        alias = f" {self.sql(watermark)}{sep}{alias}" if alias else f" {self.sql(watermark)}"
        pivots = self.expressions(expression, key="pivots", sep="", flat=True)
        sql = self.query_modifiers(expression, self.wrap(expression), alias, pivots)
        return self.prepend_ctes(expression, sql)
