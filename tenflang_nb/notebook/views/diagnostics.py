"""Errors and warnings as notebook output: the offending line highlighted, a caret, no traceback.

Under a magic cell (``cell_file``: the file name the cell's body is read as) a line is also
named as the editor numbers it, one more: the ``%%tenflang`` line is the cell's line 1.

>>> from tenflang_nb.core.api import parse, TenFlangError
>>> try:
...     parse("declare input x\\ndefine y = mul x 2\\n", "net.tf")
... except TenFlangError as err:
...     shown = error_view(err, "declare input x\\ndefine y = mul x 2\\n")
...     in_cell = error_view(err, "declare input x\\ndefine y = mul x 2\\n", cell_file="net.tf")
>>> print(shown.plain.splitlines()[0])
net.tf: line 2: error: 'y' is defined but never declared
>>> print(in_cell.plain.splitlines()[0])
net.tf: line 2 (line 3 of the cell): error: 'y' is defined but never declared
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.errors import Diagnostic, TenFlangError, printable
from .html import Rendered, esc, new_prefix, page
from .listing import source_lines

__all__ = ["cell_headline", "cell_line", "cell_location", "diagnostic_html", "error_view",
           "warnings_view"]

CONTEXT = 2  # lines shown above and below the offending one
LIMIT = 20  # diagnostics shown per error (the core caps its text the same way)
MAGIC_LINES = 1  # a magic cell's body starts under its %%tenflang line, the editor's line 1
LISTING_STYLE = "background:transparent;color:#111827"


def cell_line(line: int) -> str:
    """How a line of a magic cell's body is named besides its own number.

    >>> cell_line(3)
    'line 4 of the cell'
    """
    return f"line {line + MAGIC_LINES} of the cell"


def cell_location(d: Diagnostic, in_cell: bool = True) -> str:
    """Where ``d`` is; ``in_cell`` (``d`` is about a magic cell's body), with its line as the
    editor numbers it too."""
    location = d.location()
    return f"{location} ({cell_line(d.line)})" if in_cell and d.line else location


def cell_headline(d: Diagnostic, in_cell: bool = True) -> str:
    """``d``'s headline, its location as :func:`cell_location` says it."""
    return cell_location(d, in_cell) + d.headline()[len(d.location()):]


def diagnostic_html(d: Diagnostic, lines: Sequence[str] | None = None,
                    in_cell: bool = False) -> str:
    """One diagnostic: headline, the line in context with a caret under the culprit, hint.

    ``lines`` are the cell's lines; without them (or for another file) only the offending
    line, which the diagnostic carries itself, is shown. ``in_cell``: the diagnostic is
    about a magic cell's body (its headline names the cell's line too).
    """
    head = cell_headline(d, in_cell)
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
    # inline: a dark JupyterLab theme gives an output's pre a dark background, where the
    # listing's dark text would not read (the card around it is white, also when sanitized)
    listing = (f'<pre style="{LISTING_STYLE}">' + "\n".join(rows) + "</pre>" if rows else "")
    hint = f'<div class="tf-hint">hint: {esc(d.hint)}</div>' if d.hint else ""
    return (f'<div class="tf-diag tf-{esc(d.severity)}" data-tf-diag-line="{d.line}">'
            f'<div class="tf-diag-head">{esc(head)}</div>{listing}{hint}</div>')


def error_view(err: TenFlangError, source: str | None = None, title: str = "",
               cell_file: str | None = None) -> Rendered:
    """A whole :class:`TenFlangError` (every diagnostic, up to ``LIMIT``) for display.

    ``text/plain`` is the core's own rendering, so plain IPython shows the same caret.
    ``cell_file``: shown under a magic cell whose body was read as this file: its
    diagnostics name the cell's line too (in both renderings).
    """
    lines = source_lines(source) if source is not None else None
    shown = err.diagnostics[:LIMIT]
    parts = [diagnostic_html(d, lines if d.source is not None else None, d.file == cell_file)
             for d in shown]
    extra = len(err.diagnostics) - len(shown)
    if extra > 0:
        parts.append(f'<div class="tf-note">... and {extra} more error(s)</div>')
    head = f"<h4>{esc(title)}</h4>" if title else ""
    body = head + "".join(parts)
    plain = err.render(LIMIT)
    for d in shown:  # in order: each replaces the first headline not yet replaced
        if d.file == cell_file:
            plain = plain.replace(d.headline(), cell_headline(d), 1)
    return Rendered(page(body, new_prefix(body), interactive=False), plain)


def warnings_view(diagnostics: Sequence[Diagnostic],
                  cell_file: str | None = None) -> Rendered | None:
    """Warnings, one compact line each (None when there are none); ``cell_file`` as for
    :func:`error_view`."""
    if not diagnostics:
        return None
    items = "".join(
        f'<li data-tf-line="{d.line}">{esc(cell_location(d, d.file == cell_file))}: '
        f"{esc(printable(d.message))}"
        + (f" <i>(hint: {esc(printable(d.hint))})</i>" if d.hint else "") + "</li>"
        for d in diagnostics)
    count = f"{len(diagnostics)} warning{'s' if len(diagnostics) != 1 else ''}"
    body = f'<div class="tf-warnings"><b>⚠ {count}</b><ul>{items}</ul></div>'
    plain = "\n".join(cell_headline(d, d.file == cell_file) for d in diagnostics)
    return Rendered(page(body, new_prefix(body), interactive=False), plain)
