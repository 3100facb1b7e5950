"""The HTML plumbing every view shares: escaping, per-output id prefixes, the static CSS/JS,
and :class:`Rendered`, a displayable bundle with a stable ``text/plain``.

>>> r = Rendered("<b>hi</b>", "<hi>")
>>> sorted(r._repr_mimebundle_())
['text/html', 'text/plain']
"""

from __future__ import annotations

import hashlib
import html
import itertools
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["Rendered", "attrs", "esc", "new_prefix", "page", "static_text"]

_counter = itertools.count(1)


def esc(text: object) -> str:
    """HTML-escape ``text`` (quotes included, so it is safe inside attributes)."""
    return html.escape(str(text), quote=True)


def attrs(**values: object) -> str:
    """`` name="value"`` pairs; ``data_tf_line`` becomes ``data-tf-line``; None is left out.

    >>> attrs(data_tf_line=9, cls="tf-line", title=None)
    ' data-tf-line="9" class="tf-line"'
    """
    out = []
    for key, value in values.items():
        if value is None:
            continue
        name = "class" if key == "cls" else key.replace("_", "-")
        out.append(f' {name}="{esc(value)}"')
    return "".join(out)


def new_prefix(content: str) -> str:
    """A prefix for the ids of one output: unique within a kernel session, yet the same when
    a fresh kernel reruns the same cells (so nbval sees identical HTML). Matches
    ``tfnb[0-9a-f]{10}`` for sanitizers; no '-' because Graphviz escapes it in SVG ids.

    >>> new_prefix("x").startswith("tfnb"), len(new_prefix("x"))
    (True, 14)
    """
    digest = hashlib.sha1(f"{next(_counter)}\0{content}".encode()).hexdigest()
    return "tfnb" + digest[:10]


@cache
def static_text(name: str) -> str:
    """A file of ``notebook/static/`` (the CSS and the scripts every output embeds)."""
    return resources.files("tenflang_nb.notebook").joinpath("static", name).read_text("utf-8")


def page(body: str, prefix: str, *, interactive: bool = True) -> str:
    """Wrap ``body`` in the root element of one output, with the CSS (and the hover script).

    The script finds its root through ``document.currentScript`` so two outputs never
    share state; the id is the fallback for renderers that run scripts out of place.
    """
    script = ""
    if interactive:
        script = "<script>" + static_text("hover.js").replace("__TF_PREFIX__", prefix) + "</script>"
    return (f'<div class="tf-root" id="{prefix}" data-tf-prefix="{prefix}">'
            f"<style>{static_text('tenflang.css')}</style>{body}{script}</div>")


class Rendered:
    """Something to display: HTML for notebooks, a short stable text for everything else.

    >>> Rendered("<p>x</p>", "<TenFlang views>")
    <TenFlang views>
    """

    def __init__(self, html_text: str, plain: str) -> None:
        self.html = html_text
        self.plain = plain

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.html, "text/plain": self.plain}

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.plain
