"""The language server on ``CREATE FLOW … AS AUTO CDC``: a statement of its own, whose
target sink and stream are references of their declarations (rename, go to definition)."""

from __future__ import annotations

from sqlstream.lsp.analysis import analyze

TEXT = """CREATE STREAM changes (id BIGINT, op STRING METADATA FROM 'op', seq BIGINT METADATA FROM 'source.lsn')
WITH (connector = 'files', path = 'c', format = 'debezium-json');
CREATE SINK people WITH (connector = 'postgres', url = 'postgresql://h:5432/d', table = 'p');
CREATE FLOW people_cdc AS AUTO CDC INTO people FROM STREAM(changes) KEYS (id)
  APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq);
"""


def test_the_flow_is_indexed_with_its_target_and_stream():
    analysis = analyze(TEXT, path="/tmp/p.ssql")
    assert not analysis.findings
    assert [(s.kind, s.name) for s in analysis.statements][-1] == ("flow", "people_cdc")
    flow = TEXT.index("CREATE FLOW")
    found = {
        (r.name, r.namespace, TEXT[r.start : r.end]) for r in analysis.references if r.start > flow
    }
    assert found == {("people", "sink", "people"), ("changes", "relation", "changes")}
