"""``sqlstream exec`` launches Spark's JVM while the file compiles
(:mod:`sqlstream.runtime.prelaunch`): the launched JVM is used when the plan needs no other
launch settings, and replaced by one launched with the plan's when it does. The JVM's own
system properties tell which JVM ran the query (Spark's ``reflect`` of
``java.lang.System.getProperty``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sqlstream.runtime.prelaunch import LAUNCH_PREFIXES, launch_settings

PIPELINE = """\
{set}
CREATE STREAM events (id INT) WITH (connector = 'files', format = 'json', path = '{data}');
CREATE SINK seen WITH (connector = 'files', format = 'json', path = '{out}');
INSERT INTO seen
SELECT id, reflect('java.lang.System', 'getProperty', 'sqlstream.probe') AS probe,
       reflect('java.lang.System', 'getProperty', 'sqlstream.prelaunched') AS prelaunched
FROM events;
"""


def test_launch_settings_are_the_driver_jvm_and_jars_ones():
    settings = launch_settings({"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2",
                                "spark.jars.packages": "g:a:1",
                                "spark.driver.extraJavaOptions": "-Dx=1"}, None)
    assert settings.pop("spark.driver.extraJavaOptions").endswith("log4j2.properties -Dx=1")
    assert settings == {"spark.driver.memory": "2g", "spark.jars.packages": "g:a:1",
                        "spark.master": "local[*]"}
    assert launch_settings({}, "local[2]")["spark.master"] == "local[2]"
    assert all(prefix == prefix.lower() for prefix in LAUNCH_PREFIXES)


def _run(tmp_path, name: str, set_statement: str) -> list[dict]:
    data, out = tmp_path / "in", tmp_path / f"out_{name}"
    data.mkdir(exist_ok=True)
    (data / "a.json").write_text('{"id": 1}\n{"id": 2}\n')
    path = tmp_path / f"{name}.ssql"
    path.write_text(PIPELINE.format(set=set_statement, data=data, out=out))
    done = subprocess.run(
        [sys.executable, "-m", "sqlstream.cli", "exec", str(path), "--available-now",
         "--master", "local[1]", "--state-dir", str(tmp_path / f"state_{name}")],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return sorted((json.loads(line) for f in out.glob("*.json")
                   for line in f.read_text().splitlines()), key=lambda r: r["id"])


@pytest.mark.spark
def test_the_prelaunched_jvm_runs_a_plan_without_launch_settings_and_not_one_with(tmp_path):
    # no launch setting in the plan: the JVM launched during the compile runs the query
    assert _run(tmp_path, "plain", "") == [{"id": i, "probe": "null", "prelaunched": "true"}
                                           for i in (1, 2)]
    # a driver JVM option in a SET: a JVM launched with it runs the query
    rows = _run(tmp_path, "driver_option",
                "SET 'spark.driver.extraJavaOptions' = '-Dsqlstream.probe=relaunched';")
    assert rows == [{"id": i, "probe": "relaunched", "prelaunched": "null"} for i in (1, 2)]
