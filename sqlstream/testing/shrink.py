"""The smallest input that still shows a difference ``sqlstream verify`` found, written as a
``.test.yaml`` that ``sqlstream test`` fails on until the pipeline streams what it means.

Shrinking is delta debugging (Zeller and Hildebrandt, *Simplifying and Isolating
Failure-Inducing Input*, 2002: ``ddmin`` over complements), first over the failing run's
micro-batches, then over its rows, each candidate re-run as a stream (and, for a ``split``
difference, the run it disagreed with) and judged again. The re-runs are bounded
(:data:`MAX_RERUNS`): each costs a streaming run of a few seconds, so the input found is
1-minimal only when the bound was not reached.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from sqlstream.ir import plan as p
from sqlstream.testing import values
from sqlstream.testing.loading import yaml
from sqlstream.testing.verify import Run, RunResult, Verifier, _key

MAX_RERUNS = 12
"""At most this many candidate inputs are re-run while shrinking one difference."""


def restrict(run: Run, keep: set[int]) -> Run:
    """``run`` on the rows ``keep`` only: emptied micro-batches left out, the restart
    after the last micro-batch kept at or before the original one (none if none is)."""
    batches, restart = [], None
    for index, batch in enumerate(run.batches):
        kept = tuple(i for i in batch if i in keep)
        if kept:
            batches.append(kept)
        if index == run.restart and batches:
            restart = len(batches) - 1
    return Run(run.name, tuple(batches) or ((),), restart)


def ddmin(items: list, fails: Callable[[list], bool], budget: list[int]) -> list:
    """The delta-debugging minimum of ``items`` (in order) for which ``fails`` holds,
    trying complements of ever smaller chunks; ``budget[0]`` re-runs at most (spent)."""
    n = 2
    while len(items) >= 2 and budget[0] > 0:
        size = -(-len(items) // n)
        chunks = [items[i : i + size] for i in range(0, len(items), size)]
        for chunk in chunks:
            if budget[0] <= 0:
                break
            rest = [x for x in items if x not in chunk]
            budget[0] -= 1
            if rest and fails(rest):
                items, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
    return items


def shrink(
    verifier: Verifier, query: p.Query, prop: str, failing: Run, reference: Run | None
) -> tuple[Run, Run | None, int]:
    """The smallest sub-input of ``failing`` that still shows ``prop`` on ``query``.

    Returns:
        ``(run, reference, re-runs spent)``: the failing run and its reference (``split``)
        restricted to the rows kept.
    """
    budget = [MAX_RERUNS]

    def fails(keep: set[int]) -> bool:
        other = restrict(reference, keep) if reference else None
        return verifier.still_differs(query, prop, restrict(failing, keep), other)

    batches = ddmin(list(failing.batches), lambda bs: fails({i for b in bs for i in b}), budget)
    ids = [i for b in batches for i in b]
    ids = ddmin(ids, lambda kept: fails(set(kept)), budget)
    keep = set(ids)
    return (
        restrict(failing, keep),
        restrict(reference, keep) if reference else None,
        MAX_RERUNS - budget[0],
    )


def _plain(value):
    """A hashable shown value as YAML data (pairs back to mappings, tuples to lists)."""
    if isinstance(value, tuple):
        if value and all(
            isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value
        ):
            return CommentedMap((k, _plain(v)) for k, v in value)
        return [_plain(v) for v in value]
    return value


def _flow(mapping: dict) -> CommentedMap:
    node = CommentedMap(mapping)
    node.fa.set_flow_style()
    return node


def write_counterexample(
    verifier: Verifier,
    query: p.Query,
    result: RunResult,
    path: Path,
    title: str,
) -> Path:
    """Write the test file of a difference: the steps are ``result``'s micro-batches (and
    its restart), the expectations of ``query``'s sink the batch oracle's final rows, each
    in the step where the run wrote an equal row, the others in the last step (complete
    mode: the whole table in the last step).

    Returns:
        The path written.
    """
    pipeline, data, zone = verifier.pipeline, verifier.data, verifier.zone
    want, _, _ = verifier.compared(query, result)
    columns = verifier.columns.get(query.name, [])
    left = Counter(map(_key, want))
    step_rows: list[list[tuple]] = []
    for rows in result.steps[query.name]:
        matched = []
        if query.output_mode != "complete":
            for row in rows:
                if left[_key(row)] > 0:
                    left[_key(row)] -= 1
                    matched.append(row)
        step_rows.append(matched)
    rest = Counter(left)
    leftover = []
    for row in want:
        if rest[_key(row)] > 0:
            rest[_key(row)] -= 1
            leftover.append(row)
    inputs = [i for i, b in enumerate(result.batch_of) if b is not None]
    last = inputs[-1] if inputs else len(step_rows) - 1
    if step_rows:
        step_rows[last] = step_rows[last] + leftover
    steps = CommentedSeq()
    for number, index in enumerate(result.batch_of):
        if index is None:
            steps.append(CommentedMap(restart=True))
            continue
        given: dict[str, CommentedSeq] = {}
        for i in result.run.batches[index]:
            stream, row = data.rows[i]
            relation = pipeline.streams[stream]
            cells = {}
            for (name, kind), value in zip(relation.given, row, strict=True):
                if value is not None:
                    t = values.parse_type(kind)
                    cells[name] = _plain(values.shown(values.normal(value, t, zone), t, zone))
            given.setdefault(relation.name, CommentedSeq()).append(_flow(cells))
        step = CommentedMap(input=CommentedMap(given))
        rows = CommentedSeq(
            _flow(dict(zip(columns, map(_plain, r), strict=False))) for r in step_rows[number]
        )
        if not rows:
            rows.fa.set_flow_style()
        step["expect"] = CommentedMap({query.sink.name: rows})
        steps.append(step)
    case = CommentedMap(name=title)
    if data.settings:
        case["settings"] = CommentedMap(data.settings)
    if data.tables:
        tables = CommentedMap()
        for key, rows in data.tables.items():
            relation = pipeline.tables[key]
            tables[relation.name] = CommentedSeq(
                _flow(
                    {
                        n: _plain(
                            values.shown(
                                values.normal(v, values.parse_type(t), zone),
                                values.parse_type(t),
                                zone,
                            )
                        )
                        for (n, t), v in zip(relation.given, row, strict=True)
                        if v is not None
                    }
                )
                for row in rows
            )
        case["tables"] = tables
    case["steps"] = steps
    document = CommentedMap()
    import os

    document["pipeline"] = os.path.relpath(pipeline.path, path.parent)
    document["tests"] = CommentedSeq([case])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(
            f"# written by sqlstream verify: {title}\n"
            "# expectations: the batch query's rows; sqlstream test fails until the\n"
            "# pipeline streams what its SQL means over these micro-batches\n"
        )
        yaml().dump(document, out)
    return path
