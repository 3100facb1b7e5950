"""The views of a model, as one registry (:data:`VIEWS`), and the model's other displays.

A view is a name, a renderer (model, options -> an HTML part), a one-line description and
where it appears: in the default set, in ``all``, and whether it needs a trained model.
``--show`` parsing, its error message, ``%%tenflang?``, ``model.show()``, the defaults and
the Guide all read the registry, so adding a view is one entry plus its renderer.

The pieces live in ``views_graph`` (Graphviz), ``views_code`` (listings), ``views_diag``
(errors), ``views_tables`` (tables) and ``views_html`` (plumbing).

>>> parse_views("graph, gcp")
['graph', 'gcp']
>>> parse_views("all")
['graph', 'order', 'gcp', 'expanded']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.datafiles import format_record
from ..core.errors import TenFlangError
from ..core.formatting import fmt_number, fmt_rel_error, fmt_seconds, fmt_value
from ..core.program import Program
from .stepper import explain
from .views_check import backprop_check_html
from .views_code import listing_expanded, side_by_side
from .views_diag import error_view
from .views_graph import graph_html, layout_graph, order_html
from .views_html import Rendered, esc, new_prefix, page
from .views_stepper import stepper_html
from .views_tables import table_html, table_text, weights_html

if TYPE_CHECKING:
    from .model import Cost, Evaluation, GradCheck, TenFlangModel

__all__ = [
    "VIEWS", "View", "ViewOptions", "backprop_check_html", "cost_html", "default_views",
    "describe_views", "dot_source", "evaluation_html", "evaluation_text",
    "gradcheck_html", "gradcheck_text", "model_html", "parse_views", "program_view",
    "stepper_view", "training_summary", "values_view",
]


@dataclass(frozen=True)
class ViewOptions:
    """What every renderer gets besides the model: all the views asked for (a renderer may
    lay itself out beside another), the GCP flavour, the example for value views."""

    selected: tuple[str, ...]
    full: bool = False
    example: Any = None
    prefix: str = "tfnb"


Renderer = Callable[["TenFlangModel", ViewOptions], str]


@dataclass(frozen=True)
class View:
    name: str
    render: Renderer
    description: str
    default: bool = False  # shown when --show is not given
    in_all: bool = True  # part of --show all
    needs_training: bool = False  # shown after --train has trained (with --no-live)


# ------------------------------------------------------------------------------- renderers


def _render_graph(model: TenFlangModel, o: ViewOptions) -> str:
    if "order" not in o.selected:
        return graph_html(model.program, model.graph, o.prefix)
    # graph and order side by side: the order's numbers are the ones drawn in the nodes
    return (f'<div class="tf-row"><div class="tf-col">'
            f"{graph_html(model.program, model.graph, o.prefix, include_order_in_fallback=False)}"
            f'</div><div class="tf-col-narrow">{order_html(model.program, model.graph)}</div>'
            "</div>")


def _render_order(model: TenFlangModel, o: ViewOptions) -> str:
    if "graph" in o.selected:
        return ""  # drawn beside the graph
    return order_html(model.program, model.graph)


def _render_gcp(model: TenFlangModel, o: ViewOptions) -> str:
    if model.compiled is None:
        note = ('<div class="tf-note">No GCP: the program declares no loss '
                "(add <code>declare loss L</code> and define it to get gradients).</div>")
        return side_by_side(model.source, model.program, None, None, note, model.name)
    gcp = model.compiled_full if o.full else model.compiled
    other = len((model.compiled if o.full else model.compiled_full).lines)
    return side_by_side(model.source, model.program, gcp, other, "", model.name)


def _render_expanded(model: TenFlangModel, o: ViewOptions) -> str:
    return listing_expanded(model.program, model.name)


def _render_values(model: TenFlangModel, o: ViewOptions) -> str:
    if model.data is None and o.example is None:
        return ('<div class="tf-note">Values appear after training '
                "(<code>--train DATA</code>) or with <code>NAME.show_values(example)</code>."
                "</div>")
    try:
        return _values_body(model, o.example, o.prefix)
    except TenFlangError as err:
        return error_view(err, model.source).html


def _render_step(model: TenFlangModel, o: ViewOptions) -> str:
    if model.compiled is None:
        return ('<div class="tf-note">No stepper: the program declares no loss, so it has no '
                "GCP to step through.</div>")
    if model.data is None and o.example is None:
        return ('<div class="tf-note">The stepper runs the GCP on one example: train first '
                "(<code>--train DATA</code>), give one (<code>--example \"{x: 1, y: 0.5}\""
                "</code>), or call <code>NAME.stepper(example)</code>.</div>")
    try:
        return stepper_html(model, explain(model, o.example), o.prefix)
    except TenFlangError as err:
        return error_view(err, model.source).html


def _render_cost(model: TenFlangModel, o: ViewOptions) -> str:
    if model.compiled is None or not model.weights:
        what = "declares no loss" if model.compiled is None else "has no weights"
        return (f'<div class="tf-note">No cost to show: the program {what}, so it has no '
                "gradient.</div>")
    try:
        return _cost_body(model.costs or model.cost())
    except TenFlangError as err:
        return error_view(err, model.source).html


VIEWS: dict[str, View] = {v.name: v for v in (
    View("graph", _render_graph, "the data-flow graph, numbered in topological order",
         default=True),
    View("order", _render_order, "the topological order, as a list", default=True),
    View("gcp", _render_gcp, "the shape program beside its Gradient Computing Program "
         "(hover a line to see what it became)", default=True),
    View("expanded", _render_expanded, "the program with the original's vectors and macros "
         "expanded"),
    View("values", _render_values, "the graph with each node's value and gradient on one "
         "training example", in_all=False, needs_training=True),
    View("step", _render_step, "the GCP run on one example a line at a time, on the graph: "
         "the forward pass, then the backward pass", in_all=False, needs_training=True),
    # not in all: it runs both programs to time them (seconds for a big model), and the
    # times it shows differ from run to run
    View("cost", _render_cost, "forward mode against reverse mode (backprop): sweeps, lines "
         "and memory per gradient, and their measured times", in_all=False),
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


def program_view(model: TenFlangModel, which: Sequence[str], *, full: bool = False,
                 example: Any = None) -> Rendered:
    """The chosen views of ``model`` in one output (hover links lines, GCP and nodes)."""
    prefix = new_prefix(model.source + ",".join(which))
    options = ViewOptions(tuple(which), full, example, prefix)
    body = "".join(VIEWS[name].render(model, options) for name in which)
    plain = f"<TenFlang views of '{model.name}': {', '.join(which) or 'none'}>"
    return Rendered(page(body, prefix), plain)


# ------------------------------------------------------------------------------- values


def _values_body(model: TenFlangModel, example: Any, prefix: str) -> str:
    table = model.example(example)
    values = model.values(table)
    adjoints = model.adjoints
    shown = {v: (fmt_value(val, "label"), fmt_value(grad, "label") if v in adjoints else None)
             for v, (val, grad) in values.items()}
    record = format_record(table.record(0))
    where = f"training example {example or 0}: " if isinstance(example, int | None) else ""
    loss = model.loss or "L"
    caption = f"Values and gradients d/{loss}/d/v on {where}{record}"
    body = graph_html(model.program, model.graph, prefix, values=shown, caption=caption)
    note = ('<div class="tf-note">value: the variable on this example, with the current '
            f"weights; grad: d/{esc(loss)}/d/v from the full GCP (absent: the variable does "
            "not reach the loss; null: a value it needs is missing).</div>")
    return body + note


def values_view(model: TenFlangModel, example: Any = None) -> Rendered:
    """The graph annotated with each node's value and gradient (micrograd's data | grad)."""
    record = format_record(model.example(example).record(0))
    prefix = new_prefix(model.source + record)
    body = _values_body(model, example, prefix)
    return Rendered(page(body, prefix), f"<TenFlang values of '{model.name}' on {record}>")


def stepper_view(model: TenFlangModel, example: Any = None) -> Rendered:
    """The stepper: the GCP run on one example, a line at a time (see ``views_stepper``)."""
    run = explain(model, example)
    prefix = new_prefix(model.source + run.example + run.weights)
    return Rendered(page(stepper_html(model, run, prefix), prefix, interactive=False),
                    f"<TenFlang stepper of '{model.name}' on {run.example}: "
                    f"{len(run.steps)} steps>")


# ------------------------------------------------------------------------------- the rest


def dot_source(model: TenFlangModel) -> str:
    """The DOT text Graphviz lays out for the data-flow graph."""
    return str(layout_graph(model.program, model.graph, "tfnb").dot().source)


def _counts(program: Program) -> str:
    kinds: dict[str, int] = {}
    for d in program.decls.values():
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items())


def model_html(model: TenFlangModel) -> str:
    """The model's rich display: a summary card, then its graph and order."""
    prefix = new_prefix(model.source + "model")
    p = model.program
    gcp = ""
    if model.compiled is not None:
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
    graph = _render_graph(model, ViewOptions(("graph", "order"), prefix=prefix))
    return page(card + graph, prefix)


def training_summary(model: TenFlangModel) -> Rendered:
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


def _evaluation_rows(evaluation: Evaluation) -> tuple[list[dict[str, Any]], list[str]]:
    inputs = evaluation.inputs
    rows = [{"#": i, **inputs.record(i), **r} for i, r in enumerate(evaluation)]
    results = list(evaluation[0]) if evaluation else []
    return rows, ["#", *inputs.names, *[r for r in results if r not in inputs.names]]


def evaluation_html(evaluation: Evaluation) -> str:
    """Inputs then outputs/loss, one row per input record."""
    rows, columns = _evaluation_rows(evaluation)
    return page(table_html(rows, columns, name_columns=("#",)), new_prefix(str(rows)),
                interactive=False)


def _times(ratio: float) -> str:
    return f"{fmt_number(ratio, 2, notation='plain')}×"


def _cost_body(cost: Cost) -> str:
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


def cost_html(cost: Cost) -> str:
    """The cost comparison as a plain table (it reads the same without CSS or scripts)."""
    body = _cost_body(cost)
    return page(body, new_prefix(body), interactive=False)


def evaluation_text(evaluation: Evaluation) -> str:
    """The same table as text, numbers to 6 digits (as the HTML)."""
    return table_text(*_evaluation_rows(evaluation))


GRADCHECK_COLUMNS = ["weight", "gcp", "numeric", "rel_error", "ok"]


def _gradcheck_rows(check: GradCheck) -> list[dict[str, Any]]:
    return [{**r, "rel_error": fmt_rel_error(r["rel_error"]),
             "ok": "ok" if r["ok"] else "MISMATCH"} for r in check]


def gradcheck_text(check: GradCheck) -> str:
    """The gradient check as text (what ``print`` and a terminal show)."""
    return table_text(_gradcheck_rows(check), GRADCHECK_COLUMNS)


def gradcheck_html(check: GradCheck) -> str:
    """The gradient check table, failing rows marked."""
    rows = _gradcheck_rows(check)
    classes = {i: "tf-fail" for i, r in enumerate(check) if not r["ok"]}
    verdict = ('<span class="tf-ok">all gradients agree</span>' if check.ok
               else '<span class="tf-fail">some gradients disagree</span>')
    note = (f"GCP gradient vs central differences (eps {fmt_number(check.eps)}); ok when the "
            f"relative error is at most {fmt_number(check.rtol)}. ")
    if check.skipped:
        note += f"{check.skipped} more tensor entries not checked."
    body = (f"<div>{verdict}</div>"
            + table_html(rows, GRADCHECK_COLUMNS, name_columns=("weight",), classes=classes)
            + f'<div class="tf-note">{esc(note)}</div>')
    return page(body, new_prefix(body), interactive=False)
