"""Every finding code of sqlstream, each defined once: its severity, title and documentation.

A finding (:class:`~sqlstream.diagnostics.errors.SqlStreamError`) carries a code registered here;
constructing one with any other code raises ``KeyError``. Ranges: ``SS0xx`` files and
variables, ``SS1xx`` syntax, ``SS2xx`` names, options, meaning and types, ``SS3xx``
streaming rules (``SS35x`` and ``SS36x`` warnings), ``SS4xx`` checkpoints and restarts, ``SS5xx`` Spark
at run time. The rule numbers in
the docs (R1, R2 …) are those of ``docs/streaming-rules.md``, where each was verified on
Spark 4.1.4.

The README's "Finding codes" table is generated from :data:`CODES` by
``python tools/gen_codes_table.py`` (``--readme README.md`` rewrites it in place);
``tests/diagnostics/test_codes.py`` fails when the README's table differs from :func:`markdown_table`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlstream.diagnostics import codes_compile

from sqlstream.diagnostics import codes_streaming

__all__ = ["CODES", "Code", "code", "markdown_table", "replace_table"]

SEVERITIES = ("error", "warning")
_CODE = re.compile(r"SS\d{3}\Z")


@dataclass(frozen=True)
class Code:
    """One finding code.

    Attributes:
        code: ``SS`` and three digits, e.g. ``"SS301"``.
        severity: ``"error"`` (the file cannot run) or ``"warning"`` (it runs, perhaps not
            as meant): the severity of its findings unless one says otherwise (a lenient
            planner, ``compile(…, checks=False)``, records errors as warnings).
        title: one line of Markdown, as the README's table shows it.
        doc: a few sentences: what Spark does and why, an anti-pattern and the fix.

    Raises:
        ValueError: a malformed code, an unknown severity, or an empty title or doc.
    """

    code: str
    severity: str
    title: str
    doc: str

    def __post_init__(self) -> None:
        if not _CODE.match(self.code):
            raise ValueError(f"finding code {self.code!r} is not SS and three digits")
        if self.severity not in SEVERITIES:
            raise ValueError(f"{self.code}: severity {self.severity!r} is not one of {SEVERITIES}")
        if not self.title.strip() or "\n" in self.title or not self.doc.strip():
            raise ValueError(f"{self.code}: needs a one-line title and a doc")


def _codes(*records: tuple[str, str, str, str]) -> dict[str, Code]:
    """The registry from ``(code, severity, title, doc)`` tuples; white space in docs folded."""
    registry: dict[str, Code] = {}
    for name, severity, title, doc in records:
        if name in registry:
            raise ValueError(f"finding code {name} is defined twice")
        registry[name] = Code(name, severity, title, " ".join(doc.split()))
    return dict(sorted(registry.items()))


CODES: dict[str, Code] = _codes(*codes_compile.RECORDS, *codes_streaming.RECORDS)


def code(name: str) -> Code:
    """Return the registered :class:`Code` named ``name`` (e.g. ``"SS301"``).

    Raises:
        KeyError: ``name`` is not registered in :data:`CODES`.
    """
    try:
        return CODES[name]
    except KeyError:
        raise KeyError(f"finding code {name!r} is not registered in sqlstream/diagnostics/codes.py") from None


def markdown_table() -> str:
    """Return the README's "Finding codes" table: a Markdown table, one row per code, a
    warning's code followed by ``(warning)``; ends with a newline."""
    rows = ["| code | finding |", "| --- | --- |"]
    for record in CODES.values():
        label = f"{record.code} (warning)" if record.severity == "warning" else record.code
        rows.append(f"| {label} | {record.title} |")
    return "\n".join(rows) + "\n"


_TABLE = re.compile(r"(^### Finding codes\n\n)((?:\|.*\n)+)", re.MULTILINE)


def replace_table(readme: str) -> str:
    """Return ``readme`` with the table under its ``### Finding codes`` heading replaced by
    :func:`markdown_table` (unchanged text means the README is up to date).

    Raises:
        ValueError: no ``### Finding codes`` heading followed by a blank line and a table.
    """
    if not _TABLE.search(readme):
        raise ValueError("no '### Finding codes' heading followed by a blank line and a table")
    return _TABLE.sub(lambda m: m.group(1) + markdown_table(), readme, count=1)
