"""The ``step`` view, the stepper: the data-flow graph and the GCP listing under a control bar,
driven by ``static/stepper.js`` from data embedded in the output (no kernel, no network), and
a static table of every step for wherever scripts do not run. It renders a
:class:`~tenflang_nb.notebook.stepper.StepperRun` the model made (``model.stepper_run``).

One stepper is one ``.tf-stepper`` element holding:

* ``.tf-step-static``: every step as a table (GCP line, code, value, what it computes) and a
  note. It is what a saved, untrusted notebook shows: JupyterLab strips scripts, styles and
  inline SVG from untrusted HTML, and this table reads correctly without them;
* ``<script type="text/x-tenflang-stepper" class="tf-step-ui">``: the interactive markup
  (graph, listing, controls) as inert text, so that nothing of it shows where scripts do not
  run; the script inserts it and hides the table;
* ``<script type="application/json" class="tf-step-data">``: the steps (see
  ``notebook/stepper.py``);
* the script itself, which finds its own ``.tf-stepper`` and touches nothing outside it, so
  two steppers on a page never interfere.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook.model import TenFlangModel
>>> run = TenFlangModel(SEED_EXAMPLE, "net").stepper_run({"x": 1.0, "y": 0.5})
>>> html = stepper_html(run, "tfnbdoc")
>>> html.count('class="tf-step-row"'), 'id="tfnbdocs"' in html
(12, True)
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..stepper import HEATMAP_MAX, Step, StepperRun
from . import predict
from .base import Shown, ViewOptions, on_one_example
from .drawing import (
    MAX_NODES,
    GraphUnavailable,
    kinds_drawn,
    layout_graph,
    legend_html,
    render_png,
    render_svg,
)
from .heatmap import PALETTE_CODES, dot_cells, heat_data, html_heatmap, svg_cells
from .heatmap import legend_html as heat_legend
from .html import Rendered, attrs, esc, new_prefix, page, png_img, static_text, wide
from .listing import MAX_LISTED, highlight_lines, line_row, pane

__all__ = ["MAX_TABLE_ROWS", "render", "stepper_html", "stepper_view"]

MAX_TABLE_ROWS = 400  # steps in the static table; the interactive stepper has them all
SPEEDS = (0.5, 1, 2, 4, 8)  # lines per second when playing
DEFAULT_SPEED = 1
_SLOT_RE = re.compile(r"<text ([^>]*)>(value|grad) ")


def _json(data: Any) -> str:
    # inside <script>: '<', '>' and '&' escaped, so no '</script>' can end it early
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(model: Shown, o: ViewOptions) -> str:
    """``o.computed``: the :class:`StepperRun` (or the error) ``model.stepper_run`` made."""
    if model.loss is None:
        return ('<div class="tf-note">No stepper: the program declares no loss, so it has no '
                "GCP to step through.</div>")
    missing = ('<div class="tf-note">The stepper runs the GCP on one example: train first '
               "(<code>--train DATA</code>), give one (<code>--example \"{x: 1, y: 0.5}\""
               "</code>), or call <code>NAME.stepper(example)</code>.</div>")
    return on_one_example(model, o, missing, lambda run: stepper_html(run, o.prefix))


def stepper_view(run: StepperRun, source: str) -> Rendered:
    """The stepper of ``run`` as one output (``model.stepper()``); ``source``: the model's
    cell (it makes the output's id)."""
    prefix = new_prefix(source + run.example + run.weights)
    asked = f", {len(run.questions)} to predict" if run.predicting else ""
    return Rendered(page(stepper_html(run, prefix), prefix, interactive=False),
                    f"<TenFlang stepper of '{run.name}' on {run.example}: "
                    f"{len(run.steps)} steps{asked}>")


def heatmapped(run: StepperRun) -> dict[str, list[str]]:
    """The variables drawn with heatmaps, and their rows (``value``, ``grad``): the tensors
    of at most ``HEATMAP_MAX`` entries."""
    shapes = run.program.shapes
    return {v: [row for row in ("value", "grad") if row in rows]
            for v, rows in run.start.items()
            if shapes.get(v) and int(np.prod(shapes[v])) <= HEATMAP_MAX}


def _heat_name(run: StepperRun, v: str, row: str) -> str:
    return v if row == "value" else f"d/{run.loss}/d/{v}"


def _graph(run: StepperRun, sid: str
           ) -> tuple[str, dict[str, str], dict[tuple[str, str], str]]:
    """The graph (SVG, or a table of variables without Graphviz), each variable's element
    id, and each edge's (operand, consumer) -> element id."""
    labels = {v: (rows["value"], rows.get("grad")) for v, rows in run.widest.items()}
    under: dict[str, dict[str, str]] = {}
    numbered: dict[int, tuple[str, int]] = {}
    for v, rows in heatmapped(run).items():
        shape = run.program.shapes[v]
        for row in rows:  # cells in a placeholder colour, one per heatmap: see svg_cells
            under.setdefault(v, {})[row] = dot_cells(shape, number=len(numbered))
            numbered[len(numbered)] = (row, int(np.prod(shape)))
    layout = layout_graph(run.program, run.graph, sid, labels=labels, under=under)
    layout.rankdir = "TB"  # tall and narrow, beside the listing
    key_of = {name: n.key for n in layout.nodes for name in n.names}
    edge_of: dict[tuple[str, str], str] = {}
    for i, (tail, head, _) in enumerate(layout.edges):
        edge_of[(tail, head)] = f"{sid}_e{i}"
    edges = {(m, p): edge_of[(key_of[m], key_of[p])] for m, p in run.graph.edges()
             if (key_of[m], key_of[p]) in edge_of}
    legend = legend_html(kinds_drawn(layout)) + (heat_legend() if under else "")
    try:
        if len(layout.nodes) > MAX_NODES:
            raise GraphUnavailable(f"{len(layout.nodes)} nodes are too many to draw legibly")
        svg = render_svg(layout)
    except GraphUnavailable as why:
        return _variables_table(run, sid, str(why)), {v: f"{sid}_v{i}" for i, v in
                                                     enumerate(run.start)}, {}
    svg = svg_cells(svg, numbered)
    # the label rows the script rewrites; Graphviz's comments could end the inert script early
    svg = _SLOT_RE.sub(lambda m: f'<text class="tf-slot-{m.group(2)}" {m.group(1)}>'
                       f"{m.group(2)} ", svg)
    svg = re.sub(r"<!--.*?-->\n?", "", svg, flags=re.S)
    # each edge says which operand and consumer it joins (the first, for collapsed vectors)
    names = {}
    for (m, p), edge_id in edges.items():
        names.setdefault(edge_id, f"{m} {p}")
    svg = re.sub(rf'<g id="({re.escape(sid)}_e[0-9]+)"',
                 lambda g: g.group(0) + attrs(data_tf_edge=names.get(g.group(1))), svg)
    collapsed = {name for n in layout.nodes if len(n.names) > 1 for name in n.names}
    keys = {v: key_of[v] for v in run.start if v in key_of and v not in collapsed}
    # collapsed vectors light up as a whole; their labels stay as drawn
    keys.update({v: key_of[v] for v in collapsed})
    return f'{legend}<div class="tf-graph">{svg}</div>', keys, edges


def _width(graph: str) -> str:
    """The graph column's width: the drawing's own (Graphviz gives points), so the legend
    wraps under it instead of widening it, and the listing beside it gets the rest."""
    m = re.search(r'<svg [^>]*?width="([0-9.]+)pt"', graph)
    return "" if m is None else f' style="flex-basis: {round(float(m.group(1)) * 4 / 3)}px"'


def _variables_table(run: StepperRun, sid: str, why: str) -> str:
    rows = []
    for i, (v, start) in enumerate(run.start.items()):
        grad = (f'<td class="tf-slot-grad">{esc(start["grad"])}</td>' if "grad" in start
                else "<td></td>")
        rows.append(f'<tr id="{sid}_v{i}"><td class="tf-name"><code>{esc(v)}</code></td>'
                    f'<td class="tf-slot-value">{esc(start["value"])}</td>{grad}</tr>')
    return (f'<div class="tf-note"><b>No graph drawing:</b> {why}.</div>'
            + wide('<table class="tf-table"><thead><tr><th>variable</th><th>value</th>'
                   f'<th>grad</th></tr></thead><tbody>{"".join(rows)}</tbody></table>',
                   "variables"))


def _listing(run: StepperRun) -> str:
    """The GCP as the other listings (a <pre> of numbered lines), each line with a slot for
    the value it computed."""
    listed = run.gcp.lines[:MAX_LISTED]
    texts = [str(line.statement) for line in listed]
    hiding = bool(run.questions) and run.hide_lines
    width = len(str(len(listed)))
    rows = []
    for number, (line, code) in enumerate(zip(listed, highlight_lines(texts), strict=True), 1):
        tags = attrs(cls="tf-line tf-step-line", data_tf_step_line=number,
                     data_tf_section=line.section)
        if hiding and line.section == "backward":  # an asked line's formula, hidden
            code = _rhs_marked(code)
        rows.append(line_row(tags, number, width, code + '<span class="tf-step-val"></span>'))
    more = ""
    if len(run.gcp.lines) > MAX_LISTED:
        more = (f'<div class="tf-note">… {len(run.gcp.lines) - MAX_LISTED} more lines, not '
                "stepped through.</div>")
    return pane(rows, "tf-step-gcp", "Gradient Computing Program") + more


def _rhs_marked(code: str) -> str:
    """A highlighted ``define t = ...`` line with its right-hand side in a span of class
    ``tf-step-rhs`` (the script hides it while the line's question is open).

    >>> _rhs_marked('<b>define</b> <i>t</i> <u>=</u> <i>x</i>')
    '<b>define</b> <i>t</i> <u>=</u><span class="tf-step-rhs"> <i>x</i></span>'
    """
    at = re.search(r">=</\w+>", code)
    if at is None:
        return code
    return f'{code[:at.end()]}<span class="tf-step-rhs">{code[at.end():]}</span>'


def _controls(n: int, asking: bool = False) -> str:
    def button(cls: str, label: str, title: str) -> str:
        return (f'<button type="button" class="{cls}" title="{esc(title)}" '
                f'aria-label="{esc(title)}">{label}</button>')

    speeds = "".join(f'<option value="{s}"{" selected" if s == DEFAULT_SPEED else ""}>'
                     f"{s:g}</option>" for s in SPEEDS)
    return ('<div class="tf-step-bar" role="toolbar" aria-label="stepper">'
            + button("tf-step-first", "⇤ first", "first: before the first line (Home)")
            + button("tf-step-back", "◀ back", "back one line (←)")
            + button("tf-step-next", "step ▶", "step: run the next line (→)")
            + button("tf-step-last", "end ⇥", "forward to the end (End)")
            + button("tf-step-play", "▶ play", "play / pause")
            + f'<label class="tf-step-speed-label">speed <select class="tf-step-speed" '
              f'aria-label="lines per second">{speeds}</select> lines/s</label>'
            + f'<input type="range" class="tf-step-slider" min="0" max="{n}" value="0" '
              'step="1" aria-label="step">'
            + '<span class="tf-step-count"></span>'
            + (predict.score_html() if asking else "") + "</div>")


def _ui(run: StepperRun, graph: str) -> str:
    n = len(run.steps)
    asking = bool(run.questions)
    caption = ('<div class="tf-step-caption" aria-live="polite">'
               '<div class="tf-step-what"></div><div class="tf-step-numbers"></div>'
               '<div class="tf-step-dims"></div>'
               + (predict.ask_html() if asking else "") + "</div>")
    listing = _listing(run)
    return (f'<div class="tf-step-live" tabindex="0">{_controls(n, asking)}{caption}'
            f'<div class="tf-step-main"><div class="tf-step-graph"{_width(graph)}>{graph}</div>'
            f'<div class="tf-step-code"><h4>Gradient Computing Program '
            f"({len(run.gcp.lines)} lines)</h4>"
            f"{listing}</div></div></div>")


def _shown_steps(run: StepperRun) -> list[Step]:
    """The steps the static table lists: all of them, but the forward pass alone in predict
    mode (the backward pass's values are the answers to its questions)."""
    if run.questions:
        return [s for s in run.steps if s.phase == "forward"]
    return run.steps


def _static_table(run: StepperRun) -> str:
    head = ("<thead><tr><th>step</th><th>line</th><th>GCP line</th><th>value</th>"
            "<th>what it computes</th></tr></thead>")
    rows = []
    phase = ""
    steps = _shown_steps(run)
    for i, s in enumerate(steps[:MAX_TABLE_ROWS], 1):
        if s.phase != phase:
            phase = s.phase
            what = ("Forward pass: every value, in the shape program's order" if phase ==
                    "forward" else f"Backward pass: the adjoints d/{run.loss}/d/v, from the "
                    "loss back to the weights")
            rows.append(f'<tr><th colspan="5" style="text-align:left">{esc(what)}</th></tr>')
        code = str(run.gcp.lines[s.line - 1].statement)
        heat = ""
        if s.array is not None and s.array.size <= HEATMAP_MAX:
            heat = "<br>" + html_heatmap(s.name, s.array)
        shapes = (f'<br><span class="tf-step-dims">Shapes: {esc(s.shapes)}</span>' if s.shapes
                  else "")
        rows.append(f'<tr class="tf-step-row"><td>{i}</td><td>{s.line}</td>'
                    f'<td class="tf-name"><code>{esc(code)}</code></td>'
                    f"<td><code>{esc(s.value)}</code>{heat}</td>"
                    f'<td class="tf-name">{esc(s.caption)}<br><code>{esc(s.numbers)}</code>'
                    f"{shapes}</td></tr>")
    more = len(steps) - MAX_TABLE_ROWS
    if more > 0:
        rows.append(f'<tr><td colspan="5">… {more} more steps</td></tr>')
    return wide(f'<table class="tf-table tf-step-table">{head}<tbody>{"".join(rows)}</tbody>'
                "</table>", "every step")


def final_labels(run: StepperRun) -> dict[str, tuple[str, str | None]]:
    """Each variable's value and adjoint once every step the static table shows has run."""
    rows = {v: {"value": r["value"]} if run.questions else dict(r)
            for v, r in run.start.items()}
    for s in _shown_steps(run):
        for v, row, text in s.updates:
            rows[v][row] = text
    return {v: (r["value"], r.get("grad")) for v, r in rows.items()}


def final_tensors(run: StepperRun) -> dict[str, dict[str, np.ndarray]]:
    """Each tensor's value and adjoint once every step the static table shows has run
    (those drawn as heatmaps)."""
    drawn = heatmapped(run)
    found: dict[str, dict[str, np.ndarray]] = {
        v: {"value": x} for v, x in run.start_tensors.items() if v in drawn}
    for s in _shown_steps(run):
        for v, row, x in s.tensors:
            if v in drawn:
                found.setdefault(v, {})[row] = x
    return found


def _picture(run: StepperRun, sid: str) -> str:
    """The graph after the last step, as a PNG: what the static table shows beside it (a
    sanitized output keeps images, not SVG)."""
    under = {v: {row: dot_cells(x.shape, x) for row, x in rows.items()}
             for v, rows in final_tensors(run).items()}
    layout = layout_graph(run.program, run.graph, f"{sid}p", labels=final_labels(run),
                          under=under)
    layout.rankdir = "TB"
    try:
        if len(layout.nodes) > MAX_NODES:
            return ""
        png, width = render_png(layout)
    except GraphUnavailable:
        return ""
    # a forward pass alone (grading mode withholds the backward half; predict mode keeps the
    # answers to its questions) has no adjoints to show
    alone = bool(run.withheld or run.questions)
    what = "value" if alone else f"value and adjoint d/{run.loss}/d/v"
    alt = (f"The data-flow graph of {run.name} after the "
           + ("forward pass" if run.questions else "last step") + ": each node's "
           + ("value" if alone else f"value and its adjoint d/{run.loss}/d/v"))
    legend = heat_legend() if under else ""
    when = "After the forward pass" if run.questions else "After the last step"
    return (f"<div>{when}, every {esc(what)}:</div>"
            + legend + png_img(png, alt, width, "tf-step-png"))


def _title(run: StepperRun) -> str:
    weights = f", weights {run.weights}" if run.weights else ""
    withheld = (f'<div class="tf-note"><b>The forward pass only:</b> {esc(run.withheld)}.</div>'
                if run.withheld else "")
    return (f"<h4>Stepping through the GCP of <code>{esc(run.name)}</code> on the example "
            f"<code>{esc(run.example)}</code>{esc(weights)}</h4>{withheld}")


def stepper_html(run: StepperRun, prefix: str) -> str:
    """The stepper of ``run`` (an HTML part; :func:`html.page` wraps it)."""
    sid = f"{prefix}s"
    graph, keys, edges = _graph(run, sid)
    drawn = heatmapped(run)

    def heat(v: str, row: str, x: np.ndarray) -> dict[str, Any]:
        return heat_data(_heat_name(run, v, row), x)

    data = {
        "intro": run.intro,
        "start": {keys[v]: rows for v, rows in run.start.items() if v in keys},
        "palette": PALETTE_CODES,
        "heat0": {keys[v]: {"value": heat(v, "value", x)} for v, x in run.start_tensors.items()
                  if v in keys and v in drawn},
        "steps": [{
            "l": s.line, "v": s.value, "p": s.phase, "c": s.caption, "x": s.numbers,
            "d": s.shapes,
            "n": keys.get(s.node) if s.node is not None else None,
            "e": [edges[e] for e in s.edges if e in edges],
            "u": [[keys[v], row, text] for v, row, text in s.updates if v in keys],
            "h": [[keys[v], row, heat(v, row, x)] for v, row, x in s.tensors
                  if v in keys and v in drawn],
        } for s in run.steps],
    }
    if run.questions:
        data["predict"] = predict.predict_data(run, keys)
    skipped = ""
    if run.skipped:
        skipped = (f'<div class="tf-note">The GCP is longer than {MAX_LISTED} lines: the last '
                   f"{run.skipped} steps are left out.</div>")
    lines = ("the lines of its forward pass" if run.questions else
             "every line the GCP runs")
    note = ('<div class="tf-note"><i>This is the stepper without its script (a saved, '
            f"untrusted notebook, or a viewer that runs no JavaScript): {lines}, in order. "
            "Run the cell, or trust the notebook, to step through it on the "
            "graph.</i></div>")
    if run.predicting:  # where no script runs, predict mode cannot ask: the note says so
        note += predict.untrusted_note(run) if run.questions else ""
        skipped += ("" if run.questions else
                    predict.WITHHELD if run.withheld else predict.NOTHING)
    script = static_text("stepper.js").replace("__TF_STEPPER__", sid)
    return (f'<div class="tf-stepper" id="{sid}">{_title(run)}{skipped}'
            f'<div class="tf-step-static">{note}{_static_table(run)}'
            f"{_picture(run, sid)}</div>"
            f'<script type="text/x-tenflang-stepper" class="tf-step-ui">'
            f"{_ui(run, graph)}</script>"
            f'<script type="application/json" class="tf-step-data">{_json(data)}</script>'
            f"<script>{script}</script></div>")
