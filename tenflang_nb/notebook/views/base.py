"""What every view's renderer gets: the model to show, as a :class:`Shown` (what a view may
read of it: ``TenFlangModel`` has all of it), and the :class:`ViewOptions` of one output.

A renderer only reads: the program, its graph, the compiled GCPs, the weights and whatever
the model computed before it was called (``ViewOptions.computed``, ``Shown.costs``). It never
calls a method of the model, so nothing it does starts a computation, and the views import
no model (``tests/test_architecture.py`` holds them to that).

>>> ViewOptions(("graph", "order")).prefix
'tfnb'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...core.errors import TenFlangError
from .diagnostics import error_view

if TYPE_CHECKING:
    from ...core.backprop import Gcp
    from ...core.cost import ModeComparison
    from ...core.datafiles import DataTable
    from ...core.graph import DataFlowGraph
    from ...core.program import Program
    from ...core.train import TrainResult

__all__ = ["Shown", "ViewOptions", "on_one_example"]


class Shown(Protocol):
    """A model as the views see it (``TenFlangModel`` is one)."""

    name: str
    source: str  # the cell: the shape program as written
    program: Program
    graph: DataFlowGraph
    compiled: Gcp | None  # the pruned GCP; None without a loss
    weights: dict[str, Any]
    result: TrainResult | None  # the last training run
    data: DataTable | None  # the last training data
    costs: ModeComparison | None  # what the last model.cost() measured
    # grading mode's message when the backward pass is withheld (then compiled and
    # compiled_full raise: a view reads them only when this is None)
    withheld: str | None

    @property
    def compiled_full(self) -> Gcp:
        """The full GCP (compiled once, kept)."""
        ...

    @property
    def loss(self) -> str | None: ...


@dataclass(frozen=True)
class ViewOptions:
    """What every renderer gets besides the model: all the views asked for (a renderer may
    lay itself out beside another), the GCP flavour, the example for value views, the output's
    id prefix, and what the model computed for this view (see ``View.computes``: its result,
    or the ``TenFlangError`` it raised)."""

    selected: tuple[str, ...]
    full: bool = False
    example: Any = None
    prefix: str = "tfnb"
    computed: Any = None


def on_one_example(model: Shown, o: ViewOptions, missing: str,
                   render: Callable[[Any], str]) -> str:
    """A view of what the model computed on one example: the note ``missing`` when there is
    no example to run on (no training data, none given), the error the computation raised,
    else ``render(o.computed)``."""
    if model.data is None and o.example is None:
        return missing
    if isinstance(o.computed, TenFlangError):
        return error_view(o.computed, model.source).html
    return render(o.computed)
