"""Text forms of a :class:`~sqlstream.graph.model.Graph`: Graphviz DOT and Mermaid.

DOT: left to right, one box per node with the name in bold and its details below
(HTML-like labels, Graphviz manual *Node Shapes*, "HTML-Like Labels"); Graphviz places
everything. Mermaid: a ``flowchart LR`` for Markdown pages that render Mermaid.
"""

from __future__ import annotations

import html

from sqlstream.graph.model import Graph, Node

_STYLE = {  # kind -> DOT node attributes
    "stream": 'shape=box, style="rounded,filled", fillcolor="#dbeafe", color="#1d4ed8"',
    "table": 'shape=cylinder, style=filled, fillcolor="#e5e7eb", color="#374151"',
    "view": 'shape=box, style="rounded,filled,dashed", fillcolor="#fef9c3", color="#a16207"',
    "query": 'shape=box, style=filled, fillcolor="#dcfce7", color="#15803d"',
    "sink": 'shape=box, style="filled", fillcolor="#fce7f3", color="#be185d", peripheries=2',
}
_EDGE = {  # edge kind -> DOT edge attributes
    "reads": 'color="#4b5563"',
    "writes": 'color="#be185d"',
    "join": 'color="#7c3aed", penwidth=2.2',
    "dead_letter": 'color="#dc2626", style=dashed, penwidth=1.6, label="dead letters", '
    'fontcolor="#dc2626"',
}
_KIND_TITLE = {
    "stream": "STREAM",
    "table": "TABLE",
    "view": "VIEW",
    "query": "QUERY",
    "sink": "SINK",
}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(node: Node) -> str:
    title = _KIND_TITLE[node.kind]
    if "join" in node.marks:
        title += " · stream-stream join"
    if "dead_letter" in node.marks:
        title += " · dead letters"
    rows = [
        f'<FONT POINT-SIZE="9" COLOR="#6b7280">{html.escape(title)}</FONT>',
        f"<B>{html.escape(node.name)}</B>",
    ]
    rows += [f'<FONT POINT-SIZE="10">{html.escape(line)}</FONT>' for line in node.details]
    return "<" + "<BR/>".join(rows) + ">"


def to_dot(graph: Graph) -> str:
    """The Graphviz DOT text of ``graph`` (a ``digraph``, left to right; stateful queries
    drawn with a thick border, stream-stream join inputs in bold violet, dead-letter paths
    dashed red)."""
    lines = [
        f"digraph {_quote(graph.name)} {{",
        '  graph [rankdir=LR, fontname="Helvetica", nodesep=0.35, ranksep=0.7, '
        f"label={_quote('pipeline ' + graph.name)}, labelloc=t, fontsize=16];",
        '  node [fontname="Helvetica", fontsize=12, margin="0.15,0.08"];',
        '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.8];',
    ]
    for node in graph.nodes:
        extra = ", penwidth=2.5" if "stateful" in node.marks else ""
        if "dead_letter" in node.marks:
            extra += ', color="#dc2626"'
        lines.append(f"  {_quote(node.id)} [label={_label(node)}, {_STYLE[node.kind]}{extra}];")
    for edge in graph.edges:
        lines.append(f"  {_quote(edge.source)} -> {_quote(edge.target)} [{_EDGE[edge.kind]}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


_MERMAID_SHAPE = {
    "stream": ("([", "])"),
    "table": ("[(", ")]"),
    "view": ("[/", "/]"),
    "query": ("[", "]"),
    "sink": ("[[", "]]"),
}
_MERMAID_EDGE = {
    "reads": "-->",
    "writes": "-->",
    "join": "==>|join|",
    "dead_letter": "-.->|dead letters|",
}
_MERMAID_CLASS = {
    "stream": "fill:#dbeafe,stroke:#1d4ed8",
    "table": "fill:#e5e7eb,stroke:#374151",
    "view": "fill:#fef9c3,stroke:#a16207,stroke-dasharray:4 3",
    "query": "fill:#dcfce7,stroke:#15803d",
    "sink": "fill:#fce7f3,stroke:#be185d",
}


def _mermaid_escape(text: str) -> str:
    """``text`` in Mermaid's id characters, injectively: ASCII letters and digits stay,
    ``_`` becomes ``__`` and any other character ``_<hex code point>_``."""
    out = []
    for char in text:
        if char.isascii() and char.isalnum():
            out.append(char)
        elif char == "_":
            out.append("__")
        else:
            out.append(f"_{ord(char):x}_")
    return "".join(out)


def _mermaid_id(node_id: str) -> str:
    """The Mermaid id of a node id ``kind:name``: ``kind_`` and the escaped name. Distinct
    node ids give distinct Mermaid ids (``a-b`` and ``a_b`` are ``stream_a_2d_b`` and
    ``stream_a__b``); the kind prefix keeps Mermaid's keywords (``end``) out of the ids."""
    kind, colon, name = node_id.partition(":")
    if colon and kind.isascii() and kind.isalpha():
        return f"{kind}_{_mermaid_escape(name)}"
    return f"id_{_mermaid_escape(node_id)}"


def _mermaid_text(text: str) -> str:
    """``text`` inside a quoted Mermaid label: ``&``, ``<``, ``>`` as HTML entities, ``#``
    and ``"`` as Mermaid's entity codes (``#35;``, ``#quot;``); a ``'`` stays as it is."""
    return html.escape(text, quote=False).replace("#", "#35;").replace('"', "#quot;")


def to_mermaid(graph: Graph) -> str:
    """A Mermaid ``flowchart LR`` of ``graph`` (for Markdown): the node shapes tell streams
    ``([…])``, tables ``[(…)]``, views ``[/…/]``, queries ``[…]`` and sinks ``[[…]]`` apart;
    join inputs are thick arrows, dead-letter paths dotted."""
    lines = ["flowchart LR"]
    for node in graph.nodes:
        open_, close = _MERMAID_SHAPE[node.kind]
        title = node.kind + (" · stream-stream join" if "join" in node.marks else "")
        rows = [
            f"<small>{_mermaid_text(title)}</small>",
            f"<b>{_mermaid_text(node.name)}</b>",
            *(_mermaid_text(d) for d in node.details),
        ]
        lines.append(f'  {_mermaid_id(node.id)}{open_}"{"<br/>".join(rows)}"{close}')
        lines.append(f"  class {_mermaid_id(node.id)} {node.kind}")
    for edge in graph.edges:
        lines.append(
            f"  {_mermaid_id(edge.source)} {_MERMAID_EDGE[edge.kind]} {_mermaid_id(edge.target)}"
        )
    for kind, style in _MERMAID_CLASS.items():
        lines.append(f"  classDef {kind} {style}")
    return "\n".join(lines) + "\n"
