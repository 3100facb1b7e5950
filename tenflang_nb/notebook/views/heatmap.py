"""Small tensors drawn as heatmaps: one coloured cell per entry on a diverging scale (blue
below 0, white at 0, red above; each heatmap scaled to its own largest entry), the value on
hover, and the legend that says so. The stepper draws them on its nodes and in its table of
steps; a tensor of more than ``stepper.HEATMAP_MAX`` entries gets no heatmap (its label says
its range).

Three renderings of one heatmap, for the three places it must read:

* on a node of the Graphviz drawing: a table of coloured cells in the node's label, so the
  PNG a sanitized output keeps shows it too (:func:`dot_cells`); in the SVG the stepper's
  script recolours them as the lines run, so there the cells carry a placeholder colour that
  :func:`svg_cells` turns into ``<rect>`` elements the script finds;
* in HTML: a ``<table>`` of cells coloured by inline styles, each with a ``title``
  (:func:`html_heatmap`), which JupyterLab's sanitizer keeps;
* as data for the script (:func:`heat_data`): the palette index of each entry and its value.

>>> levels(np.array([-2.0, 0.0, 0.8, 2.0, np.nan]))
'057an'
>>> grid((3,)), grid((40,)), grid((2, 3)), grid((2, 3, 4))
((1, 3), (2, 32), (2, 3), (6, 4))
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.formatting import fmt_number, fmt_shape
from .html import attrs, esc

__all__ = ["LEGEND", "PALETTE", "PALETTE_CODES", "dot_cells", "grid", "heat_data", "html_heatmap",
           "legend_html", "levels", "svg_cells"]

# ColorBrewer's RdBu (11 classes), from the most negative to the most positive: diverging,
# readable with the common colour-vision deficiencies, white at 0
PALETTE = ("#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7",
           "#f4a582", "#d6604d", "#b2182b", "#67001f")
SIDE = len(PALETTE) // 2  # shades on each side of 0
CODES = "0123456789a"  # one character per palette entry in the script's data
NAN, NAN_COLOUR = "n", "#111827"  # an entry that is not a finite number
PALETTE_CODES = {**dict(zip(CODES, PALETTE, strict=True)), NAN: NAN_COLOUR}  # for the script
PENDING_COLOUR = "#e5e7eb"  # a cell whose value the stepper has not computed yet
WRAP = 32  # a longer vector is drawn in rows of this many cells (row-major)
LEGEND = ("each heatmap is scaled to its own largest entry: the darkest blue is minus that, "
          "white 0, the darkest red plus that; hover a cell for its value")
# a placeholder fill in the drawing Graphviz makes of the live stepper: "#01" and the
# heatmap's number (no colour of ours starts so)
_PLACEHOLDER = "#01{:04x}"
# the frame's grey, one shade off the legend's, so that the SVG's frames can be told apart
# (a lit node's outline must not thicken them)
FRAME = "#9ca3a1"
_FRAME_RE = re.compile(f'<polygon fill="none" stroke="{FRAME}"')
_PLACEHOLDER_RE = re.compile(r'<polygon fill="#01([0-9a-f]{4})" stroke="transparent" '
                             r'points="([^"]*)"/>\n?')


def grid(shape: tuple[int, ...]) -> tuple[int, int]:
    """The rows and columns a tensor of ``shape`` is drawn in: a vector as a row (longer
    ones wrapped), a matrix as it is, more axes with the leading ones stacked."""
    if len(shape) <= 1:
        n = int(np.prod(shape)) if shape else 1
        return -(-n // WRAP), min(n, WRAP)
    return int(np.prod(shape[:-1])), shape[-1]


def levels(value: np.ndarray) -> str:
    """Each entry's palette index as one character (row-major); ``n`` where not finite."""
    flat = np.asarray(value, dtype=float).ravel()
    finite = np.isfinite(flat)
    scale = float(np.max(np.abs(flat[finite]))) if finite.any() else 0.0
    with np.errstate(all="ignore"):
        index = np.rint(flat / scale * SIDE) if scale > 0 else np.zeros_like(flat)
    return "".join(CODES[int(i) + SIDE] if ok else NAN for i, ok in zip(index, finite,
                                                                        strict=True))


def _colour(code: str) -> str:
    return PALETTE_CODES[code]


def _cell_size(shape: tuple[int, ...], longest: int) -> int:
    rows, cols = grid(shape)
    return max(3, min(8, longest // max(rows, cols)))


def dot_cells(shape: tuple[int, ...], value: np.ndarray | None = None, number: int = 0) -> str:
    """A heatmap as a Graphviz HTML-like table (for a node's label): coloured by ``value``,
    or, without one, every cell in heatmap ``number``'s placeholder colour (the live
    stepper's drawing, see :func:`svg_cells`)."""
    rows, cols = grid(shape)
    size = _cell_size(shape, 120)
    n = int(np.prod(shape))
    codes = levels(value) if value is not None else None
    # a fixed size: else Graphviz spreads the cells over the label's width
    # a thin frame shows where a heatmap of values near 0 (white) ends
    out = [f'<TABLE BORDER="1" COLOR="{FRAME}" CELLBORDER="0" CELLSPACING="0" CELLPADDING="0" '
           f'FIXEDSIZE="TRUE" WIDTH="{cols * size + 2}" HEIGHT="{rows * size + 2}">']
    for r in range(rows):
        out.append("<TR>")
        for c in range(cols):
            i = r * cols + c
            colour = ("#ffffff" if i >= n else _PLACEHOLDER.format(number) if codes is None
                      else _colour(codes[i]))
            out.append(f'<TD BGCOLOR="{colour}" WIDTH="{size}" HEIGHT="{size}" '
                       'FIXEDSIZE="TRUE"></TD>')
        out.append("</TR>")
    return "".join(out) + "</TABLE>"


def svg_cells(svg: str, names: Mapping[int, tuple[str, int]]) -> str:
    """The placeholder cells Graphviz drew for heatmap ``k`` as ``<rect>`` elements in one
    ``<g class="tf-hm" data-tf-hm="ROW">``, row-major (``names[k]``: the row, ``value`` or
    ``grad``, and the entry count); the script colours them."""
    found: dict[int, list[tuple[float, float, float, float]]] = {}

    def take(m: re.Match[str]) -> str:
        k = int(m.group(1), 16)
        points = [tuple(map(float, p.split(","))) for p in m.group(2).split()]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        first = k not in found
        found.setdefault(k, []).append((min(ys), min(xs), max(xs) - min(xs),
                                        max(ys) - min(ys)))
        return f"\0{k}\0" if first else ""

    svg = _PLACEHOLDER_RE.sub(take, svg)

    def group(m: re.Match[str]) -> str:
        k = int(m.group(1))
        row, n = names.get(k, ("value", 0))
        cells = sorted(found[k])[:n]  # row-major, whatever order Graphviz wrote them in
        rects = "".join(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}"/>'
                        for y, x, w, h in cells)
        return (f'<g class="tf-hm" data-tf-hm="{row}" fill="{PENDING_COLOUR}">{rects}'
                "</g>\n")

    svg = _FRAME_RE.sub(f'<polygon class="tf-hm-frame" fill="none" stroke="{FRAME}"', svg)
    return re.sub("\0([0-9]+)\0", group, svg)


def _index(i: int, shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(k)) for k in np.unravel_index(i, shape)) + "]"


def heat_data(name: str, value: np.ndarray) -> dict[str, Any]:
    """What the script needs to colour a heatmap and title its cells: the tensor's name,
    shape, each entry's palette code and value."""
    flat = np.asarray(value, dtype=float).ravel()
    return {"n": name, "s": list(np.shape(value)), "p": levels(value),
            "t": [fmt_number(x, 4) for x in flat]}


def html_heatmap(name: str, value: np.ndarray) -> str:
    """A heatmap as an HTML table: inline colours and sizes, a title per cell (kept by
    JupyterLab's sanitizer, so it reads in an untrusted notebook), its shape beside it."""
    shape = tuple(np.shape(value))
    rows, cols = grid(shape)
    size = _cell_size(shape, 160)
    codes = levels(value)
    flat = np.asarray(value, dtype=float).ravel()
    cell = f"width:{size}px;height:{size}px;min-width:{size}px;padding:0;border:0"
    body = []
    for r in range(rows):
        tds = []
        for c in range(cols):
            i = r * cols + c
            if i >= len(flat):
                tds.append(f'<td style="{cell};background:#ffffff"></td>')
                continue
            title = f"{name}{_index(i, shape)} = {fmt_number(flat[i], 4)}"
            tds.append(f'<td style="{cell};background:{_colour(codes[i])}" '
                       f'title="{esc(title)}"></td>')
        body.append(f'<tr style="background:transparent">{"".join(tds)}</tr>')
    # one picture to a screen reader, its values as text in its name (WCAG 1.1.1)
    values = ", ".join(fmt_number(x, 4) for x in flat)
    label = f"heatmap of {name}, {fmt_shape(shape)}, entries in row-major order: {values}"
    table = (f'<table class="tf-hm-table" role="img"{attrs(aria_label=label)} '
             'style="border-collapse:collapse;border-spacing:0;'
             'table-layout:auto;margin:2px 0;width:auto;display:inline-table;'
             'vertical-align:middle">'
             f'<tbody>{"".join(body)}</tbody></table>')
    return (f'<span class="tf-hm-html" style="white-space:nowrap">{table} '
            f'<span style="font-size:11px;color:#4b5563">{fmt_shape(shape)}</span></span>')


def legend_html() -> str:
    """The colour scale: the palette from negative to positive, and what it means. Styled
    inline, so a sanitized output shows it the same."""
    swatches = "".join(f'<span style="display:inline-block;width:14px;height:11px;'
                       f'background:{c};vertical-align:-1px"></span>' for c in PALETTE)
    return ('<div class="tf-hm-legend" style="font-size:12px;margin:4px 0;color:#374151">'
            f'<span style="white-space:nowrap">− {swatches} +</span> {esc(LEGEND)}</div>')
