"""Source text and spans: where in a `.ssql` file something was written.

Every stage after the parser reports positions as a :class:`Span` of the *original*
file (before ``${var}`` substitution), so an error in a query body, an option or a
variable points at the character the user typed.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_NEWLINE = re.compile("\n")


@dataclass(frozen=True)
class Span:
    """A range of characters in a source file.

    Attributes:
        start: offset of the first character, 0-based, in the original file text.
        end: offset one past the last character (exclusive); ``end >= start``.
        line: 1-based line number of ``start``.
        column: 1-based column (in characters) of ``start``.
        path: the file's path as given by the user, or ``None`` for text from the API.
    """

    start: int
    end: int
    line: int
    column: int
    path: str | None = None

    def to_dict(self) -> dict:
        """Return ``{"path", "line", "column", "start", "end"}`` for JSON output."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "start": self.start,
            "end": self.end,
        }


SECRET_TOKEN = re.compile(r"__sqlstream_secret_(\d+)__")
"""The token that stands for a secret in every text the compiler makes (docs/dialect.md#secrets):
``__sqlstream_secret_<i>__``, ``i`` the secret's index in :attr:`Source.secrets`. Letters,
digits and ``_`` only, so no quoting, escaping or SQL rewrite changes it."""


def secret_token(index: int) -> str:
    """The token of the ``index``-th secret (0-based) of a file."""
    return f"__sqlstream_secret_{index}__"


@dataclass(frozen=True)
class Secret:
    """A value substituted from ``${env:NAME}``, recorded once by the substitution.

    The substitution writes :attr:`token` into the text the parser sees, not the value: the
    compiler (parser, sqlglot, the planner, every printer) never holds the value, so nothing
    it prints, logs or raises can contain it, in whatever form a rewrite gives its text. The
    value enters only where sqlstream hands a text to Spark (:meth:`Source.unseal`).

    Attributes:
        name: the environment variable's name (``NAME``).
        value: its value (what runs; never shown).
        span: where ``${env:NAME}`` is written in the original file.
        token: what stands for it in the substituted text (:func:`secret_token`).
    """

    name: str
    value: str = field(repr=False)  # a repr (a log line, a traceback's locals) shows no value
    span: Span
    token: str = ""


@dataclass(frozen=True)
class Source:
    """The original text of a `.ssql` file and what is needed to show it safely.

    Attributes:
        text: the file's text exactly as written (variables not substituted).
        path: the path used in messages (``None``: shown as ``<string>``).
        secrets: the :class:`Secret` substituted from each ``${env:NAME}``, in file order;
            :meth:`redact` replaces each value with ``***`` in any text shown to a user
            (docs/dialect.md#secrets).
    """

    text: str
    path: str | None = None
    secrets: tuple[Secret, ...] = ()
    _line_starts: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _redactor: re.Pattern | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0] + [match.end() for match in _NEWLINE.finditer(self.text)]
        object.__setattr__(self, "_line_starts", tuple(starts))
        secrets = sorted({s.value for s in self.secrets if s.value}, key=len, reverse=True)
        if secrets:
            pattern = "|".join(_secret_pattern(s) for s in secrets)
            object.__setattr__(self, "_redactor", re.compile(pattern, re.IGNORECASE))

    @property
    def name(self) -> str:
        """The path for messages, ``<string>`` when the text did not come from a file."""
        return self.path or "<string>"

    def span(self, start: int, end: int | None = None) -> Span:
        """Return the :class:`Span` of ``text[start:end]`` (offsets clamped to the text)."""
        start = max(0, min(start, len(self.text)))
        end = start if end is None else max(start, min(end, len(self.text)))
        line_index = bisect.bisect_right(self._line_starts, start) - 1
        return Span(
            start, end, line_index + 1, start - self._line_starts[line_index] + 1, self.path
        )

    def line_text(self, line: int) -> str:
        """Return line ``line`` (1-based) without its newline; ``""`` when out of range."""
        if not 1 <= line <= len(self._line_starts):
            return ""
        begin = self._line_starts[line - 1]
        stop = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return self.text[begin:stop].rstrip("\r")

    def redact(self, text: str) -> str:
        """Return ``text`` with every secret replaced by ``***``: its token (what the
        compiler's texts hold, whatever was done to them) and, for text that comes from
        Spark (which holds the value once a query runs: its exceptions, logs and progress),
        its value.

        A value is found in any case and in the forms its punctuation and non-ASCII
        characters take when text is quoted or escaped on its way out: backslash escapes
        (SQL strings, Python ``repr``, JSON), a doubled quote (SQL), ``%XX`` (URIs, e.g. a
        Hadoop path in Spark's messages), ``\\uXXXX`` / ``\\xXX`` (JSON, ``repr``).
        """
        if not self.secrets:
            return text
        text = SECRET_TOKEN.sub("***", text)
        if self._redactor is None:
            return text
        return self._redactor.sub("***", text)

    def unseal(self, text: str, sql: bool = False) -> str:
        """Return ``text`` with each secret's token replaced by its value: the one place a
        value enters a text, used where sqlstream hands the text to Spark or to a sink's
        client (the binder's calls, the session's settings).

        Args:
            text: a text of the compiled program (an argument of a binding call).
            sql: the text is Spark SQL, where the token stands inside a ``'…'`` string:
                the value goes in escaped (``\\`` → ``\\\\``, ``'`` → ``\\'``), so the
                string's value is exactly the secret; otherwise the value as it is.

        Returns:
            The text Spark runs (never shown to a user).
        """
        if not self.secrets or "__sqlstream_secret_" not in text:
            return text

        def value(match: re.Match) -> str:
            index = int(match.group(1))
            if index >= len(self.secrets):
                return match.group()
            secret = self.secrets[index].value
            return secret.replace("\\", "\\\\").replace("'", "\\'") if sql else secret

        return SECRET_TOKEN.sub(value, text)

    def redact_value(self, value):
        """Return ``value`` (JSON-ready: dicts, lists, tuples, strings, other scalars) with
        :meth:`redact` applied to every string in it, dict keys included (tuples become
        lists)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact_value(k): self.redact_value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(v) for v in value]
        return value


def _secret_pattern(secret: str) -> str:
    """A regular expression for ``secret`` as written, quoted or escaped (see
    :meth:`Source.redact`): ASCII letters and digits stand for themselves; any other
    character also as ``%XX`` (its UTF-8 bytes), ``\\uXXXX`` or ``\\xXX``, after any
    number of backslashes, and doubled."""
    parts = []
    for char in secret:
        if char.isascii() and char.isalnum():
            parts.append(re.escape(char))
            continue
        encoded = "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))
        forms = [re.escape(char), re.escape(encoded), rf"\\u{ord(char):04x}"]
        if ord(char) < 256:
            forms.append(rf"\\x{ord(char):02x}")
        one = r"\\*(?:" + "|".join(forms) + ")"
        parts.append(f"{one}(?:{one})?" if char in "'\"" else one)
    return "".join(parts)
