"""Small HTML tables: evaluation results, gradient checks, weights, a training summary.

>>> fmt_value(0.123456789), fmt_value(None), fmt_value(np.array([[1.0, 2.0]]))
('0.123457', 'null', '[[1, 2]]')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.lexical import NULL
from .views_html import esc

__all__ = ["MAX_WEIGHT_ROWS", "fmt_rel_error", "fmt_short", "fmt_value", "table_html",
           "table_text", "weight_text", "weights_html"]

MAX_WEIGHT_ROWS = 20


def fmt_value(value: Any, digits: int = 6) -> str:
    """A value for a table cell or a graph label: short, one line, ``null`` for NULL."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return f"{float(array):.{digits}g}"
    text = np.array2string(array, precision=max(2, digits - 2), threshold=12, edgeitems=2,
                           separator=", ", suppress_small=True,
                           formatter={"float_kind": lambda x: f"{x:.{max(2, digits - 2)}g}"})
    return " ".join(text.split())


def fmt_short(value: Any, digits: int = 4) -> str:
    """Like :func:`fmt_value`, but a tensor of more than 4 entries shows its first 3 only
    (graph labels must stay small; the shape is in the label already).

    >>> fmt_short(np.arange(10.0))
    '[0, 1, 2, …]'
    """
    if value is None:
        return NULL
    array = np.asarray(value, dtype=float)
    if array.size <= 4:
        return fmt_value(array, digits)
    head = ", ".join(f"{x:.{digits - 1}g}" for x in array.ravel()[:3])
    return f"[{head}, …]"


def fmt_rel_error(rel: float) -> str:
    """A relative error as a student reads it: below 1e-6 it is rounding noise (its digits
    differ from machine to machine), so only that it is tiny is shown.

    >>> fmt_rel_error(3.2e-10), fmt_rel_error(0.0), fmt_rel_error(0.0123456)
    ('< 1e-06', '0', '0.012')
    """
    if rel == 0:
        return "0"
    if rel < 1e-6:
        return "< 1e-06"
    return f"{rel:.2g}"


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
    return (f'<table class="tf-table">{cap}<thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>")


def weight_text(value: Any) -> str:
    """A weight in a few characters: a scalar to 6 digits, a tensor as its shape and norm.

    >>> weight_text(0.12345678), weight_text(np.ones((2, 3)))
    ('0.123457', '2×3 tensor, ‖·‖ = 2.44949')
    """
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return f"{float(array):.6g}"
    shape = "×".join(str(d) for d in array.shape)
    return f"{shape} tensor, ‖·‖ = {float(np.linalg.norm(array)):.6g}"


def weights_html(weights: Mapping[str, Any], limit: int = MAX_WEIGHT_ROWS) -> str:
    """The weights as a small table (inline styles: it also renders inside a widget)."""
    rows = [f"<tr><td style='padding-right:1em'><code>{esc(name)}</code></td>"
            f"<td><code>{esc(weight_text(value))}</code></td></tr>"
            for name, value in list(weights.items())[:limit]]
    extra = len(weights) - limit
    if extra > 0:
        rows.append(f"<tr><td colspan='2'>… and {extra} more</td></tr>")
    return "<b>weights</b><table>" + "".join(rows) + "</table>"
