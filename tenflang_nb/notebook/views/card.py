"""A model's own displays: its card (what a cell shows for a bare ``net``: a summary, the
graph and the order) and the static record of its last training run.

>>> from tenflang_nb.notebook import TenFlangModel
>>> sq = TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq")
>>> "TenFlang model <code>sq</code>" in model_html(sq), training_summary(sq)
(True, <TenFlang model 'sq': not trained>)
"""

from __future__ import annotations

from ...core.formatting import fmt_value
from ...core.program import Program
from . import graph
from .base import Shown, ViewOptions
from .html import Rendered, esc, new_prefix, page
from .tables import weights_html

__all__ = ["model_html", "training_summary"]


def _counts(program: Program) -> str:
    kinds: dict[str, int] = {}
    for d in program.decls.values():
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items())


def model_html(model: Shown) -> str:
    """The model's rich display: a summary card, then its graph and order."""
    prefix = new_prefix(model.source + "model")
    p = model.program
    gcp = ""
    if model.withheld is not None:
        gcp = f" · GCP withheld (grading mode) · loss <code>{esc(model.loss)}</code>"
    elif model.compiled is not None:
        gcp = (f" · GCP {len(model.compiled.lines)} lines "
               f"(full: {len(model.compiled_full.lines)}) · loss <code>{esc(model.loss)}</code>")
    trained = ""
    if model.result is not None:
        r = model.result
        trained = (f"<div>Trained: {r.iterations} iterations, loss {fmt_value(r.loss)}, "
                   f"{'converged' if r.converged else 'not converged'}.</div>")
    weights = weights_html(model.weights) if model.weights else ""
    card = (f'<div class="tf-card"><b>TenFlang model <code>{esc(model.name)}</code></b>: '
            f"{len(p.decls)} variables ({esc(_counts(p))}){gcp}{trained}{weights}</div>")
    drawn = graph.render(model, ViewOptions(("graph", "order"), prefix=prefix))
    return page(card + drawn, prefix)


def training_summary(model: Shown) -> Rendered:
    """A static record of the last run: what a saved notebook shows without widgets."""
    r = model.result
    if r is None:
        body = '<div class="tf-note">Not trained yet.</div>'
        return Rendered(page(body, new_prefix(body), interactive=False),
                        f"<TenFlang model '{model.name}': not trained>")
    status = "converged" if r.converged else "stopped at max iterations"
    body = (f"<div><b>{esc(model.name)}</b>: {r.iterations} iterations, final loss "
            f"{fmt_value(r.loss)}, {status}.</div>" + weights_html(model.weights))
    plain = (f"<TenFlang training of '{model.name}': {r.iterations} iterations, "
             f"{'converged' if r.converged else 'not converged'}>")
    return Rendered(page(body, new_prefix(body), interactive=False), plain)
