"""Connectors (docs/connectors.md): what each ``connector = …`` means on Spark.

One module per connector, each a subclass of :class:`~sqlstream.connectors.base.Connector`
that overrides only what differs from the common path (see :mod:`.base`). To add one,
add a module here defining the subclass: every module of this package is imported and
its :class:`~sqlstream.connectors.base.Connector` subclasses registered by their ``name``.

:func:`resolve_options` checks a ``WITH (…)`` list against its connector, after mapping
Flink's and ksqlDB's option names to sqlstream's (:mod:`.foreign_options`);
:data:`CONNECTORS` maps each name to its connector. :mod:`.user_code` finds, reads or
imports the user's Python modules (``foreach_batch``, ``CREATE FUNCTION``) as the compile
context's trust decision allows.
"""

from __future__ import annotations

import importlib
import pkgutil

from sqlstream.connectors.base import ALL_MODES, DURABLE, Connector, ResolvedOptions
from sqlstream.connectors.files import FILE_FORMATS, FILE_METADATA
from sqlstream.connectors.foreign_options import map_foreign_options
from sqlstream.connectors.option_resolution import COMPILER_OPTIONS, snake_case, split_options
from sqlstream.diagnostics.errors import OptionError, did_you_mean
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast

__all__ = [
    "ALL_MODES",
    "COMPILER_OPTIONS",
    "CONNECTORS",
    "DURABLE",
    "FILE_FORMATS",
    "FILE_METADATA",
    "Connector",
    "ResolvedOptions",
    "connector",
    "resolve_options",
    "snake_case",
]


def _discover() -> dict[str, Connector]:
    """Import every module of this package and instantiate the connectors they define (a
    subclass of :class:`Connector` with a ``name``; one without is a base that connectors
    share, such as :class:`.lakehouse.LakehouseSink`).

    Raises:
        ValueError: two connectors with one name.
    """
    found: dict[str, Connector] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.ispkg:  # formats/: what connectors decode, no connector of its own
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Connector)
                and value.name
                and value.__module__ == module.__name__
            ):
                if value.name in found:
                    raise ValueError(f"two connectors are called {value.name!r}")
                found[value.name] = value()
    return found


CONNECTORS: dict[str, Connector] = _discover()


def connector(name: str) -> Connector:
    """The connector called ``name`` (as in ``Plan``'s ``connector`` fields).

    Raises:
        KeyError: no such connector.
    """
    return CONNECTORS[name]


def resolve_options(
    options: tuple[ast.Option, ...],
    source: Source,
    role: str,
    owner: ast.Name,
    span,
    trust: bool = False,
) -> ResolvedOptions:
    """Check a ``WITH (…)`` list against its connector.

    Args:
        options: the options as parsed.
        source: the file (for messages).
        role: ``"source"``, ``"table"`` or ``"sink"``.
        owner: the stream/table/sink name, for messages.
        span: where to point when an option is missing (the statement).
        trust: the compile context's trust decision: user code the options name is
            imported (:meth:`Connector.check_code`).

    Returns:
        The :class:`ResolvedOptions` (with the connector's SS352 warnings).

    Raises:
        OptionError: no or unknown connector, a connector that cannot play ``role``, a
            missing required option, a misspelt known option, or a value the connector
            refuses (:meth:`Connector.validate`, e.g. an unknown file format).
    """
    options = map_foreign_options(options, source)
    by_key = {o.key.lower(): o for o in options}
    given = by_key.get("connector")
    if given is None:
        raise OptionError(
            f"{role} '{owner}' has no connector",
            span,
            source,
            hint=f"add WITH (connector = '…'); connectors: {', '.join(sorted(CONNECTORS))}",
        )
    name = given.text.lower()
    spec = CONNECTORS.get(name)
    if spec is None:
        raise OptionError(
            f"unknown connector '{given.text}'{did_you_mean(name, CONNECTORS)}",
            given.value_span,
            source,
            hint=f"connectors: {', '.join(sorted(CONNECTORS))}",
        )
    if not spec.can_be(role):
        can = sorted(n for n, c in CONNECTORS.items() if c.can_be(role))
        raise OptionError(
            f"connector '{name}' cannot be used as a {role}",
            given.value_span,
            source,
            hint=f"{role} connectors: {', '.join(can)}",
        )
    compiler, spark = split_options(spec, options, source)
    for required in spec.required:
        if required.lower() not in compiler and required not in (k for k, _ in spark):
            raise OptionError(
                f"connector '{name}' needs option '{snake_case(required)}'",
                span,
                source,
                hint=f"add {snake_case(required)} = … to the WITH list",
            )
    spec.validate(compiler, source)
    warnings = spec.check_code(compiler, source, trust)
    resolved = ResolvedOptions(
        spec,
        compiler,
        spark,
        by_key,
        warnings + tuple(spec.ignored_options(compiler, options, source, role)),
    )
    return spec.finish(resolved, role, span)
