"""The seeded change log of the ``AUTO CDC`` Spark tests (``tests/connectors/test_auto_cdc*``)
and its oracle: the first flights of ``examples/flights/data/flights/2013-01-02.csv``, each a
key created, updated (its ``dep_delay`` — not tracked by SCD 2 — or its ``carrier`` —
tracked), deleted and re-created at seeded random, as Debezium change events shuffled into
files; the oracle sorts each key's changes by sequence in plain Python.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
import random
from pathlib import Path

from tests.conftest import ROOT

DAY = ROOT / "examples" / "flights" / "data" / "flights" / "2013-01-02.csv"

CHANGES = """
CREATE STREAM changes (
    id BIGINT, carrier STRING, flight INT, dep_delay DOUBLE,
    op STRING METADATA FROM 'op',
    seq BIGINT METADATA FROM 'source.lsn'
) WITH (connector = 'files', path = 'changes', format = 'debezium-json',
        maxFilesPerTrigger = 1);
"""
"""The stream of the change log's files (folder ``changes``, one file per micro-batch): the
row image, the operation and the log position (``source.lsn``) as ``seq``."""


def flows(*prefixes: str) -> str:
    """``CREATE FLOW`` statements applying ``changes`` into the sinks ``<prefix>_latest``
    (SCD 1) and ``<prefix>_history`` (SCD 2, history of every column but ``dep_delay``) of
    each prefix."""
    return "".join(
        f"""
CREATE FLOW {sink}_cdc AS AUTO CDC INTO {sink}
  FROM STREAM(changes) KEYS (id) APPLY AS DELETE WHEN op = 'd' SEQUENCE BY seq
  COLUMNS * EXCEPT (op, seq) STORED AS SCD TYPE {scd}{track};
"""
        for prefix in prefixes
        for sink, scd, track in (
            (f"{prefix}_latest", 1, ""),
            (f"{prefix}_history", 2, " TRACK HISTORY ON * EXCEPT (dep_delay)"),
        )
    )


def change_log(seed: int, count: int = 60) -> list[dict]:
    """Debezium envelopes: per flight, a create then updates, deletes, re-creates drawn
    at random; ``source.lsn`` strictly grows over the whole log (written order)."""
    rng = random.Random(seed)
    with open(DAY, newline="") as handle:
        flights = list(itertools.islice(csv.DictReader(handle), count))
    carriers = sorted({f["carrier"] for f in flights})
    events, lsn = [], 100
    for key, row in enumerate(flights):
        image = {
            "id": key,
            "carrier": row["carrier"],
            "flight": int(row["flight"]),
            "dep_delay": None if row["dep_delay"] == "NA" else float(row["dep_delay"]),
        }
        live = None
        for _ in range(rng.randint(1, 7)):
            lsn += rng.randint(2, 9)  # never consecutive: lsn - 1 is free for a stale change
            if live is None:
                op, live = "c", dict(image)
            elif rng.random() < 0.25:
                op = "d"
            elif rng.random() < 0.5:
                op, live = "u", dict(live, dep_delay=round(rng.uniform(-5, 200), 1))
            else:
                op, live = "u", dict(live, carrier=rng.choice(carriers))
            events.append(
                {
                    "before": live if op == "d" else None,
                    "after": None if op == "d" else dict(live),
                    "op": op,
                    "ts_ms": 1357102800000 + lsn,
                    "source": {"lsn": lsn, "table": "flights"},
                }
            )
            if op == "d":
                live = None
    return events


def write_files(folder: Path, events: list[dict], seed: int, files: int = 6) -> None:
    """The events shuffled (out of order) into ``files`` files, named in reading order."""
    shuffled = list(events)
    random.Random(seed).shuffle(shuffled)
    folder.mkdir(parents=True, exist_ok=True)
    for part in range(files):
        lines = [json.dumps(e) for e in shuffled[part::files]]
        path = folder / f"part-{part:02d}.json"
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (1_700_000_000 + part, 1_700_000_000 + part))


def oracle(events: list[dict]) -> tuple[set, set]:
    """``(SCD 1 rows, SCD 2 rows)`` of the whole log, by sorting each key's changes."""
    by_key: dict[int, list[dict]] = {}
    for e in events:
        image = e["before"] if e["op"] == "d" else e["after"]
        by_key.setdefault(image["id"], []).append(e)
    latest, history = set(), set()
    row = lambda i: (i["id"], i["carrier"], i["flight"], i["dep_delay"])  # noqa: E731
    for changes in by_key.values():
        changes.sort(key=lambda e: e["source"]["lsn"])
        last = changes[-1]
        if last["op"] != "d":
            latest.add(row(last["after"]))
        version, start = None, None
        for e in changes:
            lsn = e["source"]["lsn"]
            if e["op"] == "d":
                if version is not None:
                    history.add((*row(version), start, lsn))
                version = None
            elif version is not None and (version["carrier"], version["flight"]) == (
                e["after"]["carrier"],
                e["after"]["flight"],
            ):
                version = e["after"]  # dep_delay only: not tracked, changed in place
            else:
                if version is not None:
                    history.add((*row(version), start, lsn))
                version, start = e["after"], lsn
        if version is not None:
            history.add((*row(version), start, None))
    return latest, history


COLUMNS = ["id", "carrier", "flight", "dep_delay"]
HISTORY = [*COLUMNS, "__START_AT", "__END_AT"]


def postgres_tables(postgres, prefix: str) -> tuple[set, set]:
    """``(SCD 1 rows, SCD 2 rows)`` of the PostgreSQL tables ``<prefix>_latest`` and
    ``<prefix>_history``."""
    latest = set(postgres.rows(f"SELECT id, carrier, flight, dep_delay FROM {prefix}_latest"))
    history = set(
        postgres.rows(
            f'SELECT id, carrier, flight, dep_delay, "__START_AT", "__END_AT" FROM {prefix}_history'
        )
    )
    return latest, history


def _rows(table, names) -> set:
    columns = [table.column(n).to_pylist() for n in names]
    return set(zip(*columns, strict=True))


def delta_tables(folder: Path) -> tuple[set, set]:
    """``(SCD 1 rows, SCD 2 rows)`` of the Delta tables ``lake/latest`` and ``lake/history``
    under ``folder``, read with deltalake."""
    from deltalake import DeltaTable

    latest = DeltaTable(str(folder / "lake" / "latest")).to_pyarrow_table()
    history = DeltaTable(str(folder / "lake" / "history")).to_pyarrow_table()
    return _rows(latest, COLUMNS), _rows(history, HISTORY)


def iceberg_tables(folder: Path) -> tuple[set, set]:
    """``(SCD 1 rows, SCD 2 rows)`` of the Iceberg tables ``cdc.latest`` and ``cdc.history``
    in the SQLite catalog of ``folder/wh``, read with pyiceberg."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = folder / "wh"
    catalog = SqlCatalog(
        "sqlstream", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}"
    )
    latest = catalog.load_table(("cdc", "latest")).scan().to_arrow()
    history = catalog.load_table(("cdc", "history")).scan().to_arrow()
    return _rows(latest, COLUMNS), _rows(history, HISTORY)
