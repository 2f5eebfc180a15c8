"""Option names of Flink SQL's Kafka connector and ksqlDB's ``WITH`` lists, mapped to
sqlstream's before a ``WITH`` list is resolved (docs/compat.md).

Flink (``'connector' = 'kafka'``): ``properties.bootstrap.servers`` → ``bootstrap_servers``;
any other ``properties.<key>`` → Spark's ``kafka.<key>`` (the Kafka client property);
``scan.startup.mode`` = ``earliest-offset`` / ``latest-offset`` → ``startingOffsets`` =
``earliest`` / ``latest``, ``timestamp`` with ``scan.startup.timestamp-millis`` →
``startingTimestamp``; ``value.format`` → ``format``. ``group-offsets`` and
``specific-offsets`` are refused (``SS260``): Spark tracks offsets in its checkpoint, not
in a consumer group.

ksqlDB (no ``connector``): ``KAFKA_TOPIC`` → ``connector = 'kafka'``, ``topic``;
``VALUE_FORMAT`` → ``format`` (``JSON`` → ``json``, ``AVRO`` → ``avro``, ``DELIMITED`` →
``csv``, ``KAFKA`` → ``raw``). The broker address is not in ksqlDB's statements (it is the
server's); ``bootstrap_servers`` is then asked for by the Kafka connector.
"""

from __future__ import annotations

from dataclasses import replace

from sqlstream.diagnostics.errors import ForeignSpellingError
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast

__all__ = ["map_foreign_options"]

_STARTUP = {"earliest-offset": "earliest", "latest-offset": "latest"}
_KSQL_FORMATS = {"json": "json", "avro": "avro", "delimited": "csv", "kafka": "raw"}


def _renamed(option: ast.Option, key: str, value=None) -> ast.Option:
    return replace(option, key=key, value=option.value if value is None else value)


def map_foreign_options(options: tuple[ast.Option, ...], source: Source) -> tuple[ast.Option, ...]:
    """``options`` with Flink's Kafka and ksqlDB's option names replaced by sqlstream's.

    Args:
        options: a ``WITH`` list as parsed.
        source: the file (for messages).

    Returns:
        The options, renamed (spans kept, so later messages point at what was written);
        unchanged when none is foreign.

    Raises:
        ForeignSpellingError: ``SS260``, a Flink ``scan.startup.mode`` Spark has no
            counterpart for.
    """
    keys = {o.key.lower(): o for o in options}
    connector = keys.get("connector")
    mapped: list[ast.Option] = []
    if connector is None and "kafka_topic" in keys:
        first = keys["kafka_topic"]
        mapped.append(_renamed(first, "connector", "kafka"))
    is_kafka = (
        connector is not None and str(connector.value).lower() == "kafka"
    ) or "kafka_topic" in keys
    for option in options:
        key = option.key.lower()
        if key == "kafka_topic":
            mapped.append(_renamed(option, "topic"))
        elif key == "value_format":
            mapped.append(
                _renamed(
                    option,
                    "format",
                    _KSQL_FORMATS.get(str(option.value).lower(), str(option.value).lower()),
                )
            )
        elif not is_kafka:
            mapped.append(option)
        elif key == "properties.bootstrap.servers":
            mapped.append(_renamed(option, "bootstrap_servers"))
        elif key.startswith("properties."):
            mapped.append(_renamed(option, "kafka." + option.key[len("properties.") :]))
        elif key == "value.format":
            mapped.append(_renamed(option, "format"))
        elif key == "scan.startup.mode":
            mode = str(option.value).lower()
            if mode in _STARTUP:
                mapped.append(_renamed(option, "startingOffsets", _STARTUP[mode]))
            elif mode != "timestamp":
                raise ForeignSpellingError(
                    f"Flink's scan.startup.mode = '{option.value}' has no Spark counterpart: Spark keeps "
                    "the offsets it read in the query's checkpoint, not in a consumer group",
                    option.value_span,
                    source,
                    hint="startingOffsets = 'earliest' or 'latest' for the first run (later runs resume "
                    'from the checkpoint), or startingOffsets = \'{"topic":{"0":42}}\' for given offsets',
                )
        elif key == "scan.startup.timestamp-millis":
            mapped.append(_renamed(option, "startingTimestamp"))
        else:
            mapped.append(option)
    return tuple(mapped)
