"""The ``values`` view: the graph with each node's value and gradient ``d/L/d/v`` on one
example (micrograd's data | grad), from the :class:`ExampleValues` the model computed
(``model.values_on``).

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook import TenFlangModel
>>> shown = TenFlangModel(SEED_EXAMPLE, "net").values_on({"x": 1.0, "y": 0.5})
>>> shown.values["o"], shown.index, "z" in shown.adjoints
((array(0.5), array(0.)), None, True)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ...core.datafiles import format_record
from ...core.formatting import fmt_value
from .base import Shown, ViewOptions, on_one_example
from .drawing import graph_html
from .html import Rendered, esc, new_prefix, page

__all__ = ["ExampleValues", "render", "values_view"]


@dataclass(frozen=True)
class ExampleValues:
    """Each variable's value and adjoint on one example, as the model computed them."""

    record: Mapping[str, Any]  # the example
    index: int | None  # its index in the training data (None: the example was given)
    values: Mapping[str, tuple[Any, Any]]  # variable -> (value, adjoint); None: NULL or none
    adjoints: Collection[str]  # the variables that have an adjoint (those reaching the loss)
    loss: str | None


def render(model: Shown, o: ViewOptions) -> str:
    """``o.computed``: the :class:`ExampleValues` (or the error) ``model.values_on`` made."""
    missing = ('<div class="tf-note">Values appear after training (<code>--train DATA</code>) '
               "or with <code>NAME.show_values(example)</code>.</div>")
    return on_one_example(model, o, missing, lambda shown: _body(model, shown, o.prefix))


def _body(model: Shown, shown: ExampleValues, prefix: str) -> str:
    labels = {v: (fmt_value(val, "label"),
                  fmt_value(grad, "label") if v in shown.adjoints else None)
              for v, (val, grad) in shown.values.items()}
    record = format_record(shown.record)
    where = f"training example {shown.index}: " if shown.index is not None else ""
    loss = shown.loss or "L"
    caption = f"Values and gradients d/{loss}/d/v on {where}{record}"
    body = graph_html(model.program, model.graph, prefix, labels=labels, caption=caption)
    note = ('<div class="tf-note">value: the variable on this example, with the current '
            f"weights; grad: d/{esc(loss)}/d/v from the full GCP (absent: the variable does "
            "not reach the loss; null: a value it needs is missing).</div>")
    return body + note


def values_view(model: Shown, shown: ExampleValues) -> Rendered:
    """The values on one example as one output (``model.show_values()``)."""
    record = format_record(shown.record)
    prefix = new_prefix(model.source + record)
    return Rendered(page(_body(model, shown, prefix), prefix),
                    f"<TenFlang values of '{model.name}' on {record}>")
