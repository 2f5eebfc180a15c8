"""The session ``sqlstream test`` creates: its checkpoint file manager (no JVM here)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from sqlstream.testing.suite import CHECKPOINT_FILE_MANAGER, checkpoint_file_manager

OLD = "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager"
NEW = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"


@pytest.mark.parametrize(
    ("version", "name"),
    [
        ("4.0.5", OLD),
        ("4.0", OLD),
        ("4.1.4", NEW),
        ("4.2.1", NEW),
        ("4.3.0", NEW),
        ("4.3.0.dev1", NEW),
    ],
)
def test_the_class_is_named_by_the_package_of_its_spark_version(version, name):
    assert checkpoint_file_manager(version) == {CHECKPOINT_FILE_MANAGER: name}


def test_the_installed_pysparks_jar_has_the_class_named():
    pyspark = pytest.importorskip("pyspark")
    (jar,) = (Path(pyspark.__file__).parent / "jars").glob("spark-sql_2.13-*.jar")
    (name,) = checkpoint_file_manager(pyspark.__version__).values()
    with zipfile.ZipFile(jar) as archive:
        assert name.replace(".", "/") + ".class" in archive.namelist()
