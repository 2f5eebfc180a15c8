"""Connectors (LANGUAGE.md §4): what each ``connector = …`` means on Spark.

A :class:`ConnectorSpec` says which Spark format a connector reads or writes, which
options it requires, which options the compiler itself consumes, which Spark options it
knows (for snake_case spellings and "did you mean"), its fixed schema and its metadata
columns. Option handling: an option the compiler knows is consumed; a known Spark option
may be written in Spark's camelCase or in snake_case (``max_files_per_trigger``); an
unknown option close to a known one is an error with a suggestion; any other option is
passed to Spark unchanged under the name written.

Sources: Spark "Structured Streaming Programming Guide", *Input Sources* and *Output
Sinks*; the CSV/JSON/Parquet/ORC/Text "Data Source Option" pages.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from sqlstream import ast
from sqlstream.errors import OptionError, did_you_mean
from sqlstream.source import Source

# Options read by the compiler, never passed to Spark as they are.
COMPILER_OPTIONS = {
    "connector", "format", "path", "infer_schema", "checkpoint_location", "query_name",
    "partition_by", "table", "function",
}

_FILE_SOURCE = (
    "maxFilesPerTrigger", "maxBytesPerTrigger", "latestFirst", "fileNameOnly", "maxFileAge",
    "cleanSource", "sourceArchiveDir", "maxCachedFiles", "discardCachedInputRatio",
    "pathGlobFilter", "recursiveFileLookup", "modifiedBefore", "modifiedAfter",
    "ignoreCorruptFiles", "ignoreMissingFiles",
)
_FORMAT_OPTIONS = {
    "csv": (
        "header", "sep", "delimiter", "encoding", "charset", "quote", "quoteAll", "escape",
        "escapeQuotes", "comment", "nullValue", "nanValue", "positiveInf", "negativeInf",
        "dateFormat", "timestampFormat", "timestampNTZFormat", "enableDateTimeParsingFallback",
        "mode", "columnNameOfCorruptRecord", "multiLine", "ignoreLeadingWhiteSpace",
        "ignoreTrailingWhiteSpace", "emptyValue", "lineSep", "locale", "enforceSchema",
        "maxColumns", "maxCharsPerColumn", "unescapedQuoteHandling", "charToEscapeQuoteEscaping",
        "preferDate", "compression",
    ),
    "json": (
        "primitivesAsString", "prefersDecimal", "allowComments", "allowUnquotedFieldNames",
        "allowSingleQuotes", "allowNumericLeadingZeros", "allowBackslashEscapingAnyCharacter",
        "mode", "columnNameOfCorruptRecord", "dateFormat", "timestampFormat",
        "timestampNTZFormat", "multiLine", "allowUnquotedControlChars", "encoding", "lineSep",
        "dropFieldIfAllNull", "locale", "allowNonNumericNumbers", "compression",
        "ignoreNullFields",
    ),
    "parquet": ("mergeSchema", "datetimeRebaseMode", "int96RebaseMode", "compression"),
    "orc": ("mergeSchema", "compression"),
    "text": ("wholetext", "lineSep", "compression"),
}
FILE_FORMATS = tuple(_FORMAT_OPTIONS)

FILE_METADATA = {
    "file_path": ("_metadata.file_path", "STRING"),
    "file_name": ("_metadata.file_name", "STRING"),
    "file_size": ("_metadata.file_size", "BIGINT"),
    "file_modification_time": ("_metadata.file_modification_time", "TIMESTAMP"),
    "file_block_start": ("_metadata.file_block_start", "BIGINT"),
    "file_block_length": ("_metadata.file_block_length", "BIGINT"),
}

DURABLE = "durable"


@dataclass(frozen=True)
class ConnectorSpec:
    """What one connector means on Spark.

    Attributes:
        name: the ``connector = …`` value.
        source_format: ``readStream.format(…)`` value, or ``None`` if not a source.
        sink_format: ``writeStream.format(…)`` value, or ``None`` if not a sink.
        required: options that must be given (compiler spelling).
        spark_options: Spark option names this connector knows (camelCase).
        fixed_schema: ``(column, type)`` pairs of a connector whose schema Spark fixes.
        sink_modes: output modes the sink supports (Spark: ``files`` is append only).
        durable: the sink keeps data across restarts, so its query gets a checkpoint location.
        bounded_source: the connector can also back a ``CREATE TABLE`` (``spark.read``).
    """

    name: str
    source_format: str | None
    sink_format: str | None
    required: tuple[str, ...] = ()
    spark_options: tuple[str, ...] = ()
    fixed_schema: tuple[tuple[str, str], ...] | None = None
    sink_modes: frozenset[str] = frozenset({"append", "update", "complete"})
    durable: bool = False
    bounded_source: bool = False
    metadata: dict[str, tuple[str, str]] = field(default_factory=dict)


CONNECTORS: dict[str, ConnectorSpec] = {
    spec.name: spec
    for spec in (
        ConnectorSpec(
            "files", "<format>", "<format>", ("path", "format"),
            _FILE_SOURCE + tuple({o for opts in _FORMAT_OPTIONS.values() for o in opts}),
            sink_modes=frozenset({"append"}), durable=True, bounded_source=True,
            metadata=FILE_METADATA,
        ),
        ConnectorSpec(
            "rate", "rate", None, (), ("rowsPerSecond", "rampUpTime", "numPartitions"),
            fixed_schema=(("timestamp", "TIMESTAMP"), ("value", "BIGINT")),
        ),
        ConnectorSpec(
            "rate_micro_batch", "rate-micro-batch", None, ("rowsPerBatch",),
            ("rowsPerBatch", "numPartitions", "startTimestamp", "advanceMillisPerBatch"),
            fixed_schema=(("timestamp", "TIMESTAMP"), ("value", "BIGINT")),
        ),
        ConnectorSpec(
            "socket", "socket", None, ("host", "port"), ("host", "port", "includeTimestamp"),
            fixed_schema=(("value", "STRING"),),
        ),
        ConnectorSpec(
            "table", "<table>", "<table>", ("table",), (), durable=True, bounded_source=True,
            sink_modes=frozenset({"append", "complete"}),
        ),
        ConnectorSpec("console", None, "console", (), ("numRows", "truncate")),
        ConnectorSpec("memory", None, "memory", (), ()),
        ConnectorSpec("noop", None, "noop", (), ()),
    )
}
NOT_YET = {
    "kafka": "the kafka connector is not supported yet",
    "foreach_batch": "the foreach_batch connector is not supported yet",
}


def snake_case(name: str) -> str:
    """``maxFilesPerTrigger`` → ``max_files_per_trigger``."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


@dataclass(frozen=True)
class ResolvedOptions:
    """A ``WITH (…)`` list split into what the compiler reads and what Spark receives.

    Attributes:
        spec: the connector.
        compiler: compiler options by lower-case name (values as written).
        spark: ``(name, value)`` pairs for ``.option(name, value)``, in the order written.
        options: the original options by lower-case key, for positions in messages.
        warnings: options Spark will ignore (code SS352, severity warning).
    """

    spec: ConnectorSpec
    compiler: dict[str, ast.Option]
    spark: tuple[tuple[str, str], ...]
    options: dict[str, ast.Option]
    warnings: tuple[OptionError, ...] = ()

    def get(self, key: str, default: str | None = None) -> str | None:
        """The text of compiler option ``key``, or ``default``."""
        option = self.compiler.get(key)
        return option.text if option is not None else default


def resolve_options(
    options: tuple[ast.Option, ...], source: Source, role: str, owner: ast.Name, span
) -> ResolvedOptions:
    """Check a ``WITH (…)`` list against its connector.

    Args:
        options: the options as parsed.
        source: the file (for messages).
        role: ``"source"``, ``"table"`` or ``"sink"``.
        owner: the stream/table/sink name, for messages.
        span: where to point when an option is missing (the statement).

    Returns:
        The :class:`ResolvedOptions`.

    Raises:
        OptionError: no or unknown connector, a connector that cannot play ``role``, a
            missing required option, an unknown file format, or a misspelt known option.
    """
    by_key = {o.key.lower(): o for o in options}
    connector = by_key.get("connector")
    if connector is None:
        raise OptionError(
            f"{role} '{owner}' has no connector", span, source,
            hint=f"add WITH (connector = '…'); connectors: {', '.join(sorted(CONNECTORS))}",
        )
    name = connector.text.lower()
    if name in NOT_YET:
        raise OptionError(NOT_YET[name], connector.value_span, source,
                          hint=f"available connectors: {', '.join(sorted(CONNECTORS))}")
    spec = CONNECTORS.get(name)
    if spec is None:
        raise OptionError(
            f"unknown connector '{connector.text}'{did_you_mean(name, CONNECTORS)}",
            connector.value_span, source,
            hint=f"connectors: {', '.join(sorted(CONNECTORS))}",
        )
    fits = spec.sink_format if role == "sink" else spec.source_format
    if role == "table" and not spec.bounded_source:
        fits = None
    if fits is None:
        can = sorted(n for n, s in CONNECTORS.items()
                     if (s.sink_format if role == "sink" else s.source_format)
                     and (role != "table" or s.bounded_source))
        raise OptionError(
            f"connector '{name}' cannot be used as a {role}", connector.value_span, source,
            hint=f"{role} connectors: {', '.join(can)}",
        )
    known = {}
    for spark_name in spec.spark_options:
        known[spark_name.lower()] = spark_name
        known[snake_case(spark_name)] = spark_name
    compiler: dict[str, ast.Option] = {}
    spark: list[tuple[str, str]] = []
    for option in options:
        key = option.key.lower()
        if key in COMPILER_OPTIONS:
            compiler[key] = option
        elif key in known:
            spark.append((known[key], option.text))
        elif "." not in key and (close := difflib.get_close_matches(
                key, list(known) + sorted(COMPILER_OPTIONS), n=1, cutoff=0.8)):
            suggestion = known.get(close[0], close[0])
            raise OptionError(
                f"unknown option '{option.key}' for connector '{name}'; did you mean "
                f"'{suggestion}'?", option.key_span, source,
                hint=f"write '{suggestion}'; keys that are not close to a known option are passed "
                "to Spark unchanged",
            )
        else:
            spark.append((option.key, option.text))
    for required in spec.required:
        if required.lower() not in compiler and required not in (k for k, _ in spark):
            raise OptionError(
                f"connector '{name}' needs option '{snake_case(required)}'", span, source,
                hint=f"add {snake_case(required)} = … to the WITH list",
            )
    if name == "files":
        fmt = compiler["format"]
        if fmt.text.lower() not in FILE_FORMATS:
            raise OptionError(
                f"unknown file format '{fmt.text}'{did_you_mean(fmt.text, FILE_FORMATS)}",
                fmt.value_span, source, hint=f"formats: {', '.join(FILE_FORMATS)}",
            )
    return ResolvedOptions(spec, compiler, tuple(spark), by_key,
                           _ignored(spec, compiler, options, source, role))


def _ignored(spec, compiler, options, source, role) -> tuple[OptionError, ...]:
    """Options that Spark accepts but ignores here: another format's options, and
    streaming-only options on a bounded table or a sink."""
    if spec.name != "files":
        return ()
    fmt = compiler["format"].text.lower()
    own = {o.lower() for o in _FORMAT_OPTIONS.get(fmt, ())}
    others = {o.lower(): f for f, opts in _FORMAT_OPTIONS.items() for o in opts if f != fmt}
    streaming_only = {o.lower() for o in _FILE_SOURCE} - {"pathglobfilter", "recursivefilelookup",
                                                           "modifiedbefore", "modifiedafter",
                                                           "ignorecorruptfiles", "ignoremissingfiles"}
    found = []
    for option in options:
        key = option.key.lower()
        canonical = key.replace("_", "")
        match = next((k for k in list(others) + sorted(streaming_only)
                      if k == key or k == canonical), None)
        if match is None or match in own:
            continue
        if match in others:
            verb = "writes" if role == "sink" else "reads"
            why = f"it is a {others[match]} option and this {role} {verb} {fmt}"
        elif role != "source":
            why = f"it applies only to a stream's readStream, not to a {role}"
        else:
            continue
        found.append(OptionError(f"Spark ignores option '{option.key}': {why}",
                                 option.key_span, source, code="SS352", severity="warning",
                                 hint="remove it"))
    return tuple(found)
