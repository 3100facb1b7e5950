"""The tour notebook in a real browser: JupyterLab in headless Chromium, driven by Playwright.

Runs every cell of ``notebooks/01_tour_of_the_three_phases.ipynb`` as a student would (Run ▸
Run All Cells), then checks what they would see: the data-flow graph as SVG, the shape program
beside its GCP, the training panel's sliders and buttons; that Train makes the loss curve move
and Stop stops it; and that no cell printed an error. A screenshot is saved under
``test-artifacts/`` (git-ignored) and its path printed.

Also the highlighter: the prebuilt extension (``labextension/``) colours a ``%%tenflang`` cell as
TenFlang and leaves a Python cell Python, in JupyterLab and in Notebook 7.
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
    LAB_SETTINGS,
    LabServer,
    chromium_page,
    css_rgb,
    has_notebook7,
    jupyter_lab,
    prepare_root,
    wait_for_kernel,
)
from pygments import lex

from tenflang_nb.lexer import CATEGORY, TenFlangLexer
from tenflang_nb.palette import PALETTE

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "01_tour_of_the_three_phases.ipynb"
ARTIFACTS = REPO / "test-artifacts"

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import Locator, Page, expect
except ImportError:  # pragma: no cover - CI installs the [browser] extra; the page
    pass  # fixture skips the tests without it (browser_support.require_chromium)


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
    with chromium_page(tmp_path / "profile") as page:
        yield page


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


def _stored_html(notebook: str | Path) -> list[str]:
    """The ``text/html`` of every output stored in the notebook (a name: a committed one)."""
    path = notebook if isinstance(notebook, Path) else REPO / "notebooks" / notebook
    nb = json.loads(path.read_text("utf-8"))
    found = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html")
            if html is not None:
                found.append("".join(html) if isinstance(html, list) else html)
    return found


def _count(htmls: list[str], cls: str) -> int:
    # not inside scripts: the stepper's interactive markup waits there as inert text
    return sum(len(re.findall(rf'class="[^"]*\b{re.escape(cls)}\b|class=\'{cls}\'',
                              re.sub(r"(?s)<script\b.*?</script>", "", h)))
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
            counted = re.search(r"(\d+) (?:lines|statements)\b", heading.inner_text())
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
        # not the picture of a run that had not begun (one may converge where it starts: a
        # gradient exactly 0, as XOR's at all-zero weights in notebook 06)
        assert "· running" not in text, f"the picture of a run still running: {text}"
        assert "iteration 0/" not in text or "converged" in text, \
            f"the picture of a run that had not begun: {text}"
        # the loss curve, and the landscape beside it when the run showed one (notebook 06)
        pictures = panel.locator("img")
        assert re.match(r"loss curve", pictures.first.get_attribute("alt") or "")
        for k in range(pictures.count()):
            expect(pictures.nth(k)).to_be_visible()
            assert pictures.nth(k).evaluate("i => i.naturalWidth") > 100
        assert re.search(r"reached max iterations|converged|stopped", text), text
    for i in range(panels.count()):
        shots.append(_shot(page, panels.nth(i), f"untrusted_{name}_panel{i}"))
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


# --- what a newcomer trips over: error lines, long GCP lines ---------------------------------

LONG = "the_first_weight_of_the_hidden_layer"
NEWCOMER_CELLS = [
    "%load_ext tenflang_nb",
    # 'y' is never declared: program line 3, the cell's line 4
    "%%tenflang net\ndeclare input x\ndeclare weight w\ndefine y = mul x w\ndeclare loss L\n"
    "define L = mul y y",
    # long names: GCP lines far wider than the pane
    f"%%tenflang longnet --show gcp\ndeclare input the_input_value_of_the_network\n"
    f"declare weight {LONG}\ndeclare intvar the_hidden_activation_before_squashing\n"
    f"declare loss the_loss_of_the_whole_network\n"
    f"define the_hidden_activation_before_squashing = mul the_input_value_of_the_network {LONG}\n"
    f"define the_loss_of_the_whole_network = logistic the_hidden_activation_before_squashing",
]
WRAPPING = ".jp-Notebook pre.tf-gcp, .jp-Notebook pre.tf-shape"
# every wrapping pane: nothing past its right edge (no horizontal scrolling; nothing cut)
_OVERFLOW_JS = f"""() => [...document.querySelectorAll({json.dumps(WRAPPING)})].map(pre => {{
    const edge = pre.getBoundingClientRect().right + 1;
    const rows = [...pre.querySelectorAll('.tf-line')];
    return {{scroll: pre.scrollWidth, client: pre.clientWidth, rows: rows.length,
             past: rows.filter(r => [...r.getClientRects()].some(b => b.right > edge)).length,
             lines: rows.reduce((n, r) => n + Math.round(r.getBoundingClientRect().height /
                                parseFloat(getComputedStyle(r).lineHeight)), 0)}};
}})"""


def _assert_long_lines_wrap(page: Page, where: str) -> None:
    panes = page.evaluate(_OVERFLOW_JS)
    assert len(panes) == 2, f"{where}: {len(panes)} wrapping panes"
    for pane in panes:
        assert pane["scroll"] <= pane["client"] and pane["past"] == 0, f"{where}: cut: {pane}"
        assert pane["lines"] > pane["rows"], f"{where}: no line wrapped: {pane}"


def test_newcomer_views_in_jupyterlab(tmp_path: Path, page: Page) -> None:
    """An error names the line the editor shows (line numbers on: the magic line is the
    cell's line 1), and a GCP pane wraps its long lines, run (trusted), saved and opened
    untrusted, and exported by nbconvert."""
    root = tmp_path / "root"
    root.mkdir()
    name = "newcomer.ipynb"
    (root / name).write_text(json.dumps(_notebook(NEWCOMER_CELLS)), "utf-8")
    settings = json.loads(json.dumps(LAB_SETTINGS))
    settings["@jupyterlab/notebook-extension/tracker.jupyterlab-settings"]["codeCellConfig"] = {
        "lineNumbers": True}
    with jupyter_lab(root, tmp_path / "lab", settings=settings) as server:
        page.goto(server.url(f"lab/tree/{name}"))
        page.locator(".jp-Notebook .jp-CodeCell").nth(2).wait_for()
        wait_for_kernel(server, name)
        _run_all_cells(page)
        _wait_until_executed(page, timeout=60)
        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(1)
        head = cell.locator(".tf-diag-head").inner_text()
        assert re.search(r"net\.tf: line 3 \(line 4 of the cell\): error: 'y' is defined", head)
        gutter = cell.locator(".cm-gutterElement", has_text=re.compile(r"^4$"))
        expect(gutter).to_be_visible()  # the editor numbers its lines
        offending = cell.locator(".tf-bad").inner_text()
        assert cell.locator(".cm-line").nth(4 - 1).inner_text() == offending.split("| ", 1)[1]
        shot_error = _shot(page, cell, "newcomer_error_line")
        _assert_long_lines_wrap(page, "trusted")
        shot_gcp = _shot(page, page.locator(".jp-Notebook .jp-CodeCell").nth(2),
                         "newcomer_gcp_wrapped")
        page.keyboard.press("Control+s")
        _wait_for(lambda: "tf-gcp" in (root / name).read_text("utf-8"), 20, "the save")
    saved = root / name
    untrusted_root = tmp_path / "untrusted"
    (untrusted_root / "notebooks").mkdir(parents=True)  # where _open_saved looks
    shutil.copy2(saved, untrusted_root / "notebooks" / name)
    with jupyter_lab(untrusted_root, tmp_path / "lab2") as server:
        _open_saved(page, server, name, len(_stored_html(saved)))
        assert page.locator(".jp-OutputArea-output style").count() == 0, "trusted?"
        _assert_long_lines_wrap(page, "untrusted")
        shot_untrusted = _shot(page, page.locator(".jp-Notebook .jp-CodeCell").nth(2),
                               "newcomer_gcp_wrapped_untrusted")
    from nbconvert import HTMLExporter

    exported = tmp_path / "newcomer.html"
    exported.write_text(HTMLExporter().from_filename(str(saved))[0], "utf-8")
    page.goto(exported.as_uri())
    page.locator("pre.tf-gcp").wait_for()
    _assert_long_lines_wrap(page, "exported")
    shot_exported = _shot(page, page.locator("pre.tf-gcp"), "newcomer_gcp_wrapped_exported")
    print(f"\nscreenshots: {shot_error}\n  {shot_gcp}\n  {shot_untrusted}\n  {shot_exported}")


# --- the TenFlang highlighter (labextension/) ------------------------------------------------

TENFLANG_CELL = """\
%%tenflang net --show graph,gcp --full --train data --lr=0.5 --example "{x: 1}"
# a comment
declare input x
declare weight W [64, 32]
declare loss lambda
define z = mul x W
define lambda = logstic z 2.5e-1
define d/lambda/d/o = mul d/lambda/d/diff d/diff/d/o:0
#macro c = sq a; define c = mul a a"""
PYTHON_CELL = "f = lambda x: x + 1  # declare weight w"
PLAIN_CELL = "declare input x\ndefine y = mul x x"
# a whole GCP and the original's vector and macro lines, against the Pygments lexer
LEXER_CELL = ("%%tenflang_check gcp\n"
              + (REPO / "examples" / "logistic" / "gcp.tf").read_text("utf-8")
              + "#macro c = sq a; define c = mul a a\ndeclare_vector input v 3\n"
                "define_vector u = relu v\ndefine s = reduce_vector u add\n"
                "define q = dot u v\ndefine r = mul +3 .5\n"
                "define m = sq q\ndefine n = logstic q\n"
                # the Hessian-vector program's generated names
                "define dv/d/o/d/z:1 = mul d/o/d/z:0 v/w\n")
# what each word of TENFLANG_CELL must be (the class is cm-tenflang-<category>)
EXPECTED = {
    "%%tenflang": "magic", "net": "model", "--show": "option", "graph,gcp": "value",
    "--full": "option", "data": "value", "0.5": "value", '"{x: 1}"': "value",
    "# a comment": "comment",
    "declare": "instruction", "input": "kind", "weight": "kind", "loss": "kind",
    "W": "name", "64": "number", "mul": "operator", "lambda": "name",
    "logstic": "invalid",  # where an operator goes, a word that is none: misspelled
    "2.5e-1": "number", "d/lambda/d/o": "derivative", "d/diff/d/o:0": "derivative",
    "#macro": "macro", "sq": "operator", "=": "equals",
}

_TOKENS_JS = """cell => [...cell.querySelectorAll('.cm-content .cm-line span')].map(span => ({
    text: span.textContent,
    classes: [...span.classList].filter(c => c.startsWith('cm-tenflang-')),
    color: getComputedStyle(span).color,
    weight: getComputedStyle(span).fontWeight,
}))"""


def _notebook(cells: list[str]) -> dict[str, Any]:
    return {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python", "codemirror_mode": {"name": "ipython",
                                                                   "version": 3}},
        },
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "source": source,
                   "outputs": [], "execution_count": None} for i, source in enumerate(cells)],
    }


def _tokens(page: Page, index: int) -> list[dict[str, Any]]:
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(index)
    return list(cell.evaluate(_TOKENS_JS))


def _categories(tokens: list[dict[str, Any]]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for token in tokens:
        found.setdefault(token["text"], set()).update(
            c.removeprefix("cm-tenflang-") for c in token["classes"])
    return found


def _check_highlighting(page: Page, app: str) -> None:
    """The cells of the highlight notebook as the student sees them; then editing the first
    line of the plain cell switches it to TenFlang and back."""
    page.locator(".jp-Notebook .jp-CodeCell .cm-tenflang-instruction").first.wait_for()
    tenflang = _tokens(page, 0)
    found = _categories(tenflang)
    wrong = {word: found.get(word) for word, category in EXPECTED.items()
             if found.get(word) != {category}}
    assert not wrong, f"{app}: words with the wrong TenFlang class: {wrong}"

    # each category in the palette's colour (the listings' too: tenflang_nb/palette.py)
    for token in tenflang:
        category = token["classes"][0].removeprefix("cm-tenflang-")
        colour = PALETTE[category]
        assert token["color"] == css_rgb(colour.light), f"{app}: {token} is not {colour}"
        assert (token["weight"] == "700") == colour.bold, f"{app}: {token} vs {colour}"
    misspelled = next(t for t in tenflang if t["text"] == "logstic")
    mul = next(t for t in tenflang if t["text"] == "mul")
    assert misspelled["color"] != mul["color"], f"{app}: logstic looks like an operator"
    # a dark theme (JupyterLab marks it on <body>, as the theme switch does): dark colours
    page.evaluate("document.body.dataset.jpThemeLight = 'false'")
    for token in _tokens(page, 0):
        colour = PALETTE[token["classes"][0].removeprefix("cm-tenflang-")]
        assert token["color"] == css_rgb(colour.dark), f"{app}, dark: {token} is not {colour}"
    page.evaluate("document.body.dataset.jpThemeLight = 'true'")

    python = _tokens(page, 1)
    assert not any(t["classes"] for t in python), f"{app}: the Python cell got TenFlang classes"
    keyword = next(t for t in python if t["text"] == "lambda")
    # Python's lambda is a keyword in the theme's colours, not TenFlang's
    assert keyword["weight"] == "700", f"{app}: lambda in the Python cell is not a keyword"
    assert keyword["color"] not in {css_rgb(c.light) for c in PALETTE.values()}, \
        f"{app}: the Python cell is in TenFlang's colours"
    assert not any(t["classes"] for t in _tokens(page, 2)), \
        f"{app}: a cell without the magic got TenFlang classes"

    # the same categories as the Pygments lexer (what nbconvert and Sphinx show) token by token
    program = LEXER_CELL.split("\n", 1)[1]
    expected = [(text, CATEGORY[kind]) for kind, text in
                lex(program, TenFlangLexer(stripnl=False)) if text.strip()]
    # CodeMirror draws only the lines near the viewport: bring the whole cell in, wait for all
    cell = page.locator(".jp-Notebook .jp-CodeCell").nth(3)
    cell.evaluate("element => element.scrollIntoView({block: 'start'})")
    expect(cell.locator(".cm-line")).to_have_count(LEXER_CELL.count("\n") + 1)
    seen = [(t["text"], "/".join(c.removeprefix("cm-tenflang-") for c in t["classes"]))
            for t in _tokens(page, 3)]
    assert seen[:2] == [("%%tenflang_check", "magic"), ("gcp", "model")]
    seen = seen[2:]
    # the lists may differ in length: compare up to the shorter
    pairs = zip(seen, expected, strict=False)
    first = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(seen), len(expected)))
    assert seen == expected, (f"{app}: the highlighter and the Pygments lexer disagree from "
                              f"token {first}: {seen[first:first + 4]} vs "
                              f"{expected[first:first + 4]}")

    # typing the magic line turns the plain cell into TenFlang; deleting it turns it back
    plain = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
    editor = plain.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("%%tenflang_check m\n")
    expect(plain.locator(".cm-tenflang-instruction").first).to_be_visible()
    assert _categories(_tokens(page, 2)).get("%%tenflang_check") == {"magic"}
    page.keyboard.press("Control+Home")
    page.keyboard.press("Shift+ArrowDown")
    page.keyboard.press("Delete")
    expect(plain.locator(".cm-tenflang-instruction")).to_have_count(0)
    assert editor.inner_text().startswith("declare input x")
    page.keyboard.press("Escape")


def _require_current_extension() -> None:
    """The server loads the installed copy of the extension: it must be the committed build
    (an editable install copies it too, so a rebuild needs a re-install)."""
    from jupyter_core.paths import jupyter_path

    built = REPO / "tenflang_nb" / "labextension"
    for folder in jupyter_path("labextensions"):
        installed = Path(folder) / "tenflang-nb"
        if installed.is_dir():
            break
    else:
        pytest.fail("the tenflang-nb JupyterLab extension is not installed: pip install -e .")
    differ = []
    for path in sorted(built.rglob("*")):
        copy = installed / path.relative_to(built)
        if path.is_file() and (not copy.is_file() or copy.read_bytes() != path.read_bytes()):
            differ.append(path.relative_to(built).as_posix())
    assert not differ, (f"{installed} is not the committed build ({differ} differ): "
                        "re-install the package (pip install -e .)")


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_tenflang_cells_are_highlighted(tmp_path: Path, page: Page, app: str) -> None:
    if app == "notebook" and not has_notebook7():
        pytest.skip("Notebook 7 is not installed (pip install -e '.[browser]')")
    _require_current_extension()
    root = tmp_path / "root"
    root.mkdir()
    name = "highlight.ipynb"
    cells = [TENFLANG_CELL, PYTHON_CELL, PLAIN_CELL, LEXER_CELL]
    (root / name).write_text(json.dumps(_notebook(cells)), "utf-8")
    with jupyter_lab(root, tmp_path / "server", app=app) as server:
        page.goto(server.url(f"lab/tree/{name}" if app == "lab" else f"notebooks/{name}"))
        page.locator(".jp-Notebook .jp-CodeCell").nth(2).wait_for()
        _check_highlighting(page, app)
        page.locator(".jp-Notebook .jp-CodeCell").first.evaluate(
            "element => element.scrollIntoView({block: 'start'})")
        ARTIFACTS.mkdir(exist_ok=True)
        shot = ARTIFACTS / f"browser_highlight_{app}.png"
        page.screenshot(path=str(shot))
        print(f"\nscreenshot: {shot}")
