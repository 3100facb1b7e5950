"""The ``order`` view: the topological order as a numbered list (beside the graph when the
``graph`` view is shown too, see ``views.graph``).

>>> from tenflang_nb.notebook import TenFlangModel
>>> sq = TenFlangModel("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "sq")
>>> "<ol" in render(sq, ViewOptions(("order",))), render(sq, ViewOptions(("graph", "order")))
(True, '')
"""

from __future__ import annotations

from .base import Shown, ViewOptions
from .drawing import order_html

__all__ = ["render"]


def render(model: Shown, o: ViewOptions) -> str:
    if "graph" in o.selected:
        return ""  # drawn beside the graph
    return order_html(model.program, model.graph)
