"""The finding codes of expectations (``CONSTRAINT name EXPECT (cond)``, docs/dialect.md#expectations):
their syntax (``SS110``), conditions (``SS230``–``SS233``), streaming rule (``SS380``) and
the failure a ``FAIL UPDATE`` rule stops a query with (``SS560``); ``(code, severity, title,
doc)`` records, read by :mod:`sqlstream.diagnostics.codes`.

Kept apart from the other record modules so that each stays small; the docs' finding-codes
page is generated from the registry (``python tools/gen_codes_table.py --page docs/codes.md``).
"""

from __future__ import annotations

RECORDS: tuple[tuple[str, str, str, str], ...] = (
    (
        "SS110",
        "error",
        "`CONSTRAINT … EXPECT` on a `CREATE TABLE`",
        """
     Expectations are counted per micro-batch of a streaming query (Spark's
     ``Dataset.observe``); a table is read once, outside any micro-batch. Anti-pattern:
     ``CREATE TABLE airlines (…, CONSTRAINT named EXPECT (name IS NOT NULL)) WITH (…)``.
     Fix: declare the input with ``CREATE STREAM``, or put the rule on the sink the query
     writes (``CREATE SINK s (CONSTRAINT …) WITH (…)``).""",
    ),
    (
        "SS230",
        "error",
        "an expectation's condition is not a `BOOLEAN`",
        """
     A row violates ``CONSTRAINT name EXPECT (cond)`` when ``cond`` is ``FALSE`` (``NULL``
     passes, as in a SQL ``CHECK`` constraint), so the condition must be a ``BOOLEAN`` over
     the relation's columns (the stream's, or the columns a sink is written). Anti-pattern:
     ``EXPECT (dep_delay)``. Fix: a comparison, ``EXPECT (dep_delay < 2000)``.""",
    ),
    (
        "SS231",
        "error",
        "two expectations with one name",
        """
     Each constraint's violations are counted under its name (in the progress events, the
     run summary and a test step's ``expectations:``), so a name is used once in a file.
     Anti-pattern: ``CONSTRAINT valid EXPECT (a > 0), CONSTRAINT valid EXPECT (b > 0)``.
     Fix: give each rule its own name.""",
    ),
    (
        "SS232",
        "error",
        "an aggregate, window function or subquery in an expectation's condition",
        """
     An expectation is checked on each row by itself (Spark evaluates it in a filter and
     counts its violations with ``Dataset.observe``), so it cannot look at other rows.
     Anti-pattern: ``EXPECT (count(*) > 0)``, ``EXPECT (rank() OVER (ORDER BY ts) < 10)``.
     Fix: a condition on the row's own columns; aggregate in a query and put the rule on
     its sink.""",
    ),
    (
        "SS233",
        "error",
        "a non-deterministic function in an expectation's condition",
        """
     A rule whose answer changes when a micro-batch is run again (``rand()``, ``uuid()``,
     ``current_timestamp()``, …) counts and drops different rows on a retry, and a ``FAIL
     UPDATE`` rule would not stop a restart at the same micro-batch. Anti-pattern:
     ``EXPECT (rand() < 0.99)``. Fix: a condition on the row's columns only.""",
    ),
    (
        "SS380",
        "error",
        "expectations on a query with `EMIT … CONTINUOUS` or `REAL TIME`",
        """
     Expectations are counted per micro-batch with ``Dataset.observe``, which Spark's
     continuous processing and real-time mode do not support (observed metrics are a
     micro-batch's). Fix: a micro-batch trigger (``EMIT … EVERY …``, or none).""",
    ),
    (
        "SS560",
        "error",
        "an expectation `ON VIOLATION FAIL UPDATE` was violated: the query stopped",
        """
     A row of the micro-batch made the constraint's condition ``FALSE``. Spark failed the
     micro-batch before committing it: nothing of it is in the sink's committed output nor
     in the checkpoint, so every restart reads the same micro-batch and stops again until
     the data or the rule changes. The message names the constraint and shows one
     violating row as JSON (secrets redacted). Fix: correct the input (or the rule); to keep
     running while counting, drop ``ON VIOLATION FAIL UPDATE`` (the row is kept and
     counted) or use ``ON VIOLATION DROP ROW``.""",
    ),
)
