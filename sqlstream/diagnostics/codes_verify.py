"""The finding codes of ``sqlstream verify`` (``SS216``–``SS218``: its input and options):
``(code, severity, title, doc)`` records, read by :mod:`sqlstream.diagnostics.codes`.
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "SS216",
        "error",
        "`sqlstream verify --test` names a test file without a test with input rows (or "
        "`-k` picks none)",
        """
     ``verify`` runs the rows of each test's ``input`` steps, in order, as a batch query
     and as streams cut in many ways (a test without an input row is left out). A test
     file without a test, none of whose tests has an ``input`` step with rows, or whose
     tests ``-k TEXT`` does not match, gives nothing to compare. Fix: name a test file
     whose tests feed the pipeline's streams, a part of a test's name with ``-k``, or give
     ``--input STREAM=PATH``.""",
    ),
    (
        "SS217",
        "error",
        "`sqlstream verify --input STREAM=PATH` names a stream the pipeline does not "
        "declare, or a path that does not exist",
        """
     Each ``--input`` gives the rows of one ``CREATE STREAM`` of the pipeline: a file, or
     a folder whose files are read whole, each with the stream's format and options, one
     micro-batch per file. Anti-pattern: ``--input flight=data/flights`` for a stream
     named ``flights``. Fix: name a declared stream and an existing file or folder.""",
    ),
    (
        "SS218",
        "error",
        "`sqlstream verify` without input, with both `--test` and `--input`, with "
        "`--splits` below 0, or with `-k` but no `--test`",
        """
     ``verify`` reads its input from exactly one place: a test file (``--test``) or the
     files of the pipeline's streams (``--input STREAM=PATH``, repeated). ``--splits N``
     is the number of random cuts into micro-batches (0: only the one-batch and per-step
     runs); ``-k TEXT`` picks tests of ``--test``. Fix: give one of the two, ``--splits``
     of 0 or more, and ``-k`` only with ``--test``.""",
    ),
)
