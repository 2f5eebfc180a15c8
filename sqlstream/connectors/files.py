"""``connector = 'files'``: a folder of json, csv, parquet, orc or text files.

As a source, Spark's file source (``readStream.format(format)…load(path)``) reads the new
files of the folder in order of modification time; as a sink, the file sink
(``writeStream.format(format)…start(path)``) writes append-only, exactly once, with its
log under the checkpoint. A ``CREATE TABLE`` reads the files once (``spark.read``).
Declared CSV columns are bound to the files' header by name (:mod:`sqlstream.connectors.formats.csv_header`).
``format = 'debezium-json'`` (a source only) reads each line as text and decodes it as a
Debezium change record (:mod:`sqlstream.connectors.formats.debezium`).

Sources: Spark guide *Input Sources* (File source) and *Output Sinks* (File sink); the
CSV/JSON/Parquet/ORC/Text "Data Source Option" pages; ``_metadata`` (*File metadata
column*).
"""

from __future__ import annotations

import copy
from dataclasses import replace

from sqlstream.connectors.base import Connector, Report, ResolvedOptions, ResolvePath
from sqlstream.connectors.call_sequence import schema_ddl
from sqlstream.connectors.formats import debezium
from sqlstream.connectors.formats.csv_header import declared_columns
from sqlstream.connectors.payload import Payload
from sqlstream.diagnostics.errors import OptionError, SqlStreamError, did_you_mean
from sqlstream.diagnostics.source_text import Source
from sqlstream.frontend import ast
from sqlstream.ir import plan as p
from sqlstream.ir import spark_versions
from sqlstream.ir.calls import Chain, ChainOrigin, Step

FILE_SOURCE_OPTIONS = (
    "maxFilesPerTrigger",
    "maxBytesPerTrigger",
    "latestFirst",
    "fileNameOnly",
    "maxFileAge",
    "cleanSource",
    "sourceArchiveDir",
    "maxCachedFiles",
    "discardCachedInputRatio",
    "pathGlobFilter",
    "recursiveFileLookup",
    "modifiedBefore",
    "modifiedAfter",
    "ignoreCorruptFiles",
    "ignoreMissingFiles",
)
# File source options that batch reads (CREATE TABLE) and sinks also honour.
_GENERIC = {
    "pathglobfilter",
    "recursivefilelookup",
    "modifiedbefore",
    "modifiedafter",
    "ignorecorruptfiles",
    "ignoremissingfiles",
}
FORMAT_OPTIONS = {
    "csv": (
        "header",
        "sep",
        "delimiter",
        "encoding",
        "charset",
        "quote",
        "quoteAll",
        "escape",
        "escapeQuotes",
        "comment",
        "nullValue",
        "nanValue",
        "positiveInf",
        "negativeInf",
        "dateFormat",
        "timestampFormat",
        "timestampNTZFormat",
        "enableDateTimeParsingFallback",
        "mode",
        "columnNameOfCorruptRecord",
        "multiLine",
        "ignoreLeadingWhiteSpace",
        "ignoreTrailingWhiteSpace",
        "emptyValue",
        "lineSep",
        "locale",
        "enforceSchema",
        "maxColumns",
        "maxCharsPerColumn",
        "unescapedQuoteHandling",
        "charToEscapeQuoteEscaping",
        "preferDate",
        "compression",
    ),
    "json": (
        "primitivesAsString",
        "prefersDecimal",
        "allowComments",
        "allowUnquotedFieldNames",
        "allowSingleQuotes",
        "allowNumericLeadingZeros",
        "allowBackslashEscapingAnyCharacter",
        "mode",
        "columnNameOfCorruptRecord",
        "dateFormat",
        "timestampFormat",
        "timestampNTZFormat",
        "multiLine",
        "allowUnquotedControlChars",
        "encoding",
        "lineSep",
        "dropFieldIfAllNull",
        "locale",
        "allowNonNumericNumbers",
        "compression",
        "ignoreNullFields",
    ),
    "parquet": ("mergeSchema", "datetimeRebaseMode", "int96RebaseMode", "compression"),
    "orc": ("mergeSchema", "compression"),
    "text": ("wholetext", "lineSep", "compression"),
    debezium.DEBEZIUM: ("lineSep",),  # lines read by the text source
}
FILE_FORMATS = tuple(FORMAT_OPTIONS)

FILE_METADATA = {
    "file_path": ("_metadata.file_path", "STRING"),
    "file_name": ("_metadata.file_name", "STRING"),
    "file_size": ("_metadata.file_size", "BIGINT"),
    "file_modification_time": ("_metadata.file_modification_time", "TIMESTAMP"),
    "file_block_start": ("_metadata.file_block_start", "BIGINT"),
    "file_block_length": ("_metadata.file_block_length", "BIGINT"),
}


class Files(Connector):
    """Files in a folder: ``format`` and ``path`` required; append-only, durable sink."""

    name = "files"
    source_format = "<format>"
    sink_format = "<format>"
    required = ("path", "format")
    spark_options = FILE_SOURCE_OPTIONS + tuple(
        {o for opts in FORMAT_OPTIONS.values() for o in opts}
    )
    number_options = {"maxFilesPerTrigger": (32, 1), "maxCachedFiles": (32, 0)}
    metadata = FILE_METADATA
    sink_modes = frozenset({"append"})
    durable = True
    bounded_source = True
    continuous_sink = False
    path_target = True
    file_sink = True
    line_formats = ("csv", "json")

    def validate(self, compiler: dict[str, ast.Option], source: Source) -> None:
        """Raises:
        OptionError: ``format`` is not one of :data:`FILE_FORMATS`.
        """
        fmt = compiler["format"]
        if fmt.text.lower() not in FILE_FORMATS:
            raise OptionError(
                f"unknown file format '{fmt.text}'{did_you_mean(fmt.text, FILE_FORMATS)}",
                fmt.value_span,
                source,
                hint=f"formats: {', '.join(FILE_FORMATS)}",
            )

    def finish(self, resolved: ResolvedOptions, role: str, span) -> ResolvedOptions:
        """Raises:
        SqlStreamError: ``SS290``: ``format = 'debezium-json'`` on a sink or with
            ``infer_schema``.
        """
        fmt = resolved.compiler.get("format")
        if fmt is None or fmt.text.lower() != debezium.DEBEZIUM:
            return resolved
        infer = resolved.compiler.get("infer_schema")
        if role == "sink" or infer is not None:
            raise SqlStreamError(
                "format 'debezium-json' is read, never written"
                if role == "sink"
                else "a debezium-json source decodes its declared columns: it infers none",
                fmt.value_span if role == "sink" else infer.key_span,  # type: ignore[union-attr]
                code="SS290",
                hint="write format = 'json' rows, or apply changes with CREATE FLOW … AUTO CDC"
                if role == "sink"
                else "declare the row's columns and remove infer_schema",
            )
        return resolved

    def declared(self, statement, resolved, resolve_path, project=None, trusted=False):
        """``debezium-json``: a copy whose metadata keys are the file ones and the
        format's (:func:`sqlstream.connectors.formats.debezium.metadata`).

        Raises:
            UnknownNameError: ``SS201``, a metadata key of neither.
        """
        if not _debezium(resolved.get("format")):
            return self
        spec = copy.copy(self)
        spec.metadata = debezium.metadata(statement, FILE_METADATA)
        return spec

    def planned(self, relation: p.SourceRelation, statement) -> p.SourceRelation:
        """``debezium-json``: whether metadata columns read the envelope (``settings``)."""
        if not _debezium(relation.format) or not debezium.uses_metadata(statement):
            return relation
        return replace(relation, settings=(*relation.settings, ("debezium_metadata", "true")))

    def read_steps(self, relation: p.SourceRelation) -> tuple[Step, ...]:
        """``debezium-json``: ``format('text').option(k, v)….load(path)``, one record a line;
        other formats: the common steps."""
        if not _debezium(relation.format):
            return super().read_steps(relation)
        options = [Step("option", (k, v)) for k, v in relation.options]
        return (Step("format", ("text",)), *options, Step("load", (relation.path,)))

    def read_chains(self, relation: p.SourceRelation) -> tuple[Chain, ...]:
        """``debezium-json`` with ``on_error = 'fail'``: the common sequence with the
        decoding after ``load()`` (:func:`~sqlstream.connectors.formats.debezium.decode_items`)::

            df = df.where("value IS NOT NULL AND trim(value) NOT IN ('', 'null')")
            df = df.selectExpr("coalesce(get_json_object(value, '$.payload'), value) AS `__debezium`", '_metadata')
            df = df.selectExpr("CASE WHEN <image> IS NULL THEN raise_error(…) ELSE from_json(<image>, '<ddl>', …) END AS `__value`", …)
            df = df.selectExpr('`__value`.*', …)       # with the envelope and _metadata for metadata columns
        """
        chains = list(super().read_chains(relation))
        if not _debezium(relation.format):
            return tuple(chains)
        what: ChainOrigin = dict(label=f"Spark rejected '{relation.name}'", span=relation.span)
        keep = dict(relation.settings).get("debezium_metadata") == "true"
        steps = [Step("where", (debezium.skip_sql("value"),))]
        steps += [
            Step("selectExpr", items)
            for items in debezium.decode_items(
                "value", schema_ddl(relation) or "", ("_metadata",), ("_metadata",), keep
            )
        ]
        chains[1:1] = [Chain("df", (step,), assign="df", **what) for step in steps]
        return tuple(chains)

    def payload(self, relation: p.SourceRelation) -> Payload | None:
        """``debezium-json``: each line's row image as JSON, decoded by ``on_error = 'drop'``
        / ``'dead_letter'``, the envelope and ``_metadata`` kept beside it; blank lines
        skipped. Other formats: ``None`` (decoded line by line there)."""
        if not _debezium(relation.format):
            return None
        envelope = debezium.envelope_sql("value")
        return Payload(
            "json",
            debezium.image_sql(envelope),
            "value",
            None,
            kept=("_metadata", f"{envelope} AS `{debezium.ENVELOPE}`"),
            kept_names=("_metadata", f"`{debezium.ENVELOPE}`"),
            position=(("file", "STRING", "_metadata.file_path"),),
            skip=debezium.skip_sql("value"),
            malformed=debezium.MALFORMED,
        )

    def ignored_options(self, compiler, options, source, role) -> tuple[OptionError, ...]:
        """SS352: another format's options, and streaming-only file source options on a
        bounded table or a sink (Spark accepts and ignores them)."""
        fmt = compiler["format"].text.lower()
        own = {o.lower() for o in FORMAT_OPTIONS.get(fmt, ())}
        others = {o.lower(): f for f, opts in FORMAT_OPTIONS.items() for o in opts if f != fmt}
        streaming_only = {o.lower() for o in FILE_SOURCE_OPTIONS} - _GENERIC
        found = []
        for option in options:
            key = option.key.lower()
            canonical = key.replace("_", "")
            match = next(
                (k for k in list(others) + sorted(streaming_only) if k in (key, canonical)),
                None,
            )
            if match is None or match in own:
                continue
            if match in others:
                verb = "writes" if role == "sink" else "reads"
                why = f"it is a {others[match]} option and this {role} {verb} {fmt}"
            elif role != "source":
                why = f"it applies only to a stream's readStream, not to a {role}"
            else:
                continue
            found.append(
                OptionError(
                    f"Spark ignores option '{option.key}': {why}",
                    option.key_span,
                    source,
                    code="SS352",
                    hint="remove it",
                )
            )
        return tuple(found)

    def check_sink(
        self,
        resolved: ResolvedOptions,
        columns,
        output_mode: str,
        source: Source,
        spark_version: str,
    ) -> tuple[OptionError, ...]:
        """``SS337`` at ``partition_by``, judging for Spark 4.3 or later
        (``spark_version``, the compile context's): a partition column of a complex
        type (``ARRAY``, ``MAP``, ``STRUCT``, ``VARIANT``), a column named twice, or every
        column of the query. Spark 4.3 checks a file sink's partition columns when the query
        starts, as batch writes do (``INVALID_PARTITION_COLUMN_DATA_TYPE``,
        ``COLUMN_ALREADY_EXISTS``, ``ALL_PARTITION_COLUMNS_NOT_ALLOWED``; Spark's *Structured
        Streaming migration guide*, 4.2 to 4.3), where 4.0–4.2 run the query (every column
        too, in JSON; parquet fails its first batch; measured on 4.2.1 and 4.3.0).
        ``columns`` ``None`` (known only at run time): only the repeated column."""
        option = resolved.compiler.get("partition_by")
        version = spark_version
        if option is None or not spark_versions.at_least(version, "4.3"):
            return ()
        names = _split(option.text)
        seen: set[str] = set()
        for name in names:
            if name.lower() in seen:
                return (
                    OptionError(
                        f"partition column '{name}' is named twice; Spark {version} "
                        "refuses that when the query starts",
                        option.value_span,
                        source,
                        code="SS337",
                        hint="name each partition column once",
                    ),
                )
            seen.add(name.lower())
        if columns is None:
            return ()
        types = {n.lower(): t for n, t in columns}
        for name in names:
            kind = types.get(name.lower(), "").split("<")[0]
            if kind in ("ARRAY", "MAP", "STRUCT", "VARIANT"):
                return (
                    OptionError(
                        f"partition column '{name}' is {types[name.lower()]}; Spark {version} partitions "
                        "files only by columns of atomic types",
                        option.value_span,
                        source,
                        code="SS337",
                        hint="partition by an atomic column (e.g. a field: … AS part_key), or drop it "
                        "from partition_by",
                    ),
                )
        if seen >= set(types):
            return (
                OptionError(
                    f"partition_by names every column of the query; Spark {version} needs at "
                    "least one column left to write into the files",
                    option.value_span,
                    source,
                    code="SS337",
                    hint="leave at least one column out of partition_by",
                ),
            )
        return ()

    def source_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(format in lower case, path resolved against the file's folder)``."""
        return resolved.required("format").lower(), resolve_path(resolved.get("path"))

    def sink_target(self, resolved: ResolvedOptions, resolve_path: ResolvePath):
        """``(format in lower case, path resolved against the file's folder)``."""
        return self.source_target(resolved, resolve_path)

    def bind_columns(
        self,
        resolved: ResolvedOptions,
        columns: list[ast.ColumnDef],
        path: str | None,
        report: Report,
        project: str | None = None,
        trusted: bool = False,
    ):
        """CSV: the declared columns bound to the files' header by name
        (:func:`sqlstream.connectors.formats.csv_header.declared_columns`, ``SS242`` / ``SS243``),
        the header read only inside ``project`` unless ``trusted``; other formats read the
        declared columns as declared."""
        if resolved.required("format").lower() == "csv":
            return declared_columns(columns, path, resolved.spark, report, project, trusted)
        return super().bind_columns(resolved, columns, path, report, project, trusted)

    def schema_arg(self, relation: p.SourceRelation):
        """The declared DDL string; with ``infer_schema``, the schema of a batch read of the
        files present at start (``spark.read.format(f).option(…)…load(path).schema``,
        ``inferSchema`` for csv), as a nested chain."""
        if _debezium(relation.format):
            return None
        if relation.read_columns or not relation.infer_schema:
            return schema_ddl(relation)
        steps = [Step("read", call=False), Step("format", (relation.format,))]
        steps += [Step("option", (k, v)) for k, v in relation.options]
        if relation.format == "csv":
            steps.append(Step("option", ("inferSchema", "true")))
        steps += [Step("load", (relation.path,)), Step("schema", call=False)]
        return Chain(
            "spark", tuple(steps), note=f"{relation.name}: schema inferred from {relation.path}"
        )


def _debezium(fmt: str | None) -> bool:
    return (fmt or "").lower() == debezium.DEBEZIUM


def _split(text: str) -> list[str]:
    return [part.strip().strip("`") for part in text.split(",") if part.strip()]
