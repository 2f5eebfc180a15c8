"""The pipeline under test: compiled as ``sqlstream exec`` compiles it, and what a test may
name in it (streams and their columns, tables, sinks, queries).

The plan is the one ``exec`` runs (:func:`sqlstream.planning.planner.build_plan` of the
parsed file, streaming rules enforced); only its ends are described here for the feed: for
each stream and table the columns a test gives (declared, metadata and fixed connector
columns: every column that is not computed) and the projection that adds the computed
columns on top of them. No pyspark import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.frontend.literals import quote_identifier as quote
from sqlstream.ir import plan as p


@dataclass(frozen=True)
class Relation:
    """A stream or table of the pipeline as a test feeds it.

    Attributes:
        relation: its plan step (the watermark is read from it).
        given: ``(name, Spark type)`` of the columns a test's rows give, in order.
        projection: the SQL expressions that make the relation's columns from ``given``
            (computed columns as declared), in declared order.
    """

    relation: p.SourceRelation
    given: tuple[tuple[str, str], ...]
    projection: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.relation.name


@dataclass(frozen=True)
class Pipeline:
    """A compiled pipeline and its names (keys lower-case, as SQL names compare)."""

    path: Path
    plan: p.Plan
    streams: dict[str, Relation]
    tables: dict[str, Relation]
    sinks: dict[str, list[p.Query]]
    queries: dict[str, p.Query]


STAND_IN = "sqlstream-test-stand-in"
"""The value of every ``${env:NAME}`` in a test run: the sinks and sources that would use
it (a password, a token) are swapped for captures and feeds, so no real secret is needed
or read."""


class _StandIns(Mapping):
    """An environment in which every variable is set to :data:`STAND_IN`."""

    def __getitem__(self, name: str) -> str:
        return STAND_IN

    def __contains__(self, name: object) -> bool:
        return True

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


def read_text(path: Path) -> str:
    """A `.ssql` file's text (UTF-8, a byte-order mark dropped).

    Raises:
        SqlStreamError: ``SS002``: it cannot be read or is not UTF-8.
    """
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise SqlStreamError(f"cannot read {path}: {exc.strerror}", code="SS002") from None
    except UnicodeDecodeError:
        raise SqlStreamError(f"{path} is not UTF-8 text", code="SS002") from None


def compile_pipeline(path: Path, variables: dict[str, str]) -> Pipeline:
    """Compile the `.ssql` file ``path`` with ``variables`` as ``exec`` does, but with
    every ``${env:NAME}`` given :data:`STAND_IN` (a test swaps the connectors that read
    them, so it needs no secret from the environment).

    Raises:
        SqlStreamError: the file cannot be read (``SS002``), or its first problem (with
            its position in the `.ssql` file); ``SS203`` for a stream whose columns are
            inferred from files (a test must know them).
    """
    from sqlstream.frontend.limits import run_deep
    from sqlstream.frontend.parser import parse
    from sqlstream.planning.planner import build_plan
    from sqlstream.sql.parsing import check_sqlglot_build

    text = read_text(path)

    def build():
        check_sqlglot_build()
        script = parse(text, variables, str(path), environ=_StandIns())
        return script, build_plan(script, str(path), None, enforce=True)

    script, plan = run_deep(build)
    computed = {}
    for statement in script.statements:
        if isinstance(statement, (ast.CreateStream, ast.CreateTable)):
            computed[statement.name.value.lower()] = {
                c.name.value.lower(): c.expression.text
                for c in statement.columns
                if isinstance(c, ast.ComputedColumn)
            }
    streams: dict[str, Relation] = {}
    tables: dict[str, Relation] = {}
    for relation in plan.relations:
        if not isinstance(relation, p.SourceRelation):
            continue
        if relation.columns is None:
            raise SqlStreamError(
                f"'{relation.name}' reads its columns from files (infer_schema): a test "
                "needs them declared",
                relation.span,
                Source(text, str(path)),
                code="SS203",
                hint="declare the columns in the CREATE statement",
            )
        exprs = computed.get(relation.name.lower(), {})
        given = tuple((n, t) for n, t in relation.columns if n.lower() not in exprs)
        projection = tuple(
            f"{exprs[n.lower()]} AS {quote(n)}" if n.lower() in exprs else quote(n)
            for n, _ in relation.columns
        )
        (tables if relation.bounded else streams)[relation.name.lower()] = Relation(
            relation, given, projection
        )
    sinks: dict[str, list[p.Query]] = {}
    for query in plan.queries:
        sinks.setdefault(query.sink.name.lower(), []).append(query)
    return Pipeline(path, plan, streams, tables, sinks, {q.name.lower(): q for q in plan.queries})


def time_zone(pipeline: Pipeline, settings: dict[str, str]) -> str:
    """The session time zone the test's timestamps are read in: the test's
    ``spark.sql.session.timeZone`` setting, else the pipeline's ``SET``, else ``UTC``."""
    for key, value in settings.items():
        if key.lower() == "spark.sql.session.timezone":
            return value
    for key, value in pipeline.plan.settings:
        if key.lower() == "spark.sql.session.timezone":
            return value
    return "UTC"
