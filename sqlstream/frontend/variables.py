"""Variable substitution: ``${name}`` and ``${env:NAME}`` (docs/dialect.md#variables).

This is the first stage. It replaces every reference outside comments (inside string
literals too, so ``path = '${data}/flights'`` works) and returns the substituted text
with a :class:`SourceMap` that maps offsets in the substituted text back to the
original file, so later stages report positions the user can find.

Values of ``${env:NAME}`` are secrets: each is recorded once, as a
:class:`~sqlstream.diagnostics.source_text.Secret` (name, value, where it is written), in the
:class:`Source`, and the substituted text holds its token (``__sqlstream_secret_<i>__``), not
its value: no later stage holds the value, so none can print it. The binder puts the value
back where it hands a text to Spark; every text shown to a user shows ``***``, and
``translate --to pyspark`` writes ``os.environ['NAME']``.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlstream.diagnostics.errors import VariableError, did_you_mean
from sqlstream.diagnostics.source_text import Secret, Source, Span, secret_token

# A comment (skipped), a string literal (searched for references), or a reference.
_REF = r"\$\{(?P<body>[^}\n']*)(?P<close>\}?)"
_SCAN = re.compile(
    r"(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))"
    r"|(?P<string>'(?:[^'\\]|\\.)*'?)"
    r"|" + _REF,
    re.S,
)
_REF_IN_STRING = re.compile(_REF)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*\Z")


@dataclass(frozen=True)
class SourceMap:
    """Maps offsets of the substituted text back to the original :class:`Source`.

    Attributes:
        source: the original file.
        text: the text after substitution (what the parser sees).
        replacements: ``(new_start, new_end, orig_start, orig_end)`` for each reference,
            sorted by position; outside them the two texts differ only by a shift.
    """

    source: Source
    text: str
    replacements: tuple[tuple[int, int, int, int], ...] = ()
    _starts: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_starts", tuple(r[0] for r in self.replacements))

    def original_offset(self, offset: int) -> int:
        """Return the original offset of substituted offset ``offset``.

        An offset inside a substituted value maps to the start of its ``${…}``.
        """
        i = bisect.bisect_right(self._starts, offset) - 1
        if i < 0:
            return offset
        new_start, new_end, orig_start, orig_end = self.replacements[i]
        if offset < new_end:
            return orig_start
        return orig_end + (offset - new_end)

    def span(self, start: int, end: int | None = None) -> Span:
        """Return the original-file :class:`Span` of substituted ``text[start:end]``."""
        o_start = self.original_offset(start)
        o_end = o_start if end is None else max(o_start, self._original_end(end))
        return self.source.span(o_start, o_end)

    def _original_end(self, end: int) -> int:
        i = bisect.bisect_left(self._starts, end) - 1
        if i >= 0:
            new_start, new_end, orig_start, orig_end = self.replacements[i]
            if end <= new_end:
                return orig_end
            return orig_end + (end - new_end)
        return end


def substitute(
    source: Source,
    variables: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> SourceMap:
    """Replace ``${name}`` and ``${env:NAME}`` in ``source.text``.

    Args:
        source: the original file; its ``secrets`` are ignored (recomputed here).
        variables: values for ``${name}``; converted with ``str()`` (``True`` → ``true``).
        environ: the environment for ``${env:NAME}``; defaults to :data:`os.environ`.

    Returns:
        A :class:`SourceMap` whose ``source`` carries the secrets (from ``${env:…}``:
        name, value, span) so that every later message can redact them.

    Raises:
        VariableError: an undefined variable, an unset environment variable, an empty or
            malformed reference (``${`` without ``}``), at the reference's position.
    """
    variables = dict(variables or {})
    environ = os.environ if environ is None else environ
    text = source.text
    out: list[str] = []
    replacements: list[tuple[int, int, int, int]] = []
    secrets: list[Secret] = []
    pos = 0
    new_len = 0
    for match, string_start in _references(text):
        out.append(text[pos : match.start()])
        new_len += match.start() - pos
        value, secret_name = _resolve(source, match, variables, environ)
        if secret_name is not None:
            _check_secret_position(source, match, string_start)
            # one token per value: equal texts stay equal (a grouping key and its SELECT item)
            token = next((s.token for s in secrets if s.value == value), secret_token(len(secrets)))
            secrets.append(
                Secret(secret_name, value, source.span(match.start(), match.end()), token)
            )
            value = token  # the compiler never holds the value (Source.unseal puts it back)
        replacements.append((new_len, new_len + len(value), match.start(), match.end()))
        out.append(value)
        new_len += len(value)
        pos = match.end()
    out.append(text[pos:])
    resolved = Source(source.text, source.path, tuple(secrets))
    return SourceMap(resolved, "".join(out), tuple(replacements))


def _references(text: str):
    """Yield ``(match, string_start)`` for the ``${…}`` references of ``text`` that are not
    inside comments; ``string_start`` is the offset of the ``'`` opening the string literal
    the reference is in, ``None`` outside one."""
    for match in _SCAN.finditer(text):
        if match.group("comment") is not None:
            continue
        if match.group("string") is not None:
            for inner in _REF_IN_STRING.finditer(text, match.start(), match.end()):
                yield inner, match.start()
        else:
            yield match, None


def _check_secret_position(source: Source, match: re.Match, string_start: int | None) -> None:
    """A secret may only be (part of) a ``'…'`` string whose text Spark keeps as it is.

    Outside a string it would become an identifier, alias, keyword or number: shown in
    schemas and plans, echoed (or split into pieces) by messages. In a typed literal
    (``INTERVAL '…' HOUR``, ``DATE '…'``) Spark parses and normalises it, so no printed
    form could hide it (docs/dialect.md#secrets).

    Raises:
        VariableError: ``SS240``, at the reference.
    """
    span = source.span(match.start(), match.end())
    hint = (
        "put the secret inside a '…' string: an option value, a SET value or a string "
        "literal in a query (quotes and backslashes in its value are escaped for you)"
    )
    if string_start is None:
        raise VariableError(
            f"the secret {match.group()} is used outside a '…' string; as a name, alias or "
            "value its text would show in schemas, plans and messages",
            span,
            source,
            hint=hint,
            code="SS240",
        )
    before = _TYPED_LITERAL.search(source.text[max(0, string_start - 40) : string_start])
    if before is not None:
        raise VariableError(
            f"the secret {match.group()} is the text of a typed literal ({before.group(1).upper()} "
            "'…'), which Spark parses and prints normalised",
            span,
            source,
            hint=hint,
            code="SS240",
        )


# A typed literal's keyword right before a string: INTERVAL '1' HOUR, DATE '…', X'…'.
_TYPED_LITERAL = re.compile(
    r"(?<![\w`])(INTERVAL|DATE|TIMESTAMP|TIMESTAMP_NTZ|TIMESTAMP_LTZ|X)\s*\Z", re.I
)


def _resolve(source, match, variables, environ) -> tuple[str, str | None]:
    """The value of a reference, and the environment variable's name for ``${env:NAME}``
    (``None`` for ``${name}``)."""
    span = source.span(match.start(), match.end())
    if not match.group("close"):
        raise VariableError(
            "unterminated variable reference: '${' without '}'",
            span,
            source,
            hint="write ${name} or ${env:NAME}",
        )
    body = match.group("body").strip()
    if body.startswith("env:"):
        name = body[4:].strip()
        if not _NAME.match(name):
            raise VariableError(
                f"bad environment variable name '{name}'",
                span,
                source,
                hint="an environment variable name is letters, digits, '_', '.' and '-'",
            )
        if name not in environ:
            raise VariableError(
                f"environment variable '{name}' is not set",
                span,
                source,
                hint=f"export {name}=… before running, or pass a value with --var",
            )
        return environ[name], name
    if not _NAME.match(body):
        raise VariableError(
            f"bad variable name '{body}'",
            span,
            source,
            hint="names are letters, digits, '_', '.' and '-', starting with a letter or '_'",
        )
    if body not in variables:
        raise VariableError(
            f"undefined variable '{body}'{did_you_mean(body, variables)}",
            span,
            source,
            hint=f"pass a value with --var {body}=… (CLI) or variables={{'{body}': …}} (API)",
        )
    return _format_value(variables[body]), None


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
