"""The student version of 05 in JupyterLab, in Chromium, run as a student runs it: grading
mode on, the GCP of a graded model withheld with a message that says so, and a locked check
failing with the checker's report (no traceback). Screenshots of both are saved under
``test-artifacts/`` for a person to look at."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_support import (
    ARTIFACTS,
    LabServer,
    chromium_page,
    jupyter_lab,
    prepare_root,
    wait_for_kernel,
)
from hint_support import drawn_right_answer, drawn_variants
from test_exercises import student_version

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = "05_exercises.ipynb"

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import Locator, Page
except ImportError:  # pragma: no cover - the page fixture skips without playwright
    pass


STUDENT = "ada"  # the JupyterHub user
WRONG_LINE = 4  # of the answer to exercise 5: d/L/d/a without its term through c


def _student_copy(path: Path) -> None:
    """The student version at ``path``, as a student has worked on it: a look at fan's GCP
    after its model cell, and an answer to exercise 5 with a fan-out term missing."""
    import nbformat

    nb = student_version()
    cells = nb.cells
    model = next(i for i, c in enumerate(cells) if 'tf.grading.variant("fan"' in c.source)
    cells.insert(model + 1, nbformat.v4.new_code_cell("fan.gcp"))
    answer = next(c for c in cells if c.source.startswith("%%tenflang_check fan ex5"))
    # the block of a for the fan drawn for ada (no course key: the practice variant's draw
    # for her id), its term through c left out
    right = drawn_right_answer("fan", drawn_variants(STUDENT)["fan"][1]).splitlines()
    block = right[right.index("define d/L/d/c = d/L/d/o") + 1:]
    wrong = [line.replace("add via_b via_c", "via_b") for line in block
             if "c" not in line.split("=")[0] and not line.startswith("define via_c")]
    assert wrong[WRONG_LINE - 1] == "define d/L/d/a = via_b", wrong
    answer.source = "\n".join(["%%tenflang_check fan ex5 --require a,w", *wrong])
    path.write_text(json.dumps(nbformat.from_dict(nb), indent=1), "utf-8")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[LabServer]:
    root = tmp_path / "root"
    _student_copy(prepare_root(REPO, root, NOTEBOOK))
    # a JupyterHub user, as on a course's hub: the numbers are drawn for them
    with jupyter_lab(root, tmp_path / "lab", env_extra={"JUPYTERHUB_USER": STUDENT}) as server:
        yield server


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Page]:
    with chromium_page(tmp_path / "profile") as page:
        yield page


def _cell(page: Page, text: str) -> Locator:
    """The code cell whose input contains ``text``."""
    return page.locator(".jp-Notebook .jp-CodeCell").filter(
        has=page.locator(".jp-InputArea", has_text=text)).first


def _shot(page: Page, cell: Locator, name: str) -> Path:
    cell.evaluate("element => element.scrollIntoView({block: 'start'})")
    time.sleep(0.4)
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def _run_cell_by_cell(page: Page) -> None:
    """Shift+Enter on every cell, each after the one before has finished, as a student works
    through it (Run All would stop at the first check that fails)."""
    cells = page.locator(".jp-Notebook .jp-Cell")
    cells.first.locator(".jp-InputPrompt").click()
    for i in range(cells.count()):
        cell = cells.nth(i)
        page.keyboard.press("Shift+Enter")
        if "jp-CodeCell" in (cell.get_attribute("class") or ""):
            prompt = cell.locator(".jp-InputArea-prompt")
            page.wait_for_function("p => /\\[\\d+\\]/.test(p.textContent)",
                                   arg=prompt.element_handle(), timeout=60_000)


def test_the_student_version_in_jupyterlab(lab: LabServer, page: Page) -> None:
    notebook = f"notebooks/{NOTEBOOK}"
    page.goto(lab.url(f"lab/tree/{notebook}"))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    wait_for_kernel(lab, notebook)
    _run_cell_by_cell(page)

    setup = _cell(page, "tf.grading.start(").inner_text()
    assert "Grading mode is on for seed, quad, fan" in setup
    assert "student 'ada' (your JupyterHub user)" in setup

    gcp = _cell(page, "fan.gcp")
    said = gcp.locator(".jp-OutputArea-output").inner_text()
    assert "grading mode withholds the GCP (.gcp) of 'fan'" in said
    assert "Traceback" not in said and "define d/L/d/" not in said
    shot_gcp = _shot(page, gcp, "grading_withheld_gcp")

    check = _cell(page, 'check_answer("ex5"')
    verdict = check.locator(".jp-OutputArea-output").inner_text()
    assert verdict.startswith(f"ex5: ✗ line {WRONG_LINE} is the first wrong line")
    assert "fan-out: a is used 2 times" in verdict
    assert "Traceback" not in verdict and "File " not in verdict
    shot_check = _shot(page, _cell(page, "%%tenflang_check fan ex5"), "grading_failing_check")
    print(f"\nscreenshots: {shot_gcp}\n             {shot_check}")
