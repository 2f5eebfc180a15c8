"""The Kafka connector without a JVM: translations (golden files), what ``check`` knows,
and the Spark package rule (:mod:`sqlstream.lowering.packages`).

``tests/fixtures/kafka/NAME.ssql`` is translated and compared with ``NAME.out``
(``SQLSTREAM_UPDATE_GOLDEN=1`` rewrites them); the compile errors are golden files in
``tests/fixtures/errors/kafka_*``. On a real broker and Spark: ``test_kafka_spark.py``.
"""

from __future__ import annotations

import json

import pytest

import sqlstream
from sqlstream.connectors.kafka import KAFKA_COLUMNS
from sqlstream.lowering import packages
from tests.conftest import FIXTURES, check_golden

CASES = sorted((FIXTURES / "kafka").glob("*.ssql"))
SECRET = "broker.example:9093"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_translate(case, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", SECRET)
    actual = sqlstream.translate(case.read_text(), path=str(case))
    assert SECRET not in actual
    check_golden(case.with_suffix(".out"), actual.replace(str(FIXTURES), "<fixtures>"))


def _columns(text: str, path: str | None = None) -> dict:
    findings, plan = sqlstream.check_plan(text, path=path)
    assert [f for f in findings if f.severity == "error"] == []
    return {r.name: r.columns for r in plan.relations}


def test_check_knows_the_columns_of_each_format():
    raw = _columns(
        "CREATE STREAM r WITH (connector = 'kafka', bootstrap_servers = 'h:1', topic = 't');"
    )
    assert raw["r"] == KAFKA_COLUMNS
    avro = _columns(
        "CREATE STREAM a (ts TIMESTAMP METADATA FROM 'timestamp') WITH (connector = 'kafka', "
        "bootstrap_servers = 'h:1', topic = 't', format = 'avro', avro_schema = 'flight.avsc');",
        path=str(FIXTURES / "kafka" / "p.ssql"),
    )
    assert avro["a"] == (
        ("carrier", "STRING"),
        ("flight", "INT"),
        ("origin", "STRING"),
        ("dest", "STRING"),
        ("dep_delay", "DOUBLE"),
        ("time_hour", "TIMESTAMP"),
        ("ts", "TIMESTAMP"),
    )
    headers = _columns(
        "CREATE STREAM h (v STRING, hs ARRAY<STRUCT<key: STRING, value: BINARY>> "
        "METADATA FROM 'headers') WITH (connector = 'kafka', bootstrap_servers = 'h:1', "
        "topic = 't', format = 'csv');"
    )
    assert headers["h"] == (
        ("v", "STRING"),
        ("hs", "ARRAY<STRUCT<`key`: STRING, `value`: BINARY>>"),
    )


def test_plan_of_a_kafka_query_records_the_sink_and_source():
    findings, plan = sqlstream.check_plan(
        "CREATE STREAM s (a INT) WITH (connector = 'kafka', bootstrap_servers = 'h:1', topic = 't');"
        "CREATE SINK k WITH (connector = 'kafka', bootstrap_servers = 'h:1', topic = 'o');"
        "INSERT INTO k SELECT a, COUNT(*) AS n FROM s GROUP BY a;"
    )
    assert [f.code for f in findings] == ["SS350"]  # no watermark: a warning, not an error
    query = plan.queries[0]
    assert query.output_mode == "update"  # Kafka's sink takes update mode; files would refuse
    assert query.state.sources[0].connector == "kafka"
    assert query.checkpoint_location is not None


PIPELINE = (
    "CREATE STREAM s (a INT) WITH (connector = 'kafka', bootstrap_servers = 'h:1', "
    "topic = 't'{fmt}); SELECT a FROM s;"
)


def test_packages_needed_by_a_plan():
    plain = sqlstream.compile(PIPELINE.format(fmt="")).plan
    assert packages.needed(plain) == (packages.KAFKA,)
    avro = sqlstream.compile(
        PIPELINE.format(
            fmt=', format = \'avro\', avro_schema = \'{"type": "record", "name": "r", '
            '"fields": [{"name": "a", "type": "int"}]}\''
        )
    ).plan
    assert packages.needed(avro) == (packages.KAFKA, packages.AVRO)
    files = sqlstream.compile("CREATE STREAM r WITH (connector = 'rate'); SELECT * FROM r;").plan
    assert packages.needed(files) == ()


def test_package_rule_override_cache_and_user_jars(monkeypatch, tmp_path):
    plan = sqlstream.compile(PIPELINE.format(fmt="")).plan
    monkeypatch.setenv("SQLSTREAM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(packages.OVERRIDE, "4.1.1")
    assert packages.packages_for(plan, {}) == f"{packages.KAFKA}:4.1.1"
    # the user's jars win: --packages / --conf, or a SET in the file
    assert packages.packages_for(plan, {"spark.jars.packages": "x:y:1"}) is None
    with_set = sqlstream.compile("SET 'spark.jars' = '/opt/k.jar';" + PIPELINE.format(fmt="")).plan
    assert packages.packages_for(with_set, {}) is None
    # a cached answer is used as it is (no probe), keyed by artifact and major.minor
    monkeypatch.delenv(packages.OVERRIDE)
    (tmp_path / "spark-packages.json").write_text(json.dumps({f"{packages.KAFKA}:4.1": "4.1.1"}))
    assert packages.package_version(packages.KAFKA, "4.1.4") == (
        "4.1.1",
        f"cached in {tmp_path / 'spark-packages.json'}",
    )


def test_pyspark_script_gets_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("SQLSTREAM_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(packages.OVERRIDE, "4.1.1")
    script = sqlstream.compile(PIPELINE.format(fmt="")).to_pyspark()
    assert f".config('spark.jars.packages', '{packages.KAFKA}:4.1.1')" in script
    mine = sqlstream.compile(
        "SET 'spark.jars.packages' = 'a:b:1';" + PIPELINE.format(fmt="")
    ).to_pyspark()
    assert "a:b:1" in mine and packages.KAFKA not in mine


def _ivy_has(home, artifact: str, version: str) -> None:
    """Put ``artifact`` ``version`` into an Ivy cache under ``home`` as Spark's Ivy leaves it."""
    group, name = artifact.split(":")
    folder = home / ".ivy2.5.2" / "cache" / group / name
    (folder / "jars").mkdir(parents=True, exist_ok=True)
    (folder / f"ivy-{version}.xml").write_text("<ivy-module/>")
    (folder / "jars" / f"{name}-{version}.jar").write_bytes(b"")


def test_a_spark_minor_without_a_served_connector_falls_back_only_where_tested(
    monkeypatch, tmp_path
):
    """Spark 4.3 has no connector 4.3.x served: the newest 4.2.x is used (its Kafka tests ran
    on 4.3), with a note for ``exec``; a minor outside FALLBACKS gets none."""
    monkeypatch.setenv("SQLSTREAM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(packages.OVERRIDE, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    _ivy_has(tmp_path, packages.KAFKA, "4.2.0")
    assert packages.package_version(packages.KAFKA, "4.3.0", probe=False) == (
        "4.2.0",
        "in the local Ivy cache",
    )
    assert packages.fallback_note("4.2.0", "4.3.0") == (
        "no Kafka connector 4.3.x is served for Spark 4.3.0; using 4.2.0, the newest 4.2.x "
        "served (its tests pass on Spark 4.3)"
    )
    assert packages.fallback_note("4.2.0", "4.2.1") is None
    # 4.1 is not a fallback of anything newer it was not tested with: its own version, unprobed
    assert packages.package_version(packages.KAFKA, "4.1.4", probe=False) == (
        "4.1.4",
        "pyspark's version (not probed)",
    )
