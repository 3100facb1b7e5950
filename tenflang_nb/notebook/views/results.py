"""The tables of a model's results: ``model.evaluate()`` (inputs then outputs and loss, one
row per example) and ``model.gradcheck()`` (the GCP's gradient against finite differences),
as HTML and as text (what a terminal, and a saved notebook's ``text/plain``, shows).

>>> rows = [{"weight": "w", "gcp": 0.5, "numeric": 0.5, "rel_error": 0.0, "ok": True}]
>>> print(gradcheck_text(rows))
weight  gcp  numeric  rel_error  ok
w       0.5  0.5      0          ok
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.datafiles import DataTable
from ...core.formatting import fmt_list, fmt_number, fmt_rel_error
from ...core.gradcheck import disagreeing
from .html import esc, new_prefix, page
from .tables import table_html, table_text

__all__ = ["GRADCHECK_COLUMNS", "evaluation_html", "evaluation_text", "gradcheck_html",
           "gradcheck_text"]

Rows = Sequence[Mapping[str, Any]]


def _evaluation_rows(results: Rows, inputs: DataTable) -> tuple[list[dict[str, Any]], list[str]]:
    rows = [{"#": i, **inputs.record(i), **r} for i, r in enumerate(results)]
    outputs = list(results[0]) if results else []
    return rows, ["#", *inputs.names, *[r for r in outputs if r not in inputs.names]]


def evaluation_html(results: Rows, inputs: DataTable) -> str:
    """Inputs then outputs/loss, one row per input record."""
    rows, columns = _evaluation_rows(results, inputs)
    return page(table_html(rows, columns, name_columns=("#",)), new_prefix(str(rows)),
                interactive=False)


def evaluation_text(results: Rows, inputs: DataTable) -> str:
    """The same table as text, numbers to 6 digits (as the HTML)."""
    return table_text(*_evaluation_rows(results, inputs))


GRADCHECK_COLUMNS = ["weight", "gcp", "numeric", "rel_error", "ok"]


def _gradcheck_rows(rows: Rows) -> list[dict[str, Any]]:
    # a row that cannot agree because a side is NaN or infinite says which side
    return [{**r, "rel_error": fmt_rel_error(r["rel_error"]),
             "ok": "ok" if r["ok"] else "MISMATCH" + (f": {r['problem']}"
                                                       if r.get("problem") else "")}
            for r in rows]


def gradcheck_text(rows: Rows) -> str:
    """The gradient check as text (what ``print`` and a terminal show)."""
    return table_text(_gradcheck_rows(rows), GRADCHECK_COLUMNS)


def gradcheck_html(rows: Rows, eps: float, rtol: float, skipped: int) -> str:
    """The gradient check table, failing rows marked."""
    shown = _gradcheck_rows(rows)
    classes = {i: "tf-fail" for i, r in enumerate(rows) if not r["ok"]}
    wrong = disagreeing(rows)
    verdict = ('<span class="tf-ok">all gradients agree</span>' if not wrong else
               f'<span class="tf-fail">the gradient of {esc(fmt_list(wrong))} disagrees</span>')
    note = (f"GCP gradient vs central differences (eps {fmt_number(eps)}); ok when the "
            f"relative error is at most {fmt_number(rtol)}. ")
    if skipped:
        note += f"{skipped} more tensor entries not checked."
    body = (f"<div>{verdict}</div>"
            + table_html(shown, GRADCHECK_COLUMNS, name_columns=("weight",), classes=classes)
            + f'<div class="tf-note">{esc(note)}</div>')
    return page(body, new_prefix(body), interactive=False)
