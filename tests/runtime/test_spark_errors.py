"""The table of Spark conditions sqlstream maps (:mod:`sqlstream.runtime.spark_errors`), no
JVM: each is a condition of Spark's error-conditions.json, found in a message by its
bracketed name, with a registered code and a hint; ``tests/runtime/test_spark_errors_spark.py``
triggers one on Spark."""

from __future__ import annotations

from sqlstream.diagnostics.codes import CODES
from sqlstream.ir import spark_versions
from sqlstream.runtime.spark_errors import CONDITIONS, mapped


def test_every_entry_has_a_registered_code_a_hint_and_a_supported_version():
    for entry in CONDITIONS:
        assert entry.code in CODES and CODES[entry.code].severity == "error"
        assert entry.hint and entry.since in spark_versions.SUPPORTED
    assert len({e.condition for e in CONDITIONS}) == len(CONDITIONS)


def test_conditions_are_found_by_their_bracketed_name_subclass_included():
    text = (
        "StreamingQueryException: [STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED] "
        "The input stream FileStreamSource is not supported in Real-time Mode."
    )
    assert mapped(text).code == "SS342"
    assert (
        mapped("[STREAMING_CHECKPOINT_LOG_WRITE_FAILURE.COMMIT_LOG] Failed to write").code
        == "SS501"
    )
    assert (
        mapped("[STREAMING_CHECKPOINT_MISSING_METADATA_FILE] Checkpoint location").code == "SS503"
    )
    assert mapped("the word STREAMING_CHECKPOINT_MISSING_METADATA_FILE without brackets") is None
    assert mapped("[MALFORMED_RECORD_IN_PARSING] …") is None
