"""The website in headless Chromium, opened from its files (``file://``: no server, no network),
as a reader opens ``docs/_build/html/index.html`` after ``bash scripts/docs``.

On the tour page: the data-flow graph's SVG is drawn; the side-by-side listing shows its lines
one per row; hovering a shape-program line lights up the GCP lines it became (so the output's
inline script ran); the math is typeset by the site's own MathJax; and the Binder launch button
opens the tour from the repository address in pyproject.toml. Every page loads with no script
error and no request leaving the files. Screenshots (light and dark) go to ``test-artifacts/``.

A check of another view is one more test: open its page with :func:`open_site_page`, act on
``view.page``, then ``view.assert_clean()``; for example::

    def test_stepper_steps(website: SiteBuild, browser: BrowserContext) -> None:
        view = open_site_page(browser, website, "notebooks/05_stepper")
        stepper = view.page.locator(".tf-stepper").first
        ...
        view.assert_clean()
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from browser_support import chromium_context, css_rgb, save_screenshot
from docs_support import TOUR, SiteBuild, site_tools
from stepper_support import back_to_step, predict_through, shown, step_through, tutorial_run

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import BrowserContext, Locator, Page, expect
except ImportError:  # pragma: no cover - CI installs the [browser] extra; chromium_context
    pass  # skips the tests without it

# schemes a page may load from: its own files, and what its scripts make in memory
LOCAL = ("file:", "data:", "blob:", "about:")
BACKPROP = "notebooks/02_backprop_by_hand"
# is the element inside its scrolling pane's visible box?
IN_PANE_JS = """(e) => { const p = e.closest('.tf-scroll').getBoundingClientRect(),
    r = e.getBoundingClientRect(); return r.top >= p.top - 1 && r.bottom <= p.bottom + 1; }"""
# (top, left, height) of each element matching a selector inside one element
BOXES_JS = """(root, selector) => [...root.querySelectorAll(selector)].map(e => {
    const b = e.getBoundingClientRect(); return [b.top, b.left, b.height]; })"""


@pytest.fixture
def browser() -> Iterator[BrowserContext]:
    """A fresh headless Chromium (Debian's) with a desktop-sized window."""
    with chromium_context() as context:
        yield context


@pytest.fixture
def built(website: SiteBuild) -> SiteBuild:
    """The site, which must have built for a browser test to mean anything."""
    assert website.returncode == 0, f"the site did not build:\n{website.output[-3000:]}"
    return website


@dataclass
class SitePage:
    """One page of the site open in the browser, and what went wrong while it was."""

    page: Page
    docname: str
    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        """No uncaught exception or console error, and nothing fetched but the site's files."""
        assert not self.errors, f"{self.docname}: script errors: {self.errors}"
        assert not self.outside, f"{self.docname}: requests that left the files: {self.outside}"


def _watch(page: Page, docname: str) -> SitePage:
    """``page``, recording its script errors and its requests for anything but local files."""
    view = SitePage(page, docname)
    page.on("pageerror", lambda error: view.errors.append(str(error)))
    page.on("console", lambda m: view.errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: None if r.url.startswith(LOCAL) else view.outside.append(r.url))
    return view


def open_site_page(browser: BrowserContext, site: SiteBuild, docname: str, *,
                   dark: bool = False) -> SitePage:
    """Open the page of ``docname`` (``notebooks/NAME``, ``docs/guide``) from its
    file, in a new tab, light or dark, and wait until it is loaded and its math typeset.
    Script errors and requests for anything but local files are recorded on the result."""
    view = _watch(browser.new_page(), docname)
    page = view.page
    page.emulate_media(color_scheme="dark" if dark else "light")
    page.goto(site.page(docname).as_uri())
    page.wait_for_load_state("load")
    # MathJax (only on pages with math) typesets after loading; its promise says when done
    page.evaluate("""() => window.MathJax && MathJax.startup && MathJax.startup.promise
                      ? MathJax.startup.promise.then(() => true) : true""")
    return view



def _scroll_to(element: Locator) -> None:
    """Scroll the page so ``element`` is at the top (the theme's scroll padding keeps it
    below its sticky header)."""
    element.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.2)


def _assert_one_line_per_row(listing: Locator, selector: str, what: str) -> int:
    """Each line right below the one before, at the same left edge, a whole number of text
    rows tall (a long line wraps at the pane's edge: one row, or more)."""
    boxes: list[list[float]] = listing.evaluate(BOXES_JS, selector)
    assert len(boxes) >= 5, f"{what}: only {len(boxes)} lines"
    height = min(box[2] for box in boxes)
    assert 8 < height < 40, f"{what}: a line is {height:.0f} px tall"
    for (top0, left0, h0), (top1, left1, h1) in pairwise(boxes):
        assert abs(left1 - left0) < 1, f"{what}: lines do not start at the same left edge"
        assert abs(top1 - top0 - h0) < 2, f"{what}: a line is not right below the last"
        rows = h1 / height
        assert abs(rows - round(rows)) < 0.1, f"{what}: a line is {rows:.2f} rows tall"
    return len(boxes)


def test_tour_page_from_files(built: SiteBuild, browser: BrowserContext) -> None:
    view = open_site_page(browser, built, TOUR)
    page = view.page

    # the data-flow graph: Graphviz's SVG, inline in the stored HTML output, drawn
    graph = page.locator("svg.tf-svg").first
    expect(graph).to_be_visible()
    box = graph.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 80, f"graph box {box}"
    assert page.locator("svg.tf-svg").first.locator("g.node").count() >= 7

    # the side-by-side listing (phase 1): both programs one line per row
    root = page.locator(".tf-root").filter(has=page.locator(".tf-sbs")).first
    shape_pane, gcp_pane = root.locator(".tf-sbs .tf-shape"), root.locator(".tf-sbs .tf-gcp")
    n_shape = _assert_one_line_per_row(shape_pane, ".tf-shape-line", "shape program")
    n_gcp = _assert_one_line_per_row(gcp_pane, ".tf-gcp-line", "GCP")
    assert n_shape == 12 and n_gcp > 30, (n_shape, n_gcp)

    # hovering `define z = mul x w` (line 9) lights up the GCP lines made from it
    lit = gcp_pane.locator(".tf-gcp-line.tf-hl")
    assert lit.count() == 0
    line9 = shape_pane.locator(".tf-shape-line[data-tf-line='9']")
    _scroll_to(root)
    line9.hover()
    expect(lit.first).to_be_visible()
    origins = {lit.nth(i).get_attribute("data-tf-line") for i in range(lit.count())}
    assert origins == {"9"}, f"hovering line 9 lit GCP lines from {origins}"
    assert root.locator("g.node.tf-hl, g.tf-hl").count() >= 1, "no graph node lit"
    shot_hover = save_screenshot(page, "site_tour_hover")
    page.mouse.move(5, 500)  # leaving the output clears it
    expect(lit).to_have_count(0)

    # the math of the Markdown cells, typeset offline by the site's MathJax
    n_math = page.locator("span.math, div.math").count()
    assert n_math > 0 and page.locator("mjx-container").count() == n_math

    # the Binder launch button: the tour, from the repository address in pyproject.toml
    tools = site_tools()
    binder = (f"{tools.binder_base(tools.repository_url())}"
              f"?urlpath=lab/tree/{TOUR}.ipynb")
    _scroll_to(page.locator("h1").first)
    page.locator(".dropdown-launch-buttons button").click()
    launch = page.locator(".dropdown-launch-buttons a.dropdown-item")
    expect(launch).to_have_count(1)
    expect(launch).to_be_visible()
    assert launch.get_attribute("href") == binder
    shot_launch = save_screenshot(page, "site_tour_launch")
    view.assert_clean()

    # the same views in dark mode
    dark = open_site_page(browser, built, TOUR, dark=True)
    _scroll_to(dark.page.locator(".tf-root").filter(has=dark.page.locator(".tf-sbs")).first)
    shot_dark = save_screenshot(dark.page, "site_tour_dark")
    dark.assert_clean()
    print(f"\nscreenshots: {shot_hover}\n             {shot_launch}\n             {shot_dark}")


def test_every_page_loads_cleanly_from_files(built: SiteBuild, browser: BrowserContext
                                             ) -> None:
    docnames = sorted(p.relative_to(built.html).with_suffix("").as_posix()
                      for folder in ("docs", "notebooks")
                      for p in (built.html / folder).glob("*.html"))
    assert len(docnames) >= 6, docnames
    for docname in docnames:
        view = open_site_page(browser, built, docname)
        view.assert_clean()
        view.page.close()

    # the entry page the README names leads to the front page, and on to a tutorial
    entry = _watch(browser.new_page(), "index")
    entry.page.goto(built.page("index").as_uri())
    entry.page.wait_for_url("**/docs/index.html")
    entry.page.wait_for_load_state("load")
    entry.page.locator(".bd-sidebar-primary a", has_text="A tour of TenFlang").first.click()
    entry.page.wait_for_url(f"**/{TOUR}.html")
    entry.assert_clean()

    # the Guide's operator table, as tfcompiler --list-ops prints it
    guide = open_site_page(browser, built, "docs/guide")
    table = guide.page.locator("table").filter(has_text="d/L/d/a +=")
    expect(table).to_be_visible()
    _scroll_to(table)
    shot = save_screenshot(guide.page, "site_guide_operators")
    guide.assert_clean()
    print(f"\n{len(docnames)} pages loaded from files; screenshot: {shot}")


def test_hover_brings_the_backward_block_into_view(built: SiteBuild, browser: BrowserContext
                                                   ) -> None:
    """A shape line lights its forward copy near the top of the GCP and its backward block far
    below; hovering must show the block (what the line became), not only the copy."""
    view = open_site_page(browser, built, BACKPROP)
    page = view.page
    shape_line = page.locator(".tf-shape-line", has_text="define c = tanh a")
    root = page.locator(".tf-root").filter(has=shape_line).first
    gcp_pane = root.locator(".tf-sbs .tf-gcp")
    line11 = root.locator(".tf-shape-line[data-tf-line='11']")  # define a = mul w x
    _scroll_to(root.locator(".tf-sbs"))
    line11.hover()
    lit = gcp_pane.locator(".tf-gcp-line.tf-hl")
    expect(lit.first).to_be_visible()
    block = gcp_pane.locator(".tf-gcp-line.tf-hl[data-tf-section='backward']")
    assert block.count() == 9, block.count()  # the comment and the lines of d/L/d/a, d/a/d/w
    for i in range(block.count()):
        assert block.nth(i).evaluate(IN_PANE_JS), f"backward line {i} is out of the pane's view"
    # in text rows (a long line wraps: the shortest line is one row)
    height = gcp_pane.evaluate("p => p.clientHeight / Math.min(...[...p.querySelectorAll("
                               "'.tf-line')].map(line => line.offsetHeight))")
    assert height >= 30, f"the GCP pane shows only {height:.0f} lines"
    shot = save_screenshot(page, "site_hover_backward_block")
    view.assert_clean()
    print(f"\nscreenshot: {shot}")


def test_stepper_on_the_website(built: SiteBuild, browser: BrowserContext) -> None:
    """Notebook 02's steppers, from their stored output: the fan program's forward and
    backward pass, buttons, keys, slider, play/pause; a's two contributions arrive and add
    up; then the same in predict mode, questions answered on the page."""
    run = tutorial_run()
    view = open_site_page(browser, built, BACKPROP)
    page = view.page
    stepper = page.locator(".tf-stepper").first
    expect(stepper.locator(".tf-step-live")).to_be_visible()
    expect(stepper.locator(".tf-step-static")).to_be_hidden()
    _scroll_to(stepper)
    step_through(page, stepper, run)
    names = [s.name for s in run.steps]
    back_to_step(stepper, run, names.index("d/L/d/a:1") + 1)
    assert shown(stepper)["labels"]["a"][1] == "grad 0.8554 + 0.4989"
    _scroll_to(stepper)
    shot_light = save_screenshot(page, "site_stepper_fan_out")
    stepper.locator(".tf-step-next").click()
    assert shown(stepper)["labels"]["a"][1] == "grad 1.354"
    view.assert_clean()

    # the same program in predict mode, answered from the page: a hint, a right value, a
    # value revealed, the score (the questions and hints are in the stored output)
    predicting = page.locator(".tf-stepper").nth(1)
    expect(predicting.locator(".tf-step-score")).to_have_text("6 to predict")
    _scroll_to(predicting)
    shots = predict_through(page, predicting, tutorial_run(predict=True), "site_predict")
    view.assert_clean()

    dark = open_site_page(browser, built, BACKPROP, dark=True)
    dark_stepper = dark.page.locator(".tf-stepper").first
    back_to_step(dark_stepper, run, names.index("d/L/d/a") + 1)
    _scroll_to(dark_stepper)
    shot_dark = save_screenshot(dark.page, "site_stepper_dark")
    dark.assert_clean()
    print(f"\nscreenshots: {shot_light}\n             {shot_dark}\n             "
          + "\n             ".join(shots))


# every wrapping listing of a page: (its scroll width, its width, its rows, its text rows)
LISTINGS_JS = """() => [...document.querySelectorAll('pre.tf-gcp, pre.tf-shape')].map(pre => {
    const rows = [...pre.querySelectorAll('.tf-line')];
    const row = Math.min(...rows.map(r => r.getBoundingClientRect().height));
    return [pre.scrollWidth, pre.clientWidth, rows.length,
            rows.reduce((n, r) => n + Math.round(r.getBoundingClientRect().height / row), 0)];
})"""
# (text, colour, font weight) of each TenFlang token in the first %%tenflang cell's input
TOKENS_JS = """() => {
    const cell = [...document.querySelectorAll('.cell_input pre')]
        .find(pre => pre.textContent.startsWith('%%tenflang'));
    return [...cell.querySelectorAll('span[class*="-TenFlang"]')].map(span => [
        span.textContent, [...span.classList].find(c => c.endsWith('-TenFlang')),
        getComputedStyle(span).color, getComputedStyle(span).fontWeight]);
}"""


def test_tenflang_cells_and_long_lines_on_the_website(built: SiteBuild,
                                                      browser: BrowserContext) -> None:
    """A %%tenflang cell's body is highlighted as TenFlang (not only its magic line), in the
    palette's colours (the editor's and the listings'), light and dark; a GCP's long lines
    wrap at the pane's edge, nothing cut."""
    from tenflang_nb.lexer import css_class
    from tenflang_nb.palette import PALETTE

    by_class = {css_class(category): colour for category, colour in PALETTE.items()}
    shots = []
    for dark in (False, True):
        view = open_site_page(browser, built, TOUR, dark=dark)
        tokens = view.page.evaluate(TOKENS_JS)
        kinds = {text for text, cls, *_ in tokens if cls == css_class("kind")}
        assert {"input", "weight", "loss"} <= kinds, tokens
        assert ("mul", css_class("operator")) in [(t[0], t[1]) for t in tokens]
        for text, cls, color, weight in tokens:
            colour = by_class[cls]
            assert color == css_rgb(colour.dark if dark else colour.light), (text, cls, color)
            assert (int(weight) >= 700) == colour.bold, (text, cls, weight)
        cell = view.page.locator(".cell_input", has_text="%%tenflang").first
        _scroll_to(cell)
        shots.append(save_screenshot(view.page, f"site_tour_tenflang_cell{'_dark' * dark}"))
        view.assert_clean()
    # the digits classifier's GCP: comments and lines wider than the site's column
    view = open_site_page(browser, built, "notebooks/04_digits_classifier")
    listings = view.page.evaluate(LISTINGS_JS)
    assert listings, "no listings"
    for scroll, width, *_ in listings:
        assert scroll <= width, f"a listing is cut: {scroll} px wide in {width} px"
    assert any(text_rows > rows for *_, rows, text_rows in listings), "no line wrapped"
    gcp = view.page.locator("pre.tf-gcp").first
    _scroll_to(gcp.locator("xpath=../.."))
    shots.append(save_screenshot(view.page, "site_digits_gcp_wrapped"))
    view.assert_clean()
    print("\nscreenshots: " + "\n             ".join(str(s) for s in shots))
