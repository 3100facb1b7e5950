"""The views of a model: one registry (:data:`VIEWS`) and one module per view.

A view is a name, a renderer (``render(model, options)`` -> an HTML part, in the module of
the view's name: ``graph.py``, ``order.py``, ``gcp.py``, ``expanded.py``, ``values.py``,
``step.py``, ``cost.py``, ``fusion.py``), a one-line description and where it appears: in the
default set, in ``all``, and whether it needs a trained model. ``--show`` parsing, its error
message, ``%%tenflang?``, ``model.show()``, the defaults and the Guide all read the registry,
so adding a view is one module plus one entry here.

A renderer reads the model (:class:`~.base.Shown`) and never computes: a view that shows
something computed on the model names the model's method that computes it (``computes``),
and ``model.show()`` hands the result to it (:class:`~.base.ViewOptions`'s ``computed``).

The pieces the views share: ``html`` (the plumbing: escaping, ids, the page, the static
CSS and scripts), ``drawing`` (the graph, by Graphviz), ``listing`` (program listings),
``tables``, ``diagnostics`` (errors and warnings); and the model's other displays: ``card``
(the model itself, a training run), ``results`` (evaluations, gradient checks), ``check``
(a backward pass checked), ``cost.cost_html``.

>>> parse_views("graph, gcp")
['graph', 'gcp']
>>> parse_views("all")
['graph', 'order', 'gcp', 'expanded']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import cost, expanded, fusion, gcp, graph, order, step, values
from .base import Shown, ViewOptions
from .html import Rendered, new_prefix, page

__all__ = ["VIEWS", "Shown", "View", "ViewOptions", "default_views", "describe_views",
           "parse_views", "program_view"]

Renderer = Callable[[Shown, ViewOptions], str]


@dataclass(frozen=True)
class View:
    name: str
    render: Renderer
    description: str
    default: bool = False  # shown when --show is not given
    in_all: bool = True  # part of --show all
    needs_training: bool = False  # shown after --train has trained (with --no-live)
    # the model's method that computes what the view shows, given the example; model.show()
    # calls it and hands the result (or its TenFlangError) to the renderer
    computes: str | None = None
    # the keyword options of model.show() (and the magic's flags) that method takes
    options: tuple[str, ...] = ()


VIEWS: dict[str, View] = {v.name: v for v in (
    View("graph", graph.render, "the data-flow graph, numbered in topological order",
         default=True),
    View("order", order.render, "the topological order, as a list", default=True),
    View("gcp", gcp.render, "the shape program beside its Gradient Computing Program "
         "(hover a line to see what it became)", default=True),
    View("expanded", expanded.render, "the program with the original's vectors and macros "
         "expanded"),
    View("values", values.render, "the graph with each node's value and gradient on one "
         "training example", in_all=False, needs_training=True, computes="values_on"),
    View("step", step.render, "the GCP run on one example a line at a time, on the graph: "
         "the forward pass, then the backward pass (--predict: asking for each adjoint "
         "before it shows)", in_all=False, needs_training=True, computes="stepper_run",
         options=("predict",)),
    # not in all: measuring runs both programs (seconds for a big model), and the times it
    # shows differ from run to run
    View("cost", cost.render, "forward mode against reverse mode (backprop): sweeps, lines "
         "and memory per gradient, and their measured times", in_all=False),
    # not in all: it loads the fused engine (numba: about a second, once per kernel)
    View("fusion", fusion.render, "how the fused engine runs the GCP in training: the lines "
         "of each pass over blocks of examples, what stays in cache, what goes to BLAS",
         in_all=False, computes="fusion"),
)}


def default_views() -> list[str]:
    return [v.name for v in VIEWS.values() if v.default]


def describe_views() -> str:
    """One line per view, for ``%%tenflang?``, error messages and the Guide.

    >>> describe_views().splitlines()[0]
    'graph: the data-flow graph, numbered in topological order (default)'
    """
    def where(v: View) -> str:
        marks = ["default"] * v.default + ["not in all"] * (not v.in_all)
        marks += ["after training"] * v.needs_training
        return f" ({', '.join(marks)})" if marks else ""

    return "\n".join(f"{v.name}: {v.description}{where(v)}" for v in VIEWS.values())


def parse_views(text: str | None) -> list[str]:
    """``"graph,order"`` -> the view names; ``all``, ``none``; None: the defaults.
    ValueError for an unknown name."""
    if text is None:
        return default_views()
    words = [w.strip().lower() for w in text.replace(" ", ",").split(",") if w.strip()]
    if words == ["none"]:
        return []
    if words == ["all"]:
        return [v.name for v in VIEWS.values() if v.in_all]
    unknown = [w for w in words if w not in VIEWS]
    if unknown:
        raise ValueError(f"unknown view {unknown[0]!r}: choose from "
                         f"{', '.join(VIEWS)} (or all, none)")
    return list(dict.fromkeys(words))


def program_view(model: Shown, which: Sequence[str], *, full: bool = False,
                 example: Any = None, computed: Mapping[str, Any] | None = None) -> Rendered:
    """The chosen views of ``model`` in one output (hover links lines, GCP and nodes);
    ``computed``: view name -> what the model computed for it (see ``View.computes``)."""
    prefix = new_prefix(model.source + ",".join(which))
    options = ViewOptions(tuple(which), full, example, prefix)
    computed = computed or {}
    body = "".join(VIEWS[name].render(model, replace(options, computed=computed.get(name)))
                   for name in which)
    plain = f"<TenFlang views of '{model.name}': {', '.join(which) or 'none'}>"
    return Rendered(page(body, prefix), plain)
