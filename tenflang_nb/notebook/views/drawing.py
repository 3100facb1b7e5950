"""The data-flow graph drawn (the ``graph``, ``values`` and ``step`` views and the model card
draw it): inline SVG from Graphviz, the same as a PNG, its legend, the topological order as
a list, and a fallback without ``dot``.

The SVG is interactive (hover) but JupyterLab strips it from an untrusted notebook, so the
output also holds the same drawing as a PNG, shown only there (``html.plain_only``).

One node per variable, styled by kind and numbered by the core's topological order; edges
point the way data flows. Vector components ``v.0``, ``v.1``... of an expanded program are
boxed together (a Graphviz cluster), and collapsed into one node beyond ``COLLAPSE_AT``.

>>> from tenflang_nb.core.api import parse
>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.core.graph import DataFlowGraph
>>> p = parse(SEED_EXAMPLE)
>>> layout = layout_graph(p, DataFlowGraph(p), "tfnbdoc")
>>> [n.names for n in layout.nodes][:3], len(layout.edges)
([['x'], ['y'], ['w']], 7)
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.formatting import fmt_shape
from ...core.graph import DataFlowGraph
from ...core.lexical import GIVEN_KINDS
from ...core.ops import Const
from ...core.program import Program
from .html import attrs, esc, plain_only, png_img, scroll_region, styled_only

__all__ = [
    "COLLAPSE_AT", "KIND_STYLES", "MAX_NODES", "GraphLayout", "GraphUnavailable", "dot_source",
    "graph_html", "kinds_drawn", "layout_graph", "legend_html", "order_html", "render_png",
    "render_svg", "swatch",
]

# The PNG stand-in is drawn at 1.5 device pixels per CSS pixel: sharp enough on a HiDPI
# screen, a third of the bytes of 2x (a notebook stores it in every graph output).
PNG_DPI = 144
COLLAPSE_AT = 16  # a vector with more components than this is drawn as one node
MAX_NODES = 400  # beyond this many drawn nodes a picture is less legible than the list
INSTALL_HINT = ("Install Graphviz to draw it: <code>apt-get install graphviz</code> "
                "(Debian/Ubuntu), <code>brew install graphviz</code> (macOS), "
                "<code>conda install -c conda-forge graphviz</code>, or see "
                "https://graphviz.org/download/ — then rerun the cell.")

# fill, border, Graphviz shape and extra style per kind: one table for the SVG and the legend
KIND_STYLES: dict[str, dict[str, str]] = {
    "input": {"fill": "#dbeafe", "line": "#1d4ed8", "shape": "ellipse", "style": ""},
    "exp_output": {"fill": "#dcfce7", "line": "#15803d", "shape": "ellipse", "style": "dashed"},
    "weight": {"fill": "#fef3c7", "line": "#b45309", "shape": "box", "style": "rounded,bold"},
    "intvar": {"fill": "#f3f4f6", "line": "#4b5563", "shape": "box", "style": ""},
    "output": {"fill": "#ede9fe", "line": "#6d28d9", "shape": "box", "style": "bold"},
    "loss": {"fill": "#fee2e2", "line": "#b91c1c", "shape": "octagon", "style": "bold"},
    "constant": {"fill": "#ffffff", "line": "#9ca3af", "shape": "circle", "style": ""},
}
_COMPONENT_RE = re.compile(r"^(.+)\.([0-9]+)$")


class GraphUnavailable(Exception):
    """``dot`` is missing or failed: the caller shows the fallback instead."""


@dataclass
class DrawnNode:
    key: str  # the DOT/SVG id, prefixed so two outputs never collide
    names: list[str]  # the variables it stands for (several when collapsed)
    kind: str
    label: str  # plain text, or a Graphviz HTML-like label (starts with '<')
    lines: list[int]  # shape-program lines that declare/define its variables
    tooltip: str
    group: str | None = None  # cluster (vector base name)


@dataclass
class GraphLayout:
    nodes: list[DrawnNode] = field(default_factory=list)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (tail, head, label)
    clusters: dict[str, list[str]] = field(default_factory=dict)  # base -> node keys
    collapsed: dict[str, int] = field(default_factory=dict)  # base -> component count
    prefix: str = ""
    rankdir: str = "LR"  # Graphviz's: LR (data flows right) or TB (down, beside a listing)

    def dot(self) -> Any:
        """A ``graphviz.Digraph`` of this layout (the package only writes DOT text)."""
        import graphviz

        g = graphviz.Digraph(graph_attr={
            "rankdir": self.rankdir, "bgcolor": "transparent", "nodesep": "0.25", "ranksep": "0.35",
            "id": f"{self.prefix}_graph", "fontname": "Helvetica", "fontsize": "10"})
        g.attr("node", fontname="Helvetica", fontsize="11", style="filled",
               margin="0.08,0.04", height="0.3")
        g.attr("edge", fontname="Helvetica", color="#6b7280", arrowsize="0.6", fontsize="9",
               fontcolor="#6b7280")
        by_key = {n.key: n for n in self.nodes}
        in_cluster = {k for keys in self.clusters.values() for k in keys}
        for i, (base, keys) in enumerate(self.clusters.items()):
            with g.subgraph(name=f"cluster_{i}") as sub:
                sub.attr(label=f"{base}.*", style="rounded,dashed", color="#9ca3af",
                         fontcolor="#6b7280", id=f"{self.prefix}_k{i}")
                for key in keys:
                    _dot_node(sub, by_key[key])
        for node in self.nodes:
            if node.key not in in_cluster:
                _dot_node(g, node)
        for i, (tail, head, label) in enumerate(self.edges):
            g.edge(tail, head, label=label or None, id=f"{self.prefix}_e{i}")
        return g


def _dot_node(g: Any, node: DrawnNode) -> None:
    st = KIND_STYLES[node.kind]
    style = ",".join(s for s in ("filled", st["style"]) if s)
    extra = {"width": "0.3", "fixedsize": "false", "fontsize": "9",
             "fontcolor": "#374151"} if node.kind == "constant" else {}
    g.node(node.key, label=node.label, shape=st["shape"], style=style, fillcolor=st["fill"],
           color=st["line"], tooltip=node.tooltip, id=node.key,
           **{"class": f"tf-node tf-kind-{node.kind}"}, **extra)


def _op_text(program: Program, name: str) -> str:
    d = program.defs.get(name)
    if d is None:
        kind = program.kind(name)
        if kind in GIVEN_KINDS:
            return kind
        return f"{kind} (never defined)"
    if d.op is not None:
        return d.op
    arg = d.args[0]
    return f"= {arg}" if isinstance(arg, Const) else "copy"


def definition_text(program: Program, name: str) -> str:
    """``z = mul x w`` for a defined variable, ``x: input`` for one given by the data."""
    d = program.defs.get(name)
    if d is None:
        return f"{name}: {program.kind(name)}"
    return str(d)[len("define "):]


def _lines_of(program: Program, name: str) -> list[int]:
    lines = [program.decls[name].src.line]
    d = program.defs.get(name)
    if d is not None and d.src.line not in lines:
        lines.append(d.src.line)
    return lines


def _uses_tensors(program: Program) -> bool:
    return any(shape != () for shape in program.shapes.values())


def _value_rows(value: str, grad: str | None, under: Mapping[str, str]) -> str:
    """The "value" and "grad" rows of a label, each with what ``under`` puts below it (a
    Graphviz table: a heatmap)."""
    rows = f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10">value {_hl(value)}</FONT></TD></TR>'
    if "value" in under:
        rows += f'<TR><TD ALIGN="LEFT">{under["value"]}</TD></TR>'
    if grad is not None:
        rows += (f'<TR><TD ALIGN="LEFT"><FONT POINT-SIZE="10" COLOR="#b91c1c">grad '
                 f"{_hl(grad)}</FONT></TD></TR>")
        if "grad" in under:
            rows += f'<TR><TD ALIGN="LEFT">{under["grad"]}</TD></TR>'
    return rows


def _hl(text: str) -> str:
    # Graphviz HTML-like labels want XML escapes only
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _label(number: int | None, name: str, op: str, shape: str | None,
           labels: tuple[str, str | None] | None, under: Mapping[str, str]) -> str:
    head = f"{number}. {name}" if number is not None else name
    if labels is None:
        return "\n".join(x for x in (head, op, shape) if x)
    sub = " ".join(x for x in (op, shape) if x)
    return ('<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="0" CELLPADDING="1">'
            f"<TR><TD><B>{_hl(head)}</B></TD></TR>"
            f'<TR><TD><FONT POINT-SIZE="9">{_hl(sub)}</FONT></TD></TR>'
            f"{_value_rows(*labels, under)}</TABLE>>")


def _groups(program: Program, graph: DataFlowGraph) -> dict[str, list[str]]:
    """Vector base name -> its components, for programs written with vectors/macros."""
    if not program.expanded:
        return {}
    groups: dict[str, list[str]] = {}
    for name in graph.nodes:
        m = _COMPONENT_RE.match(name)
        if m:
            groups.setdefault(m.group(1), []).append(name)
    return {base: names for base, names in groups.items() if len(names) >= 2}


def layout_graph(program: Program, graph: DataFlowGraph, prefix: str, *,
                 labels: Mapping[str, tuple[str, str | None]] | None = None,
                 under: Mapping[str, Mapping[str, str]] | None = None,
                 collapse_at: int = COLLAPSE_AT) -> GraphLayout:
    """Decide what to draw: nodes (clustered/collapsed vectors), constants, edges.

    ``labels`` maps a variable to its value and adjoint as shown (text) for the "value | grad"
    views; ``under``, a variable to what goes under its "value" or "grad" row (a Graphviz
    HTML-like table: the stepper's heatmaps).
    """
    order = {name: i for i, name in enumerate(graph.topological_order(), 1)}
    tensors = _uses_tensors(program)
    layout = GraphLayout(prefix=prefix)
    key_of: dict[str, str] = {}
    groups = _groups(program, graph)
    collapsed_base = {n: b for b, names in groups.items() if len(names) > collapse_at
                      for n in names}
    for base, names in groups.items():
        if len(names) > collapse_at:
            key = f"{prefix}_n{len(layout.nodes)}"
            kinds = {program.kind(n) for n in names}
            kind = kinds.pop() if len(kinds) == 1 else "intvar"
            lines = sorted({ln for n in names for ln in _lines_of(program, n)})
            label = f"{base}.0 … {base}.{len(names) - 1}\n{len(names)} × {kind}"
            layout.nodes.append(DrawnNode(key, list(names), kind, label, lines,
                                          f"{len(names)} components of {base}"))
            layout.collapsed[base] = len(names)
            for n in names:
                key_of[n] = key
    member_of = {n: b for b, names in groups.items() if b not in layout.collapsed
                 for n in names}
    for name in graph.nodes:
        if name in collapsed_base:
            continue
        key = f"{prefix}_n{len(layout.nodes)}"
        shape = fmt_shape(program.shapes[name]) if tensors else None
        label = _label(order.get(name), name, _op_text(program, name), shape,
                       labels.get(name) if labels is not None else None,
                       (under or {}).get(name, {}))
        tooltip = f"{order.get(name)}. {definition_text(program, name)}"
        group = member_of.get(name)
        layout.nodes.append(DrawnNode(key, [name], program.kind(name), label,
                                      _lines_of(program, name), tooltip, group))
        key_of[name] = key
        if group is not None:
            layout.clusters.setdefault(group, []).append(key)
    _add_edges(program, graph, layout, key_of, set(collapsed_base))
    return layout


def _add_edges(program: Program, graph: DataFlowGraph, layout: GraphLayout,
               key_of: dict[str, str], collapsed: set[str]) -> None:
    counts: dict[tuple[str, str], list[str]] = {}
    for operand, consumer in graph.edges():
        tail, head = key_of[operand], key_of[consumer]
        if tail == head:
            continue  # inside one collapsed vector
        d = program.defs[consumer]
        positions = [str(i + 1) for i, a in enumerate(d.args) if a == operand]
        # operand numbers matter for sub/div/pow/matmul; shown for every binary operator
        label = ",".join(positions) if len(d.args) == 2 else ""
        counts.setdefault((tail, head), []).append(label)
    for (tail, head), labels in counts.items():
        label = labels[0] if len(labels) == 1 else f"×{len(labels)}"
        layout.edges.append((tail, head, label))
    for d in program.definitions():  # constant operands: small nodes of their own
        if d.target in collapsed:
            continue
        for i, arg in enumerate(d.args):
            if isinstance(arg, Const) and d.op is not None:
                key = f"{layout.prefix}_c{len(layout.nodes)}"
                layout.nodes.append(DrawnNode(key, [], "constant", arg.text,
                                              [d.src.line], f"constant {arg.text}"))
                label = str(i + 1) if len(d.args) == 2 else ""
                layout.edges.append((key, key_of[d.target], label))


def dot_source(program: Program, graph: DataFlowGraph) -> str:
    """The DOT text Graphviz lays out for the data-flow graph."""
    return str(layout_graph(program, graph, "tfnb").dot().source)


def _pipe(layout: GraphLayout, fmt: str, **graph_attr: str) -> bytes:
    """Run ``dot`` on the layout; :class:`GraphUnavailable` when it is missing or fails."""
    if shutil.which("dot") is None:
        raise GraphUnavailable("Graphviz's <code>dot</code> program was not found")
    try:
        g = layout.dot()
        g.graph_attr.update(graph_attr)
        return bytes(g.pipe(format=fmt))
    except ImportError as exc:
        raise GraphUnavailable("the graphviz Python package is not installed") from exc
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        # graphviz.ExecutableNotFound is a RuntimeError; CalledProcessError: dot failed
        name = type(exc).__name__
        if name == "ExecutableNotFound" or isinstance(exc, FileNotFoundError):
            raise GraphUnavailable("Graphviz's <code>dot</code> program was not found") from exc
        raise GraphUnavailable(f"Graphviz's <code>dot</code> failed ({esc(name)})") from exc


def render_svg(layout: GraphLayout) -> str:
    """The layout as an ``<svg>`` element with data attributes on every node.

    Raises :class:`GraphUnavailable` when ``dot`` is missing or fails.
    """
    svg = _pipe(layout, "svg").decode("utf-8")
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg
    extra = {}
    for n in layout.nodes:
        if n.names:
            extra[n.key] = attrs(
                data_tf_node=n.names[0] if len(n.names) == 1 else None,
                data_tf_nodes=" ".join(n.names) if len(n.names) > 1 else None,
                data_tf_lines=" ".join(map(str, n.lines)), data_tf_kind=n.kind)
        else:
            extra[n.key] = attrs(data_tf_kind=n.kind)

    def tag(m: re.Match[str]) -> str:
        return m.group(0) + extra.get(m.group(1), "")

    svg = re.sub(rf'<g id="({re.escape(layout.prefix)}_[nc][0-9]+)"', tag, svg)
    # Graphviz titles are our internal ids; a browser would show them as tooltips over the
    # real ones (the nodes' definitions)
    svg = re.sub(r"<title>[^<]*</title>\n?", "", svg)
    # one picture to assistive technology, named by its nodes in order (its loose <text>
    # pieces would read as a jumble): WCAG 1.1.1
    name = attrs(aria_label=_alt_text(layout))
    return svg.replace("<svg ", f'<svg class="tf-svg" role="img"{name} ', 1)


def render_png(layout: GraphLayout, dpi: int = PNG_DPI) -> tuple[bytes, int]:
    """The same drawing as a PNG on white (an untrusted output sits on the theme's
    background, which may be dark), and the width in CSS pixels it is drawn at (the SVG's).

    Raises :class:`GraphUnavailable` like :func:`render_svg`.
    """
    png = _smaller_png(_pipe(layout, "png", dpi=str(dpi), bgcolor="white"))
    width = int.from_bytes(png[16:20], "big")  # the IHDR chunk: width, height
    return png, round(width * 96 / dpi)


def _smaller_png(png: bytes) -> bytes:
    """``png`` in at most 256 colours (Graphviz writes 32-bit RGBA: four times the bytes
    for a few flat fills, lines and antialiased text). Median cut keeps every kind's exact
    fill and line colour (octree merges the pale fills into white). Unchanged without
    Pillow."""
    try:
        from PIL import Image

        with Image.open(io.BytesIO(png)) as image:
            fewer = image.convert("RGB").quantize(
                colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
            out = io.BytesIO()
            fewer.save(out, "PNG", optimize=True)
    except (ImportError, AttributeError, OSError, ValueError):
        return png  # Pillow missing or too old (no Image.Quantize): the bigger PNG is fine
    smaller = out.getvalue()
    return smaller if len(smaller) < len(png) else png


def _alt_text(layout: GraphLayout, limit: int = 40) -> str:
    """What the picture shows, for screen readers and a broken image: the nodes in order."""
    named = sorted((n for n in layout.nodes if n.names), key=_order_number)
    shown = [n.tooltip for n in named][:limit]
    more = len(named) - len(shown)
    tail = f"; and {more} more" if more > 0 else ""
    return f"Data-flow graph: {'; '.join(shown)}{tail}"


def _order_number(node: DrawnNode) -> float:
    """A node's number in the topological order (its tooltip starts with it); a collapsed
    vector, which has none, goes last."""
    m = re.match(r"([0-9]+)\. ", node.tooltip)
    return int(m.group(1)) if m else float("inf")


def swatch(kind: str) -> str:
    """A small box in the colours and outline of ``kind``'s nodes. Styled inline, so it is
    the same in a sanitized output; the kind's name always stands next to it.

    >>> 'background:#dbeafe' in swatch("input") and "border-radius:50%" in swatch("input")
    True
    """
    st = KIND_STYLES[kind]
    radius = "50%" if st["shape"] in ("ellipse", "circle") else "2px"
    dashed = "dashed" if "dashed" in st["style"] else "solid"
    return (f'<span class="tf-swatch" style="display:inline-block;width:11px;height:11px;'
            f"margin-right:4px;vertical-align:-1px;background:{st['fill']};"
            f'border:1.5px {dashed} {st["line"]};border-radius:{radius}"></span>')


def legend_html(kinds: list[str]) -> str:
    """A row of swatches, one per kind drawn, each followed by the kind's name."""
    items = [f'<span class="tf-legend-item" data-tf-kind="{kind}" '
             f'style="white-space:nowrap">{swatch(kind)}{esc(kind)}</span>'
             for kind in kinds]
    # the spaces between items: a sanitized output has no flex gap to separate the names
    return ('<div class="tf-legend" style="display:flex;flex-wrap:wrap;gap:4px 14px;'
            f'margin:4px 0;font-size:12px">{" ".join(items)}</div>')


def kinds_drawn(layout: GraphLayout) -> list[str]:
    """The kinds of the nodes drawn, in the legend's order."""
    present = {n.kind for n in layout.nodes}
    return [k for k in KIND_STYLES if k in present]


def order_html(program: Program, graph: DataFlowGraph) -> str:
    """The topological order as a numbered list (the numbers drawn in the graph's nodes)."""
    items = []
    for name in graph.topological_order():
        kind = program.kind(name)
        tags = attrs(data_tf_node=name, data_tf_lines=" ".join(map(str, _lines_of(program, name))),
                     data_tf_kind=kind, title=kind)
        text = definition_text(program, name)
        # the kind in words too, not only in the swatch's colour (WCAG 1.4.1): a given
        # variable's text names it already, an intermediate one needs none
        said = f" · {esc(kind)}" if kind != "intvar" and f": {kind}" not in text else ""
        items.append(f"<li{tags}>{swatch(kind)}<code>{esc(text)}</code>{said}</li>")
    head = "<h4>Topological order</h4>"
    if not items:
        return head + '<div class="tf-note">(no variables)</div>'
    return (f'{head}<div class="tf-scroll" {scroll_region("topological order")}>'
            f'<ol class="tf-order">{"".join(items)}</ol></div>')


def _edges_list(graph: DataFlowGraph) -> str:
    items = [f"<li><code>{esc(a)}</code> → <code>{esc(c)}</code></li>"
             for a, c in graph.edges()]
    body = "".join(items) or "<li>(no edges)</li>"
    return (f'<h4>Edges (data flows →)</h4><div class="tf-scroll" {scroll_region("edges")}>'
            f"<ul>{body}</ul></div>")


def graph_html(program: Program, graph: DataFlowGraph, prefix: str, *,
               labels: Mapping[str, tuple[str, str | None]] | None = None,
               include_order_in_fallback: bool = True, caption: str = "") -> str:
    """The graph, its legend and a caption; without ``dot``, the order and the edges as
    lists with an install hint (never an exception)."""
    layout = layout_graph(program, graph, prefix, labels=labels)
    legend = legend_html(kinds_drawn(layout))
    notes = ""
    if layout.collapsed:
        parts = ", ".join(f"{b} ({n} components)" for b, n in layout.collapsed.items())
        notes = f'<div class="tf-note">Collapsed vectors: {esc(parts)}.</div>'
    drawn = len(layout.nodes)
    try:
        if drawn > MAX_NODES:
            raise GraphUnavailable(f"{drawn} nodes are too many to draw legibly")
        svg = render_svg(layout)
        picture = _picture(layout)
    except GraphUnavailable as why:
        hint = INSTALL_HINT if "not found" in str(why) or "not installed" in str(why) else ""
        order = order_html(program, graph) if include_order_in_fallback else ""
        return (f'<div class="tf-graph-fallback"><div class="tf-note"><b>No graph drawing:</b> '
                f"{why}. {hint}</div>{legend}"
                f'<div class="tf-row"><div class="tf-col-narrow">{order}</div>'
                f'<div class="tf-col">{_edges_list(graph)}</div></div></div>')
    title = f"<h4>{esc(caption)}</h4>" if caption else "<h4>Data-flow graph</h4>"
    # the graph as text (WCAG 1.1.1): the order and the edges, unless the order is beside it
    text = ""
    if include_order_in_fallback:
        n = len(graph.topological_order())
        text = (f'<details class="tf-graph-text"><summary>The graph as text: its {n} '
                "variables in topological order, and its edges</summary>"
                f"{order_html(program, graph)}{_edges_list(graph)}</details>")
    return (f'<div class="tf-graph-view">{title}{legend}{notes}'
            f'<div class="tf-graph">{styled_only(svg, "tf-graph-svg")}{picture}</div>'
            f"{text}</div>")


def _picture(layout: GraphLayout) -> str:
    """The PNG stand-in for the SVG, shown where the SVG is stripped (untrusted)."""
    try:
        png, width = render_png(layout)
    except GraphUnavailable as why:  # the SVG worked: unlikely, and not worth a failure
        return plain_only(f'<div class="tf-note">(No picture of the graph: {why}.)</div>')
    return plain_only(png_img(png, _alt_text(layout), width, "tf-graph-png"))
