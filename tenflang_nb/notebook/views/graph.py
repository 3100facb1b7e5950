"""The ``graph`` view: the data-flow graph, numbered in topological order (with the ``order``
view asked for too, the order is drawn beside it).

>>> from tenflang_nb.notebook import TenFlangModel
>>> sq = TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq")
>>> "Topological order" in render(sq, ViewOptions(("graph", "order"), prefix="tfnbdoc"))
True
"""

from __future__ import annotations

from .base import Shown, ViewOptions
from .drawing import graph_html, order_html

__all__ = ["render"]


def render(model: Shown, o: ViewOptions) -> str:
    if "order" not in o.selected:
        return graph_html(model.program, model.graph, o.prefix)
    # graph and order side by side: the order's numbers are the ones drawn in the nodes
    return (f'<div class="tf-row"><div class="tf-col">'
            f"{graph_html(model.program, model.graph, o.prefix, include_order_in_fallback=False)}"
            f'</div><div class="tf-col-narrow">{order_html(model.program, model.graph)}</div>'
            "</div>")
