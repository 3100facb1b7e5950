"""The tour notebook in a real browser: JupyterLab in headless Chromium, driven by Playwright.

Runs every cell of ``notebooks/01_tour_of_the_three_phases.ipynb`` as a student would (Run ▸
Run All Cells), then checks what they would see: the data-flow graph as SVG, the shape program
beside its GCP, the training panel's sliders and buttons; that Train makes the loss curve move
and Stop stops it; and that no cell printed an error. A screenshot is saved under
``test-artifacts/`` (git-ignored) and its path printed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    CHROMIUM_FLAGS,
    LabServer,
    chromium_path,
    jupyter_lab,
    prepare_root,
    wait_for_kernel,
)

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "01_tour_of_the_three_phases.ipynb"
ARTIFACTS = REPO / "test-artifacts"

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import Locator, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - CI installs the [browser] extra
    sync_playwright = None


def _require_browser() -> str:
    if sync_playwright is None:
        pytest.skip("playwright is not installed (pip install -e '.[browser]')")
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return path


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[LabServer, str]]:
    """JupyterLab serving a scratch copy of the tour notebook; yields (server, its path)."""
    root = tmp_path / "root"
    prepare_root(REPO, root, NOTEBOOK)
    with jupyter_lab(root, tmp_path / "lab") as server:
        yield server, f"notebooks/{NOTEBOOK}"


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    """A headless Chromium page (Debian's browser, a fresh profile)."""
    executable = _require_browser()
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=executable, headless=True,
            args=list(CHROMIUM_FLAGS), viewport={"width": 1400, "height": 1000})
        try:
            page = browser.pages[0] if browser.pages else browser.new_page()
            page.set_default_timeout(30_000)
            yield page
        finally:
            browser.close()


def _run_all_cells(page: Page) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator("li[data-command='runmenu:run-all']").click()


def _wait_until_executed(page: Page, timeout: float) -> int:
    """Wait until every code cell shows an execution count ``[n]:``; returns how many."""
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll(
                '.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""",
        timeout=timeout * 1000)
    return page.locator(".jp-Notebook .jp-CodeCell").count()


def _button(scope: Page | Locator, label: str) -> Locator:
    """A widget button by its label (its accessible name also holds the icon's glyph)."""
    return scope.get_by_role("button", name=re.compile(rf"(^|\W){label}$"))


def _errors(page: Page) -> list[str]:
    """Texts of error outputs (tracebacks and anything on stderr) in the notebook."""
    outputs = page.locator(
        ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'],"
        ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    return [text[:500] for text in outputs.all_inner_texts()]


def _curve_src(panel: Locator) -> str:
    return str(panel.locator(".widget-image").first.get_attribute("src") or "")


def _status(panel: Locator) -> str:
    return panel.locator(".widget-html code").first.inner_text()


def _iteration(status: str) -> int:
    match = re.search(r"iteration (\d+)/", status)
    assert match, f"no iteration in the status line {status!r}"
    return int(match.group(1))


def _wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def test_tour_notebook_in_jupyterlab(lab: tuple[LabServer, str], page: Page) -> None:
    server, notebook = lab
    started = time.monotonic()
    page.goto(server.url(f"lab/tree/{notebook}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    wait_for_kernel(server, notebook)
    _run_all_cells(page)
    n_cells = _wait_until_executed(page, timeout=60)
    executed = time.monotonic() - started

    # what the magic and the panels drew
    expect(page.locator("svg.tf-svg").first).to_be_visible()
    assert page.locator("svg.tf-svg g.node").count() >= 7, "graph has fewer nodes than variables"
    gcp_lines = page.locator(".tf-sbs .tf-gcp-line")
    assert gcp_lines.count() > 10, "no side-by-side GCP listing"
    expect(page.locator(".tf-sbs .tf-shape-line").first).to_be_visible()
    # two training panels, each with learning-rate and tolerance sliders and three buttons
    # (widgets render a moment after their cell has finished)
    page.locator(".widget-slider").nth(3).wait_for()
    for name in ("Train", "Stop", "Reset"):
        _button(page, name).nth(1).wait_for()
    expect(page.locator(".widget-slider .widget-readout").first).to_be_visible()

    # the live panel (the last cell) starts training by itself
    panel = page.locator(".jp-OutputArea-output").filter(
        has=_button(page, "Stop")).last
    panel.scroll_into_view_if_needed()
    train = _button(panel, "Train")
    stop = _button(panel, "Stop")
    _wait_for(lambda: "running" in _status(panel), 20, "the live training to run")

    # Stop stops it: the count and the curve stand still
    stop.click()
    _wait_for(lambda: "stopped" in _status(panel), 10, "Stop to take effect")
    expect(train).to_be_enabled()
    time.sleep(1.0)  # the curve is drawn once more on stopping
    stopped_at, curve = _iteration(_status(panel)), _curve_src(panel)
    time.sleep(1.5)
    assert _iteration(_status(panel)) == stopped_at, "training went on after Stop"
    assert _curve_src(panel) == curve, "the loss curve changed after Stop"

    # Train continues, and the loss curve is redrawn as it goes (several times)
    train.click()
    seen = {curve}
    _wait_for(lambda: seen.add(_curve_src(panel)) or len(seen) >= 3, 15,
              "the loss curve to update (twice) after Train")
    _wait_for(lambda: _iteration(_status(panel)) > stopped_at, 10, "iterations to advance")
    assert "running" in _status(panel)
    time.sleep(1.0)
    # the live cell from its first line, with the panel below it, as the student sees it
    cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has=_button(page, "Stop")).last
    cell.evaluate("element => element.scrollIntoView({block: 'start'})")
    time.sleep(0.3)
    ARTIFACTS.mkdir(exist_ok=True)
    shot_live = ARTIFACTS / "browser_tour_live_panel.png"
    page.screenshot(path=str(shot_live))
    stop.click()
    _wait_for(lambda: "stopped" in _status(panel), 10, "the second Stop")
    time.sleep(1.0)
    final, curve = _iteration(_status(panel)), _curve_src(panel)
    time.sleep(1.0)
    assert _iteration(_status(panel)) == final, "training went on after the second Stop"
    assert _curve_src(panel) == curve, "the loss curve changed after the second Stop"

    errors = _errors(page)
    assert not errors, f"cells produced errors: {errors}"

    # what a student sees first: the graph and the GCP of phase 1
    page.locator(".jp-Notebook .jp-CodeCell").filter(has=page.locator("svg.tf-svg")).first \
        .evaluate("element => element.scrollIntoView({block: 'start'})")
    time.sleep(0.3)
    shot_graph = ARTIFACTS / "browser_tour_graph.png"
    page.screenshot(path=str(shot_graph))
    print(f"\n{n_cells} code cells ran in {executed:.1f} s; live run stopped at iteration "
          f"{stopped_at}, resumed, stopped again at {final}.\n"
          f"screenshots: {shot_graph}\n             {shot_live}")
