"""The fuzz campaign over the language server's requests (tests/support/fuzz_lsp.py):
corpus programs and edits of them, analysed as the server does (with the previous
analysis), then hover, completion, definition, references, the outline and rename at
random positions (past the end, inside strings, on surrogates) answer with their
documented results, never an internal error, each example within seconds (fixed seed,
bounded examples; ``tools/fuzz.py --only "language server"`` runs longer campaigns)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.support.fuzz_lsp import assert_requests_robust, edited_documents


@settings(
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=100,
    suppress_health_check=list(HealthCheck),
)
@given(document=edited_documents())
def test_fuzz_language_server_requests(document):
    assert_requests_robust(*document)
