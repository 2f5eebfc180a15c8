"""Hand-written PySpark baselines for the stateful examples: what a PySpark user writes for
``examples/joins/weather.ssql`` (five stream-stream joins of the flights and the hourly
weather) and ``examples/flights/dedup.ssql`` (three deduplications), with the same
columns, watermarks, conditions, sinks and trigger, so that ``bench/stateful.py`` can time
both side by side and compare their outputs.

Each function starts every query of its job on ``spark`` (``trigger(availableNow=True)``,
Parquet files sinks, append mode), waits for all of them and returns them. Spark APIs:
``DataStreamReader.csv``, ``DataFrame.withWatermark``, ``DataFrame.join`` with an
expression condition (Spark guide, *Stream-stream Joins*), ``dropDuplicates`` (*Streaming
Deduplication*), ``groupBy(window(…))`` (*Window Operations on Event Time*).
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

FLIGHTS = (
    "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE, "
    "arr_delay DOUBLE, carrier STRING, flight INT, tailnum STRING, origin STRING, dest STRING, "
    "distance DOUBLE, time_hour TIMESTAMP"
)
WEATHER = (
    "origin STRING, year INT, month INT, day INT, hour INT, temp DOUBLE, dewp DOUBLE, "
    "humid DOUBLE, wind_dir INT, wind_speed DOUBLE, wind_gust DOUBLE, precip DOUBLE, "
    "pressure DOUBLE, visib DOUBLE, time_hour TIMESTAMP"
)
JOIN_CONDITION = (
    "f.origin = w.origin AND w.time_hour > f.time_hour - INTERVAL 1 HOUR "
    "AND w.time_hour <= f.time_hour"
)


def _stream(spark: SparkSession, schema: str, folder, max_files: int) -> DataFrame:
    return (
        spark.readStream.schema(schema)
        .option("header", True)
        .option("nullValue", "NA")
        .option("maxFilesPerTrigger", max_files)
        .csv(str(folder))
    )


def _start(frame: DataFrame, name: str, out_root: Path, checkpoint_root: Path):
    return (
        frame.writeStream.format("parquet")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint_root / name))
        .trigger(availableNow=True)
        .queryName(f"hand_{name}")
        .start(str(out_root / name))
    )


def _wait(queries: list) -> list:
    for query in queries:
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"{query.name} failed: {query.exception()}")
    return queries


def weather_joins(
    spark: SparkSession,
    flights_dir,
    weather_dir,
    out_root: Path,
    checkpoint_root: Path,
    max_files: int,
) -> list:
    """The five joins of ``examples/joins/weather.ssql``: inner, left, right, full outer and
    left semi of flights and weather on the origin and ``JOIN_CONDITION``'s hour range, each
    stream with a 30-minute watermark on ``time_hour``.

    Args:
        flights_dir, weather_dir: folders of day CSV files (mtimes in date order).
        out_root, checkpoint_root: each query writes ``out_root/<sink>`` with its checkpoint
            in ``checkpoint_root/<sink>``; sinks named as in the example.
        max_files: ``maxFilesPerTrigger`` of both streams.

    Returns:
        The finished ``StreamingQuery`` objects.
    """
    f = (
        _stream(spark, FLIGHTS, flights_dir, max_files)
        .withWatermark("time_hour", "30 minutes")
        .alias("f")
    )
    w = (
        _stream(spark, WEATHER, weather_dir, max_files)
        .withWatermark("time_hour", "30 minutes")
        .alias("w")
    )
    on = F.expr(JOIN_CONDITION)
    weather_columns = [
        F.col("w.time_hour").alias("weather_hour"),
        "w.temp",
        "w.wind_speed",
        "w.visib",
        "w.precip",
    ]
    flight_columns = ["f.carrier", "f.flight", "f.origin", "f.time_hour", "f.dep_delay"]
    jobs = {
        "flight_weather": f.join(w, on, "inner").select(*flight_columns, *weather_columns),
        "flights_any_weather": f.join(w, on, "left").select(*flight_columns, *weather_columns),
        "weather_any_flights": f.join(w, on, "right").select(
            "f.carrier",
            "f.flight",
            "f.time_hour",
            "w.origin",
            F.col("w.time_hour").alias("weather_hour"),
            "w.temp",
        ),
        "flights_and_weather": f.join(w, on, "full").select(
            "f.carrier",
            "f.flight",
            "f.origin",
            "f.time_hour",
            F.col("w.origin").alias("weather_origin"),
            F.col("w.time_hour").alias("weather_hour"),
            "w.temp",
        ),
        "observed_flights": f.join(w, on, "left_semi").select(*flight_columns),
    }
    return _wait([_start(frame, name, out_root, checkpoint_root) for name, frame in jobs.items()])


def dedup(
    spark: SparkSession, flights_dir, out_root: Path, checkpoint_root: Path, max_files: int
) -> list:
    """The three queries of ``examples/flights/dedup.ssql`` over flights with a 1-hour
    watermark: the distinct routes per hour (``dropDuplicates()``), one row per flight
    (``dropDuplicates`` on carrier, flight, time_hour) and the departures per airport and
    hour of the deduplicated flights (a windowed count, appended after the watermark).

    Args and returns: as :func:`weather_joins`; sinks ``routes``, ``flights``, ``hourly``.
    """
    flights = _stream(spark, FLIGHTS, flights_dir, max_files).withWatermark("time_hour", "1 hour")
    unique = flights.dropDuplicates(["carrier", "flight", "time_hour"])
    jobs = {
        "routes": flights.select("origin", "dest", "time_hour").dropDuplicates(),
        "flights": unique,
        "hourly": unique.groupBy(F.window("time_hour", "1 hour"), "origin")
        .agg(F.count("*").alias("flights"))
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "origin",
            "flights",
        ),
    }
    return _wait([_start(frame, name, out_root, checkpoint_root) for name, frame in jobs.items()])
