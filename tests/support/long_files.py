"""Long ``.ssql`` files for the language server's load tests and the benchmarks: the
"mixed" file, which ``bench/compile_scaling.py`` and ``bench/lsp_latency.py`` import from
here (one text, so the tests and the benchmarks measure the same thing)."""

from __future__ import annotations

HEAD = (
    "CREATE STREAM s (a INT, b STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE)\n"
    "WITH (connector = 'files', path = 'in', format = 'json');\n"
    "CREATE SINK o WITH (connector = 'console');\n"
)


def mixed_file(n: int) -> str:
    """About ``n`` statements in groups of four: a view, a sink, an insert with a windowed
    aggregation over the view, and a stream with a computed column (no errors; a
    warning per insert: append mode writes a window once the watermark passes it)."""
    parts = [HEAD]
    for i in range((n - 2) // 4):
        parts.append(
            f"CREATE VIEW v{i} AS SELECT a, b, ts FROM s WHERE a > {i};\n"
            f"CREATE SINK o{i} WITH (connector = 'memory');\n"
            f"INSERT INTO o{i} SELECT window_start, b, COUNT(*) AS n, MAX(a) AS m\n"
            f"FROM TUMBLE(v{i}, ts, INTERVAL '1' MINUTE) GROUP BY window_start, window_end, b;\n"
            f"CREATE STREAM t{i} (a INT, ts TIMESTAMP, c AS a * 2, WATERMARK FOR ts AS ts - INTERVAL "
            f"'{i % 59 + 1}' SECONDS) WITH (connector = 'files', path = 'in{i}', format = 'parquet');\n"
        )
    return "".join(parts)
