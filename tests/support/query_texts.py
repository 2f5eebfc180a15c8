"""Every SQL text the tests and examples hand to the SQL parser, for tests that hold a
parse-level property over all of them (remembered parses, tree copies)."""

from __future__ import annotations

from sqlstream.diagnostics.errors import SqlStreamError
from sqlstream.frontend.parser import parse
from tests.conftest import PROGRAMS, program_variables


def query_texts() -> list[tuple[str, str]]:
    """``("query", text)`` for the query of every statement that has one and
    ``("expression", text)`` for every computed column, over every program of
    ``tests/fixtures`` and ``examples`` (:data:`tests.conftest.PROGRAMS`) that parses, in
    file order; a program's ``${…}`` variables get :func:`tests.conftest.program_variables`."""
    texts = []
    for path in PROGRAMS:
        source = path.read_text("utf-8-sig")
        try:
            statements = parse(source, program_variables(source)).statements
        except SqlStreamError:
            continue
        for statement in statements:
            if getattr(statement, "query", None) is not None:
                texts.append(("query", statement.query.text))
            for column in getattr(statement, "columns", ()) or ():
                if getattr(column, "expression", None) is not None:
                    texts.append(("expression", column.expression.text))
    return texts
