"""What ``%%tenflang_gcp`` shows when the edited GCP is accepted: which model it made, and the
edit itself as a diff against the compiled GCP (its lines removed, the edited GCP's lines
added or changed), in a ``<pre>`` with inline colours so it reads in an untrusted notebook.

>>> from tenflang_nb.core.backprop import compile_program
>>> from tenflang_nb.core.edited import edit_gcp
>>> from tenflang_nb.core.program import parse
>>> gcp = compile_program(parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n"))
>>> shown = edit_summary("sq_edited", "sq", edit_gcp(gcp, gcp.text.replace("add w w", "w"),
...                                                  "sq (edited GCP)"))
>>> shown
<TenFlang model 'sq_edited': the GCP of 'sq' with 1 line changed, 1 removed>
>>> print(shown.html.split('<pre style="margin:4px 0;color:#111827">')[1].split("</pre>")[0])
<span style="background:#fee2e2">- 11 | define d/L/d/w = add w w</span>
<span style="background:#dcfce7">+ 11 | define d/L/d/w = w</span>
"""

from __future__ import annotations

from ...core.edited import EditedGcp
from .html import Rendered, esc, new_prefix, page

__all__ = ["edit_summary"]

REMOVED = "#fee2e2"
ADDED = "#dcfce7"


def _count(n: int, what: str) -> str:
    return f"{n} line{'s' * (n != 1)} {what}"


def edit_summary(name: str, of: str, edited: EditedGcp) -> Rendered:
    """The model ``name`` trains with ``edited``, the GCP of model ``of`` edited: a headline
    and the diff (removed lines numbered as in ``of``'s GCP, the others as in the edited
    one)."""
    original = edited.original
    counts = [_count(len(edited.changed), "changed")]
    if edited.removed:
        counts.append(f"{len(edited.removed)} removed")
    what = ", ".join(counts) if edited.changed or edited.removed else "no line changed"
    rows = []
    if original is not None:
        rows += [(n, "-", REMOVED, str(original.lines[n - 1].statement))
                 for n in edited.removed]
    rows += [(n, "+", ADDED, str(edited.lines[n - 1].statement)) for n in edited.changed]
    width = len(str(max((n for n, *_ in rows), default=1)))
    listing = "\n".join(f'<span style="background:{colour}">{mark} {n:>{width}} | '
                        f"{esc(text)}</span>" for n, mark, colour, text in rows)
    head = (f"<div><b>{esc(name)}</b>: the GCP of <code>{esc(of)}</code> edited, {esc(what)}; "
            f"<code>{esc(name)}.gcp</code> is the edited GCP, <code>{esc(name)}.gradcheck(...)"
            "</code> names the weights whose gradient it broke.</div>")
    # the text's colour with its background's: a dark theme's pale text must not sit on them
    body = head + (f'<pre style="margin:4px 0;color:#111827">{listing}</pre>' if rows else "")
    return Rendered(page(body, new_prefix(body), interactive=False),
                    f"<TenFlang model '{name}': the GCP of '{of}' with {what}>")
