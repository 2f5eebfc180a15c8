"""``sqlstream test --record``: write what Spark did into a test file as its expectations.

For every ``input`` step of the tests that ran, ``expect`` becomes the rows each sink
received (every column; one flow-style mapping per row), ``watermark`` the watermark of
each query that has one and ``state_rows`` the state rows of each stateful query (a
single value when the pipeline has one query). Other keys, comments and the order of the
file are kept (ruamel.yaml round trip). The result is a starting point, to be reviewed
like code: it pins down what the pipeline does, not what it should do.
"""

from __future__ import annotations

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from sqlstream.testing.compare import CaseResult
from sqlstream.testing.loading import yaml
from sqlstream.testing.spec import TestFile


def _row(row: dict) -> CommentedMap:
    node = CommentedMap(row)
    node.fa.set_flow_style()
    return node


def _per_query(found: dict, single: bool):
    if single and len(found) == 1:
        return next(iter(found.values()))
    node = CommentedMap(found)
    node.fa.set_flow_style()
    return node


def record(test_file: TestFile, results: list[CaseResult]) -> None:
    """Write the actual results of ``results`` (tests of ``test_file``) into the file.

    A test that ended with an error (``status == "error"``) is left as it is.
    """
    by_name = {r.name: r for r in results if r.status != "error"}
    for case in test_file.cases:
        result = by_name.get(case.name)
        if result is None:
            continue
        single_query = None
        for step, actual in zip(case.steps, result.actual, strict=True):
            if step.input is None:
                continue
            node = step.node
            assert isinstance(node, CommentedMap)  # (the step's YAML mapping, as loaded)
            expect = CommentedMap()
            for sink, rows in actual.sinks.items():
                expect[sink] = CommentedSeq([_row(r) for r in rows])
                if not rows:
                    expect[sink].fa.set_flow_style()
            node["expect"] = expect
            if single_query is None:
                single_query = (
                    len({*actual.sinks}) <= 1
                    and len(actual.watermark) <= 1
                    and len(actual.state_rows) <= 1
                )
            if actual.watermark:
                node["watermark"] = _per_query(actual.watermark, single_query)
            if actual.expectations or "expectations" in node:
                node["expectations"] = CommentedMap(actual.expectations)
            if actual.state_rows:
                node["state_rows"] = _per_query(
                    {q: (n[0] if len(n) == 1 else n) for q, n in actual.state_rows.items()},
                    single_query,
                )
    with open(test_file.path, "w", encoding="utf-8") as out:
        yaml().dump(test_file.document, out)
