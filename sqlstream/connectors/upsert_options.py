"""The options of a sink that writes by key: ``mode`` (``append`` or ``upsert``) and
``key_columns``, shared by the ``postgres``, ``iceberg`` and ``delta`` sinks. Each sink
reports them under its own code (``SS223``/``SS224`` for ``postgres``, ``SS281``/``SS282``
for the lakehouse sinks); the rules are one."""

from __future__ import annotations

from sqlstream.diagnostics.errors import OptionError, did_you_mean
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast

MODES = ("append", "upsert")


def key_names(text: str | None) -> tuple[str, ...]:
    """``'window_start, origin'`` → ``('window_start', 'origin')`` (backticks dropped)."""
    return tuple(k.strip().strip("`") for k in (text or "").split(",") if k.strip())


def check_mode(
    compiler: dict[str, ast.Option], source: Source, *, code: str, subject: str, hint: str
) -> None:
    """The ``mode`` / ``key_columns`` pair of a sink that writes by key.

    Args:
        compiler: the sink's options as written.
        source: the file, for positions.
        code: the sink's code for these findings.
        subject: what follows the mode's name in the unknown-mode message (``''``, or
            ``' of a delta sink'``).
        hint: the hint of an unknown mode.

    Raises:
        OptionError: ``code``: a mode other than append/upsert, upsert without
            ``key_columns``, ``key_columns`` without upsert.
    """
    mode, keys = compiler.get("mode"), compiler.get("key_columns")
    if mode is not None and mode.text.lower() not in MODES:
        raise OptionError(
            f"unknown mode '{mode.text}'{subject}{did_you_mean(mode.text, MODES)}",
            mode.value_span,
            source,
            code=code,
            hint=hint,
        )
    upsert = keys is not None if mode is None else mode.text.lower() == "upsert"
    if upsert and (keys is None or not key_names(keys.text)):
        given = mode or keys
        assert given is not None  # upsert: by mode or by key_columns
        raise OptionError(
            "mode 'upsert' needs key_columns",
            given.value_span,
            source,
            code=code,
            hint="key_columns = 'a, b': the columns that identify a row",
        )
    if keys is not None and not upsert:
        raise OptionError(
            "key_columns is used by mode 'upsert' only",
            keys.key_span,
            source,
            code=code,
            hint="set mode = 'upsert', or drop key_columns",
        )


def missing_key_columns(
    keys: ast.Option | None, columns, source: Source, code: str
) -> tuple[OptionError, ...]:
    """A finding ``code`` for each of ``key_columns`` the query does not write.

    Args:
        keys: the ``key_columns`` option as written, or ``None``.
        columns: the query's ``(name, type)`` pairs, or ``None`` when unknown (no finding).
        source: the file, for positions.
        code: the sink's code for this finding.
    """
    if keys is None or columns is None:
        return ()
    names = [n for n, _ in columns]
    lower = {n.lower() for n in names}
    return tuple(
        OptionError(
            f"key column '{key}' is not a column of the query{did_you_mean(key, names)}",
            keys.value_span,
            source,
            code=code,
            hint=f"the query writes: {', '.join(names)}",
        )
        for key in key_names(keys.text)
        if key.lower() not in lower
    )
