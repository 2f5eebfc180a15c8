"""Option resolution: a ``WITH (…)`` list split into compiler options and Spark options.

An option the compiler knows (:data:`COMPILER_OPTIONS`, or one of the connector's
``own_options``) is consumed; a known Spark option may be written in Spark's camelCase or
in snake_case (``max_files_per_trigger``); an unknown option close to a known one is an
error with a suggestion; any other option is passed to Spark unchanged under the name
written (:func:`split_options`). A number option Spark reads as a whole number is checked
here, where Spark would refuse it only when the query starts.
"""

from __future__ import annotations

import difflib
import functools
import re

from sqlstream.connectors.base import Connector
from sqlstream.diagnostics.errors import OptionError, did_you_mean
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast

# Options read by the compiler, never passed to Spark as they are.
COMPILER_OPTIONS = {
    "connector",
    "format",
    "path",
    "infer_schema",
    "checkpoint_location",
    "query_name",
    "partition_by",
    "table",
    "function",
    "on_error",
    "dead_letter",
    "dead_letter_path",
}


@functools.lru_cache(maxsize=4096)
def snake_case(name: str) -> str:
    """``maxFilesPerTrigger`` → ``max_files_per_trigger`` (cached: every statement's
    options are matched against every Spark option name of its connector)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def split_options(
    connector: Connector, options: tuple[ast.Option, ...], source: Source
) -> tuple[dict[str, ast.Option], tuple[tuple[str, str], ...]]:
    """``(compiler options by lower-case key, Spark (name, value) pairs)``.

    Raises:
        OptionError: an unknown option close to a known one (with the suggestion).
    """
    known = {}
    for spark_name in connector.spark_options:
        known[spark_name.lower()] = spark_name
        known[snake_case(spark_name)] = spark_name
    own = {o.lower() for o in connector.own_options}
    compiler: dict[str, ast.Option] = {}
    spark: list[tuple[str, str]] = []
    for option in options:
        key = option.key.lower()
        if key in COMPILER_OPTIONS or key in own:
            compiler[key] = option
        elif key in known:
            _check_number(connector, known[key], option, source)
            spark.append((known[key], option.text))
        elif not connector.passes_options:
            names = sorted(own | {"connector", "checkpoint_location", "query_name"})
            raise OptionError(
                f"unknown option '{option.key}' for connector '{connector.name}'"
                f"{did_you_mean(key, names)}",
                option.key_span,
                source,
                hint=f"options of '{connector.name}': {', '.join(names)}",
            )
        elif "." not in key and (
            close := difflib.get_close_matches(
                key, list(known) + sorted(own | COMPILER_OPTIONS), n=1, cutoff=0.8
            )
        ):
            suggestion = known.get(close[0], close[0])
            raise OptionError(
                f"unknown option '{option.key}' for connector '{connector.name}'; did you mean "
                f"'{suggestion}'?",
                option.key_span,
                source,
                hint=f"write '{suggestion}'; keys that are not close to a known option are passed "
                "to Spark unchanged",
            )
        else:
            spark.append((option.key, option.text))
    return compiler, tuple(spark)


_WHOLE = re.compile(r"[+-]?\d+\Z")


def _check_number(connector: Connector, name: str, option: ast.Option, source: Source) -> None:
    """Refuse a value of a number option that Spark cannot read or refuses (``number_options``).

    Raises:
        OptionError: at the value.
    """
    rule = connector.number_options.get(name)
    if rule is None:
        return
    bits, minimum = rule
    text = option.text
    largest = 2 ** (bits - 1) - 1
    if not _WHOLE.match(text):
        problem = "is not a whole number"
    elif int(text) > largest:
        problem = f"is larger than {largest}"
    elif int(text) < minimum:
        problem = "must be positive" if minimum == 1 else f"must be at least {minimum}"
    else:
        return
    raise OptionError(
        f"option '{option.key}' = '{text}' {problem}",
        option.value_span,
        source,
        hint=f"Spark reads '{name}' as a whole number of at least {minimum}",
    )
