"""Secrets in the printed outputs (no Spark): ``translate --to pyspark`` reads each from
the environment variable the substitution recorded."""

from __future__ import annotations

import sqlstream
from sqlstream.lowering.printer import to_pyspark


def test_translate_to_pyspark_names_each_secret_from_its_record(monkeypatch):
    """The script reads ``os.environ[NAME]`` for the name the substitution recorded, not
    for a name found by scanning the text against the current environment (which may have
    changed, or be unset, by the time the plan is printed)."""
    monkeypatch.setenv("SS_TOKEN", "s3cr3t-value")
    plan = sqlstream.compile("SET 'spark.hadoop.fs.s3a.secret.key' = '${env:SS_TOKEN}';\n").plan
    monkeypatch.delenv("SS_TOKEN")
    script = to_pyspark(plan)
    assert "'spark.hadoop.fs.s3a.secret.key', os.environ['SS_TOKEN']" in script, script
    assert "s3cr3t" not in script
