"""Errors and warnings as notebook output: the offending line highlighted, a caret, no traceback.

>>> from tenflang_nb.core.api import parse, TenFlangError
>>> try:
...     parse("declare input x\\ndefine y = mul x 2\\n", "net.tf")
... except TenFlangError as err:
...     shown = error_view(err, "declare input x\\ndefine y = mul x 2\\n")
>>> print(shown.plain.splitlines()[0])
net.tf: line 2: error: 'y' is defined but never declared
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.errors import Diagnostic, TenFlangError, printable
from .html import Rendered, esc, new_prefix, page
from .listing import source_lines

__all__ = ["diagnostic_html", "error_view", "warnings_view"]

CONTEXT = 2  # lines shown above and below the offending one
LIMIT = 20  # diagnostics shown per error (the core caps its text the same way)


def diagnostic_html(d: Diagnostic, lines: Sequence[str] | None = None) -> str:
    """One diagnostic: headline, the line in context with a caret under the culprit, hint.

    ``lines`` are the cell's lines; without them (or for another file) only the offending
    line, which the diagnostic carries itself, is shown.
    """
    d = d.printable()
    rows: list[str] = []
    if d.line and d.source is not None:
        width = len(str(d.line + CONTEXT))
        own = lines is not None and 0 < d.line <= len(lines)
        first = max(1, d.line - CONTEXT) if own else d.line
        last = min(len(lines), d.line + CONTEXT) if own and lines is not None else d.line
        for n in range(first, last + 1):
            # as the core shows it: tabs one column wide, control characters escaped
            text = (d.source if n == d.line or lines is None
                    else printable(lines[n - 1].expandtabs(1)))
            mark = "&gt;" if n == d.line else " "
            css = ' class="tf-bad"' if n == d.line else ""
            bad = ' style="background:#fecaca"' if n == d.line else ""
            rows.append(f'<span{css} data-tf-line="{n}"{bad}>{mark} {n:>{width}} | '
                        f"{esc(text)}</span>")
            if n == d.line:
                caret = " " * d.column + "^" * max(1, min(d.length, 80))
                rows.append(f'  {" " * width} | <span class="tf-caret" '
                            f'style="color:#dc2626;font-weight:bold">{caret}</span>')
    listing = "<pre>" + "\n".join(rows) + "</pre>" if rows else ""
    hint = f'<div class="tf-hint">hint: {esc(d.hint)}</div>' if d.hint else ""
    return (f'<div class="tf-diag tf-{esc(d.severity)}" data-tf-diag-line="{d.line}">'
            f'<div class="tf-diag-head">{esc(d.headline())}</div>{listing}{hint}</div>')


def error_view(err: TenFlangError, source: str | None = None, title: str = "") -> Rendered:
    """A whole :class:`TenFlangError` (every diagnostic, up to ``LIMIT``) for display.

    ``text/plain`` is the core's own rendering, so plain IPython shows the same caret.
    """
    lines = source_lines(source) if source is not None else None
    shown = err.diagnostics[:LIMIT]
    parts = [diagnostic_html(d, lines if d.source is not None else None) for d in shown]
    extra = len(err.diagnostics) - len(shown)
    if extra > 0:
        parts.append(f'<div class="tf-note">... and {extra} more error(s)</div>')
    head = f"<h4>{esc(title)}</h4>" if title else ""
    body = head + "".join(parts)
    return Rendered(page(body, new_prefix(body), interactive=False), err.render(LIMIT))


def warnings_view(diagnostics: Sequence[Diagnostic]) -> Rendered | None:
    """Warnings, one compact line each (None when there are none)."""
    if not diagnostics:
        return None
    items = "".join(
        f'<li data-tf-line="{d.line}">{esc(d.location())}: {esc(printable(d.message))}'
        + (f" <i>(hint: {esc(printable(d.hint))})</i>" if d.hint else "") + "</li>"
        for d in diagnostics)
    count = f"{len(diagnostics)} warning{'s' if len(diagnostics) != 1 else ''}"
    body = f'<div class="tf-warnings"><b>⚠ {count}</b><ul>{items}</ul></div>'
    plain = "\n".join(d.headline() for d in diagnostics)
    return Rendered(page(body, new_prefix(body), interactive=False), plain)
