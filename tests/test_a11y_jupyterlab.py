"""WCAG 2.1 A and AA inside a running JupyterLab (issue 27): a notebook whose cells draw every
view of ``%%tenflang`` (graph, order, listings, expanded program, values, stepper, predict
mode, heatmaps, cost, fusion, an error, the checker's reports, tables, a landscape, a decision
boundary) and a live training panel with its ipywidgets, run in Chromium.

axe-core runs on what the package rendered (every ``.tf-root``, every panel) and must find no
violation; what it finds in JupyterLab's own interface is printed apart, not failed. Then the
keyboard alone (Tab, the arrows, Enter) drives the listings, the stepper, predict mode and the
panel's sliders and buttons, each showing where the focus is, and Playwright's ARIA snapshot
reads their names, roles and values as a screen reader gets them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a11y_support import PACKAGE, audit_chrome, audit_package, rule_counts
from browser_support import chromium_page, jupyter_lab, prepare_root, save_screenshot
from browser_support import wait_for_kernel as _wait_for_kernel
from test_browser import _errors, _run_all_cells, _status, _wait_for
from test_section18_browser import NETWORK, _notebook

pytestmark = [pytest.mark.browser, pytest.mark.slow]

try:
    from playwright.sync_api import Page
except ImportError:  # pragma: no cover - chromium_page skips the tests without it
    pass

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "a11y_views.ipynb"
SEED = (REPO / "examples" / "logistic" / "shape.tf").read_text("utf-8")
TRAINING = "../examples/logistic/training_data.txt"
# every view and display of the package, one cell each; the live panel (last) keeps training
CELLS = [
    "%load_ext tenflang_nb\nimport tenflang_nb as tf\n"
    "moons_train, moons_test = tf.datasets.moons(80, noise=0.2, seed=2, test=0.25)",
    f"%%tenflang net --show all\n{SEED}",
    f"%%tenflang net --train {TRAINING} --lr 2 --tol 1e-5 --no-live --show values,step,cost,"
    f"fusion --example \"{{x: 1.5, y: 0.2}}\"\n{SEED}",
    'net.stepper({"x": 1.5, "y": 0.2}, predict=True)',
    "%%tenflang moons --train moons_train --test moons_test --lr 2 --max-iter 200 --no-live "
    f"--boundary --show step\n{NETWORK}",
    "%%tenflang_check net right --require d/lambda/d/diff\n"
    "define d/lambda/d/diff = mul 2 diff",
    "%%tenflang_check net wrong --require d/lambda/d/diff\n"
    "define d/lambda/d/diff = mul 3 diff",
    "net.gradcheck(0)",
    "%%tenflang broken\ndeclare weight w\ndeclare loss L\ndefine L = mul ww w",
    "net.landscape()",
    "moons.boundary()",
    f"%%tenflang live --train {TRAINING} --lr 0.001 --tol 1e-9 --max-iter 1000000 --landscape "
    f"--show none\n{SEED}",
]


@pytest.fixture(scope="module")
def lab_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    """JupyterLab with :data:`CELLS` run (Run ▸ Run All Cells) in Chromium; the live panel
    training."""
    tmp = tmp_path_factory.mktemp("a11y_lab")
    root = tmp / "root"
    prepare_root(REPO, root, "01_tour_of_the_three_phases.ipynb")
    (root / "notebooks" / NOTEBOOK).write_text(json.dumps(_notebook(CELLS)), "utf-8")
    with jupyter_lab(root, tmp / "lab") as server, chromium_page(tmp / "profile") as page:
        path = f"notebooks/{NOTEBOOK}"
        page.goto(server.url(f"lab/tree/{path}"))
        page.locator(".jp-Notebook .jp-Cell").first.wait_for()
        _wait_for_kernel(server, path)
        _run_all_cells(page)
        page.wait_for_function(
            """(n) => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell '
                + '.jp-InputArea-prompt')].filter(p => /\\[\\d+\\]/.test(p.textContent))
                .length === n""", arg=len(CELLS), timeout=180_000)
        page.locator(".tenflang-training-panel .widget-slider").nth(3).wait_for()
        _wait_for(lambda: page.locator(".tf-stepper .tf-step-live").count() >= 3, 20,
                  "the steppers' scripts")
        yield page


def _live_panel(page: Page) -> Any:
    return page.locator(".tenflang-training-panel").last


def test_axe_on_every_view_and_the_live_panel_in_jupyterlab(lab_page: Page) -> None:
    page = lab_page
    errors = [e for e in _errors(page) if "Cannot" not in e and "line" not in e]
    assert not errors, errors
    _wait_for(lambda: "running" in _status(_live_panel(page)), 30, "the live run")
    package = audit_package(page, "JupyterLab: the package's outputs")
    chrome = audit_chrome(page, "JupyterLab: its own interface")
    print(f"\nJupyterLab: {package.checked} package outputs checked")
    print("axe violations in the package's outputs (WCAG 2.1 A/AA):")
    print(rule_counts([package]))
    print("axe violations in JupyterLab's own interface (not the package's; not failed):")
    print(rule_counts([chrome]))
    print(chrome.describe())
    # what was drawn: each kind of view and display at least once
    for selector in (".tf-root svg.tf-svg", ".tf-sbs .tf-gcp-line", ".tf-stepper",
                     ".tf-step-score", ".tf-stepper .tf-hm", ".tf-table", ".tf-diag",
                     ".tenflang-training-panel .widget-slider", ".tf-figure img"):
        assert page.locator(selector).count() >= 1, f"nothing matches {selector}"
    assert package.checked >= 12, package.checked
    assert not package.violations, package.describe()
    # axe leaves the widgets' buttons out of its contrast check: measured here
    low = page.evaluate(CONTRAST_JS, ".tenflang-training-panel :is(button:enabled, label, "
                                     ".widget-readout, code, i)")
    assert not low, f"text under 4.5:1 in the panel: {low}"


# every element matching a selector whose text has a contrast under 4.5:1 with the colour
# behind it (the nearest opaque background; a translucent text colour blended onto it)
CONTRAST_JS = """(selector) => {
  const rgba = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => v / 255)
      .map(v => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
      .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const low = [];
  for (const e of document.querySelectorAll(selector)) {
    if (!e.textContent.trim() || !e.getClientRects().length) { continue; }
    let bg = [255, 255, 255];
    for (let p = e; p; p = p.parentElement) {
      const c = rgba(getComputedStyle(p).backgroundColor);
      if (c.length === 3 || c[3] === 1) { bg = c.slice(0, 3); break; }
    }
    const [r, g, b, a = 1] = rgba(getComputedStyle(e).color);
    const fg = [r, g, b].map((v, i) => v * a + bg[i] * (1 - a));
    const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < 4.5) { low.push(`${e.textContent.trim().slice(0, 30)}: ${ratio.toFixed(2)}`); }
  }
  return low;
}"""


def _active_cell(page: Page) -> int:
    """Which cell JupyterLab has active (its command mode moves it with the arrow keys)."""
    return int(page.evaluate("""() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
        .findIndex(c => c.classList.contains('jp-mod-active'))"""))


def _focused(page: Page) -> str:
    """The focused element: its tag, classes and name (its label's, or its text)."""
    return str(page.evaluate("""() => { const e = document.activeElement;
        const by = document.getElementById(e.getAttribute('aria-labelledby') || '');
        const name = e.getAttribute('aria-label') || by?.textContent
            || e.labels?.[0]?.textContent || e.textContent || '';
        return e.tagName.toLowerCase() + '.' + [...e.classList].join('.') + ' '
            + name.trim().slice(0, 40); }"""))


# does the focused element, if the package drew it, show where the focus is (an outline of
# 2 px or more, or the browser's own focus ring: "auto")? JupyterLab's own (a cell's
# toolbar) is its business
OUTLINE_JS = """(roots) => { const e = document.activeElement, s = getComputedStyle(e);
    return !e.closest(roots) || s.outlineStyle === 'auto'
        || s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2; }"""


# is the focus on an element matching a selector (inside the last element matching another)?
AT_JS = """([selector, last]) => { const e = document.activeElement;
    return !!e?.matches(selector)
        && (!last || e.closest(last) === [...document.querySelectorAll(last)].at(-1)); }"""


def _tab_to(page: Page, selector: str, limit: int = 300, last: str = "") -> list[str]:
    """Press Tab (only Tab) until the focus is on ``selector`` (inside the last ``last``, if
    given); every element of the package the focus stopped on must show it. Returns the
    stops."""
    stops = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        stops.append(_focused(page))
        assert page.evaluate(OUTLINE_JS, PACKAGE), f"no visible focus on {stops[-1]}"
        if page.evaluate(AT_JS, [selector, last]):
            return stops
    raise AssertionError(f"Tab never reached {selector}: {stops[-10:]}")


def _valuetext(handle: Any) -> str:
    return str(handle.get_attribute("aria-valuetext"))


def test_views_and_panel_by_keyboard_alone_in_jupyterlab(lab_page: Page) -> None:
    """From the first cell in command mode, only keys: the listing's lines, the stepper,
    predict mode and the live panel's sliders and buttons, in the page's order, each with a
    visible focus; JupyterLab's command mode acts on none of the keys meant for them."""
    page = lab_page
    cells = page.locator(".jp-Notebook .jp-Cell")
    n_cells = cells.count()
    cells.first.locator(".jp-InputPrompt").click()  # the one click: the notebook has focus
    page.keyboard.press("Escape")  # command mode
    page.keyboard.press("ArrowDown")  # JupyterLab's: the next cell (the views of net)
    assert _active_cell(page) == 1

    # the listings: Tab reaches the shape program's pane, the arrows light its lines
    stops = _tab_to(page, ".tf-sbs pre.tf-shape", limit=40)
    root = cells.nth(1).locator(".tf-root").filter(has=page.locator(".tf-sbs"))
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    assert _active_cell(page) == 1, "JupyterLab moved to another cell on an arrow key"
    assert root.locator(".tf-shape-line.tf-kbd").get_attribute("data-tf-line") == "3"
    assert root.locator(".tf-gcp-line.tf-hl").count() >= 1
    status = root.locator("[role=status]").first.text_content() or ""
    assert "highlighted" in status, status
    save_screenshot(page, "a11y_lab_listing_keyboard")
    page.keyboard.press("Escape")
    assert root.locator(".tf-kbd").count() == 0
    print(f"\nTab stops to the listing: {stops}")

    # the stepper (the next cell's outputs): Enter, Space and the right arrow step
    stops = _tab_to(page, ".tf-step-next")
    stepper = cells.nth(2).locator(".tf-stepper")
    count = stepper.locator(".tf-step-count")
    for key, step in (("Enter", 1), ("Space", 2), ("ArrowRight", 3)):
        page.keyboard.press(key)
        assert (count.text_content() or "").startswith(f"step {step} of "), key
    assert _active_cell(page) == 2
    tree = stepper.locator(".tf-step-bar").aria_snapshot()
    assert 'toolbar "stepper"' in tree and 'button "step: run the next line' in tree, tree

    # predict mode: End asks the first question with the field focused; digits are typed
    # into it, not taken by JupyterLab (where 1 would make the cell a heading)
    _tab_to(page, ".tf-stepper:has(.tf-step-score) .tf-step-next")
    page.keyboard.press("End")
    predicting = cells.nth(3).locator(".tf-stepper")
    guess = predicting.locator(".tf-step-guess")
    assert guess.evaluate("e => e === document.activeElement")
    page.keyboard.type("12345")
    page.keyboard.press("Enter")
    feedback = predicting.locator(".tf-step-feedback")
    assert (feedback.text_content() or "").startswith("✗ Not 12345"), feedback.text_content()
    save_screenshot(page, "a11y_lab_predict_keyboard")
    assert page.locator(".jp-Notebook .jp-MarkdownCell").count() == 0
    assert cells.count() == n_cells
    page.keyboard.press("Tab")  # check
    page.keyboard.press("Tab")  # reveal
    assert page.evaluate("() => document.activeElement.className") == "tf-step-reveal"
    page.keyboard.press("Enter")
    assert (feedback.text_content() or "").startswith("Revealed: d/"), feedback.text_content()
    assert predicting.locator(".tf-step-feedback").get_attribute("aria-live") == "polite"

    # the live panel: its sliders, named and valued, move by the arrow keys; Stop and Train
    panel = _live_panel(page)
    _tab_to(page, ".noUi-handle", last=".tenflang-training-panel")
    handles = panel.locator(".noUi-handle[role=slider]")
    lr, tol = handles.nth(0), handles.nth(1)
    assert lr.evaluate("e => e === document.activeElement")
    snapshot = panel.aria_snapshot()
    for name in ('slider "learning rate"', 'slider "tolerance"',
                 'spinbutton "max iterations"', 'checkbox "log scale"', "Stop", "Reset",
                 "status:", 'img "loss curve'):
        assert name in snapshot, snapshot
    assert _valuetext(lr) == "0.00100"
    save_screenshot(page, "a11y_lab_panel_focus")
    live = _active_cell(page)
    page.keyboard.press("ArrowRight")
    readout = panel.locator(".widget-readout").first
    _wait_for(lambda: readout.text_content() != "0.00100", 5, "the learning rate to change")
    _wait_for(lambda: _valuetext(lr) == readout.text_content(), 5,
              f"the slider's value to read {readout.text_content()}, not {_valuetext(lr)}")
    time.sleep(0.5)  # and to stay so (noUiSlider writes its own on every move)
    assert _valuetext(lr) == readout.text_content() == "0.00126"
    assert _active_cell(page) == live
    order = [_focused(page), *_tab_to(page, ".noUi-handle", last=".tenflang-training-panel")]
    assert tol.evaluate("e => e === document.activeElement")
    assert _valuetext(tol) == "1e-09"
    page.keyboard.press("ArrowRight")
    _wait_for(lambda: _valuetext(tol) == "1e-08", 5, "the tolerance to reach the next "
              "position (its range is 1e-8 to 0.1; 1e-9, given, a position of its own)")
    order += _tab_to(page, "button:enabled", last=".tenflang-training-panel")
    print(f"Tab stops in the panel: {order}")
    page.keyboard.press("Enter")  # Stop
    _wait_for(lambda: "stopped" in _status(panel), 15, "Stop to take effect")
    announced = panel.locator("[role=status]").first
    _wait_for(lambda: "stopped" in (announced.text_content() or "").lower(), 5,
              "the stop to be announced")
    assert re.search(r"learning rate .* tolerance .* max iterations .* log scale .* "
                     r"landscape .* Stop", " ".join(order)), order
    # Stop is disabled now, and a disabled button loses the focus: the panel gives it to
    # Train, enabled again (not to the page or the cell)
    _wait_for(lambda: "Train" in _focused(page), 5, f"the focus to move to Train, not to "
              f"{_focused(page)}")
    page.keyboard.press("Enter")
    _wait_for(lambda: "running" in _status(panel), 15, "Train to start again")
    _wait_for(lambda: "Stop" in _focused(page), 5, f"the focus to move to Stop, not to "
              f"{_focused(page)}")
    save_screenshot(page, "a11y_lab_panel_keyboard")
    page.keyboard.press("Enter")  # so the run ends

