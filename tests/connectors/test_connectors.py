"""Connectors are modules: adding one module under ``sqlstream/connectors/`` adds a connector."""

from __future__ import annotations

import pkgutil

import sqlstream
import sqlstream.connectors as connectors
from sqlstream.connectors.base import Connector

DEMO = '''
from sqlstream.connectors.base import Connector


class Demo(Connector):
    """A sink written like Spark's console sink, under another name."""

    name = "demo"
    sink_format = "console"
    spark_options = ("numRows",)
'''


def test_every_module_defines_a_registered_connector():
    # base: the common path; foreign_options: other dialects' option names, mapped first;
    # user_code: the user's Python modules a connector or CREATE FUNCTION names;
    # lakehouse: what the iceberg and delta sinks share (options, their writers' steps);
    # lakehouse_jvm: the lakehouse sinks' JVM write path (Delta's Spark writer, the choice)
    # iceberg_jvm: the iceberg sink's JVM write path (Iceberg's Spark writer)
    # upsert_options: mode and key_columns of a sink that writes by key (postgres, lakehouse)
    # lakehouse_source: the iceberg and delta sources' Python path (options, reads, checks)
    # lakehouse_offsets: the lakehouse sources' rate limits and checkpoint offsets
    # call_sequence, option_resolution, payload: the base's read and write calls, its
    # option split, a record's payload
    common = {
        "base",
        "call_sequence",
        "option_resolution",
        "payload",
        "foreign_options",
        "user_code",
        "lakehouse",
        "lakehouse_jvm",
        "iceberg_jvm",
        "upsert_options",
        "lakehouse_source",
        "lakehouse_offsets",
    }
    modules = {m.name for m in pkgutil.iter_modules(connectors.__path__) if not m.ispkg} - common
    defined = {type(c).__module__.rsplit(".", 1)[-1] for c in connectors.CONNECTORS.values()}
    assert modules == defined
    assert all(isinstance(c, Connector) for c in connectors.CONNECTORS.values())


def test_one_new_module_is_a_new_connector(tmp_path, monkeypatch):
    (tmp_path / "demo.py").write_text(DEMO, encoding="utf-8")
    monkeypatch.setattr(connectors, "__path__", [*connectors.__path__, str(tmp_path)])
    found = connectors._discover()
    assert set(found) == set(connectors.CONNECTORS) | {"demo"}
    monkeypatch.setattr(connectors, "CONNECTORS", found)
    text = (
        "CREATE STREAM ticks WITH (connector = 'rate');\n"
        "CREATE SINK out WITH (connector = 'demo', num_rows = 5);\n"
        "INSERT INTO out SELECT value FROM ticks;\n"
    )
    translated = sqlstream.translate(text)
    assert ".format('console')" in translated and ".option('numRows', '5')" in translated
    assert "-> demo sink out" in translated
