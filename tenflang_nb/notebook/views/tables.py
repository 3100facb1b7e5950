"""Tables: rows of dicts as plain text or HTML (evaluation results, the gradient check), and
the weights. A cell shows its value in ``formatting.fmt_value``'s ``cell`` style, a weight in
its ``weight`` style (a tensor as its shape and norm).

>>> "<code>1×2 tensor, ‖·‖ = 5</code>" in weights_html({"W": [[3.0, 4.0]]})
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.formatting import fmt_value
from .html import esc, wide

__all__ = ["MAX_WEIGHT_ROWS", "table_html", "table_text", "weights_html"]

MAX_WEIGHT_ROWS = 20


def table_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """Rows of dicts as a plain-text table (what a terminal, or ``text/plain``, shows).

    >>> print(table_text([{"w": "a", "v": 0.5}, {"w": "bb", "v": None}], ["w", "v"]))
    w   v
    a   0.5
    bb  null
    """
    cells = [[str(c) for c in columns]]
    cells += [[fmt_value(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in cells)


def table_html(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, *,
               name_columns: Sequence[str] = (), caption: str = "",
               classes: Mapping[int, str] | None = None) -> str:
    """Rows of dicts as an HTML table; ``classes`` adds a CSS class per row index."""
    columns = list(columns) if columns is not None else list(
        dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for c in columns:
            css = ' class="tf-name"' if c in name_columns else ""
            cells.append(f"<td{css}>{esc(fmt_value(row.get(c, '')))}</td>")
        css = f' class="{classes[i]}"' if classes and i in classes else ""
        body.append(f"<tr{css}>{''.join(cells)}</tr>")
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return wide(f'<table class="tf-table">{cap}<thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(body)}</tbody></table>", caption or "table")


def weights_html(weights: Mapping[str, Any], limit: int = MAX_WEIGHT_ROWS) -> str:
    """The weights as a small table (inline styles: it also renders inside a widget)."""
    rows = [f"<tr><td style='padding-right:1em'><code>{esc(name)}</code></td>"
            f"<td><code>{esc(fmt_value(value, 'weight'))}</code></td></tr>"
            for name, value in list(weights.items())[:limit]]
    extra = len(weights) - limit
    if extra > 0:
        rows.append(f"<tr><td colspan='2'>… and {extra} more</td></tr>")
    return "<b>weights</b><table>" + "".join(rows) + "</table>"
