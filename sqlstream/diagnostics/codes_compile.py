"""The finding codes of files, variables, syntax, names, options, types, secrets and malformed records (``SS0xx``–``SS2xx``): ``(code, severity, title, doc)`` records, read by
:mod:`sqlstream.diagnostics.codes` (which validates them and builds :data:`~sqlstream.diagnostics.codes.CODES`).

Kept apart from the registry's code so that each module stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    # ---- files and variables ----------------------------------------------------------------
    (
        "SS000",
        "error",
        "an error without a more specific code (the default of "
        "`SqlStreamError`; every error sqlstream raises has its own code)",
        """
     The code of a ``SqlStreamError`` constructed without one, e.g. by code that uses the
     Python API. sqlstream itself never reports it: seeing it is a bug.""",
    ),
    (
        "SS001",
        "error",
        "undefined or malformed `${…}` variable, unset environment variable",
        """
     Variables are replaced before parsing, so the file cannot be read without a value.
     Anti-pattern: ``path = '${data}/flights'`` run without ``--var data=…``. Fix: pass
     ``--var data=/mnt/data`` (API: ``variables={'data': …}``), or ``export NAME=…`` for
     ``${env:NAME}``; write ``${name}`` with letters, digits, ``_``, ``.`` and ``-``.""",
    ),
    (
        "SS002",
        "error",
        "a file that cannot be read",
        """
     The ``.ssql`` file named on the command line (or to ``compile_file``) does not exist,
     is a directory, or is not readable (the message gives the operating system's reason),
     or it is not UTF-8: the message gives the byte offset of the first byte that is not,
     and the caret points at it. A leading byte-order mark is accepted. Fix: save the file
     as UTF-8.""",
    ),
    (
        "SS003",
        "error",
        "sqlglot's compiled build (`sqlglotc`, `sqlglot[c]`) is installed",
        """
     sqlstream's SQL dialect extends sqlglot's Spark parser and generator in Python, and
     the mypyc-compiled build of sqlglot refuses subclasses written in Python (sqlglot
     issue 7923). Anti-pattern: ``pip install 'sqlglot[c]'`` in sqlstream's environment.
     Fix: ``pip uninstall sqlglotc``; sqlglot itself stays installed.""",
    ),
    # ---- syntax ----------------------------------------------------------------------------
    (
        "SS101",
        "error",
        "the statement grammar does not accept the text",
        """
     The statement envelope (docs/dialect.md#statements: ``CREATE STREAM``, ``CREATE SINK``, ``INSERT
     INTO``, ``SET`` …) is parsed before any SQL; the message says what was found and what
     could come there. Anti-pattern: a statement without its closing ``;``, an unterminated
     string. Fix: end every statement with ``;`` and close every quote.""",
    ),
    (
        "SS102",
        "error",
        "a query body or expression is not valid Spark SQL",
        """
     Query bodies, computed columns and watermark expressions are Spark SQL (plus window
     TVFs and ``WATERMARK``), parsed with sqlglot's Spark dialect; Spark would refuse the
     text with a ``PARSE_SYNTAX_ERROR``, or a typed literal with ``INVALID_INTERVAL_FORMAT`` /
     ``INVALID_TYPED_LITERAL`` (``INTERVAL 'abc' HOUR``, ``DATE '2024-02-30'``,
     ``TIMESTAMP '2024-13-01'``). Anti-pattern: ``SELECT a b c FROM s``. Fix: the caret
     points at the first token that does not fit.""",
    ),
    (
        "SS103",
        "error",
        "parentheses, CASE or nested types deeper than 1,000 levels, subqueries deeper than 160",
        """
     Parentheses (expressions, calls, subqueries) and ``CASE … END`` together, and nested
     types (``ARRAY<…>``, ``STRUCT<…>``, ``MAP<…>``), may nest up to 1,000 levels, subqueries
     up to 160 (``sqlstream.frontend.limits``): Spark 4.1 refuses 400 nested parentheses or
     200 nested subqueries with ``FAILED_TO_PARSE_TOO_COMPLEX`` (and was measured to parse
     150 nested subqueries). The same
     code is given to a statement too complex to compile for any other reason.
     Anti-pattern: generated SQL that wraps a query in a subquery per step. Fix: split the
     query into views (``CREATE VIEW``).""",
    ),
    (
        "SS104",
        "error",
        "a test file past a limit of `sqlstream test` (nesting, values with aliases expanded, "
        "rows in a step)",
        """
     A ``*.test.yaml`` file is read within documented limits (docs/pipeline-tests.md#limits):
     brackets and values nested at most 64 levels, a line indented at most 256 characters,
     at most 1,000,000 values with aliases expanded (an alias "bomb", a few lines that
     expand to billions of values, is refused without being expanded), at most 10,000 rows
     for one stream, table or sink in a step. The caret points at the collection or line
     past the limit. Fix: split a long input over several steps or tests; write the values
     out instead of nesting aliases.""",
    ),
    # ---- names, options, meaning, types -----------------------------------------------------
    (
        "SS201",
        "error",
        "unknown relation, sink, column, metadata key",
        """
     A name the file does not declare: a relation in ``FROM``, the sink of an ``INSERT``, a
     watermark column, a column of a connector with a fixed schema, a metadata key. Spark
     would raise ``TABLE_OR_VIEW_NOT_FOUND`` or ``UNRESOLVED_COLUMN``. Anti-pattern:
     ``FROM flihgts``. Fix: the "did you mean" spelling, or declare the relation with
     ``CREATE STREAM``, ``CREATE TABLE`` or ``CREATE VIEW`` before the statement.""",
    ),
    (
        "SS202",
        "error",
        'unknown connector, setting or option (with "did you mean"), missing option',
        """
     A ``WITH`` list or ``SET`` that cannot be bound: an unknown connector or file format, a
     connector used in the wrong role, a required option missing, an option close to a
     known one (likely misspelt), an unknown compiler setting, a number option Spark cannot
     read or refuses (``maxFilesPerTrigger = 0``, ``rowsPerSecond = 'abc'``, a ``port`` past
     32 bits), or a ``SET`` Spark refused at start. Anti-pattern: ``WITH (connector = 'files', path = 'in', fromat = 'csv')``. Fix:
     ``format = 'csv'``; options far from every known one are passed to Spark unchanged.""",
    ),
    (
        "SS203",
        "error",
        "a statement that parses but has no meaning (bad type, watermark on a "
        "column that is not a TIMESTAMP, interval, TVF use)",
        """
     The grammar accepts the statement but Spark cannot run what it says: a watermark on a
     column that is not a ``TIMESTAMP`` (Spark: ``EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE``), a
     watermark delay that is not a constant interval, a duration Spark cannot read or
     refuses where it is used (a negative watermark delay or trigger interval, months in a
     window or trigger, a window slide longer than its size, ``'1.5 minutes'``: only
     seconds have fractions), a window TVF outside ``FROM`` or two in one ``SELECT``, a
     ``SESSION`` that is not aggregated, an option given twice.
     Anti-pattern: ``WATERMARK FOR epoch AS epoch - INTERVAL '1' MINUTE`` on a ``BIGINT``.
     Fix: a computed column ``ts AS timestamp_seconds(epoch)`` and the watermark on it.""",
    ),
    (
        "SS204",
        "error",
        "duplicate name",
        """
     Streams, tables and views share one namespace, sinks have their own, and each sink
     takes one query: a second declaration of a name, or a second query into the same sink,
     is refused. Fix: rename one of them, or give each query its own ``CREATE SINK``
     (or set ``query_name``).""",
    ),
    (
        "SS205",
        "error",
        "unknown column, struct field or `USING` column in a query, view or "
        'computed column (with "did you mean", or the relation\'s columns)',
        """
     A column no relation of the ``FROM`` clause has, through views, joins, subqueries and
     CTEs (Spark: ``UNRESOLVED_COLUMN``, ``FIELD_NOT_FOUND``, ``UNRESOLVED_USING_COLUMN_FOR_JOIN``).
     A ``SELECT`` alias is not visible in ``WHERE``. Anti-pattern: ``SELECT carier FROM
     flights``. Fix: the suggested name, or the relation's columns the message lists.""",
    ),
    (
        "SS206",
        "error",
        'unknown function (with "did you mean"; the names are the built-in '
        "functions of the Spark version judged for)",
        """
     A call to a function that is not one of Spark's built-in functions (Spark:
     ``UNRESOLVED_ROUTINE``) in the Spark version the file is judged for (``check
     --spark-version``, ``SET 'sqlstream.spark_version'``, else the installed PySpark's:
     4.2 and 4.3 add functions, e.g. ``jaro_winkler_similarity`` in 4.3), nor a function
     the file declared before the call (``CREATE FUNCTION``). Anti-pattern:
     ``SELECT avrg(dep_delay)``. Fix: ``avg(dep_delay)``; ``SHOW FUNCTIONS`` lists them.""",
    ),
    (
        "SS207",
        "error",
        "ambiguous column: more than one relation of the `FROM` clause has it",
        """
     Spark raises ``AMBIGUOUS_REFERENCE`` for an unqualified column two joined relations
     have. Anti-pattern: ``SELECT carrier FROM flights f JOIN airlines a ON f.carrier =
     a.carrier``. Fix: qualify it, ``f.carrier``, or join with ``USING (carrier)``.""",
    ),
    (
        "SS208",
        "error",
        "a type error Spark raises at analysis: a window on a number, "
        "`TIMESTAMP` ± a number, a field of a column that is not a struct",
        """
     Spark fails the query with ``DATATYPE_MISMATCH`` before it runs. Only errors Spark is
     certain to raise are reported; a type sqlstream cannot know is ``UNKNOWN`` and never a
     finding. Anti-pattern: ``ts + 3600``. Fix: ``ts + INTERVAL 1 HOUR``; a window on
     ``timestamp_seconds(epoch)`` instead of a number.""",
    ),
    (
        "SS209",
        "error",
        "a column in the SELECT list of an aggregation that is neither in "
        "`GROUP BY` nor inside an aggregate function (Spark's `MISSING_AGGREGATION` / "
        "`MISSING_GROUP_BY`)",
        """
     An aggregation has one row per group, so every selected column must be a grouping key
     or aggregated. Anti-pattern: ``SELECT origin, dest, count(*) FROM f GROUP BY origin``.
     Fix: ``GROUP BY origin, dest``, or ``first(dest)``.""",
    ),
    (
        "SS210",
        "error",
        "a Kafka connector's options do not fit: no `bootstrap_servers`, no "
        "or two topics, `topic_pattern` on a sink, an unknown value `format`, a raw column "
        "declared with another type",
        """
     Spark's Kafka source needs ``kafka.bootstrap.servers`` and exactly one of
     ``subscribe``, ``subscribePattern``, ``assign`` (``IllegalArgumentException`` when the
     query starts); its sink writes one topic. The value is decoded by ``format`` (``json``,
     ``csv``, ``avro``, ``raw``); a raw stream has Kafka's columns, ``key`` and ``value``
     ``BINARY`` or ``STRING``. Anti-pattern: ``WITH (connector = 'kafka', topic = 'a',
     topic_pattern = 'b.*')``. Fix: ``bootstrap_servers = 'host:9092', topic = 'a'``.""",
    ),
    (
        "SS211",
        "error",
        "an Avro schema that cannot be read, is not a record, or does not "
        "have a declared column with its type",
        """
     ``format = 'avro'`` decodes ``value`` with Spark's ``from_avro(value, schema)``; the
     declared columns are fields of that record, typed as Spark maps Avro types (``long``
     → ``BIGINT``, ``timestamp-micros`` → ``TIMESTAMP``, a union with ``null`` → its other
     type). A column that is not a field, or declared with another type, would fail or be
     wrong at run time. Anti-pattern: ``dep_delay INT`` for a field ``"type": "double"``.
     Fix: ``dep_delay DOUBLE``, or cast in a computed column.""",
    ),
    (
        "SS212",
        "error",
        "a query whose columns a Kafka sink cannot write (a `value`, `key` or "
        "`headers` column of another type, `key_columns` that are not columns, no topic)",
        """
     Spark's Kafka sink writes a ``value`` column that is ``STRING`` or ``BINARY``, an
     optional ``key`` (``STRING``/``BINARY``) and ``headers`` (``ARRAY<STRUCT<key: STRING,
     value: BINARY>>``), to the ``topic`` option or a ``topic`` column (it fails the query
     when it starts otherwise). Without a ``value`` column sqlstream encodes the row
     (``format``: ``json``, ``avro``, ``csv``). Anti-pattern: ``key_columns = 'orign'``.
     Fix: name columns of the query.""",
    ),
    (
        "SS220",
        "error",
        "a `foreach_batch` function that cannot be imported or is not callable",
        """
     ``function = 'package.module:callable'`` is imported when the file is compiled (as
     Python imports it: ``sys.path``, the current directory with ``python -m``, and the
     pipeline file's folder): a module that is not found or fails while importing, an
     attribute the module does not have, or a value that is not callable. Spark would fail
     the query at its first micro-batch. Anti-pattern: ``function = 'sinks.write'`` (no
     colon) or a typo in the module path. Fix: ``function = 'sinks:write'`` with
     ``sinks.py`` importable.""",
    ),
    (
        "SS221",
        "error",
        "a `foreach_batch` function that cannot be called with `(DataFrame, batch_id)`",
        """
     ``DataStreamWriter.foreachBatch`` calls the function with two positional arguments,
     the micro-batch's DataFrame and its batch id; a function whose signature
     (``inspect.signature``) cannot bind two positional arguments fails the query at its
     first micro-batch. Anti-pattern: ``def write(df):``. Fix: ``def write(df, batch_id):``.""",
    ),
    (
        "SS222",
        "error",
        "a PostgreSQL sink without a usable address (`url`, or `host` and `database`; `port`)",
        """
     The ``postgres`` (and ``jdbc``) sink connects with ``url`` (``postgresql://…``,
     ``postgres://…`` or Spark's ``jdbc:postgresql://…``) or with ``host``, ``port`` and
     ``database``; one of the two forms, not both. A ``port`` is a whole number from 1 to
     65535. Anti-pattern: ``url = 'jdbc:mysql://…'``. Fix: a PostgreSQL URL, or the
     ``foreach_batch`` connector for another database.""",
    ),
    (
        "SS223",
        "error",
        "a PostgreSQL sink `mode` other than append or upsert, upsert without `key_columns`",
        """
     ``mode = 'append'`` inserts every row of each micro-batch; ``mode = 'upsert'`` inserts
     or updates by the ``key_columns`` (``INSERT … ON CONFLICT (keys) DO UPDATE``), which
     needs them. ``key_columns`` without upsert has no meaning. Anti-pattern: ``mode =
     'upsert'`` alone. Fix: ``key_columns = 'window_start, origin'``.""",
    ),
    (
        "SS224",
        "error",
        "a PostgreSQL sink key column that the query does not write",
        """
     Each ``key_columns`` name must be a column of the query written to the sink (the
     table's primary key is made of them, and each upsert matches on them). Anti-pattern:
     ``key_columns = 'window'`` for a query that writes ``window_start``. Fix: a column
     name of the query's ``SELECT`` list.""",
    ),
    # ---- secrets and declared columns (docs/dialect.md) ------------------------------------------
    (
        "SS240",
        "error",
        "a secret (`${env:…}`) used outside a string value: as a name, an alias, "
        "a keyword, a number, or inside an `INTERVAL`/`DATE`/`TIMESTAMP` literal",
        """
     A secret may be the whole or a part of a ``'…'`` string: an option value, a ``SET``
     value, a string literal in a query. Anywhere else its text would become part of the
     program — a column name shown in schemas and plans, an identifier echoed (or split
     into pieces) by error messages, a duration Spark normalises — where it cannot be kept
     out of every output. Anti-pattern: ``SELECT value AS `${env:TOKEN}```. Fix: put the
     value in a string, e.g. ``WITH (password = '${env:PG_PASSWORD}')``; a quote or
     backslash in the value is escaped for you. A ``query_name`` option holding a secret is
     refused too: the query name is shown by ``check``, Spark's UI, logs and progress.""",
    ),
    (
        "SS241",
        "error",
        "a column name that would contain the value of a secret",
        """
     Spark names an expression without an alias by its text: ``SELECT concat(a,
     '${env:KEY}')`` gets a column named after the secret, which a sink writes into its
     files' schema and every schema listing shows. Fix: give the expression an alias
     (``… AS keyed``). The same for a struct field named by a secret
     (``named_struct('${env:KEY}', v)``, ``from_json(js, '${env:KEY} INT')``): the name is
     part of the column's type. Fix: name the field with a plain string.""",
    ),
    (
        "SS242",
        "error",
        "a declared CSV column that is not in the header of the files (with "
        "`header = true`), or is in it twice",
        """
     With ``header = true`` the declared columns are bound by name (docs/connectors.md#csv-columns-by-name): the
     compiler reads the header of the first file Spark will read (oldest modification
     time) and reads every header column, then selects the declared ones. Spark's CSV
     reader itself is positional: without this a declared ``carrier`` would get the first
     column's values. Anti-pattern: ``(carier STRING)`` over a file whose header says
     ``carrier``. Fix: the header's spelling (the message lists the header).""",
    ),
    (
        "SS243",
        "warning",
        "a CSV stream without a header whose declared column count differs from the files'",
        """
     With ``header = false`` the columns are positional: the n-th declared column is the
     n-th field of every line. Fewer declared columns drop the last fields; more are
     NULL. Either is usually a mistake in the declaration. Fix: declare every column of
     the file, in file order.""",
    ),
    # ---- malformed records (on_error, dead letters) ------------------------------------------
    # ---- spellings from Flink SQL and ksqlDB ---------------------------------------------------
    (
        "SS260",
        "error",
        "a spelling from Flink SQL or ksqlDB that sqlstream does not take",
        """
     Analysts bring habits from Flink SQL and ksqlDB; those sqlstream takes mean here what
     they mean there (``CUMULATE``, ``PROCTIME()`` as a computed column, ``EXECUTE STATEMENT
     SET``, Flink's Kafka option names, ksqlDB's ``WINDOW TUMBLING|HOPPING|SESSION`` and
     ``CREATE TABLE … AS SELECT``, docs/compat.md). The others are refused at their
     position, and the hint shows the sqlstream spelling that does the same; so is a ksqlDB
     window that cannot mean the same here (on a stream without event-time column, with a
     ``GRACE PERIOD`` other than the watermark's delay, after a join). Anti-pattern:
     ``FROM a JOIN b ON … WINDOW TUMBLING (SIZE 1 HOUR)`` (ksqlDB). Fix: ``FROM TUMBLE(a,
     ts, INTERVAL '1' HOUR) JOIN b ON … GROUP BY window_start, window_end, …``.""",
    ),
    (
        "SS265",
        "error",
        "several `INSERT INTO` one sink that cannot be one query over `UNION ALL`",
        """
     Spark runs one query per sink, so the ``INSERT``s into one sink (also those of a Flink
     statement set) run as one query over ``UNION ALL`` of their bodies. That needs the same
     columns (names and types, in order: ``UNION ALL`` matches them by position) and the
     same output mode and trigger. The finding names the
     column, type or mode that differs and shows the ``UNION ALL``. Anti-pattern: ``INSERT
     INTO out SELECT id FROM a; INSERT INTO out SELECT id, ts FROM b;``. Fix: the same columns
     in both, e.g. ``SELECT id, CAST(NULL AS TIMESTAMP) AS ts FROM a``.""",
    ),
    # ---- user-defined functions (CREATE FUNCTION) ---------------------------------------------
    (
        "SS270",
        "error",
        "a `CREATE FUNCTION` that defines no function sqlstream can run",
        """
     A Python function names its callable (``AS 'module:callable'``, ``LANGUAGE PYTHON``); a
     SQL function declares its parameters, ``RETURNS`` a type and ``RETURN`` an expression
     (docs/dialect.md#create-function). Refused: both or neither, another ``LANGUAGE`` (Java,
     Scala), a name that is one of Spark's built-in functions or a function defined before.
     Anti-pattern: ``CREATE FUNCTION f AS 'com.acme.F' LANGUAGE JAVA``. Fix: a Python
     callable, or a SQL function ``CREATE FUNCTION f(x DOUBLE) RETURNS DOUBLE RETURN …``.""",
    ),
    (
        "SS271",
        "error",
        "the module or callable of a Python function cannot be imported",
        """
     When the project is trusted (``exec``, ``--trust``, ``SQLSTREAM_TRUST=1``;
     docs/operations.md#trust) the function is imported when the file is compiled: found
     beside the `.ssql` file or in its project, else as Python imports it (``sys.path``).
     The message gives Python's error. Untrusted, nothing is imported (``SS274``).
     Anti-pattern: ``AS
     'udf:fn'`` for a file ``udfs.py``. Fix: the module's import path and the callable's
     name: ``AS 'udfs:fn'`` (or Flink's ``AS 'udfs.fn'``).""",
    ),
    (
        "SS272",
        "error",
        "a Python function whose signature does not fit its declaration",
        """
     The declared parameters must bind to the callable's (``inspect.signature``); without
     declared types (Flink's ``CREATE FUNCTION f AS 'mod.fn' LANGUAGE PYTHON``) every
     parameter and the return value need an annotation Spark has a type for (``int``
     BIGINT, ``float`` DOUBLE, ``str`` STRING, ``bool`` BOOLEAN, ``datetime`` TIMESTAMP,
     ``date`` DATE, ``Decimal`` DECIMAL(38,18), ``bytes`` BINARY). Anti-pattern: ``def
     fn(code):`` with no annotations. Fix: ``def fn(code: str) -> str:``, or declare the
     types: ``CREATE FUNCTION fn(code STRING) RETURNS STRING LANGUAGE PYTHON AS …``.""",
    ),
    (
        "SS274",
        "warning",
        "a Python function that is not checked: the project is not trusted",
        """
     Untrusted (the default of ``check``, ``translate``, ``explain``, ``graph``, loading a
     test file and the language server; docs/operations.md#trust), no user code runs: a
     Python function is typed from its declared types, else from its annotations read from
     the module's source file beside the `.ssql` file or in its project (never imported).
     This warning says that neither was possible: the module is not in the project (an
     installed package, ``sys.path``), or its callable is not a plain ``def`` the reading
     sees, so its types and arguments are not checked. Anti-pattern: ``CREATE FUNCTION f AS
     'somepkg:f'`` with no types. Fix: declare the types (``CREATE FUNCTION f(x STRING)
     RETURNS STRING LANGUAGE PYTHON AS …``), or trust the project (``--trust``,
     ``SQLSTREAM_TRUST=1``) so that the module is imported.""",
    ),
    (
        "SS273",
        "error",
        "a call of a user-defined function with the wrong number of arguments",
        """
     Spark would fail the query when it analyses it (a Python function when its worker
     calls it: ``TypeError``). The count is the declared parameters' (a SQL function), or
     what the callable's signature takes (a Python function). Anti-pattern: ``to_f(a, b)``
     for ``to_f(c DOUBLE)``. Fix: call it with the arguments it declares.""",
    ),
    (
        "SS250",
        "error",
        "an `on_error` value other than `fail`, `drop`, `dead_letter`",
        """
     A source's ``on_error`` says what happens to a record that cannot be decoded into the
     declared columns (docs/operations.md#malformed-records): ``fail`` stops the query (Spark's ``FAILFAST``),
     ``drop`` drops it and counts it in the progress events, ``dead_letter`` writes it to a
     dead-letter sink. Anti-pattern: ``on_error = 'skip'``. Fix: one of the three.""",
    ),
    (
        "SS251",
        "error",
        "`on_error` on a source that does not decode records (not csv or json "
        "files, not a json/csv/avro Kafka value), or `drop`/`dead_letter` with `multiLine` or a "
        "non-UTF-8 `encoding`",
        """
     Only CSV and JSON files and JSON, CSV or Avro Kafka values are decoded by sqlstream
     into the declared columns; Parquet and ORC carry their types, text has one string
     column, a raw Kafka stream has Kafka's own columns. ``drop`` and ``dead_letter`` read
     files line by line (``format('text')``, then ``from_csv``/``from_json``), so a record
     must be one UTF-8 line. Anti-pattern: ``on_error = 'drop'`` on a parquet source or a
     ``format = 'raw'`` Kafka stream. Fix: remove the option, or use ``fail``.""",
    ),
    (
        "SS252",
        "error",
        "`dead_letter` / `dead_letter_path` without `on_error = 'dead_letter'`, "
        "both given, or neither given with it",
        """
     The dead letters of a source go either to the files at ``dead_letter_path`` (a JSON
     files sink) or to the sink named by ``dead_letter`` (a ``CREATE SINK``). Anti-pattern:
     ``on_error = 'dead_letter'`` with no destination, or ``dead_letter_path`` with
     ``on_error = 'drop'``. Fix: give exactly one destination with ``on_error =
     'dead_letter'``.""",
    ),
    (
        "SS253",
        "error",
        "`on_error` together with Spark's `mode` or `columnNameOfCorruptRecord`",
        """
     ``on_error`` sets how Spark parses (``mode``) and where it keeps a record it cannot
     parse; a ``mode`` or ``columnNameOfCorruptRecord`` given as well would contradict it.
     Anti-pattern: ``on_error = 'drop', mode = 'PERMISSIVE'``. Fix: keep ``on_error`` only
     (a source with neither gets ``on_error = 'fail'``).""",
    ),
    (
        "SS254",
        "error",
        "`dead_letter` names no declared sink, or a sink that cannot take the dead letters",
        """
     ``dead_letter = 'name'`` writes the dead letters with the query ``<name>`` into the
     sink declared by ``CREATE SINK name`` (anywhere in the file), in append mode; a sink
     takes one query, so it must not also be the target of an ``INSERT``. Fix: declare the
     sink, or use ``dead_letter_path``.""",
    ),
    (
        "SS255",
        "error",
        "`on_error = 'dead_letter'` on a `CREATE TABLE`",
        """
     A table is read once when the pipeline starts (``spark.read``); its dead letters would
     need a batch write outside any streaming query and its exactly-once log. Fix: use
     ``fail`` or ``drop`` on tables, or declare the input as a stream.""",
    ),
    (
        "SS256",
        "warning",
        "dead letters of a Kafka stream read from the end of the topic "
        "(`starting_offsets = 'latest'`, Spark's default)",
        """
     The dead letters of a source are written by a query of their own, beside the queries
     that read the source (Spark has no side outputs). On a new checkpoint each of them
     starts reading where ``startingOffsets`` says when it starts; with ``latest`` that is
     the end of the topic at slightly different moments, so a malformed record produced in
     between is dropped by a query reading the stream but never seen by the dead-letter
     query (later restarts resume from each checkpoint: nothing is lost then). Anti-pattern:
     ``on_error = 'dead_letter'`` without ``starting_offsets``. Fix: ``starting_offsets =
     'earliest'`` or given offsets.""",
    ),
    # ---- lakehouse sinks (iceberg, delta) ---------------------------------------------------
    (
        "SS280",
        "error",
        "a lakehouse sink without a usable table: an Iceberg name without a namespace, "
        "an empty Delta path",
        """
     An ``iceberg`` sink names its table ``namespace.name`` (``table = 'analytics.hourly'``:
     the namespace is created if missing); a ``delta`` sink names its folder with ``path``
     (relative to the ``.ssql`` file, or a URI). Anti-pattern: ``table = 'hourly'``. Fix:
     ``table = 'analytics.hourly'``.""",
    ),
    (
        "SS281",
        "error",
        "a lakehouse sink `mode` other than append or upsert, upsert without `key_columns`",
        """
     ``mode = 'append'`` adds every row of each micro-batch; ``mode = 'upsert'`` merges each
     micro-batch by the ``key_columns`` (a ``MERGE``: the rows of its keys replaced), which
     needs them. ``key_columns`` without upsert has no meaning. Anti-pattern: ``mode =
     'merge'``. Fix: ``mode = 'upsert', key_columns = 'window_start, origin'``.""",
    ),
    (
        "SS282",
        "error",
        "a lakehouse sink key column that the query does not write",
        """
     Each ``key_columns`` name must be a column of the query written to the ``iceberg`` or
     ``delta`` sink (each micro-batch is merged on them). Anti-pattern: ``key_columns =
     'window'`` for a query that writes ``window_start``. Fix: a column the query writes.""",
    ),
    (
        "SS283",
        "error",
        "a lakehouse source's option on a sink or a sink's on a source; a bad "
        "`starting_version` or `skip_change_commits`",
        """
     ``iceberg`` and ``delta`` are sources and sinks. ``mode`` and ``key_columns`` are a
     sink's (how each micro-batch is committed); ``starting_version`` (Delta: the first
     table version read) and ``skip_change_commits`` (skip commits that change or delete
     rows) a source's. ``starting_version`` is a whole number, of a ``delta`` source only;
     ``skip_change_commits`` is true or false. Anti-pattern: ``mode = 'upsert'`` on a
     ``CREATE STREAM``. Fix: remove the option the role does not take.""",
    ),
    (
        "SS285",
        "error",
        "an `iceberg` source read by Iceberg's Spark runtime whose catalog is not a SQLite file",
        """
     On Spark 4.1, where Iceberg's Spark runtime is served, Spark reads an ``iceberg``
     source (its streaming reader of the table's appends) through Iceberg's JDBC catalog over the same
     database the sinks write, and the session gets the SQLite JDBC driver only.
     Anti-pattern: ``catalog_uri = 'postgresql+psycopg://…'`` on a source. Fix: a catalog
     in a SQLite file (the default: ``catalog.db`` in the warehouse).""",
    ),
)
