"""Language server latency: how long ``sqlstream lsp`` takes to re-check a 300-statement
file after a keystroke (issue 23: within 100 ms on 2 cores). Measures
:func:`sqlstream.lsp.analysis.analyze` (what the server runs after the debounce: parse,
plan, index) on the "mixed" file of ``bench/compile_scaling.py``, with one character
changed in a query each time, near the end (the last view) or near the top (the first
view, so every later statement comes after the edit), incrementally (given the previous version's
analysis, as the server calls it) and from scratch, in wall and CPU time
(``time.process_time``: what the load of the machine does not inflate); and the
end-to-end time from a ``didChange`` to its ``publishDiagnostics`` over stdio with the
debounce set to zero. ``--memory N``: instead, a long file of ``N`` statements checked
from scratch and then edited at the top a few times, in one process, with the server's
compile stores for it: the time of each check, the answers the stores gave, the process's
resident memory after each, and after the document's analysis and stores are dropped (as
the server does on ``didClose``). See ``bench/README.md``.

    python bench/lsp_latency.py [--statements 300] [--repeat 20] [--where end top]
    python bench/lsp_latency.py --memory 5000 [--repeat 3] [--free | --collect]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile_scaling import statements_file

from sqlstream.ir.caches import CompileCaches
from sqlstream.lsp.analysis import analyze
from sqlstream.lsp.freeing import free_replaced


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


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _release() -> float:
    """Collect, give freed memory back to the system (glibc), return the RSS in MB."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return _rss_mb()


class _Ticker:
    """A thread that wakes every millisecond and records the longest gap between two
    wakes: how long another thread (the server's event loop) could not run Python."""

    def __init__(self) -> None:
        self.gap = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        last = time.perf_counter()
        while not self.done.wait(0.001):
            now = time.perf_counter()
            self.gap = max(self.gap, now - last)
            last = now

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        return self.gap


def memory(statements: int, edits: int, collect: bool = False, free: bool = False) -> None:
    """Print, for a file of ``statements`` statements: the first check's time and RSS, then
    for each of ``edits`` edits at the top (the first view's ``a > 0`` toggled) the time of
    the incremental check, the answers the stores gave and the RSS (with ``collect``, also
    after a full garbage collection, as the server makes after a check); then the RSS once
    the analysis and stores are dropped. Works with any version of the server's stores (only
    :func:`analyze` and :meth:`CompileCaches.for_language_server` are used)."""
    text = statements_file(statements)
    base = _release()
    caches = CompileCaches.for_language_server()
    stores = [s for s in vars(caches).values() if s is not None]

    def answered() -> int | None:  # None: stores that do not count (before issue 32)
        counts = [getattr(s, "hits", None) for s in stores]
        return None if None in counts else sum(c for c in counts if c is not None)

    start, cpu = time.perf_counter(), time.process_time()
    analysis = analyze(text, caches=caches)
    print(
        f"{statements} statements, first check: wall {time.perf_counter() - start:.1f} s, "
        f"CPU {time.process_time() - cpu:.1f} s; RSS {_rss_mb():.0f} MB (before {base:.0f} MB); "
        f"answers kept {sum(len(s) for s in stores)}"
    )
    for i in range(edits):
        edited = text.replace("WHERE a > 0;", "WHERE a >= 0;" if i % 2 == 0 else "WHERE a > 0;", 1)
        before = answered()
        start, cpu = time.perf_counter(), time.process_time()
        replaced, analysis = analysis, analyze(edited, previous=analysis, caches=caches)
        print(
            f"edit {i + 1} at the top: wall {time.perf_counter() - start:.1f} s, CPU "
            f"{time.process_time() - cpu:.1f} s; answers from the stores "
            f"{'?' if before is None else answered() - before}; "
            f"RSS {_rss_mb():.0f} MB"
        )
        if free:  # as the server does
            gc.freeze()
            ticker, start = _Ticker(), time.perf_counter()
            unlinked = free_replaced(replaced, [analysis, caches])
            del replaced
            gc.freeze()
            seconds, gap = time.perf_counter() - start, ticker.stop()
            print(
                f"  the replaced analysis freed: {seconds:.1f} s, {unlinked} objects unlinked, "
                f"longest wait of another thread {gap * 1000:.0f} ms, RSS {_rss_mb():.0f} MB"
            )
        replaced = None
        if collect:
            ticker, start = _Ticker(), time.perf_counter()
            gc.collect()
            seconds, gap = time.perf_counter() - start, ticker.stop()
            print(
                f"  a full collection (the server's before): {seconds:.1f} s, longest wait "
                f"of another thread {gap * 1000:.0f} ms, RSS {_rss_mb():.0f} MB"
            )
    stores.clear()  # (the list only: the stores go with caches)
    del analysis, caches
    print(f"analysis and stores dropped: RSS {_release():.0f} MB")


def _summary(seconds: list[float]) -> str:
    ms = sorted(t * 1000 for t in seconds)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    return f"median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, max {ms[-1]:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--memory", type=int, metavar="N", help="a file of N statements")
    parser.add_argument("--collect", action="store_true", help="with --memory: collect")
    parser.add_argument(
        "--free", action="store_true", help="with --memory: free as the server does"
    )
    parser.add_argument(
        "--where",
        nargs="+",
        choices=("end", "top"),
        default=["end", "top"],
        help="where the edit is: in the last view, in the first view",
    )
    args = parser.parse_args()
    if args.memory:
        edits = min(args.repeat, 3) if args.repeat == 20 else args.repeat
        memory(args.memory, edits, args.collect, args.free)
        return
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
