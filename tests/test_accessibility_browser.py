"""WCAG 2.1 A and AA (axe-core) in Chromium on everything the package draws, where students
meet it without a kernel: every page of the website (light and dark) and an nbconvert export
of each tutorial from its stored outputs (graph, listings, stepper, predict mode, heatmaps,
figures, checker reports).

The package's outputs (every ``.tf-root``) must have no violation. What axe finds in the page
around them (Sphinx's theme, nbconvert's template) is printed apart and not failed: that markup
is not the package's (see docs/accessibility.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a11y_support import AxeReport, audit_chrome, audit_package, rule_counts
from browser_support import chromium_context, save_screenshot
from docs_support import SiteBuild
from test_site_browser import open_site_page

pytestmark = [pytest.mark.browser, pytest.mark.slow]

try:
    from playwright.sync_api import BrowserContext
except ImportError:  # pragma: no cover - CI installs the [browser] extra; chromium_context
    pass  # skips the tests without it

REPO = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
LOCAL = ("file:", "data:", "blob:", "about:")


@pytest.fixture
def browser() -> Iterator[BrowserContext]:
    with chromium_context(timeout_ms=30_000) as context:
        yield context


def _print(title: str, package: list[AxeReport], chrome: list[AxeReport]) -> None:
    checked = sum(1 for r in package if r.checked)
    outputs = sum(r.checked for r in package)
    print(f"\n{title}: {len(package)} pages, {outputs} package outputs on {checked} of them")
    print("axe violations in the package's outputs (WCAG 2.1 A/AA):")
    print(rule_counts(package))
    print("axe violations in the page around them (not the package's; not failed):")
    print(rule_counts(chrome))


def _assert_none(package: list[AxeReport]) -> None:
    bad = [r.describe() for r in package if r.violations]
    assert not bad, "axe violations in the package's outputs:\n" + "\n".join(bad)


def test_axe_on_every_page_of_the_website(website: SiteBuild, browser: BrowserContext
                                          ) -> None:
    assert website.returncode == 0, f"the site did not build:\n{website.output[-3000:]}"
    docnames = sorted(p.relative_to(website.html).with_suffix("").as_posix()
                      for folder in ("docs", "notebooks")
                      for p in (website.html / folder).glob("*.html"))
    assert len(docnames) >= 8, docnames
    package: list[AxeReport] = []
    chrome: list[AxeReport] = []
    drawn = []  # the pages with package outputs: checked again in the dark theme
    math = 0
    for dark in (False, True):
        for docname in drawn if dark else docnames:
            view = open_site_page(browser, website, docname, dark=dark)
            where = f"{docname}{' (dark)' * dark}"
            package.append(audit_package(view.page, where))
            chrome.append(audit_chrome(view.page, where))
            # the math reads to a screen reader: MathJax adds MathML for it to each formula
            formulas = view.page.locator("mjx-container")
            spoken = view.page.locator("mjx-container > mjx-assistive-mml")
            assert spoken.count() == formulas.count(), f"{where}: math without MathML"
            math += formulas.count()
            view.page.close()
            if package[-1].checked and not dark:
                drawn.append(docname)
    assert sum(r.checked for r in package) >= 20, "too few package outputs found on the site"
    assert math >= 20, f"only {math} formulas typeset"
    _print("website", package, chrome)
    _assert_none(package)


def _export(notebook: Path, folder: Path) -> Path:
    """``notebook`` as nbconvert's HTML (its stored outputs, nothing executed)."""
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(notebook, as_version=4))
    out = folder / f"{notebook.stem}.html"
    out.write_text(body, "utf-8")
    return out


def test_axe_on_an_nbconvert_export_of_each_tutorial(tmp_path: Path, browser: BrowserContext
                                                     ) -> None:
    assert len(TUTORIALS) >= 7, TUTORIALS
    package: list[AxeReport] = []
    chrome: list[AxeReport] = []
    errors: list[str] = []
    for notebook in TUTORIALS:
        page = browser.new_page()
        # nbconvert's template asks a CDN for require.js and MathJax: refused (no network)
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            LOCAL) else route.abort())
        page.on("pageerror", lambda e, name=notebook.name: errors.append(f"{name}: {e}"))
        page.goto(_export(notebook, tmp_path).as_uri())
        page.wait_for_load_state("load")
        _wait_for_steppers(page)
        package.append(audit_package(page, notebook.stem))
        chrome.append(audit_chrome(page, notebook.stem))
        page.close()
    assert sum(r.checked for r in package) >= 20, "too few package outputs in the exports"
    _print("nbconvert exports", package, chrome)
    assert not errors, errors
    _assert_none(package)


def _wait_for_steppers(page: Any) -> None:
    """Every stepper's script has put its interactive part in place."""
    page.wait_for_function("""() => [...document.querySelectorAll('.tf-stepper')]
        .every(s => s.querySelector('.tf-step-live') || !s.querySelector('.tf-step-ui'))""")


# --------------------------------------------------------------- names, roles and the keyboard

# does the element show where the focus is (an outline of 2 px or more, or a ring)?
OUTLINE_JS = """(e) => { const s = getComputedStyle(e);
    return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2
        || s.boxShadow !== 'none'; }"""


def _open_export(browser: BrowserContext, folder: Path, name: str) -> Any:
    page = browser.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        LOCAL) else route.abort())
    page.goto(_export(REPO / "notebooks" / name, folder).as_uri())
    page.wait_for_load_state("load")
    _wait_for_steppers(page)
    return page


def _tab_to(page: Any, selector: str, limit: int = 400) -> Any:
    """Press Tab (only Tab) until the focus is on an element matching ``selector``."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"() => !!document.activeElement?.matches({selector!r})"):
            return page.locator(f"{selector}:focus")
    raise AssertionError(f"Tab never reached {selector}")


def test_graph_and_listings_by_name_and_by_keyboard(tmp_path: Path, browser: BrowserContext
                                                    ) -> None:
    """Notebook 01's export: the graph is one named picture with a text equivalent; the
    side-by-side listings are reached with Tab and the arrow keys light a line's GCP lines
    as hovering does, with a visible focus, and a status line says what lit up."""
    page = _open_export(browser, tmp_path, "01_tour_of_the_three_phases.ipynb")
    graph = page.locator("svg.tf-svg").first
    snapshot = graph.aria_snapshot()
    # one picture, named by its nodes in topological order with their definitions
    assert ('img "Data-flow graph: 1. x: input; 2. w: weight; 3. z = mul x w; 4. o = logistic '
            'z; 5. y: exp_output; 6. diff = sub o y; 7. lambda = pow diff 2"') in snapshot, snapshot
    text = page.locator("details.tf-graph-text").first
    text.locator("summary").click()
    listed = text.aria_snapshot()
    assert 'text: "The graph as text: its 7 variables in topological order' in listed, listed
    assert "region \"topological order\"" in listed and "code: z = mul x w" in listed, listed

    root = page.locator(".tf-root").filter(has=page.locator(".tf-sbs")).first
    root.evaluate("e => e.scrollIntoView()")
    page.locator("body").click(position={"x": 2, "y": 2})
    root.locator("h4").first.evaluate("e => { e.tabIndex = -1; e.focus(); e.blur(); }")
    shape = _tab_to(page, ".tf-sbs pre.tf-shape")
    assert shape.evaluate(OUTLINE_JS), "the focused listing shows no focus"
    assert shape.get_attribute("aria-label").startswith("shape program")
    for _ in range(9):
        page.keyboard.press("ArrowDown")
    current = root.locator(".tf-shape-line.tf-kbd")
    assert current.get_attribute("data-tf-line") == "9"
    lit = root.locator(".tf-gcp-line.tf-hl")
    assert lit.count() >= 3
    assert {lit.nth(i).get_attribute("data-tf-line") for i in range(lit.count())} == {"9"}
    status = root.locator("[role=status]")
    assert "define z = mul x w" in status.text_content(), status.text_content()
    page.keyboard.press("Escape")
    assert lit.count() == 0 and current.count() == 0
    page.close()


def test_stepper_and_predict_mode_by_keyboard_alone(tmp_path: Path, browser: BrowserContext
                                                    ) -> None:
    """Notebook 02's export: the stepper's controls are named in a toolbar, Tab reaches
    them, Enter, Space and the arrow keys step, each step is in a live region; predict mode's
    field, check and reveal work from the keyboard and the verdict is announced."""
    page = _open_export(browser, tmp_path, "02_backprop_by_hand.ipynb")
    stepper = page.locator(".tf-stepper").first
    bar = stepper.locator(".tf-step-bar")
    tree = bar.aria_snapshot()
    for name in ("toolbar \"stepper\"", "button \"step: run the next line", "slider \"step\"",
                 "combobox \"lines per second\""):
        assert name in tree, tree
    caption = stepper.locator(".tf-step-caption")
    assert caption.get_attribute("aria-live") == "polite"
    stepper.evaluate("e => e.scrollIntoView()")
    stepper.locator("h4").first.evaluate("e => { e.tabIndex = -1; e.focus(); e.blur(); }")
    page.locator("body").click(position={"x": 2, "y": 2})
    _tab_to(page, ".tf-step-next")
    count = stepper.locator(".tf-step-count")
    page.keyboard.press("Enter")
    assert count.text_content().startswith("step 1 of ")
    page.keyboard.press("Space")
    assert count.text_content().startswith("step 2 of ")
    page.keyboard.press("ArrowRight")
    assert count.text_content().startswith("step 3 of ")
    assert page.locator(".tf-step-next:focus").count() == 1  # the focus stays on step
    assert caption.locator(".tf-step-what").text_content().strip()
    assert stepper.locator(".tf-step-next").evaluate(OUTLINE_JS), "no visible focus"

    # predict mode: End runs up to the first question; it is asked with the field focused
    predicting = page.locator(".tf-stepper").filter(
        has=page.locator(".tf-step-score")).first
    predicting.evaluate("e => e.scrollIntoView()")
    _tab_to(page, ".tf-stepper:has(.tf-step-score) .tf-step-next")
    page.keyboard.press("End")
    guess = predicting.locator(".tf-step-guess")
    assert guess.evaluate("e => e === document.activeElement")
    assert guess.get_attribute("aria-label").startswith("your value of d/")
    feedback = predicting.locator(".tf-step-feedback")
    assert feedback.get_attribute("aria-live") == "polite"
    page.keyboard.type("12345")
    page.keyboard.press("Enter")
    assert feedback.text_content().startswith("✗ Not 12345"), feedback.text_content()
    page.keyboard.press("Tab")  # check
    page.keyboard.press("Tab")  # reveal
    assert page.evaluate("() => document.activeElement.className") == "tf-step-reveal"
    page.keyboard.press("Enter")
    assert feedback.text_content().startswith("Revealed: d/"), feedback.text_content()
    assert "to predict" in predicting.locator(".tf-step-score").text_content()
    page.close()


# --------------------------------------------------------------------------- reflow and zoom

# what of one output sticks out past its own box (left or right) with no pane to scroll it
# into view: [its box's left and right, up to ten offenders, how many]
OVERFLOW_JS = """(root) => {
  const box = root.getBoundingClientRect(), bad = [];
  root.querySelectorAll('*').forEach(e => {
    if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') { return; }
    const b = e.getBoundingClientRect();
    if (b.width === 0 || (b.right <= box.right + 1 && b.left >= box.left - 1)) { return; }
    for (let p = e.parentElement; p && p !== root.parentElement; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (/(auto|scroll)/.test(s.overflowX) && p.tabIndex >= 0) { return; }
    }
    bad.push(e.tagName.toLowerCase() + '.' + [...e.classList].join('.'));
  });
  return [box.left, box.right, bad.slice(0, 10), bad.length];
}"""


def _assert_reflows(page: Any, where: str) -> int:
    """Every output of the package fits the window's width; what does not fit in it scrolls
    in a pane that takes the keyboard's focus."""
    width = page.viewport_size["width"]
    roots = page.locator(".tf-root")
    for i in range(roots.count()):
        left, right, bad, n = roots.nth(i).evaluate(OVERFLOW_JS)
        assert left >= -1 and right <= width + 1, f"{where}: output {i} spans {left}..{right}"
        assert n == 0, f"{where}: output {i}: {n} elements stick out, e.g. {bad}"
    return roots.count()


@pytest.mark.parametrize("size", [(320, 640), (640, 480)], ids=["320px", "zoom200"])
def test_outputs_reflow_at_320_css_pixels_and_200_percent(
        website: SiteBuild, tmp_path: Path, size: tuple[int, int]) -> None:
    """WCAG 1.4.10 and 1.4.4: at 320 CSS pixels wide (a 1280 px window at 400%) and at 200%
    zoom of a 1280x960 window (640 CSS px), every output of the package on the website's
    tutorials and in nbconvert's exports keeps its content within the page width (a listing
    may scroll inside its own focusable pane). The stepper's controls wrap."""
    width, height = size
    checked = 0
    with chromium_context(width, height, timeout_ms=30_000) as context:
        for name in ("01_tour_of_the_three_phases", "02_backprop_by_hand"):
            page = context.new_page()
            page.goto(website.page(f"notebooks/{name}").as_uri())
            page.wait_for_load_state("load")
            _wait_for_steppers(page)
            checked += _assert_reflows(page, f"website {name} at {width} px")
            page.close()
            page = _open_export(context, tmp_path, f"{name}.ipynb")
            checked += _assert_reflows(page, f"export {name} at {width} px")
            if name.startswith("02") and width == 320:
                stepper = page.locator(".tf-stepper").first
                stepper.evaluate("e => e.scrollIntoView()")
                save_screenshot(page, "a11y_stepper_320px")
            page.close()
    assert checked >= 10, checked


# ------------------------------------------------------------------------ colour-blind readers


def test_colour_scales_read_with_red_green_colour_blindness() -> None:
    """The heatmaps' diverging scale (RdBu), simulated for protanopia and deuteranopia: a
    negative shade and the positive shade as far from 0 still differ clearly (sign is not
    lost), and each side's shades stay in order of lightness; the landscapes' viridis keeps
    its lightness rising from end to end."""
    import numpy as np
    from a11y_support import hex_rgb, lab, simulate
    from matplotlib import colormaps

    from tenflang_nb.notebook.views.heatmap import PALETTE, SIDE

    rgb = np.array([hex_rgb(c) for c in PALETTE])
    for kind in ("protanopia", "deuteranopia"):
        seen = lab(simulate(rgb, kind))
        for k in range(SIDE):  # the k-th shade below 0 against the one above
            gap = np.linalg.norm(seen[k] - seen[-1 - k])
            # 2.3 is the least difference an eye notices; 10 is plain at a glance
            assert gap > 10, f"{kind}: shade {k} of both signs are {gap:.1f} apart in CIELAB"
        lightness = seen[:, 0]
        assert np.all(np.diff(lightness[:SIDE + 1]) > 0), (kind, lightness)
        assert np.all(np.diff(lightness[SIDE:]) < 0), (kind, lightness)
        viridis = lab(simulate(colormaps["viridis"](np.linspace(0, 1, 64))[:, :3], kind))
        assert np.all(np.diff(viridis[:, 0]) > 0), f"{kind}: viridis lightness not monotone"


def test_screenshots_seen_with_protanopia_and_deuteranopia(website: SiteBuild,
                                                          browser: BrowserContext) -> None:
    """Screenshots of the package's pictures (the tour's graph and listings, light and dark;
    a stepper on tensors with its heatmaps; notebook 06's landscapes and decision boundary)
    and the same seen with protanopia and deuteranopia, in ``test-artifacts/`` for a person
    to look at (what they show is described in docs/accessibility.md)."""
    from a11y_support import simulate_png
    from stepper_support import mlp_run

    from tenflang_nb.notebook.views.step import stepper_view

    shots = []
    for dark in (False, True):
        view = open_site_page(browser, website, "notebooks/01_tour_of_the_three_phases",
                              dark=dark)
        root = view.page.locator(".tf-root").filter(has=view.page.locator(".tf-sbs")).first
        root.evaluate("e => e.scrollIntoView()")
        shots.append(save_screenshot(view.page, f"a11y_tour{'_dark' * dark}"))
        view.page.close()
    page = browser.new_page()
    page.set_content(stepper_view(mlp_run(), "mlp").html)
    stepper = page.locator(".tf-stepper")
    for _ in range(6):
        stepper.locator(".tf-step-next").click()
    stepper.locator(".tf-step-graph").evaluate("e => e.scrollIntoView()")
    shots.append(save_screenshot(page, "a11y_heatmaps"))
    page.close()
    view = open_site_page(browser, website, "notebooks/06_when_training_fails")
    figures = view.page.locator(".cell_output img")
    assert figures.count() >= 4
    for i in (0, figures.count() - 1):
        figures.nth(i).evaluate("e => e.scrollIntoView()")
        shots.append(save_screenshot(view.page, f"a11y_figures_{i}"))
    view.page.close()
    seen = [simulate_png(shot, kind) for shot in shots
            for kind in ("protanopia", "deuteranopia")]
    assert all(path.stat().st_size > 1000 for path in seen)
    print("\nscreenshots and their simulations:\n  " + "\n  ".join(map(str, shots + seen)))
