"""The stepper in a real browser (Playwright driving Debian's Chromium), where students meet it:

* JupyterLab: a notebook cell ``%%tenflang net --show step`` on the seed example; step through
  the forward and the backward pass with the buttons, back and forth with the arrow keys, play
  and pause, the slider; after every step the highlighted GCP line, the node and edges that
  light up, every node's label and the caption are what Python computed (``stepper.py``). A
  second stepper on the page does not move. Then the notebook is saved and reopened: its
  stored stepper still steps. And ``notebooks/02_backprop_by_hand.ipynb`` opened as it is
  committed (untrusted: Lab strips scripts, styles and SVG) shows the table of every step.
* A stepper on tensors (a small MLP): at every step each heatmap cell has the colour Python
  gives its entry and its value as title, and the caption its dimension analysis.
* Predict mode (notebook 02's fan program): the questions answered with the keyboard, a wrong
  value's hint, a right one revealing the line, one revealed with a click, the score; on the
  MLP, each tensor question outlines its entry on the heatmap.
* Notebook 7: the same cells, stepped through the same way.
* The same notebook exported by nbconvert and opened from its file, no kernel, no network.

The website (``tests/test_site_browser.py``) checks the stepper of notebook 02 there.
Screenshots go to ``test-artifacts/`` (git-ignored).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    LabServer,
    chromium_page,
    has_notebook7,
    jupyter_lab,
    prepare_root,
    save_screenshot,
    wait_for_kernel,
)
from stepper_support import (
    FAN_CELLS,
    MLP,
    MLP_CELL,
    MLP_PREDICT_CELL,
    TUTORIAL,
    assert_at,
    assert_heatmaps,
    assert_outlined,
    back_to_step,
    expected,
    fan_predict_run,
    mlp_run,
    predict_through,
    step_through,
    tutorial_run,
)

from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.stepper import StepperRun

REPO = Path(__file__).resolve().parents[1]
SCRATCH = "stepper_check.ipynb"
EXAMPLE = {"x": 1.5, "y": 0.2}
OTHER = {"x": -1.0, "y": 0.9}
CELLS = [
    "%load_ext tenflang_nb",
    '%%tenflang net --show step --example "{x: 1.5, y: 0.2}"\n' + SEED_EXAMPLE,
    'net.stepper({"x": -1.0, "y": 0.9})',
    "%%tenflang mlp --show none\n" + MLP,
    "import numpy as np\n" + MLP_CELL,
    *FAN_CELLS,
    MLP_PREDICT_CELL,
]
# the net's (the magic's), another of the net, the MLP's, the fan's and the MLP's to predict
STEPPERS = 5
LOCAL = ("file:", "data:", "blob:", "about:")

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import Locator, Page, expect
except ImportError:  # pragma: no cover - CI installs the [browser] extra; the page
    pass  # fixture skips the tests without it (browser_support.require_chromium)


def seed_run(example: dict[str, float]) -> StepperRun:
    """What the notebook's stepper shows, computed here (a fresh model: w = 0)."""
    return TenFlangModel(SEED_EXAMPLE, "net").stepper_run(example)


def scratch_notebook(path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, path)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    """A headless Chromium page (Debian's browser, a fresh profile)."""
    with chromium_page(tmp_path / "profile") as page:
        yield page



def to_top(element: Locator) -> None:
    element.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.2)


# ------------------------------------------------------------------------------ JupyterLab


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[LabServer]:
    root = tmp_path / "root"
    prepare_root(REPO, root, TUTORIAL)
    scratch_notebook(root / "notebooks" / SCRATCH)
    with jupyter_lab(root, tmp_path / "lab") as server:
        yield server


def _run_all(page: Page, timeout: float = 60) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator("li[data-command='runmenu:run-all']").click()
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll(
                '.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""", timeout=timeout * 1000)


def _errors(page: Page) -> list[str]:
    outputs = page.locator(
        ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'],"
        ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    return [text[:500] for text in outputs.all_inner_texts()]


def _open_and_run(page: Page, server: LabServer, path: str, notebook: str
                  ) -> list[Locator]:
    """Open the scratch notebook at ``path``, run every cell; its steppers."""
    page.goto(server.url(path))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    wait_for_kernel(server, notebook)
    _run_all(page)
    assert not _errors(page), _errors(page)
    steppers = page.locator(".jp-OutputArea-output .tf-stepper")
    expect(steppers).to_have_count(STEPPERS)
    return [steppers.nth(i) for i in range(STEPPERS)]


def check_tensors(page: Page, stepper: Locator, name: str) -> str:
    """Step through the MLP: every heatmap and caption at every step; a screenshot at the
    step that makes W2's gradient (its path)."""
    run = mlp_run()
    to_top(stepper)
    assert_at(stepper, run, 0)
    assert_heatmaps(stepper, run, 0)
    for k in range(1, len(run.steps) + 1):
        stepper.locator(".tf-step-next").click()
        assert_at(stepper, run, k)
        assert_heatmaps(stepper, run, k)
    at = next(i for i, s in enumerate(run.steps, 1) if s.name == "d/lambda/d/W2")
    back_to_step(stepper, run, at)
    assert_heatmaps(stepper, run, at)
    assert "the only product of the two with that shape" in expected(run, at).dims
    to_top(stepper)
    return str(save_screenshot(page, name))


def test_stepper_in_jupyterlab(lab: LabServer, page: Page) -> None:
    notebook = f"notebooks/{SCRATCH}"
    page_errors: list[str] = []
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    first, second, mlp, fan, mlp_predict = _open_and_run(page, lab, f"lab/tree/{notebook}",
                                                         notebook)
    expect(first.locator(".tf-step-live")).to_be_visible()
    expect(first.locator(".tf-step-static")).to_be_hidden()
    run, other = seed_run(EXAMPLE), seed_run(OTHER)
    to_top(first)
    step_through(page, first, run)
    assert_at(second, other, 0)  # the other stepper did not move

    # the second one steps on its own, and the first stays where it was
    second.locator(".tf-step-next").click()
    assert_at(second, other, 1)
    assert_at(first, run, len(run.steps))

    # what a student sees in the middle of the backward pass
    back_to_step(first, run, 10)
    to_top(page.locator(".jp-Notebook .jp-CodeCell").nth(1))
    shot_lab = save_screenshot(page, "stepper_lab_backward")
    shot_tensors = check_tensors(page, mlp, "stepper_lab_tensors")
    shots_predict = predict_through(page, fan, fan_predict_run(), "stepper_lab_predict")
    assert_outlined(page, mlp_predict, mlp_run(predict=True))
    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(len(CELLS))  # no key typed went to the notebook
    expect(page.locator(".jp-Notebook .jp-MarkdownCell")).to_have_count(0)
    assert not page_errors, page_errors

    # saved and reopened: the stored output steps again (it is trusted: this user ran it)
    # pressed again every few seconds: on a busy machine the first press can come before the
    # notebook has taken the keyboard back from the output
    deadline = time.monotonic() + 60
    pressed = 0.0
    saved: dict[str, Any] = {}
    refused = ""
    while time.monotonic() < deadline:
        if time.monotonic() - pressed > 5:
            page.keyboard.press("Control+s")
            pressed = time.monotonic()
        try:
            saved = lab.api(f"api/contents/{notebook}?content=1")
        except urllib.error.HTTPError as err:  # read while the server saves it (CI, once)
            refused = f"; the last read was refused: {err.code} {err.read()[:300]!r}"
            time.sleep(0.25)
            continue
        outputs = saved["content"]["cells"][1]["outputs"]
        if outputs and "tf-step-data" in json.dumps(outputs):
            break
        time.sleep(0.25)
    else:
        raise AssertionError("the notebook was not saved with its stepper" + refused)
    page.reload()
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    reopened = page.locator(".jp-OutputArea-output .tf-stepper").first
    expect(reopened.locator(".tf-step-live")).to_be_visible()
    assert_at(reopened, run, 0)
    reopened.locator(".tf-step-next").click()
    assert_at(reopened, run, 1)

    # notebook 02 as committed: untrusted, so the stepper is its table of every step
    page.goto(lab.url(f"lab/tree/notebooks/{TUTORIAL}"))
    tutorial = page.locator(".jp-NotebookPanel").filter(
        has=page.locator("h1", has_text="Backpropagation by hand"))
    tutorial.locator(".jp-Cell").first.wait_for()
    steppers = tutorial.locator(".jp-OutputArea-output").filter(
        has_text="Stepping through the GCP")
    expect(steppers).to_have_count(2)  # the fan's, and the same in predict mode
    predicting = steppers.nth(1)
    expect(predicting.locator(".tf-step-live")).to_have_count(0)
    assert "Predict mode (6 adjoints to predict) needs the stepper's script" in \
        " ".join(predicting.inner_text().split())
    expect(predicting.locator("input")).to_have_count(0)
    stored = steppers.nth(0)
    expect(stored.locator(".tf-step-live")).to_have_count(0)
    table = stored.locator("table")
    expect(table).to_be_visible()
    text = stored.inner_text()
    assert "Run the cell, or trust the notebook" in text
    fan = tutorial_run()
    assert len(table.locator("tr").all()) >= len(fan.steps)
    for step in fan.steps:
        assert step.caption in text, step.caption
    picture = stored.locator("img.tf-step-png")  # the graph after the last step
    expect(picture).to_be_visible()
    assert picture.evaluate("img => img.complete && img.naturalWidth > 100")
    to_top(stored)
    shot_untrusted = save_screenshot(page, "stepper_lab_untrusted")
    picture.evaluate("e => e.scrollIntoView({block: 'center'})")
    time.sleep(0.2)
    shot_picture = save_screenshot(page, "stepper_lab_untrusted_picture")
    assert not page_errors, page_errors
    print(f"\nscreenshots: {shot_lab}\n             {shot_tensors}\n             {shot_untrusted}"
          f"\n             {shot_picture}\n             " + "\n             ".join(shots_predict))


def test_stepper_in_notebook7(tmp_path: Path, page: Page) -> None:
    if not has_notebook7():
        pytest.skip("Notebook 7 is not installed (pip install -e '.[browser]')")
    root = tmp_path / "root"
    root.mkdir()
    scratch_notebook(root / SCRATCH)
    with jupyter_lab(root, tmp_path / "server", app="notebook") as server:
        page_errors: list[str] = []
        # Notebook 7.x itself throws one TypeError ("reading 'schema'") from its own bundle
        # on load, with any notebook: only errors from elsewhere (the outputs) count here
        page.on("pageerror", lambda error: None if "/static/notebook/" in (error.stack or "")
                else page_errors.append(str(error)))
        first, second, mlp, fan, mlp_predict = _open_and_run(page, server,
                                                             f"notebooks/{SCRATCH}", SCRATCH)
        run, other = seed_run(EXAMPLE), seed_run(OTHER)
        to_top(first)
        step_through(page, first, run)
        assert_at(second, other, 0)
        back_to_step(first, run, 10)
        to_top(page.locator(".jp-Notebook .jp-CodeCell").nth(1))
        shot_nb7 = save_screenshot(page, "stepper_notebook7")
        shot_tensors = check_tensors(page, mlp, "stepper_notebook7_tensors")
        shots = predict_through(page, fan, fan_predict_run(), "stepper_notebook7_predict")
        assert_outlined(page, mlp_predict, mlp_run(predict=True))
        expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(len(CELLS))
        expect(page.locator(".jp-Notebook .jp-MarkdownCell")).to_have_count(0)
        assert not page_errors, page_errors
    print(f"\nscreenshots: {shot_nb7}\n             {shot_tensors}\n             "
          + "\n             ".join(shots))


# ------------------------------------------------------------------------------ nbconvert


def test_stepper_in_an_nbconvert_export_without_kernel_or_network(tmp_path: Path,
                                                                  page: Page) -> None:
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    path = tmp_path / SCRATCH
    scratch_notebook(path)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    body, _ = HTMLExporter().from_notebook_node(nb)
    exported = tmp_path / "stepper_check.html"
    exported.write_text(body, "utf-8")

    # no network: whatever the page asks of the outside is refused (and noted)
    blocked: list[str] = []
    page_errors: list[str] = []

    def refuse(route: Any) -> None:
        url = route.request.url
        if url.startswith(LOCAL):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    page.route("**/*", refuse)
    page.on("pageerror", lambda error: page_errors.append(str(error)))
    page.goto(exported.as_uri())
    page.wait_for_load_state("load")
    # nbconvert's template asks for require.js and MathJax from a CDN: the stepper needs neither
    assert all(re.match(r"https://cdnjs\.cloudflare\.com/", url) for url in blocked), blocked

    steppers = page.locator(".tf-stepper")
    expect(steppers).to_have_count(STEPPERS)
    first, second, mlp, fan, mlp_predict = (steppers.nth(i) for i in range(STEPPERS))
    run, other = seed_run(EXAMPLE), seed_run(OTHER)
    to_top(first)
    step_through(page, first, run)
    assert_at(second, other, 0)
    back_to_step(first, run, 10)
    to_top(first)
    shot_export = save_screenshot(page, "stepper_nbconvert")
    shot_tensors = check_tensors(page, mlp, "stepper_nbconvert_tensors")
    shots = predict_through(page, fan, fan_predict_run(), "stepper_nbconvert_predict")
    assert_outlined(page, mlp_predict, mlp_run(predict=True))
    assert not page_errors, page_errors
    want = expected(run, 10)
    print(f"\nexport: {len(body) // 1024} KB; refused {len(blocked)} CDN requests; at step 10: "
          f"{want.caption}\nscreenshots: {shot_export}\n             {shot_tensors}\n"
          "             " + "\n             ".join(shots))
