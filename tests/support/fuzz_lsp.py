"""The fuzz campaign over the language server's requests (used by
``tests/lsp/test_requests_fuzz.py`` and ``tools/fuzz.py``).

:func:`edited_documents` draws a corpus program (``tests/fixtures/check/*.ssql`` and the
examples' ``*.ssql``), a mutation of it as an edit would make (:func:`tests.support.fuzzing.mutants`'
actions, plus characters outside the BMP, lone surrogates and quotes), and request
positions: LSP ``(line, character)`` pairs anywhere (past the last line, past a line's
end, inside a string, between the two UTF-16 units of a surrogate pair) and raw offsets
(past the end of the text included).

:func:`assert_requests_robust` is the property: the document is analysed as the server
does (lone surrogates scrubbed, :func:`sqlstream.lsp.analysis.analyze` given the analysis
of the unedited version, the edit's stores), every finding converts to a position, and
hover, completion, definition, references, the outline and rename answer at each position
with their documented results (never an exception), all within :data:`SECONDS` CPU seconds.
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import strategies as st

from sqlstream.lsp import completion, features
from sqlstream.lsp.analysis import analyze
from sqlstream.lsp.document_checks import scrubbed
from sqlstream.lsp.document_index import Analysis
from sqlstream.lsp.positions import Lines
from tests.support.fuzzing import VARIABLES, mutate

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = tuple(
    sorted(
        [
            *(ROOT / "tests" / "fixtures" / "check").glob("*.ssql"),
            *(ROOT / "examples").rglob("*.ssql"),
        ]
    )
)
SECONDS = 10.0  # CPU seconds for both analyses and every request of one example
ODD_TEXT = ("😀", "\ud800", "\udfff", "'", "'😀", '"', "`", "é", "\u0000", "\r\n", "\t")
NEW_NAMES = ("renamed", "x1", "1bad", "", "sum", "a b", "😀", "\ud800")


@st.composite
def edited_documents(draw) -> tuple[Path, str, list[tuple[int, int]], list[int], str]:
    """``(path, text, positions, offsets, new_name)``: a corpus program edited 0 to 4 times,
    LSP positions and character offsets to ask at, and a name to rename to."""
    path = DOCUMENTS[draw(st.integers(0, len(DOCUMENTS) - 1))]
    text = path.read_text(encoding="utf-8")
    text = mutate(draw, text, draw(st.integers(0, 4)), ODD_TEXT)
    lines = text.count("\n") + 1
    positions = draw(
        st.lists(st.tuples(st.integers(0, lines + 2), st.integers(0, 200)), min_size=1, max_size=6)
    )
    quotes = [i + 1 for i, c in enumerate(text) if c == "'"]  # just inside a string
    special = [i for i, c in enumerate(text) if not c.isascii()]  # on surrogates, é, emoji
    offsets = draw(
        st.lists(
            st.one_of(
                st.integers(0, len(text) + 50),
                st.sampled_from(quotes or [0]),
                st.sampled_from(special or [len(text)]),
            ),
            min_size=1,
            max_size=6,
        )
    )
    return path, text, positions, offsets, draw(st.sampled_from(NEW_NAMES))


def _ask(analysis: Analysis, offset: int, new_name: str) -> None:
    found = features.hover(analysis, offset)
    assert found is None or (isinstance(found[0], str) and found[1] <= found[2]), found
    items = completion.complete(analysis, offset)
    assert all(isinstance(item, dict) and item.get("label") for item in items), items
    target = features.definition(analysis, offset)
    assert target is None or 0 <= target[0] <= target[1] <= len(analysis.text), target
    for start, end in features.references(analysis, offset):
        assert 0 <= start <= end <= len(analysis.text), (start, end)
    edits = features.rename(analysis, offset, new_name)
    assert isinstance(edits, (str, list)), edits
    if isinstance(edits, list):
        assert all(0 <= s <= e <= len(analysis.text) and n == new_name for s, e, n in edits)
    features.word_at(analysis.text, offset)


def assert_requests_robust(
    path: Path,
    text: str,
    positions: list[tuple[int, int]],
    offsets: list[int],
    new_name: str,
    seconds: float | None = SECONDS,
) -> None:
    """Analyse the unedited document and then ``text`` (as an edit of it) and answer every
    request at each of ``positions`` (LSP, UTF-16 and UTF-8 units) and ``offsets``.

    Args:
        path: the corpus file ``text`` was made from (its unedited text, its path).
        text: the edited document.
        positions: ``(line, character)`` pairs, 0-based, any size.
        offsets: character offsets into ``text``, any size.
        new_name: the name rename is asked for.
        seconds: the longest the whole example may take (CPU seconds), or ``None``.

    Raises:
        AssertionError: a result outside its documented shape or span, or too slow. Any
            other exception propagates (that is a bug).
    """
    started = time.process_time()
    original = analyze(scrubbed(path.read_text(encoding="utf-8")), VARIABLES, str(path))
    document = scrubbed(text)
    analysis = analyze(document, VARIABLES, str(path), previous=original)
    asked = list(offsets)
    for encoding in ("utf-16", "utf-8"):
        lines = Lines(document, encoding)
        for finding in analysis.findings:
            if finding.span is not None:
                lines.position(finding.span.start)
                lines.position(finding.span.end)
        asked += [lines.offset(line, character) for line, character in positions]
    for offset in asked:
        _ask(analysis, offset, new_name)
    for symbol in features.symbols(analysis):
        assert 0 <= symbol["start"] <= symbol["end"] <= len(document), symbol
    if seconds is not None:
        spent = time.process_time() - started
        assert spent <= seconds, f"{spent:.1f} s of CPU for one example of {path.name}"
