"""The ``cost`` view: what one gradient costs in forward mode and in reverse mode (backprop),
as ``model.cost()`` measured it: sweeps, lines and memory per gradient, and the measured times.
It shows the last measurement (``model.costs``) and says how to make one when there is none:
a measurement runs both programs for a while, so only an explicit request starts one.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook import TenFlangModel
>>> net = TenFlangModel(SEED_EXAMPLE, "net")
>>> "NAME.cost()" in render(net, ViewOptions(("cost",)))
True
>>> _ = net.cost(examples=2, budget=0.0)
>>> "What one gradient costs" in render(net, ViewOptions(("cost",)))
True
"""

from __future__ import annotations

from ...core.cost import ModeComparison
from ...core.formatting import fmt_number, fmt_seconds
from .base import Shown, ViewOptions
from .html import esc, new_prefix, page, wide

__all__ = ["cost_html", "render"]


def render(model: Shown, o: ViewOptions) -> str:
    if model.loss is None or not model.weights:
        what = "declares no loss" if model.loss is None else "has no weights"
        return (f'<div class="tf-note">No cost to show: the program {what}, so it has no '
                "gradient.</div>")
    if model.costs is None:
        return ('<div class="tf-note">Not measured yet: <code>NAME.cost()</code> measures '
                "what one gradient costs in forward mode and in reverse mode (it runs both "
                "programs for a moment), and this view then shows it; so does "
                "<code>--show cost</code> in a <code>%%tenflang</code> cell.</div>")
    return _cost_body(model.costs)


def _times(ratio: float) -> str:
    return f"{fmt_number(ratio, 2, notation='plain')}×"


def _cost_body(cost: ModeComparison) -> str:
    f, r = cost.forward, cost.reverse
    rows = [
        ("sweeps per gradient", f"{f.sweeps:,} (one per weight component)", f"{r.sweeps:,}"),
        ("lines executed per gradient", f"{f.lines:,}", f"{r.lines:,}"),
        ("… of which the forward pass", f"{f.pass_lines:,}", f"{r.pass_lines:,}"),
        ("numbers kept in memory at the peak (per example)", f"{f.values_kept:,}",
         f"{r.values_kept:,}"),
        (f"time per gradient, measured on {cost.examples:,} example"
         f"{'s' * (cost.examples != 1)}", fmt_seconds(f.seconds), fmt_seconds(r.seconds)),
    ]
    body = "".join(f"<tr><th>{esc(what)}</th><td>{esc(fwd)}</td><td>{esc(rev)}</td></tr>"
                   for what, fwd, rev in rows)
    table = ('<table class="tf-table"><caption>What one gradient costs</caption><thead><tr>'
             "<th></th><th>forward mode (<code>tfcompiler --forward</code>)</th>"
             "<th>reverse mode (backprop, the GCP)</th></tr></thead>"
             f"<tbody>{body}</tbody></table>")
    table = wide(table, "what one gradient costs")
    n = cost.components
    source = ("random values" if cost.synthetic else "the data") + (
        ", with the current weights")
    if f.sweeps > 1:
        verdict = (f"One loss, {n:,} weight components: reverse mode gets the whole gradient "
                   "from one backward sweep, forward mode needs one sweep per component "
                   f"({_times(cost.line_ratio)} the lines here).")
    else:
        verdict = (f"{f.sweeps} weight component{'s' * (f.sweeps != 1)} to differentiate: "
                   "forward mode needs no more sweeps than reverse mode, and neither wins by "
                   "much.")
    note = (f"{verdict} Times are measured (the best of several runs by the interpreter, on "
            f"{source}): forward mode took {_times(cost.time_ratio)} as long on this machine. "
            "Times vary between machines and runs; the counts do not. " + cost.timing_note)
    return table + f'<p class="tf-note">{esc(note.strip())}</p>'


def cost_html(cost: ModeComparison) -> str:
    """The cost comparison as a plain table (it reads the same without CSS or scripts)."""
    body = _cost_body(cost)
    return page(body, new_prefix(body), interactive=False)
