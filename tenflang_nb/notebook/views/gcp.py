"""The ``gcp`` view: the shape program beside its Gradient Computing Program, each GCP line
tagged with the shape-program line it derives from (hover one to see what it became).

>>> from tenflang_nb.core.api import compile, parse
>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> p = parse(SEED_EXAMPLE)
>>> html = side_by_side(SEED_EXAMPLE, p, compile(p), 49)
>>> html.count('data-tf-gcp-line=')
37
"""

from __future__ import annotations

from ...core.backprop import Gcp
from ...core.program import Program
from .base import Shown, ViewOptions
from .html import attrs, esc
from .listing import (
    MAX_LISTED,
    highlight_lines,
    line_row,
    more_lines,
    pane,
    source_lines,
    statement_name,
)

__all__ = ["counts_text", "render", "side_by_side"]


def render(model: Shown, o: ViewOptions) -> str:
    if model.withheld is not None:
        note = f'<div class="tf-note"><b>No GCP here:</b> {esc(model.withheld)}.</div>'
        return side_by_side(model.source, model.program, None, None, note, model.name)
    if model.compiled is None:
        note = ('<div class="tf-note">No GCP: the program declares no loss '
                "(add <code>declare loss L</code> and define it to get gradients).</div>")
        return side_by_side(model.source, model.program, None, None, note, model.name)
    gcp = model.compiled_full if o.full else model.compiled
    other = len((model.compiled if o.full else model.compiled_full).lines)
    return side_by_side(model.source, model.program, gcp, other, "", model.name)


def _names_by_line(program: Program) -> dict[int, list[str]]:
    """Shape-program line -> the variables it declares or defines (a vector line: many)."""
    found: dict[int, list[str]] = {}
    for s in program.statements:
        name = statement_name(s)
        if name is not None:
            found.setdefault(s.src.line, []).append(name)
    return found


def _shape_listing(source: str, program: Program, name: str) -> str:
    lines = source_lines(source)
    nodes = _names_by_line(program)
    total, lines = len(lines), lines[:MAX_LISTED]
    width = len(str(len(lines)))
    rows = []
    for number, code in enumerate(highlight_lines(lines), 1):
        names = nodes.get(number)
        tags = attrs(cls="tf-line tf-shape-line", data_tf_line=number,
                     data_tf_nodes=" ".join(names) if names else None)
        rows.append(line_row(tags, number, width, code))
    return (pane(rows, "tf-shape", f"shape program of {name}", hang=width + 2)
            + more_lines(total, f"{name}.source"))


def _gcp_listing(gcp: Gcp, name: str) -> str:
    listed = gcp.lines[:MAX_LISTED]
    texts = [str(line.statement) for line in listed]
    width = len(str(len(listed)))
    rows = []
    for number, (line, code) in enumerate(zip(listed, highlight_lines(texts), strict=True), 1):
        title = f"from line {line.origin}" if line.origin else "header"
        tags = attrs(cls="tf-line tf-gcp-line", data_tf_line=line.origin,
                     data_tf_gcp_line=number, data_tf_section=line.section, title=title)
        rows.append(line_row(tags, number, width, code))
    more = more_lines(len(gcp.lines), f"{name}.gcp_full" if gcp.full else f"{name}.gcp")
    return pane(rows, "tf-gcp", f"Gradient Computing Program of {name}", hang=width + 2) + more


def counts_text(shown: int, full: bool, other: int | None) -> str:
    """What the GCP pane's header says about its length: which GCP it is (pruned to what the
    weights' gradients need, or full: every adjoint) and how long the other one is.

    >>> counts_text(37, False, 49)
    "37 lines, only what the weights' gradients need (49 with every adjoint: --full)"
    >>> counts_text(49, True, 37)
    "49 lines, every adjoint (37 with only what the weights' gradients need)"
    """
    if full:
        text = f"{shown} lines, every adjoint"
        other_text = f"{other} with only what the weights' gradients need"
    else:
        text = f"{shown} lines, only what the weights' gradients need"
        other_text = f"{other} with every adjoint: --full"
    return text if other is None else f"{text} ({other_text})"


def side_by_side(source: str, program: Program, gcp: Gcp | None, other_count: int | None,
                 gcp_note: str = "", name: str = "model") -> str:
    """The shape program (left) and its GCP (right), line counts of both GCP flavours.

    ``other_count`` is the line count of the GCP flavour not shown (pruned <-> full).
    """
    listing = _shape_listing(source, program, name)
    shape = (f'<div class="tf-col"><h4>Shape program ({len(source_lines(source))} lines)</h4>'
             f"{listing}</div>")
    if gcp is None:
        right = f'<div class="tf-col"><h4>Gradient Computing Program</h4>{gcp_note}</div>'
        return f'<div class="tf-row tf-sbs">{shape}{right}</div>'
    counts = counts_text(len(gcp.lines), gcp.full, other_count)
    tags = attrs(cls="tf-counts", data_tf_gcp_lines=len(gcp.lines), data_tf_gcp_other=other_count)
    listing = _gcp_listing(gcp, name)
    right = (f'<div class="tf-col"><h4>Gradient Computing Program: <span{tags}>{counts}</span>'
             f"</h4>{listing}{gcp_note}</div>")
    return f'<div class="tf-row tf-sbs">{shape}{right}</div>'
