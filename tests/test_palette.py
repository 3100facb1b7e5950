"""The palette of TenFlang's syntax (tenflang_nb/palette.py): every colour reads on every
background it is drawn on, and the stylesheets made from it hold every category.

Where each one is used is checked where it is used: the listings (tests/test_views.py), the
Pygments style (tests/test_lexer.py), the editor (tests/test_labextension.py and, in the
browser, tests/test_browser.py) and the website (tests/test_site_browser.py)."""

from __future__ import annotations

import re

import pytest

from tenflang_nb.palette import CATEGORIES, PALETTE, Colour, contrast, css

# light: a view's white card, its listings' panes, JupyterLab's light editor, the website's
# light code cells; dark: JupyterLab's dark editor (its two layout colours), a dark editor's
# usual #1e1e1e, the website's dark code cells
LIGHT_BACKGROUNDS = ("#ffffff", "#fafafa", "#f5f5f5", "#fefefe")
DARK_BACKGROUNDS = ("#111111", "#212121", "#1e1e1e", "#2b2b2b")
READABLE = 4.5  # WCAG AA for text


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_colour_reads_on_its_backgrounds(category: str) -> None:
    colour = PALETTE[category]
    for value in (colour.light, colour.dark):
        assert re.fullmatch(r"#[0-9a-f]{6}", value), value
    for background in LIGHT_BACKGROUNDS:
        assert contrast(colour.light, background) >= READABLE, (category, background)
    for background in DARK_BACKGROUNDS:
        assert contrast(colour.dark, background) >= READABLE, (category, background)


def test_what_the_highlighters_must_tell_apart_looks_different() -> None:
    """An operator, a misspelled one, a name, a kind and an instruction never share a look."""
    looks = {c: (PALETTE[c].light, PALETTE[c].bold, PALETTE[c].underline)
             for c in ("operator", "invalid", "name", "kind", "instruction", "derivative")}
    assert len(set(looks.values())) == len(looks), looks
    assert PALETTE["invalid"].underline


def test_contrast_is_wcags() -> None:
    assert contrast("#ffffff", "#ffffff") == pytest.approx(1.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # a known value
    assert contrast("#000000", "#ffffff") == contrast("#ffffff", "#000000")


def test_a_stylesheet_holds_every_category_light_and_dark() -> None:
    sheet = css(lambda c: f".x .t-{c}", "body.dark")
    for category, colour in PALETTE.items():
        light = re.search(rf"^\.x \.t-{category} \{{ ([^}}]*) \}}$", sheet, re.M)
        assert light, category
        assert f"color: {colour.light};" in light.group(1)
        assert f"font-weight: {'bold' if colour.bold else 'normal'}" in light.group(1)
        assert f"body.dark .x .t-{category} {{ color: {colour.dark} }}" in sheet
    # it goes into a JavaScript string in the extension's bundle: nothing to escape
    assert "'" not in sheet and "\\" not in sheet and sheet.isascii()


def test_pygments_strings() -> None:
    assert Colour("#123456", "#abcdef", bold=True, italic=True).pygments() == \
        "#123456 bold italic"
    assert Colour("#123456", "#abcdef", underline=True).pygments() == "#123456 underline"
