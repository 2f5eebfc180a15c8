"""Fuzzing ``*.test.yaml`` files (issue 32 item 5): hypothesis strategies of test files and
the property every one must have (used by ``tests/testing/test_test_file_fuzz.py`` and
``tools/fuzz.py``).

* :func:`hostile_test_files`: YAML test files built from the shape of a test file (``pipeline``,
  ``variables``, ``settings``, ``tests`` with ``steps`` of ``input``, ``expect``,
  ``watermark``, ``state_rows`` …) whose values are drawn from hostile YAML: anchors and
  aliases (bombs among them), merge keys, tags, deep brackets, huge integers, dates that
  are none, NaN and infinities, control characters, long strings;
* :func:`mutated_test_files`: the project's test files with text mutations (slices deleted
  or repeated, hostile fragments inserted).

:func:`assert_test_file_robust` is the property: loading the file (``sqlstream test``'s
loader) raises nothing but :class:`~sqlstream.SqlStreamError`, whose span lies in the file,
within :data:`SECONDS` of CPU time.
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import strategies as st

from sqlstream.diagnostics.errors import SqlStreamError

ROOT = Path(__file__).resolve().parents[2]
PIPELINE = (ROOT / "tests" / "fixtures" / "spark_suites" / "watermark.ssql").read_text(
    encoding="utf-8"
)
CORPUS = tuple(
    sorted(
        p.read_text(encoding="utf-8")
        for folder in ("examples", "tests/fixtures")
        for p in (ROOT / folder).rglob("*.test.yaml")
    )
)
SECONDS = 5.0  # CPU seconds of this process for one load (a loaded machine cannot trip it)

_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.just("9" * 5000),
    st.sampled_from(
        [
            ".nan",
            ".inf",
            "-.inf",
            "1e999",
            "2013-13-45",
            "2013-01-01 10:00:00",
            "2013-02-30",
            "'2013-01-01 00:00:15'",
            "null",
            "~",
            "true",
            "'x'",
            '"\\0"',
            '"\\x00"',
            "!!binary aGVsbG8=",
            "!!python/object:os.system x",
            "!foo 1",
            "!!set {a, b}",
            "!!str 1",
            "!!int '7'",
            "0x1F",
            "0o17",
            "1_000",
            "-0",
            "'" + "[" * 200 + "'",
            "value",
            "appended",
            "input",
        ]
    ),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"),
        max_size=12,
    ).map(lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'),
)


def _values(depth: int = 3) -> st.SearchStrategy[str]:
    """A flow-style YAML value: a scalar, a list or mapping of values, a deep bracket."""
    if depth == 0:
        return _SCALARS
    inner = _values(depth - 1)
    return st.one_of(
        _SCALARS,
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(
            st.tuples(st.sampled_from(["value", "start", "count", "a", "<<"]), inner), max_size=3
        ).map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.integers(50, 3000).map(lambda n: "[" * n + "1" + "]" * n),
    )


def _bomb(levels: int) -> str:
    lines = ["x-a0: &a0 [x, x, x, x, x, x, x, x, x]\n"]
    lines += [f"x-a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, levels)]
    return "".join(lines)


@st.composite
def hostile_test_files(draw) -> str:
    """The text of a test file: the shape of one, values drawn from hostile YAML."""
    value = _values()
    parts = [
        draw(
            st.sampled_from(
                ["pipeline: watermark.ssql\n", "pipeline: /etc/passwd\n", "pipeline: ../p.ssql\n"]
            )
        )
    ]
    if draw(st.booleans()):
        parts.append(_bomb(draw(st.integers(2, 12))))
    if draw(st.booleans()):
        parts.append("x-base: &base {value: 1, count: 2}\n")
    for key in ("variables", "settings"):
        if draw(st.booleans()):
            parts.append(f"{key}: {draw(value)}\n")
    parts.append("tests:\n")
    for index in range(draw(st.integers(0, 2))):
        parts.append(f"  - name: {draw(st.sampled_from(['t', 't', '', '[1]', '*a1']))}{index}\n")
        if draw(st.booleans()):
            parts.append(f"    tolerance: {draw(value)}\n")
        if draw(st.booleans()):
            parts.append(f"    ordered: {draw(value)}\n")
        parts.append("    steps:\n")
        for _ in range(draw(st.integers(0, 3))):
            rows = draw(
                st.one_of(
                    st.lists(value, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
                    st.just("[{<<: *base}]"),
                    st.just("[{value: *a1}]"),
                    value,
                )
            )
            parts.append(f"      - input: {{input: {rows}}}\n")
            for key in ("expect", "watermark", "state_rows", "dropped_by_watermark", "restart"):
                if draw(st.integers(0, 3)) == 0:
                    parts.append(f"        {key}: {{appended: {draw(value)}}}\n")
    text = "".join(parts)
    if draw(st.integers(0, 9)) == 0:  # a control character somewhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["\0", "\x07", "\ufeff", "\t", "\r"])) + text[at:]
    return text


@st.composite
def mutated_test_files(draw) -> str:
    """A test file of the project with a slice deleted or repeated, or a hostile fragment
    inserted."""
    text = draw(st.sampled_from(CORPUS))
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 200)))
        kind = draw(st.sampled_from(["delete", "repeat", "insert"]))
        if kind == "delete":
            text = text[:start] + text[end:]
        elif kind == "repeat":
            text = text[:end] + text[start:end] * draw(st.integers(2, 50)) + text[end:]
        else:
            fragment = draw(
                st.one_of(
                    _values(2), st.sampled_from(["&a ", "*a", "<<: ", "!!python/name:os ", "\0"])
                )
            )
            text = text[:start] + fragment + text[start:]
    return text


def assert_test_file_robust(text: str, folder: Path) -> SqlStreamError | None:
    """Load ``text`` as ``folder/case.test.yaml`` beside the watermark pipeline (``folder``
    holds ``.git``: it is a project); fail unless only a positioned
    :class:`~sqlstream.SqlStreamError` (or nothing) comes out within :data:`SECONDS`.

    Returns:
        The error, or ``None`` when the file loaded.
    """
    from sqlstream.testing.loading import load

    (folder / ".git").mkdir(exist_ok=True)
    (folder / "watermark.ssql").write_text(PIPELINE, encoding="utf-8")
    path = folder / "case.test.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    started = time.process_time()
    try:
        load(path)
        error = None
    except SqlStreamError as caught:
        error = caught
        str(caught)  # renders
        if caught.span is not None and caught.source is not None:
            assert 0 <= caught.span.start <= len(caught.source.text), caught
    spent = time.process_time() - started
    assert spent < SECONDS, f"{spent:.1f} s of CPU for one test file"
    return error
