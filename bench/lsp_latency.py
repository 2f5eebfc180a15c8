"""Language server latency: how long ``sqlstream lsp`` takes to re-check a 300-statement
file after a keystroke (issue 23: within 100 ms on 2 cores). Measures
:func:`sqlstream.lsp.analysis.analyze` (what the server runs after the debounce: parse,
plan, index) on the "mixed" file of ``bench/compile_scaling.py``, with one character
changed in a query each time, near the end (the last view) or near the top (the first
view, so every later statement comes after the edit), incrementally (given the previous version's
analysis, as the server calls it) and from scratch, in wall and CPU time
(``time.process_time``: what the load of the machine does not inflate); and the
end-to-end time from a ``didChange`` to its ``publishDiagnostics`` over stdio with the
debounce set to zero. See ``bench/README.md``.

    python bench/lsp_latency.py [--statements 300] [--repeat 20] [--where end top]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile_scaling import statements_file

from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp.analysis import analyze


def _marker(text: str, where: str) -> int:
    """The offset of ``WHERE a > `` in the first (``top``) or last (``end``) view."""
    return text.index("WHERE a > ") if where == "top" else text.rindex("WHERE a > ")


def in_process(
    text: str, repeat: int, incremental: bool, where: str = "end"
) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each :func:`analyze` after a one-character edit (``a > i`` →
    ``a >= i`` toggled in the first or last view, ``where``: ``"top"`` or ``"end"``), given
    the previous analysis or not; every analysis answers from one set of compile stores,
    as the server's workspace does (:meth:`CompileCaches.for_language_server`)."""
    marker = _marker(text, where)
    caches = CompileCaches.for_language_server()
    previous = analyze(text, caches=caches)  # warm: imports, the dialect, the stores
    wall, cpu = [], []
    for i in range(repeat):
        edited = (
            text[:marker]
            + ("WHERE a >= " if i % 2 == 0 else "WHERE a > ")
            + text[marker + len("WHERE a > ") :]
        )
        start, start_cpu = time.perf_counter(), time.process_time()
        analysis = analyze(edited, previous=previous if incremental else None, caches=caches)
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        previous = analysis
    return wall, cpu


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def _read(stream) -> dict:
    length = 0
    while line := stream.readline().strip():
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def over_stdio(text: str, repeat: int, where: str = "end") -> list[float]:
    """Seconds from writing a ``didChange`` (the edit of :func:`in_process` at ``where``) to
    reading its ``publishDiagnostics``."""
    code = (
        "import sqlstream.lsp.server as s; s.DEBOUNCE_SECONDS = 0; "
        "s.CONFIGURATION_WAIT_SECONDS = 0; s.serve()"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    send = lambda payload: (server.stdin.write(_message(payload)), server.stdin.flush())  # noqa: E731
    uri = "file:///bench/mixed.ssql"

    def until_diagnostics() -> dict:
        while True:
            message = _read(server.stdout)
            if message.get("method") == "textDocument/publishDiagnostics":
                return message
            if "id" in message and "method" in message:  # a request of the server
                send({"jsonrpc": "2.0", "id": message["id"], "result": [None]})

    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": None, "capabilities": {}},
        }
    )
    _read(server.stdout)
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send(
        {
            "jsonrpc": "2.0",
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {"uri": uri, "languageId": "ssql", "version": 1, "text": text}
            },
        }
    )
    until_diagnostics()
    marker = _marker(text, where)
    lines = text[:marker].count("\n")
    column = marker - (text.rfind("\n", 0, marker) + 1) + len("WHERE a >")
    times = []
    for i in range(repeat):
        insert = i % 2 == 0
        change = {
            "range": {
                "start": {"line": lines, "character": column},
                "end": {"line": lines, "character": column + (0 if insert else 1)},
            },
            "text": "=" if insert else "",
        }
        start = time.perf_counter()
        send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": i + 2},
                    "contentChanges": [change],
                },
            }
        )
        until_diagnostics()
        times.append(time.perf_counter() - start)
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
    send({"jsonrpc": "2.0", "method": "exit", "params": None})
    server.wait(timeout=30)
    return times


def _summary(seconds: list[float]) -> str:
    ms = sorted(t * 1000 for t in seconds)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    return f"median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, max {ms[-1]:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--where",
        nargs="+",
        choices=("end", "top"),
        default=["end", "top"],
        help="where the edit is: in the last view, in the first view",
    )
    args = parser.parse_args()
    text = statements_file(args.statements)
    print(
        f"{args.statements} statements, {args.repeat} edits, load average "
        f"{os.getloadavg()[0]:.1f} at the start"
    )
    for where in args.where:
        for name, incremental in (("incremental", True), ("from scratch", False)):
            wall, cpu = in_process(text, args.repeat, incremental, where)
            print(
                f"edit at the {where}: analyze, {name}: wall {_summary(wall)}; CPU {_summary(cpu)}"
            )
        print(
            f"edit at the {where}: didChange -> publishDiagnostics over stdio: wall "
            f"{_summary(over_stdio(text, args.repeat, where))}"
        )


if __name__ == "__main__":
    main()
