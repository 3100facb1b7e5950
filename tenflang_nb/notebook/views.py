"""The views of a model, assembled: graph + order, shape program | GCP, expansion, values,
and the model's own rich display. Each returns a :class:`Rendered` (HTML + stable text).

The pieces live in ``views_graph`` (Graphviz), ``views_code`` (listings), ``views_diag``
(errors), ``views_tables`` (tables) and ``views_html`` (plumbing).

>>> parse_views("graph, gcp")
['graph', 'gcp']
>>> parse_views("all")
['graph', 'order', 'gcp', 'expanded']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import TenFlangError
from ..core.program import Program
from ..core.vectors import VectorTable, format_vector
from .views_code import listing_expanded, side_by_side
from .views_diag import error_view
from .views_graph import graph_html, layout_graph, order_html
from .views_html import Rendered, esc, new_prefix, page
from .views_tables import fmt_value, table_html

if TYPE_CHECKING:
    from .model import GradCheck, TenFlangModel

__all__ = [
    "DEFAULT_VIEWS", "VIEWS", "dot_source", "evaluation_html", "gradcheck_html", "model_html",
    "parse_views", "program_view", "training_summary", "values_view",
]

VIEWS = ("graph", "order", "gcp", "expanded", "values")
DEFAULT_VIEWS = ("graph", "order", "gcp")
_ALL = ("graph", "order", "gcp", "expanded")


def parse_views(text: str) -> list[str]:
    """``"graph,order"`` -> the view names; ``all``, ``none``; ValueError for unknown ones."""
    words = [w.strip().lower() for w in text.replace(" ", ",").split(",") if w.strip()]
    if words == ["none"]:
        return []
    if words == ["all"]:
        return list(_ALL)
    unknown = [w for w in words if w not in VIEWS]
    if unknown:
        raise ValueError(f"unknown view {unknown[0]!r}: choose from "
                         f"{', '.join(VIEWS)} (or all, none)")
    return list(dict.fromkeys(words))


def _graph_and_order(model: TenFlangModel, prefix: str, graph: bool, order: bool) -> str:
    program, g = model.program, model.graph
    if graph and order:
        return (f'<div class="tf-row"><div class="tf-col">'
                f"{graph_html(program, g, prefix, include_order_in_fallback=False)}</div>"
                f'<div class="tf-col-narrow">{order_html(program, g)}</div></div>')
    if graph:
        return graph_html(program, g, prefix)
    return order_html(program, g)


def _gcp_note(model: TenFlangModel) -> str:
    if model.compiled is None:
        return ('<div class="tf-note">No GCP: the program declares no loss '
                "(add <code>declare loss L</code> and define it to get gradients).</div>")
    return ""


def program_view(model: TenFlangModel, which: Sequence[str], *, full: bool = False,
                 example: Any = None) -> Rendered:
    """The chosen views of ``model`` in one output (hover links lines, GCP and nodes)."""
    prefix = new_prefix(model.source + ",".join(which))
    parts = []
    if "graph" in which or "order" in which:
        parts.append(_graph_and_order(model, prefix, "graph" in which, "order" in which))
    if "gcp" in which:
        gcp = other = None
        if model.compiled is not None:
            gcp = model.compiled_full if full else model.compiled
            other = len((model.compiled if full else model.compiled_full).lines)
        parts.append(side_by_side(model.source, model.program, gcp, other, _gcp_note(model),
                                  model.name))
    if "expanded" in which:
        parts.append(listing_expanded(model.program, model.name))
    if "values" in which:
        parts.append(_values_part(model, example))
    plain = f"<TenFlang views of '{model.name}': {', '.join(which) or 'none'}>"
    return Rendered(page("".join(parts), prefix), plain)


def _values_part(model: TenFlangModel, example: Any) -> str:
    if model.data is None and example is None:
        return ('<div class="tf-note">Values appear after training '
                "(<code>--train DATA</code>) or with <code>NAME.show_values(example)</code>."
                "</div>")
    try:
        return model.show_values(example).html
    except TenFlangError as err:
        return error_view(err, model.source).html


def values_view(model: TenFlangModel, shown: Mapping[str, tuple[str, str | None]],
                table: VectorTable, where: str = "") -> Rendered:
    """The graph annotated with each node's value and gradient (micrograd's data | grad)."""
    vector = format_vector(table.vector(0))
    loss = model.loss or "L"
    caption = (f"Values and gradients d/{loss}/d/v on "
               f"{where + ': ' if where else ''}{vector}")
    prefix = new_prefix(model.source + vector)
    body = graph_html(model.program, model.graph, prefix, values=shown, caption=caption)
    note = ('<div class="tf-note">value: the variable on this example, with the current '
            f"weights; grad: d/{esc(loss)}/d/v from the full GCP (absent: the variable does "
            "not reach the loss; null: a value it needs is missing).</div>")
    return Rendered(page(body + note, prefix), f"<TenFlang values of '{model.name}' on {vector}>")


def dot_source(model: TenFlangModel) -> str:
    """The DOT text Graphviz lays out for the data-flow graph."""
    return str(layout_graph(model.program, model.graph, "tfnb").dot().source)


def _counts(program: Program) -> str:
    kinds: dict[str, int] = {}
    for d in program.decls.values():
        kinds[d.kind] = kinds.get(d.kind, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in kinds.items())


def _weights_rows(weights: Mapping[str, Any], program: Program) -> list[dict[str, Any]]:
    from ..core.ops import fmt_shape

    return [{"weight": w, "shape": fmt_shape(program.shapes[w]), "value": fmt_value(v)}
            for w, v in weights.items()]


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
    weights = ""
    if model.weights:
        weights = table_html(_weights_rows(model.weights, p), name_columns=("weight",))
    card = (f'<div class="tf-card"><b>TenFlang model <code>{esc(model.name)}</code></b>: '
            f"{len(p.decls)} variables ({esc(_counts(p))}){gcp}{trained}{weights}</div>")
    graph = _graph_and_order(model, prefix, True, True)
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
            f"{fmt_value(r.loss)}, {status}.</div>"
            + table_html(_weights_rows(model.weights, model.program), name_columns=("weight",)))
    plain = (f"<TenFlang training of '{model.name}': {r.iterations} iterations, "
             f"{'converged' if r.converged else 'not converged'}>")
    return Rendered(page(body, new_prefix(body), interactive=False), plain)


def evaluation_html(rows: list[dict[str, Any]], inputs: Sequence[str],
                    results: Sequence[str]) -> str:
    """Inputs then outputs/loss, one row per input vector."""
    columns = [*inputs, *[r for r in results if r not in inputs]]
    return page(table_html(rows, columns, name_columns=("#",)), new_prefix(str(rows)),
                interactive=False)


def gradcheck_html(check: GradCheck) -> str:
    """The gradient check table, failing rows marked."""
    rows = [{**r, "ok": "ok" if r["ok"] else "MISMATCH"} for r in check]
    classes = {i: "tf-fail" for i, r in enumerate(check) if not r["ok"]}
    verdict = ('<span class="tf-ok">all gradients agree</span>' if check.ok
               else '<span class="tf-fail">some gradients disagree</span>')
    note = (f"GCP gradient vs central differences (eps {check.eps:g}); ok when the relative "
            f"error is at most {check.rtol:g}. ")
    if check.skipped:
        note += f"{check.skipped} more tensor entries not checked."
    body = (f"<div>{verdict}</div>"
            + table_html(rows, ["weight", "gcp", "numeric", "rel_error", "ok"],
                         name_columns=("weight",), classes=classes)
            + f'<div class="tf-note">{esc(note)}</div>')
    return page(body, new_prefix(body), interactive=False)
