"""What every program listing is made of (the ``gcp``, ``expanded`` and ``step`` views list
programs): syntax-highlighted lines (in the palette's colours: :mod:`tenflang_nb.palette`),
each a numbered row, in a scrolling pane.

Every listed line is an element carrying ``data-tf-line`` (for a GCP line: the shape-program
line it derives from, ``Gcp.lines[i].origin``) so the hover script can connect them. A listing
is a ``<pre>`` whose lines end in real newlines and start with their number, padded with
spaces: its text reads line by line even where no stylesheet applies (an untrusted notebook).
A pane that wraps (:func:`pane`'s ``hang``) breaks a long line at the pane's edge rather than
hiding its end, and (where its stylesheet applies) indents the rest under the line's code.

>>> listing = pane([line_row(' class="tf-line"', 1, 1, "declare input x")], "tf-x", "x")
>>> listing.startswith('<pre class="tf-scroll tf-code tf-x" tabindex="0"'), listing.count(chr(10))
(True, 1)
"""

from __future__ import annotations

from functools import cache

from pygments import highlight
from pygments.formatters import HtmlFormatter

from ...core.lexical import split_lines
from ...core.syntax import Declare, Define
from ...lexer import TenFlangLexer, TenFlangStyle
from .html import esc, scroll_region

__all__ = ["MAX_LISTED", "highlight_lines", "line_row", "more_lines", "pane", "source_lines",
           "statement_name"]

# Lines listed per program. Beyond this a listing is megabytes of HTML in the notebook file
# and nobody scrolls it: the rest is one attribute away (model.gcp, model.program.text()).
MAX_LISTED = 2500


@cache
def _tools() -> tuple[TenFlangLexer, HtmlFormatter]:
    # stripnl=False: leading blank lines must survive, or line numbers would shift
    return (TenFlangLexer(stripnl=False, ensurenl=True),
            HtmlFormatter(noclasses=True, nowrap=True, style=TenFlangStyle))


def highlight_lines(lines: list[str]) -> list[str]:
    """Each line as highlighted HTML with inline styles (renders without any stylesheet).

    >>> highlight_lines(["define z = mul x w"])[0][:40]
    '<span style="color: #15803D; font-weight'

    """
    if not lines:
        return []
    lexer, formatter = _tools()
    out = highlight("\n".join(lines) + "\n", lexer, formatter).split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):  # never expected; keep the listing aligned regardless
        return [esc(line) for line in lines]
    return out


def source_lines(text: str) -> list[str]:
    """The cell's lines as the parser numbers them (from 1)."""
    return split_lines(text)


def statement_name(statement: object) -> str | None:
    """The variable a statement declares or defines (None: a comment, a directive)."""
    if isinstance(statement, Declare):
        return statement.name
    return statement.target if isinstance(statement, Define) else None


def line_row(tags: str, number: int, width: int, code: str, before: str = "") -> str:
    """One listed line: its number (right-aligned in ``width`` digits: the text aligns
    itself), what goes ``before`` the code, the code, a newline.

    >>> print(line_row(' class="tf-line"', 7, 2, "define z = mul x w"))
    <span class="tf-line"><span class="tf-ln" style="color:#57606b"> 7  </span>define z = mul x w
    </span>
    """
    number_text = f"{number:>{width}}  "
    return (f'<span{tags}><span class="tf-ln" style="color:#57606b">{number_text}</span>'
            f"{before}{code}\n</span>")


def pane(rows: list[str], cls: str, label: str, hang: int = 0) -> str:
    """The listing: ``rows`` in a scrolling ``<pre>``, a region named ``label`` that takes
    the keyboard's focus (so it scrolls by keys: WCAG 2.1.1).

    ``hang``: long lines wrap at the pane's edge instead of running past it, and go on
    ``hang`` characters in (the number, its two spaces and what goes before the code), under
    their code. The wrapping is inline (it holds where no stylesheet applies), the indent is
    the stylesheet's (``.tf-hang``: it needs the rows as blocks, which a sanitized output must
    not get: its text would read with a blank line between lines).

    >>> pane([], "tf-x", "x", hang=4).split(";")[-1]
    '--tf-hang:4"></pre>'
    """
    region = scroll_region(label)
    if not hang:
        return f'<pre class="tf-scroll tf-code {cls}" {region}>{"".join(rows)}</pre>'
    # word-break: JupyterLab breaks an output's pre anywhere (break-all), even mid-word
    style = f"white-space:pre-wrap;word-break:normal;overflow-wrap:break-word;--tf-hang:{hang}"
    return (f'<pre class="tf-scroll tf-code {cls} tf-hang" {region} style="{style}">'
            f'{"".join(rows)}</pre>')


def more_lines(total: int, where: str) -> str:
    if total <= MAX_LISTED:
        return ""
    return (f'<div class="tf-note tf-more">… {total - MAX_LISTED} more lines not listed '
            f"(all {total}: <code>{esc(where)}</code>).</div>")
