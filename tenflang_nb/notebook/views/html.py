"""The HTML plumbing every view shares: escaping, per-output id prefixes, the static CSS/JS,
the two renderings of one output (:func:`styled_only`, :func:`plain_only`), and
:class:`Rendered`, a displayable bundle with a stable ``text/plain``.

An output must read correctly in two worlds. Trusted (the user ran the cell; nbconvert; the
website) it keeps our ``<style>``, ``<script>`` and inline ``<svg>``. Untrusted (a notebook
downloaded, cloned or opened on Binder) JupyterLab sanitizes it: ``<style>``, ``<script>``,
``<svg>`` and ``data-*`` attributes go, an svg's text stays behind as loose words; inline
``style`` attributes (display, colours, sizes, borders, flex) and ``<img src="data:...">``
survive. So meaning never rests on a class alone, text is laid out by real newlines in
``<pre>``, and where the two worlds need different content both are in the output: the
styled-only part hidden by an inline style our stylesheet overrides, the plain-only part
hidden by the stylesheet itself.

>>> r = Rendered("<b>hi</b>", "<hi>")
>>> sorted(r._repr_mimebundle_())
['text/html', 'text/plain']
"""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["CARD_STYLE", "SR_ONLY", "Rendered", "attrs", "esc", "new_prefix", "page", "plain_only",
           "png_img", "scroll_region", "static_text", "styled_only", "wide"]

_counter = itertools.count(1)
# a view's colours, set on its root element (also by tenflang.css, for the trusted output)
CARD_STYLE = "color:#111827;background:#ffffff;padding:6px;border-radius:6px"
# text for screen readers only, out of sight (inline: it must hold without our stylesheet)
SR_ONLY = ("position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
           "clip:rect(0,0,0,0);white-space:nowrap;border:0")


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


def scroll_region(label: str) -> str:
    """The attributes of a pane that scrolls: a region named ``label`` that takes the
    keyboard's focus, so it scrolls by keys too (WCAG 2.1.1).

    >>> scroll_region("edges")
    'tabindex="0" role="region" aria-label="edges"'
    """
    return f'tabindex="0" role="region" aria-label="{esc(label)}"'


def wide(table: str, label: str) -> str:
    """``table`` in a pane of its own width that scrolls sideways when the page is narrower
    (320 CSS pixels, a zoomed page: WCAG 1.4.10), by keys too. Styled inline: the same in a
    sanitized output.

    >>> wide("<table></table>", "costs")[:60]
    '<div class="tf-wide" tabindex="0" role="region" aria-label="'
    """
    return (f'<div class="tf-wide" {scroll_region(label)} style="overflow-x:auto;'
            f'max-width:100%">{table}</div>')


def new_prefix(content: str) -> str:
    """A prefix for the ids of one output: unique within a kernel session, yet the same when
    a fresh kernel reruns the same cells (so nbval sees identical HTML). Matches
    ``tfnb[0-9a-f]{10}`` for sanitizers; no '-' because Graphviz escapes it in SVG ids.

    >>> new_prefix("x").startswith("tfnb"), len(new_prefix("x"))
    (True, 14)
    """
    digest = hashlib.sha1(f"{next(_counter)}\0{content}".encode()).hexdigest()
    return "tfnb" + digest[:10]


def styled_only(inner: str, cls: str = "") -> str:
    """``inner`` shown only where our stylesheet applies (trusted output, nbconvert, the
    website); a sanitized output hides it, e.g. an ``<svg>`` whose text would otherwise be
    left behind as loose words.

    >>> styled_only("<svg/>", "tf-graph-svg")
    '<div class="tf-styled-only tf-graph-svg" style="display:none"><svg/></div>'
    """
    classes = f"tf-styled-only {cls}".strip()
    return f'<div class="{classes}" style="display:none">{inner}</div>'


def plain_only(inner: str, cls: str = "") -> str:
    """``inner`` shown only where our stylesheet does not apply (a sanitized, untrusted
    output): the stand-in for what :func:`styled_only` holds.

    >>> plain_only("<img/>")
    '<div class="tf-plain-only"><img/></div>'
    """
    classes = f"tf-plain-only {cls}".strip()
    return f'<div class="{classes}">{inner}</div>'


def png_img(png: bytes, alt: str, width: int | None = None, cls: str = "") -> str:
    """An ``<img>`` holding ``png`` itself (a data URI: it survives sanitizing, needs no file
    and no network), at most as wide as its output.

    >>> for part in png_img(b"\\x89PNG", "a graph", 120).split(" src="): print(part)
    <img alt="a graph" width="120" style="max-width:100%;height:auto"
    "data:image/png;base64,iVBORw=="/>
    """
    data = base64.b64encode(png).decode("ascii")
    tags = attrs(cls=cls or None, alt=alt, width=width, style="max-width:100%;height:auto")
    return f'<img{tags} src="data:image/png;base64,{data}"/>'


@cache
def static_text(name: str) -> str:
    """A file of ``views/static/`` (the CSS and the scripts every output embeds)."""
    return resources.files("tenflang_nb.notebook.views").joinpath("static", name).read_text(
        "utf-8")


def page(body: str, prefix: str, *, interactive: bool = True) -> str:
    """Wrap ``body`` in the root element of one output, with the CSS (and the hover script).

    The script finds its root through ``document.currentScript`` so two outputs never
    share state; the id is the fallback for renderers that run scripts out of place.
    """
    script = ""
    if interactive:
        script = "<script>" + static_text("hover.js").replace("__TF_PREFIX__", prefix) + "</script>"
    # the card's colours also inline: in a sanitized output under a dark theme, the
    # highlighted code's inline colours must still sit on white
    return (f'<div class="tf-root" id="{prefix}" data-tf-prefix="{prefix}" '
            f'style="{CARD_STYLE}"><style>{static_text("tenflang.css")}</style>{body}{script}</div>')


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
