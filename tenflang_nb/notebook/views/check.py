"""A checked backward pass as HTML: the verdict, the root wrong lines with their expected and
actual values and hints, every line of the student's text with its verdict, the adjoints.

Plain HTML that reads correctly where a notebook is untrusted (JupyterLab drops ``<style>``
and scripts there): every verdict is in words and symbols (✓, ✗), colours only repeat it.
The core computed everything shown (``core.backprop_check``); this module only lays it out.

>>> from tenflang_nb.core.api import check_backprop
>>> r = check_backprop("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n",
...                    "define d/L/d/w = mul w w")
>>> html = backprop_check_html(r)
>>> "✗ line 1 is the first wrong line" in html, "<script" in html
(True, False)
"""

from __future__ import annotations

from ...core.backprop_check import (
    BackpropCheck,
    LineVerdict,
    explanation_lines,
    inherits_note,
    status_text,
    undecided_note,
)
from ...core.errors import printable
from .diagnostics import cell_line, diagnostic_html
from .html import Rendered, esc, new_prefix, page, wide
from .listing import source_lines

__all__ = ["backprop_check_html", "check_in_cell", "sentence_html"]

# inline, not in the shared stylesheet: every stored output embeds that sheet, so a new rule
# there would change every notebook's outputs; only the looks depend on these
_LEFT = "text-align:left"
_LEFT_SANS = "text-align:left;font-family:inherit"
_STATUS_CLASS = {"right": "tf-ok", "wrong": "tf-fail", "inherits": "tf-fail"}


def sentence_html(text: str) -> str:
    """A sentence of the report (code between backticks) as HTML: the code as code.

    >>> sentence_html("`mul w w` uses w < 2\x1b times")
    '<code>mul w w</code> uses w &lt; 2\\\\x1b times'
    """
    parts = esc(printable(text)).split("`")
    return "".join(f"<code>{p}</code>" if k % 2 and p else p for k, p in enumerate(parts))


def _root_html(v: LineVerdict, in_cell: bool) -> str:
    lines = "".join(f"<div>{sentence_html(t)}</div>" for t in explanation_lines(v))
    where = f"line {v.line}" + (f" ({cell_line(v.line)})" if in_cell else "")
    return (f'<div class="tf-diag tf-error" data-tf-diag-line="{v.line}">'
            f'<div class="tf-diag-head">{where}: '
            f"<code>{esc(printable(v.source.strip()))}</code></div>{lines}</div>")


def _lines_table(result: BackpropCheck) -> str:
    verdicts = {v.line: v for v in result.lines}
    rows = []
    for number, text in enumerate(source_lines(result.text), 1):
        v = verdicts.get(number)
        if v is None and not text.strip():
            continue
        if v is None:
            verdict, css = "", ""
        else:
            verdict = esc(status_text(v))
            css = f' class="{_STATUS_CLASS[v.status]}"' if v.status in _STATUS_CLASS else ""
        code = esc(printable(text.expandtabs(4)))
        rows.append(f'<tr data-tf-line="{number}"><td>{number}</td>'
                    f'<td class="tf-name"><code>{code}</code></td>'
                    f'<td class="tf-name" style="{_LEFT_SANS}"><span{css}>{verdict}</span></td>'
                    "</tr>")
    head = (f'<tr><th>line</th><th style="{_LEFT}">your backward pass</th>'
            f'<th style="{_LEFT}">verdict</th></tr>')
    return wide(f'<table class="tf-table">{head}{"".join(rows)}</table>',
                "your backward pass, line by line")


def _adjoints_html(result: BackpropCheck) -> str:
    groups = []
    for status, label in (("right", "✓ right"), ("wrong", "✗ wrong"),
                          ("missing", "not written yet")):
        items = []
        for a in result.adjoints:
            if a.status != status:
                continue
            where = f" (line {a.line})" if a.line else ""
            required = " (required)" if a.status == "missing" and a.name in result.required else ""
            given = " (your lines used the compiler's value)" if a.given else ""
            items.append(f"<code>{esc(a.name)}</code>{where}{required}{given}")
        if items:
            groups.append(f"<li>{label}: {', '.join(items)}</li>")
    return f"<div>Adjoints:<ul>{''.join(groups)}</ul></div>" if groups else ""


def backprop_check_html(result: BackpropCheck, in_cell: bool = False) -> str:
    """The whole check as one HTML output; ``in_cell``: under the ``%%tenflang_check`` cell
    that holds the text (a line is named as the editor numbers it too)."""
    css = "tf-ok" if result.ok else "tf-fail"
    head = (f"<h4>Backward pass of <code>{esc(printable(result.model))}</code>: "
            f'<span class="{css}">{esc(result.headline())}</span></h4>')
    if result.error is not None:
        lines = source_lines(result.text)
        body = head + "".join(diagnostic_html(d, lines, in_cell and d.file == result.file)
                              for d in result.error.diagnostics[:20])
        return page(body, new_prefix(body), interactive=False)
    roots = "".join(_root_html(v, in_cell) for v in result.roots)
    note = (f"Checked against the compiler's d/{result.loss}/d/v on {result.draws_text} "
            "of the inputs and weights" + (f" ({result.sample_text})" if result.sample else "")
            + ".")
    for more in (undecided_note(result), inherits_note(result)):
        note += " " + (more or "")
    body = (head + roots + _lines_table(result) + _adjoints_html(result)
            + f'<div class="tf-note">{esc(note.strip())}</div>')
    return page(body, new_prefix(body), interactive=False)


def check_in_cell(result: BackpropCheck) -> Rendered:
    """``result`` as its ``%%tenflang_check`` cell shows it (the result itself, displayed
    later elsewhere, names only the lines of its text)."""
    return Rendered(backprop_check_html(result, in_cell=True), result.report())
