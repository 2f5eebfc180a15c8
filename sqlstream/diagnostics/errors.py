"""Errors a user can cause, each with a stable code and a position in the `.ssql` file.

Every error raised to a user is a :class:`SqlStreamError`. It carries the code, the
message, the :class:`~sqlstream.diagnostics.source_text.Span` of the offending text and the
:class:`~sqlstream.diagnostics.source_text.Source` it came from, and renders as::

    pipeline.ssql:3:5: SS201 unknown relation 'flihgts'; did you mean 'flights'?
      FROM flihgts
           ^^^^^^^

Every code, with its severity and documentation, is registered in :mod:`sqlstream.diagnostics.codes`;
an error with a code that is not registered cannot be constructed (``KeyError``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from sqlstream.diagnostics.codes import code as registered
from sqlstream.diagnostics.source_text import Source, Span


class SqlStreamError(Exception):
    """Root of every error a user can cause.

    Args:
        message: one sentence saying what is wrong (no position; that is rendered).
        span: where in the file; ``None`` when the error has no position (e.g. a CLI option).
        source: the file the span points into; needed to print the line and to redact
            secrets. Stages that know the source attach it with :meth:`with_source`.
        hint: optional sentence on how to fix it.
        code: overrides the class's default code; registered in :mod:`sqlstream.diagnostics.codes`.
        severity: ``"error"`` (the file cannot run) or ``"warning"`` (it runs, but
            probably not as meant; fails ``check --strict``); by default the code's
            severity in the registry.

    Raises:
        KeyError: ``code`` (or a subclass's default code, when the class is defined) is
            not registered in :mod:`sqlstream.diagnostics.codes`.
        ValueError: ``severity`` is neither ``"error"`` nor ``"warning"``.
    """

    code = "SS000"
    offset_start: int | None
    offset_end: int | None
    """Set on an error found in a query's SQL only: its offsets within that text (end
    exclusive), which the compiler turns into a span in the file; absent otherwise."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        registered(cls.code)

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        source: Source | None = None,
        hint: str | None = None,
        code: str | None = None,
        severity: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.source = source
        self.hint = hint
        if code:
            self.code = code
        record = registered(self.code)
        if severity not in (None, "error", "warning"):
            raise ValueError(f"severity {severity!r} is neither 'error' nor 'warning'")
        self.severity = severity or record.severity
        self._redact_self()

    def with_source(self, source: Source) -> SqlStreamError:
        """Attach ``source`` if none is attached yet; return ``self`` for ``raise … from``."""
        if self.source is None:
            self.source = source
            self._redact_self()
        return self

    def _redact_self(self) -> None:
        """Once the source is known, the message and hint hold no secret, so neither does
        ``str``, ``repr`` nor ``args`` (a Spark message quoting a value, for one)."""
        if self.source is not None and self.source.secrets:
            self.message = self.source.redact(self.message)
            self.hint = self.source.redact(self.hint) if self.hint else self.hint
            self.args = (self.message,)

    def _redact(self, text: str) -> str:
        return self.source.redact(text) if self.source else text

    def render(self) -> str:
        """Return ``path:line:col: CODE message``, the source line and a caret under the span.

        Secret values (from ``${env:…}``) are replaced by ``***``.
        """
        name = self.source.name if self.source else (self.span.path if self.span else None)
        if self.span is not None:
            head = f"{name or '<string>'}:{self.span.line}:{self.span.column}: "
        else:
            head = f"{name}: " if name else ""
        label = "warning: " if self.severity == "warning" else ""
        lines = [f"{head}{self.code} {label}{self._redact(self.message)}"]
        if self.span is not None and self.source is not None:
            text = self.source.line_text(self.span.line)
            if text:
                width = max(
                    1, min(self.span.end - self.span.start, len(text) - self.span.column + 1)
                )
                lines.append("  " + text.expandtabs(1))
                lines.append("  " + " " * (self.span.column - 1) + "^" * width)
        if self.hint:
            lines.append(f"  hint: {self._redact(self.hint)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready record: code, message, hint, path, line, column, start, end."""
        record = {
            "code": self.code,
            "severity": self.severity,
            "message": self._redact(self.message),
            "hint": self._redact(self.hint) if self.hint else None,
        }
        if self.span is not None:
            record.update(self.span.to_dict())
        return record

    def __str__(self) -> str:
        return self.render()


class CompileError(SqlStreamError):
    """Several findings in one file, at least one an error.

    ``findings`` holds every finding (errors and warnings) in file order; ``errors`` the
    errors only. Its own code, message and span are those of the first error; :meth:`render`
    shows every finding (at most ``limit``, then "… and N more").
    """

    limit = 20

    def __init__(self, findings: list[SqlStreamError]) -> None:
        first = next(f for f in findings if f.severity == "error")
        super().__init__(first.message, first.span, first.source, first.hint, first.code, "error")
        self.findings = list(findings)

    @property
    def errors(self) -> list[SqlStreamError]:
        """The findings of severity ``error``."""
        return [f for f in self.findings if f.severity == "error"]

    def render(self) -> str:
        """Return every finding rendered (see :meth:`SqlStreamError.render`), one block each,
        at most :attr:`limit`, then ``… and N more``."""
        shown = [finding.render() for finding in self.findings[: self.limit]]
        if len(self.findings) > self.limit:
            shown.append(f"… and {len(self.findings) - self.limit} more")
        return "\n".join(shown)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"findings": [finding.to_dict(), …]}``, every finding in file order."""
        return {"findings": [finding.to_dict() for finding in self.findings]}


class VariableError(SqlStreamError):
    """A ``${name}`` with no value, or a malformed ``${…}`` reference."""

    code = "SS001"


class ParseError(SqlStreamError):
    """The statement grammar (docs/dialect.md#statements) does not accept the text."""

    code = "SS101"


class SqlSyntaxError(SqlStreamError):
    """A query body or expression is not valid Spark SQL (as parsed by sqlglot)."""

    code = "SS102"


class UnknownNameError(SqlStreamError):
    """An unknown or duplicate relation, sink, column or variable name."""

    code = "SS201"


class OptionError(SqlStreamError):
    """A connector, option or ``SET`` key that is unknown, missing or has a bad value."""

    code = "SS202"


class SemanticError(SqlStreamError):
    """A statement that parses but has no meaning we can run (e.g. a bad watermark)."""

    code = "SS203"


class ForeignSpellingError(SqlStreamError):
    """A spelling from Flink SQL or ksqlDB that sqlstream does not take; the hint shows the
    sqlstream spelling that does the same (docs/compat.md)."""

    code = "SS260"


class StreamingError(SqlStreamError):
    """A query Spark Structured Streaming would refuse (output mode, trigger, watermark)."""

    code = "SS301"


class IncompatibleRestartError(SqlStreamError):
    """A restart on a checkpoint with a change Spark does not allow (``sqlstream.runtime.restarts``)."""

    code = "SS401"


class QueryFailedError(SqlStreamError):
    """Spark rejected a query at start or a running query failed."""

    code = "SS501"


class CheckpointInUseError(SqlStreamError):
    """A query's checkpoint location is in use by another run (``sqlstream.runtime.checkpoint_lock``)."""

    code = "SS502"


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """Return ``"; did you mean 'x'?"`` for the closest candidate, or ``""`` if none is close.

    Case-insensitive; uses :func:`difflib.get_close_matches` with cutoff 0.6.
    """
    by_lower = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean '{by_lower[match[0]]}'?" if match else ""
