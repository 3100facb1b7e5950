"""Program listings: the shape program beside its GCP, syntax-highlighted, with line provenance.

Every listed line is an element carrying ``data-tf-line`` (for a GCP line: the shape-program
line it derives from, ``Gcp.lines[i].origin``) so the hover script can connect them. A listing
is a ``<pre>`` whose lines end in real newlines and start with their number, padded with
spaces: its text reads line by line even where no stylesheet applies (an untrusted notebook).

>>> from tenflang_nb.core.api import compile, parse
>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> p = parse(SEED_EXAMPLE)
>>> html = side_by_side(SEED_EXAMPLE, p, compile(p), 49)
>>> html.count('data-tf-gcp-line=')
37
"""

from __future__ import annotations

from functools import cache

from pygments import highlight
from pygments.formatters import HtmlFormatter

from ..core.backprop import Gcp
from ..core.lexical import split_lines
from ..core.program import Program
from ..core.syntax import Declare, Define
from ..lexer import TenFlangLexer
from .views_html import attrs, esc

__all__ = ["MAX_LISTED", "highlight_lines", "listing_expanded", "side_by_side", "source_lines"]

# Lines listed per program. Beyond this a listing is megabytes of HTML in the notebook file
# and nobody scrolls it: the rest is one attribute away (model.gcp, model.program.text()).
MAX_LISTED = 2500


@cache
def _tools() -> tuple[TenFlangLexer, HtmlFormatter]:
    # stripnl=False: leading blank lines must survive, or line numbers would shift
    return (TenFlangLexer(stripnl=False, ensurenl=True),
            HtmlFormatter(noclasses=True, nowrap=True, style="default"))


def highlight_lines(lines: list[str]) -> list[str]:
    """Each line as highlighted HTML with inline styles (renders without any stylesheet).

    >>> highlight_lines(["define z = mul x w"])[0][:40]
    '<span style="color: #008000; font-weight'

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


def names_by_line(program: Program) -> dict[int, list[str]]:
    """Shape-program line -> the variables it declares or defines (a vector line: many)."""
    found: dict[int, list[str]] = {}
    for s in program.statements:
        name = s.name if isinstance(s, Declare) else s.target if isinstance(s, Define) else None
        if name is not None:
            found.setdefault(s.src.line, []).append(name)
    return found


def _row(tags: str, number: int, width: int, code: str, before: str = "") -> str:
    """One listed line: its number (right-aligned in ``width`` digits: the text aligns
    itself), what goes ``before`` the code, the code, a newline.

    >>> print(_row(' class="tf-line"', 7, 2, "define z = mul x w"))
    <span class="tf-line"><span class="tf-ln" style="color:#9ca3af"> 7  </span>define z = mul x w
    </span>
    """
    number_text = f"{number:>{width}}  "
    return (f'<span{tags}><span class="tf-ln" style="color:#9ca3af">{number_text}</span>'
            f"{before}{code}\n</span>")


def _pane(rows: list[str], cls: str) -> str:
    return f'<pre class="tf-scroll tf-code {cls}">{"".join(rows)}</pre>'


def _more(total: int, where: str) -> str:
    if total <= MAX_LISTED:
        return ""
    return (f'<div class="tf-note tf-more">… {total - MAX_LISTED} more lines not listed '
            f"(all {total}: <code>{esc(where)}</code>).</div>")


def _shape_listing(source: str, program: Program, name: str) -> str:
    lines = source_lines(source)
    nodes = names_by_line(program)
    total, lines = len(lines), lines[:MAX_LISTED]
    width = len(str(len(lines)))
    rows = []
    for number, code in enumerate(highlight_lines(lines), 1):
        names = nodes.get(number)
        tags = attrs(cls="tf-line tf-shape-line", data_tf_line=number,
                     data_tf_nodes=" ".join(names) if names else None)
        rows.append(_row(tags, number, width, code))
    return _pane(rows, "tf-shape") + _more(total, f"{name}.source")


def _gcp_listing(gcp: Gcp, name: str) -> str:
    listed = gcp.lines[:MAX_LISTED]
    texts = [str(line.statement) for line in listed]
    width = len(str(len(listed)))
    rows = []
    for number, (line, code) in enumerate(zip(listed, highlight_lines(texts), strict=True), 1):
        title = f"from line {line.origin}" if line.origin else "header"
        tags = attrs(cls="tf-line tf-gcp-line", data_tf_line=line.origin,
                     data_tf_gcp_line=number, data_tf_section=line.section, title=title)
        rows.append(_row(tags, number, width, code))
    more = _more(len(gcp.lines), f"{name}.gcp_full" if gcp.full else f"{name}.gcp")
    return _pane(rows, "tf-gcp") + more


def side_by_side(source: str, program: Program, gcp: Gcp | None, other_count: int | None,
                 gcp_note: str = "", name: str = "model") -> str:
    """The shape program (left) and its GCP (right), line counts of both GCP flavours.

    ``other_count`` is the line count of the GCP flavour not shown (pruned <-> full).
    """
    listing = _shape_listing(source, program, name)
    shape = (f'<div class="tf-col"><h4>Shape program ({len(source_lines(source))} lines)</h4>'
             f"{listing}</div>")
    if gcp is None:
        right = f'<div class="tf-col"><h4>Gradient Computing Program</h4>{gcp_note}</div>'
        return f'<div class="tf-row tf-sbs">{shape}{right}</div>'
    shown, other = ("full", "pruned") if gcp.full else ("pruned", "full")
    counts = f"{len(gcp.lines)} lines {shown}"
    if other_count is not None:
        counts += f" · {other_count} lines {other}"
    tags = attrs(cls="tf-counts", data_tf_gcp_lines=len(gcp.lines), data_tf_gcp_other=other_count)
    listing = _gcp_listing(gcp, name)
    right = (f'<div class="tf-col"><h4>Gradient Computing Program <span{tags}>({counts})</span>'
             f"</h4>{listing}{gcp_note}</div>")
    return f'<div class="tf-row tf-sbs">{shape}{right}</div>'


def listing_expanded(program: Program, name: str = "model") -> str:
    """The program after expanding vectors and macros, each line tagged with its user line."""
    statements = program.statements[:MAX_LISTED]
    texts = [str(s) for s in statements]
    width = len(str(len(statements)))
    from_width = 1 + max((len(str(s.src.line)) for s in statements), default=1)
    rows = []
    for number, (s, code) in enumerate(zip(statements, highlight_lines(texts), strict=True), 1):
        name = s.name if isinstance(s, Declare) else s.target if isinstance(s, Define) else None
        tags = attrs(cls="tf-line tf-expanded-line", data_tf_line=s.src.line, data_tf_nodes=name)
        written = f"←{s.src.line}".rjust(from_width)
        before = (f'<span class="tf-from" title="written on line {s.src.line}" '
                  f'style="color:#6b7280">{written}  </span>')
        rows.append(_row(tags, number, width, code, before))
    note = "" if program.expanded else (
        '<div class="tf-note">This program uses no vectors or macros: the expansion is the '
        "program itself.</div>")
    total = len(program.statements)
    return (f'<div class="tf-expanded"><h4>Expanded program ({total} statements; '
            f"←N: the line you wrote)</h4>{note}"
            f'{_pane(rows, "tf-expanded-code")}{_more(total, f"{name}.program.text()")}</div>')
