"""The finding codes of change data capture (``debezium-json``, ``CREATE FLOW … AUTO CDC``):
``(code, severity, title, doc)`` records, read by :mod:`sqlstream.diagnostics.codes`.

Kept apart from the other record modules so that each stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "SS290",
        "error",
        "`format = 'debezium-json'` where it cannot be read: on a sink, with `infer_schema`",
        """
     ``debezium-json`` is a source format of ``files`` and ``kafka``: each record is a
     Debezium change event whose row image (``after``, ``before`` for a delete) is decoded
     into the declared columns. It cannot be written (a sink writes rows, not change events)
     and its columns cannot be inferred (the envelope's fields are not the row's).
     Anti-pattern: ``CREATE SINK out WITH (connector = 'files', format = 'debezium-json', …)``.
     Fix: write ``json`` rows, or apply the changes to a table with ``CREATE FLOW … AUTO
     CDC``; declare the row's columns on the source.""",
    ),
)
