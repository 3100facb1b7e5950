"""The ``expanded`` view: the program with the original's vectors and macros expanded, each
statement tagged with the line it was written on.

>>> from tenflang_nb.core.api import parse
>>> html = listing_expanded(parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n"))
>>> html.count("tf-expanded-line"), "uses no vectors or macros" in html
(3, True)
"""

from __future__ import annotations

from ...core.program import Program
from .base import Shown, ViewOptions
from .html import attrs
from .listing import MAX_LISTED, highlight_lines, line_row, more_lines, pane, statement_name

__all__ = ["listing_expanded", "render"]


def render(model: Shown, o: ViewOptions) -> str:
    return listing_expanded(model.program, model.name)


def listing_expanded(program: Program, name: str = "model") -> str:
    """The program after expanding vectors and macros, each line tagged with its user line."""
    statements = program.statements[:MAX_LISTED]
    texts = [str(s) for s in statements]
    width = len(str(len(statements)))
    from_width = 1 + max((len(str(s.src.line)) for s in statements), default=1)
    rows = []
    for number, (s, code) in enumerate(zip(statements, highlight_lines(texts), strict=True), 1):
        tags = attrs(cls="tf-line tf-expanded-line", data_tf_line=s.src.line,
                     data_tf_nodes=statement_name(s))
        written = f"←{s.src.line}".rjust(from_width)
        before = (f'<span class="tf-from" title="written on line {s.src.line}" '
                  f'style="color:#6b7280">{written}  </span>')
        rows.append(line_row(tags, number, width, code, before))
    note = "" if program.expanded else (
        '<div class="tf-note">This program uses no vectors or macros: the expansion is the '
        "program itself.</div>")
    total = len(program.statements)
    return (f'<div class="tf-expanded"><h4>Expanded program ({total} statements; '
            f"←N: the line you wrote)</h4>{note}"
            f'{pane(rows, "tf-expanded-code", "expanded program", hang=width + from_width + 4)}'
            f'{more_lines(total, f"{name}.program.text()")}</div>')
