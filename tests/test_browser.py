"""The tour notebook in a real browser: JupyterLab in headless Chromium, driven by Playwright.

Runs every cell of ``notebooks/01_tour_of_the_three_phases.ipynb`` as a student would (Run ▸
Run All Cells), then checks what they would see: the data-flow graph as SVG, the shape program
beside its GCP, the training panel's sliders and buttons; that Train makes the loss curve move
and Stop stops it; and that no cell printed an error. A screenshot is saved under
``test-artifacts/`` (git-ignored) and its path printed.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    CHROMIUM_FLAGS,
    LAB_SETTINGS,
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


# --- the committed tutorials, opened untrusted, nothing run ----------------------------------

TUTORIALS = sorted(p.name for p in (REPO / "notebooks").glob("[0-9]*.ipynb"))
# what each kind of stored output is, by a class only its HTML has
GRAPH, LISTING, PANEL = "tf-graph-png", "tf-code", "tenflang-training-panel"
NUMBERED = re.compile(r"^ *(\d+)  \S?")


def _stored_html(notebook: str) -> list[str]:
    """The ``text/html`` of every output stored in the committed notebook."""
    nb = json.loads((REPO / "notebooks" / notebook).read_text("utf-8"))
    found = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html")
            if html is not None:
                found.append("".join(html) if isinstance(html, list) else html)
    return found


def _count(htmls: list[str], cls: str) -> int:
    return sum(len(re.findall(rf'class="[^"]*\b{re.escape(cls)}\b|class=\'{cls}\'', h))
               for h in htmls)


@pytest.fixture(scope="module")
def tutorials_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabServer, Path]]:
    """One JupyterLab serving scratch copies of every tutorial, none of them trusted (its
    trust database is its own and empty); yields (server, its state folder)."""
    tmp = tmp_path_factory.mktemp("tutorials")
    prepare_root(REPO, tmp / "root", *TUTORIALS)
    with jupyter_lab(tmp / "root", tmp / "lab") as server:
        yield server, tmp / "lab"


def _open_saved(page: Page, server: LabServer, notebook: str, outputs: int) -> None:
    """Open ``notebook`` and wait until its ``outputs`` stored HTML outputs are rendered."""
    # reset: not the workspace of the last test, with its notebook open in another tab
    page.goto(server.url(f"lab/tree/notebooks/{notebook}?reset"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    html_outputs = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='text/html']")
    _wait_for(lambda: html_outputs.count() >= outputs, 30, f"{outputs} HTML outputs")
    # images decode after they are attached
    page.wait_for_function("() => [...document.querySelectorAll('.jp-Notebook img')]"
                           ".every(i => i.complete)")


def _shot(page: Page, target: Locator, name: str) -> Path:
    target.evaluate("element => element.scrollIntoView({block: 'start'})")
    time.sleep(0.3)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def _assert_reads_line_by_line(text: str, what: str) -> int:
    """Each line of a listing's text: its number (1, 2, ...), two spaces, one statement."""
    lines = text.rstrip("\n").split("\n")
    numbers = []
    for line in lines:
        match = NUMBERED.match(line)
        assert match, f"{what}: a line without its number: {line!r}"
        numbers.append(int(match.group(1)))
        statements = re.findall(r"\b(?:declare|define)\b", line)
        assert len(statements) <= 1, f"{what}: two statements on one line: {line!r}"
    assert numbers == list(range(1, len(lines) + 1)), f"{what}: line numbers {numbers[:20]}"
    return len(lines)


@pytest.mark.parametrize("notebook", TUTORIALS)
def test_committed_tutorial_reads_untrusted(tutorials_lab: tuple[LabServer, Path],
                                            page: Page, notebook: str) -> None:
    """What a student sees on Binder or after a download, before running anything: JupyterLab
    sanitizes every stored HTML output (no style, script or svg), yet the graph is drawn (its
    PNG), listings read one numbered statement per line, the legend's kinds are words beside
    real swatches, errors show their caret, and a saved training panel shows its curve and
    says it is a saved picture."""
    server, _state = tutorials_lab
    stored = _stored_html(notebook)
    expected = {kind: _count(stored, kind) for kind in (GRAPH, LISTING, PANEL)}
    if notebook.startswith("01_"):  # the tour has every kind: the test cannot pass vacuously
        assert all(expected.values()), expected
    _open_saved(page, server, notebook, len(stored))
    notebook_area = page.locator(".jp-Notebook")
    name = notebook.split("_")[0]

    # sanitized: our stylesheet, scripts and inline SVG are gone
    assert notebook_area.locator(".jp-OutputArea-output style").count() == 0, "trusted?"
    assert notebook_area.locator(".jp-OutputArea-output script").count() == 0
    assert notebook_area.locator("svg.tf-svg").count() == 0

    shots = []
    # the graph: its picture, decoded and drawn at a readable size; the SVG's loose text hidden
    graphs = notebook_area.locator(".tf-graph")
    assert notebook_area.locator(f"img.{GRAPH}").count() == expected[GRAPH]
    for i in range(graphs.count()):
        graph = graphs.nth(i)
        image = graph.locator(f"img.{GRAPH}")
        expect(image).to_be_visible()
        natural = image.evaluate("i => [i.naturalWidth, i.naturalHeight]")
        box = image.bounding_box()
        assert natural[0] > 100 and box is not None and box["width"] > 100, (natural, box)
        expect(graph.locator(".tf-styled-only")).to_be_hidden()
        assert "input" not in graph.inner_text(), "the SVG's text leaked into the output"
        legend = graph.locator("xpath=..").locator(".tf-legend")
        words = legend.inner_text().split()
        assert "input" in words and "weight" in words, f"legend reads {words}"
        for j in range(legend.locator(".tf-swatch").count()):
            swatch = legend.locator(".tf-swatch").nth(j).bounding_box()
            assert swatch and swatch["width"] >= 9 and swatch["height"] >= 9, \
                f"a legend swatch is {swatch}: a bare bar?"
    if graphs.count():
        shots.append(_shot(page, graphs.first.locator("xpath=.."), f"untrusted_{name}_graph"))

    # listings: one numbered statement per line, as many lines as their heading says
    listings = notebook_area.locator(f"pre.{LISTING}")
    assert listings.count() == expected[LISTING]
    for i in range(listings.count()):
        listing = listings.nth(i)
        n = _assert_reads_line_by_line(listing.inner_text(), f"{notebook} listing {i}")
        heading = listing.locator("xpath=preceding-sibling::h4[1]")
        if heading.count():
            counted = re.search(r"\((\d+) (?:lines|statements)", heading.inner_text())
            assert counted is None or int(counted.group(1)) == n, (heading.inner_text(), n)
    if listings.count():
        shots.append(_shot(page, listings.first.locator("xpath=../.."),
                           f"untrusted_{name}_listing"))

    # errors: the offending line and a caret under it, in text
    for i in range(notebook_area.locator(".tf-diag pre").count()):
        assert "^" in notebook_area.locator(".tf-diag pre").nth(i).inner_text()

    # saved training panels: a saved picture with its curve and its final status
    panels = notebook_area.locator(f".{PANEL}")
    assert panels.count() == expected[PANEL]
    for i in range(panels.count()):
        panel = panels.nth(i)
        text = panel.inner_text()
        assert "Saved picture" in text and "run the cell to train live" in text, text
        assert "iteration 0/" not in text, f"the picture of a run that had not begun: {text}"
        curve = panel.locator("img")
        expect(curve).to_be_visible()
        assert curve.evaluate("i => i.naturalWidth") > 100
        assert re.search(r"reached max iterations|converged|stopped", text), text
    if panels.count():
        shots.append(_shot(page, panels.last, f"untrusted_{name}_panel"))
    print(f"\n{notebook}: {expected}; screenshots: {', '.join(str(s) for s in shots)}")


def _scripts_lab_checkout(tmp: Path) -> Path:
    """A checkout to run ``scripts/lab`` in: its scripts and venv (links) and copies of the
    tutorials, so nothing Lab does reaches the repository's notebooks."""
    checkout = tmp / "checkout"
    (checkout / "notebooks").mkdir(parents=True)
    for name in ("scripts", "examples"):
        (checkout / name).symlink_to(REPO / name, target_is_directory=True)
    (checkout / ".venv").symlink_to(sys.prefix, target_is_directory=True)  # this venv
    for name in TUTORIALS:
        shutil.copy2(REPO / "notebooks" / name, checkout / "notebooks" / name)
    return checkout


def test_scripts_lab_opens_the_tutorials_trusted_without_toasts(tmp_path: Path,
                                                                 page: Page) -> None:
    """``bash scripts/lab`` (as root too: this machine's tests run as root) trusts the shipped
    tutorials, so the tour's saved graph is the interactive SVG before anything runs, and
    launches JupyterLab with the news question and update check turned off."""
    if not (Path(sys.prefix) / "bin" / "jupyter-lab").exists():
        pytest.skip("scripts/lab runs .venv/bin/jupyter-lab; this Python has none")
    checkout = _scripts_lab_checkout(tmp_path)
    # what scripts/lab must write itself (its JupyterLab's defaults; in the venv)
    (Path(sys.prefix) / "share/jupyter/lab/settings/overrides.json").unlink(missing_ok=True)
    own = {key: value for key, value in LAB_SETTINGS.items() if "notification" not in key}
    with jupyter_lab(checkout, tmp_path / "lab", launcher=["bash", str(checkout / "scripts/lab")],
                     settings=own, env_extra={"TENFLANG_SETUP": "0"}) as server:
        notification = server.api("lab/api/settings/@jupyterlab/apputils-extension:notification")
        defaults = {k: v.get("default") for k, v in notification["schema"]["properties"].items()}
        assert defaults["fetchNews"] == "false" and defaults["checkForUpdates"] is False, defaults
        stored = _stored_html(NOTEBOOK)
        _open_saved(page, server, NOTEBOOK, len(stored))
        # trusted: the stored outputs keep their stylesheet, SVG and script
        graph = page.locator("svg.tf-svg").first
        expect(graph).to_be_visible()
        expect(page.locator("img.tf-graph-png").first).to_be_hidden()
        root = page.locator(".tf-root").filter(has=page.locator(".tf-sbs")).first
        line9 = root.locator(".tf-shape-line[data-tf-line='9']")
        line9.scroll_into_view_if_needed()
        line9.hover()
        lit = root.locator(".tf-gcp-line.tf-hl")
        expect(lit.first).to_be_visible()  # the saved output's hover script ran
        time.sleep(1.0)  # the news question would have shown by now
        assert page.get_by_text("official Jupyter news").count() == 0, "the news toast shows"
        assert page.locator(".jp-toast-container .Toastify__toast").count() == 0
        shot = _shot(page, graph.locator("xpath=ancestor::div[contains(@class, 'tf-root')]"),
                     "scripts_lab_trusted_graph")
    print(f"\nscreenshot: {shot}")
