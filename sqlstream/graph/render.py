"""Drawing a pipeline: DOT text through Graphviz's ``dot`` program into SVG or PNG, and a
self-contained HTML page around the SVG.

Graphviz (Debian package ``graphviz``) lays the picture out; nothing is placed by hand.
"""

from __future__ import annotations

import html
import shutil
import subprocess

from sqlstream.graph.dot import to_dot, to_mermaid
from sqlstream.graph.model import Graph

FORMATS = ("svg", "png", "dot", "mermaid", "html")
"""The ``--format`` values of ``sqlstream graph``."""


class GraphvizMissing(RuntimeError):
    """Graphviz's ``dot`` program is not on ``PATH`` (needed for svg, png and html)."""


def run_dot(dot_text: str, fmt: str) -> bytes:
    """``dot -T<fmt>`` of ``dot_text``.

    Args:
        dot_text: a Graphviz DOT graph.
        fmt: a Graphviz output format (``svg``, ``png``).

    Returns:
        What ``dot`` writes (bytes).

    Raises:
        GraphvizMissing: no ``dot`` program on ``PATH``.
        RuntimeError: ``dot`` failed (its message).
    """
    program = shutil.which("dot")
    if program is None:
        raise GraphvizMissing(
            "Graphviz's 'dot' program is not installed "
            "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install "
            "graphviz); --format dot and --format mermaid need no Graphviz"
        )
    done = subprocess.run(
        [program, f"-T{fmt}"],
        input=dot_text.encode("utf-8"),
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.decode('utf-8', 'replace').strip()}")
    return done.stdout


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: Helvetica, Arial, sans-serif; margin: 1.5rem; color: #111827; }}
.picture {{ overflow: auto; border: 1px solid #e5e7eb; padding: 1rem; }}
.picture svg {{ max-width: 100%; height: auto; }}
.legend span {{ display: inline-block; margin-right: 1.2rem; font-size: 0.9rem; }}
.swatch {{ display: inline-block; width: 0.9rem; height: 0.9rem; vertical-align: middle;
          margin-right: 0.3rem; border: 1px solid #6b7280; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p class="legend">
<span><i class="swatch" style="background:#dbeafe"></i>stream</span>
<span><i class="swatch" style="background:#e5e7eb"></i>table</span>
<span><i class="swatch" style="background:#fef9c3"></i>view</span>
<span><i class="swatch" style="background:#dcfce7"></i>query (thick border: stateful)</span>
<span><i class="swatch" style="background:#fce7f3"></i>sink</span>
<span style="color:#7c3aed">⟶ stream-stream join input</span>
<span style="color:#dc2626">⇢ dead letters</span>
<span>expect name: condition → action: an expectation of a stream or sink</span>
</p>
<div class="picture">
{svg}
</div>
</body>
</html>
"""


def render(graph: Graph, fmt: str) -> bytes:
    """``graph`` in format ``fmt`` (one of :data:`FORMATS`): ``dot`` and ``mermaid`` text,
    ``svg``/``png`` from Graphviz, ``html`` a page with the SVG inline (no external files).

    Raises:
        ValueError: an unknown format.
        GraphvizMissing: ``svg``, ``png`` or ``html`` without Graphviz installed.
    """
    if fmt == "dot":
        return to_dot(graph).encode("utf-8")
    if fmt == "mermaid":
        return to_mermaid(graph).encode("utf-8")
    if fmt in ("svg", "png"):
        return run_dot(to_dot(graph), fmt)
    if fmt == "html":
        svg = run_dot(to_dot(graph), "svg").decode("utf-8")
        svg = svg[svg.index("<svg") :]  # drop the XML declaration and DOCTYPE
        title = html.escape(f"pipeline {graph.name}")
        return _PAGE.format(title=title, svg=svg).encode("utf-8")
    raise ValueError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")
