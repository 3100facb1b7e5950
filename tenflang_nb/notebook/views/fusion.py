"""The ``fusion`` view: how the fused engine runs the model's GCP in training, from the
:class:`~tenflang_nb.core.fusedlisting.Listing` the model computed (``model.fusion``): which
lines run together in one pass over blocks of examples, which values stay in cache and are
never stored, which batch means are summed in the pass, and which lines go to BLAS.

It reads as plain HTML (a table with a caption and header cells): nothing in it needs a
kernel, a script or a style to be understood.
"""

from __future__ import annotations

from ...core.errors import TenFlangError
from ...core.fusedlisting import Listing, Pass
from .base import Shown, ViewOptions
from .html import esc, wide

__all__ = ["render"]

_HOW = {
    "once": "once per step: the same for every example (numpy)",
    "block loop": "one pass over the examples, {block:,} at a time: every line of the pass "
                  "runs on a block before the next block starts",
    "numpy": "one numpy call over all the examples (a matrix product: BLAS)",
}


def render(model: Shown, o: ViewOptions) -> str:
    """``o.computed``: the :class:`Listing` (or the error) ``model.fusion`` made."""
    listing = o.computed
    if isinstance(listing, TenFlangError):
        return f'<div class="tf-note">No fused program to show: {esc(str(listing))}</div>'
    if listing is None:
        return ('<div class="tf-note">The fused program appears with <code>--show fusion'
                "</code> or <code>NAME.show('fusion')</code> (it loads the fused engine)."
                "</div>")
    assert isinstance(listing, Listing)
    rows = "".join(_row(i, p) for i, p in enumerate(listing.passes, 1))
    after = (f"<p>Then numpy averages {_names(listing.means)} over the examples.</p>"
             if listing.means else "")
    table = ('<table class="tf-table"><caption>How the fused engine '
             f"runs {esc(model.name)}'s GCP in training, on {listing.examples:,} examples: "
             f"{len(listing.passes)} pass{'es' * (len(listing.passes) != 1)}</caption>"
             '<thead><tr><th scope="col">pass</th><th scope="col">how</th>'
             '<th scope="col">GCP lines</th><th scope="col">stays in cache (never stored)</th>'
             '<th scope="col">stored for later</th><th scope="col">batch means summed in the '
             f"pass</th></tr></thead><tbody>{rows}</tbody></table>")
    passes = wide(table, "the fused engine's passes")
    return (f'<div class="tf-fusion">{passes}{after}'
            '<p class="tf-note">A value that stays in cache costs no trip to memory: the '
            "engine's gain over running one numpy call per line. "
            "<code>tf.fusion(gcp).text()</code> lists every instruction.</p></div>")


def _row(i: int, p: Pass) -> str:
    lines = "<br>".join(f"<code>{esc(str(d))}</code>" + (f" (line {d.src.line})"
                                                         if d.src.line else "")
                        for d in p.lines)
    how = _HOW[p.how].format(block=p.block)
    return (f'<tr><th scope="row">{i}</th><td>{esc(how)}</td><td>{lines}</td>'
            f"<td>{_names(p.cached)}</td><td>{_names(p.stored)}</td>"
            f"<td>{_names(p.summed)}</td></tr>")


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"<code>{esc(n)}</code>" for n in names) if names else "none"
