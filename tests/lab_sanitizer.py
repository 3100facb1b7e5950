"""JupyterLab's sanitizer of untrusted HTML outputs, modelled in Python for unit tests, and
the text a browser would show of the result.

A model of ``Sanitizer`` in ``@jupyterlab/apputils`` (JupyterLab 4.6, built on sanitize-html),
read from its source: the same allowed tags, attributes and CSS property names. Like it:

- ``<script>``, ``<style>`` and ``<noscript>`` go with their content;
- any other tag not allowed (``<svg>``, ``<g>``, ``<text>``...) goes, but its text stays, as
  loose words where the tag was;
- attributes not allowed go (``data-*`` among them), ``id`` becomes ``data-jupyter-id``;
- a ``style`` attribute keeps only the allowed properties.

Simplified: property values are not matched against Lab's per-property patterns, and URL
schemes are not checked (Lab checks them on ``href`` and ``cite`` only: an ``<img>``'s
``data:`` source stays). tests/test_browser.py checks the real sanitizer in Chromium.

>>> print(sanitize('<div data-x="1" style="color:red;user-select:none">a<svg><text>b</text>'
...                '</svg><style>p{}</style></div>'))
<div style="color:red">ab</div>
>>> shown_text(sanitize('<div style="display:none">hidden</div><pre>1  a\\n2  b\\n</pre>'))
'1  a\\n2  b'
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

ALLOWED_TAGS = frozenset("""
a abbr acronym address area article aside audio b bdi bdo big blockquote br button canvas
caption center cite code col colgroup colspan command data datalist dd del details dfn dir
div dl dt em fieldset figcaption figure font footer form h1 h2 h3 h4 h5 h6 header hgroup hr
i img input ins kbd label legend li map mark menu meter nav nobr ol optgroup option output p
pre progress q rowspan s samp section select small source span strike strong sub summary sup
table tbody td textarea tfoot th thead time tr track tt u ul var video wbr
""".split())
# sanitize-html drops these with everything inside them
NON_TEXT_TAGS = frozenset({"script", "style", "noscript", "textarea", "option"})
GLOBAL_ATTRIBUTES = frozenset("""
class data-jupyter-id dir draggable hidden id inert itemprop itemref itemscope lang spellcheck
style title translate
""".split())
TAG_ATTRIBUTES = {
    "a": {"accesskey", "coords", "href", "hreflang", "rel", "shape", "tabindex", "target",
          "type"},
    "details": {"open"},
    "div": {"align"},
    "font": {"color", "face", "size"},
    "img": {"align", "alt", "border", "height", "hspace", "ismap", "src", "usemap", "vspace",
            "width"},
    "li": {"type", "value"},
    "ol": {"compact", "reversed", "start", "type"},
    "pre": {"width"},
    "table": {"align", "bgcolor", "border", "cellpadding", "cellspacing", "frame", "rules",
              "summary", "width"},
    "td": {"abbr", "align", "axis", "bgcolor", "char", "charoff", "colspan", "headers",
           "height", "nowrap", "rowspan", "scope", "valign", "width"},
    "th": {"abbr", "align", "axis", "bgcolor", "char", "charoff", "colspan", "headers",
           "height", "nowrap", "rowspan", "scope", "valign", "width"},
    "tr": {"align", "bgcolor", "char", "charoff", "valign"},
}
ALLOWED_STYLES = frozenset("""
backface-visibility background background-attachment background-clip background-color
background-image background-origin background-position background-repeat background-size
border border-bottom border-bottom-color border-bottom-left-radius border-bottom-right-radius
border-bottom-style border-bottom-width border-collapse border-color border-left
border-left-color border-left-style border-left-width border-radius border-right
border-right-color border-right-style border-right-width border-spacing border-style border-top
border-top-color border-top-left-radius border-top-right-radius border-top-style
border-top-width border-width bottom box box-shadow box-sizing caption-side clear clip color
cursor direction display display-inside display-outside elevation empty-cells float font
font-family font-size font-stretch font-style font-variant font-weight height left
letter-spacing line-height list-style list-style-image list-style-position list-style-type
margin margin-bottom margin-left margin-right margin-top max-height max-width min-height
min-width opacity outline outline-color outline-style outline-width overflow overflow-wrap
overflow-x overflow-y padding padding-bottom padding-left padding-right padding-top
page-break-after page-break-before page-break-inside pause-after perspective pitch pitch-range
position quotes resize richness right speak speak-header speak-numeral speak-punctuation
speech-rate stress table-layout text-align text-decoration text-indent text-overflow
text-shadow text-transform text-wrap top unicode-bidi vertical-align visibility volume
white-space width word-break word-spacing word-wrap z-index zoom align-content align-items
align-self flex flex-basis flex-direction flex-grow flex-shrink flex-wrap grid grid-area
grid-auto-columns grid-auto-flow grid-auto-rows grid-column grid-column-end grid-column-gap
grid-column-start grid-gap grid-row grid-row-end grid-row-gap grid-row-start grid-template
grid-template-areas grid-template-columns grid-template-rows gap row-gap column-gap
justify-content justify-items justify-self order place-content place-items place-self
""".split())
VOID_TAGS = frozenset({"area", "br", "col", "hr", "img", "input", "source", "track", "wbr"})
BLOCK_TAGS = frozenset({"address", "article", "aside", "blockquote", "details", "div", "dl",
                        "dt", "dd", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
                        "h6", "header", "li", "ol", "p", "pre", "section", "summary", "table",
                        "tr", "ul"})


@dataclass
class Element:
    """A parsed element: its tag, attributes and children (elements and text)."""

    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Element | str] = field(default_factory=list)

    def styles(self) -> dict[str, str]:
        """The inline style as property -> value."""
        found = {}
        for part in self.attrs.get("style", "").split(";"):
            name, _, value = part.partition(":")
            if name.strip():
                found[name.strip().lower()] = value.strip()
        return found

    def hidden(self) -> bool:
        return self.styles().get("display", "").replace(" ", "") == "none"

    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def iter(self) -> list[Element]:
        """This element and every element inside it, in document order."""
        found = [self]
        for child in self.children:
            if isinstance(child, Element):
                found += child.iter()
        return found

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [e for e in self.iter()[1:] if (tag is None or e.tag == tag)
                and (cls is None or cls in e.classes())]

    def text(self) -> str:
        """All the text inside, hidden or not (like ``textContent``)."""
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID_TAGS:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(markup: str) -> Element:
    """``markup`` as a tree under a ``#root`` element."""
    builder = _TreeBuilder()
    builder.feed(markup)
    builder.close()
    return builder.root


def _clean(element: Element) -> list[Element | str]:
    kept: list[Element | str] = []
    for child in element.children:
        if isinstance(child, str):
            kept.append(child)
        elif child.tag in NON_TEXT_TAGS and child.tag not in ALLOWED_TAGS:
            continue
        elif child.tag not in ALLOWED_TAGS:
            kept += _clean(child)  # the tag goes, its text stays
        else:
            allowed = GLOBAL_ATTRIBUTES | TAG_ATTRIBUTES.get(child.tag, set())
            attrs = {k: v for k, v in child.attrs.items() if k in allowed}
            if "id" in attrs:
                attrs["data-jupyter-id"] = attrs.pop("id")
            if "style" in attrs:
                styles = {k: v for k, v in child.styles().items() if k in ALLOWED_STYLES}
                attrs["style"] = ";".join(f"{k}:{v}" for k, v in styles.items())
            kept.append(Element(child.tag, attrs, _clean(child)))
    return kept


def sanitize_tree(markup: str) -> Element:
    """``markup`` as JupyterLab would keep it in an untrusted notebook, as a tree."""
    root = parse(markup)
    return Element("#root", {}, _clean(root))


def serialize(element: Element) -> str:
    out = []
    for child in element.children:
        if isinstance(child, str):
            out.append(html.escape(child, quote=False))
            continue
        attrs = "".join(f' {k}="{html.escape(v)}"' for k, v in child.attrs.items())
        if child.tag in VOID_TAGS:
            out.append(f"<{child.tag}{attrs}/>")
        else:
            out.append(f"<{child.tag}{attrs}>{serialize(child)}</{child.tag}>")
    return "".join(out)


def sanitize(markup: str) -> str:
    """``markup`` as JupyterLab would keep it in an untrusted notebook."""
    return serialize(sanitize_tree(markup))


def shown_text(markup_or_tree: str | Element) -> str:
    """Roughly what ``innerText`` gives: text outside ``display:none`` elements, whitespace
    collapsed except inside ``<pre>``, a line break around block elements."""
    tree = parse(markup_or_tree) if isinstance(markup_or_tree, str) else markup_or_tree
    parts: list[str] = []

    def walk(element: Element, pre: bool) -> None:
        for child in element.children:
            if isinstance(child, str):
                parts.append(child if pre else re.sub(r"\s+", " ", child))
            elif not child.hidden():
                block = child.tag in BLOCK_TAGS
                if block:
                    parts.append("\n")
                walk(child, pre or child.tag == "pre")
                if block:
                    parts.append("\n")

    walk(tree, False)
    return re.sub(r"\n[ \n]*\n", "\n", "".join(parts)).strip()
