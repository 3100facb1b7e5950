"""The colours of TenFlang's syntax: one table, read by everything that highlights TenFlang.

A *category* is what the highlighters tell apart (an instruction, a kind, an operator, ...).
Its colour is defined here once, for a light and for a dark background, and used by:

* the notebook's listings, the website and nbconvert: the Pygments lexer's style
  (:class:`tenflang_nb.lexer.TenFlangStyle`; the views inline it, on their white card);
* the editor: the JupyterLab extension's stylesheet (:func:`css`, written into its bundle by
  ``python -m tenflang_nb.editor_words``; dark where JupyterLab's theme is dark);
* the website's TenFlang cells (:func:`css` again, dark in the site's dark mode).

Only a new colour goes here; a new category also needs its token type in ``lexer.py`` and its
tag in ``labextension/src/language.ts`` (the tests hold the three to one list).

>>> PALETTE["kind"].light, PALETTE["kind"].pygments()
('#a21caf', '#a21caf')
>>> print(css(lambda c: f".x-{c}", "body.dark", ["instruction"]))
.x-instruction { color: #15803d; font-weight: bold; font-style: normal; text-decoration: none }
body.dark .x-instruction { color: #4ade80 }
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["CATEGORIES", "PALETTE", "Colour", "contrast", "css"]


@dataclass(frozen=True)
class Colour:
    """How one category is drawn: ``light`` on a light background, ``dark`` on a dark one."""

    light: str
    dark: str
    bold: bool = False
    italic: bool = False
    underline: bool = False  # a word that cannot be right (a misspelled operator)

    def pygments(self) -> str:
        """As a Pygments style string (light: listings sit on a white card)."""
        return " ".join([self.light, *(["bold"] if self.bold else []),
                         *(["italic"] if self.italic else []),
                         *(["underline"] if self.underline else [])])

    def declarations(self) -> str:
        """As CSS declarations, every property set (a theme's rule may set the others)."""
        return (f"color: {self.light}; font-weight: {'bold' if self.bold else 'normal'}; "
                f"font-style: {'italic' if self.italic else 'normal'}; text-decoration: "
                + ("underline wavy" if self.underline else "none"))


# Every light colour reads on the listings' #fafafa and a light editor (contrast >= 4.5), every
# dark one on a dark editor's #1e1e1e (tests/test_palette.py measures it).
PALETTE: dict[str, Colour] = {
    # the %%tenflang line of a notebook cell
    "magic": Colour("#7c3aed", "#c4b5fd", bold=True),
    "model": Colour("#1e3a8a", "#bfdbfe", bold=True),
    "option": Colour("#4338ca", "#a5b4fc"),
    "value": Colour("#be123c", "#fda4af"),
    # the program
    "instruction": Colour("#15803d", "#4ade80", bold=True),
    "macro": Colour("#9a3412", "#fdba74", bold=True),
    "kind": Colour("#a21caf", "#f0abfc"),
    "operator": Colour("#1d4ed8", "#93c5fd"),
    "reserved": Colour("#0f766e", "#5eead4"),
    "derivative": Colour("#c2410c", "#fdba74"),
    "name": Colour("#1f2937", "#e5e7eb"),
    "number": Colour("#0e7490", "#67e8f9"),
    "equals": Colour("#4b5563", "#9ca3af"),
    "punctuation": Colour("#4b5563", "#9ca3af"),
    "comment": Colour("#356f6f", "#8fbcbb", italic=True),
    "invalid": Colour("#b91c1c", "#f87171", underline=True),
}
CATEGORIES = tuple(PALETTE)


def css(selector: Callable[[str], str], dark_scope: str,
        categories: Iterable[str] = CATEGORIES) -> str:
    """A stylesheet: ``selector(category)`` in its light colour, and in its dark colour inside
    ``dark_scope`` (a selector of the element that says the theme is dark). No quote or
    backslash: the extension's bundle holds it in a JavaScript string."""
    rules = []
    for category in categories:
        colour = PALETTE[category]
        rules.append(f"{selector(category)} {{ {colour.declarations()} }}")
        rules.append(f"{dark_scope} {selector(category)} {{ color: {colour.dark} }}")
    return "\n".join(rules)


def _luminance(colour: str) -> float:
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(foreground: str, background: str) -> float:
    """WCAG's contrast ratio of two ``#rrggbb`` colours (1 to 21; text wants 4.5).

    >>> round(contrast("#000000", "#ffffff"), 1)
    21.0
    """
    lighter, darker = sorted((_luminance(foreground), _luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)
