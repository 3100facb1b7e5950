"""The package's figures in words (issue 27): a loss landscape (a line and a plane), a
decision boundary and a saved training panel, as the extension shows them in a notebook,
exported by nbconvert and read in Chromium. Each picture has its description as alt text
(not nbconvert's "No description has been provided"), its values are a table in a
collapsed section that the keyboard opens, axe finds no violation, and nbconvert's classic
template takes the alt text from the PNG's metadata.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a11y_support import audit_package
from browser_support import chromium_context, save_screenshot

from tenflang_nb import datasets
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook import TenFlangModel

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NET = (Path(__file__).resolve().parents[1] / "examples" / "xor" / "shape.tf").read_text()


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    shell.run_line_magic("load_ext", "tenflang_nb")
    yield shell


def _figures() -> dict[str, Any]:
    """What a student's cells return: the objects, by what they are."""
    seed = TenFlangModel(SEED_EXAMPLE, "seed")
    seed.train({"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}, lr=2, max_iter=20)
    net = TenFlangModel(NET, "net")
    train, test = datasets.moons(60, noise=0.2, seed=1, test=0.25)
    net.train(train, test=test, lr=0.5, max_iter=60)
    panel = seed.training_panel({"x": [1.0, -1.0], "y": [0.9, 0.1]}, live=False, lr=2,
                                max_iter=15, landscape=True)
    panel.run_sync()
    return {"line": seed.landscape(), "plane": net.landscape(resolution=12),
            "boundary": net.boundary(resolution=15), "panel": panel}


def _notebook(ip: Any, shown: dict[str, Any]) -> Any:
    """A notebook of one cell per object, holding what IPython's formatter made of it."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    cells = []
    for name, thing in shown.items():
        if hasattr(thing, "_ipython_display_"):  # the panel displays itself: its bundle
            data, metadata = thing._repr_mimebundle_(), {}
        else:
            data, metadata = ip.display_formatter.format(thing)
        # as the kernel sends it: bytes (a PNG) in base64
        data = {k: base64.b64encode(v).decode("ascii") if isinstance(v, bytes) else v
                for k, v in data.items()}
        output = new_output("display_data", data=data, metadata=metadata)
        cells.append(new_code_cell(f"# {name}", outputs=[output]))
    nb = new_notebook(cells=cells)
    nbformat.validate(nb)
    return nb


def _export(nb: Any, folder: Path, template: str) -> Path:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter(template_name=template).from_notebook_node(nb)
    out = folder / f"figures_{template}.html"
    out.write_text(body, "utf-8")
    return out


def _audited(context: Any, export: Path, what: str) -> tuple[Any, Any]:
    """A page of ``export`` (no network), and axe's report on the package's outputs in it."""
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        ("file:", "data:")) else route.abort())
    page.goto(export.as_uri())
    page.wait_for_load_state("load")
    report = audit_package(page, f"{what} (nbconvert, lab)")
    print(f"\n{report.describe()} ({report.checked} outputs)")
    return page, report


def test_figures_have_alt_text_and_their_values_in_an_export(ip: Any, tmp_path: Path) -> None:
    shown = _figures()
    nb = _notebook(ip, shown)
    alts = {}
    for cell, name in zip(nb.cells, shown, strict=True):
        [output] = cell.outputs
        if name != "panel":  # a figure: its PNG for any reader, HTML beside it
            assert output.data["image/png"], name
            alts[name] = output.metadata["image/png"]["alt"]
        assert "s values as a table</summary>" in output.data["text/html"], name
    assert alts["line"].startswith("loss landscape (the loss against its weight w)")
    assert "lowest" in alts["plane"] and "path net" in alts["plane"], alts["plane"]
    assert "accuracy" in alts["boundary"] and "45 training points" in alts["boundary"]

    with chromium_context(timeout_ms=30_000) as context:
        page, report = _audited(context, _export(nb, tmp_path, "lab"), "figures")
        assert report.checked == len(shown) and not report.violations, report.describe()
        figures = page.locator(".tf-figure")
        for i, name in enumerate(("line", "plane", "boundary")):
            tree = figures.nth(i).aria_snapshot()
            assert f'img "{alts[name]}"' in tree, tree
            assert "No description has been provided" not in tree
        # the keyboard opens a table: Tab to its summary, Enter; a caption and row headers
        values = figures.nth(1).locator("details")
        figures.nth(0).locator("img").evaluate("e => { e.tabIndex = -1; e.focus(); }")
        stops = []
        for _ in range(10):  # the first table's summary, the next output (nbconvert's), ...
            page.keyboard.press("Tab")
            stops.append(page.evaluate("() => document.activeElement.outerHTML.slice(0, 60)"))
            if values.locator("summary").evaluate("e => e === document.activeElement"):
                break
        else:
            raise AssertionError(f"Tab never reached the second table: {stops}")
        page.keyboard.press("Enter")
        assert values.get_attribute("open") is not None, "Enter did not open the table"
        table = values.aria_snapshot()
        assert 'table "The mean loss on a 12 x 9 sample of the grid' in table, table
        assert 'rowheader "' in table and 'columnheader "' in table, table
        values.evaluate("e => e.scrollIntoView()")
        save_screenshot(page, "a11y_figure_values")
        # the saved panel: its curve and landscape named by their words, their tables too
        panel = page.locator(".tenflang-training-panel")
        tree = panel.aria_snapshot()
        assert 'img "loss curve: the mean loss over 16 iterations' in tree, tree
        assert 'img "loss landscape (' in tree, tree
        assert panel.locator("details table").count() == 2

        # nbconvert's classic template reads the alt text from the PNG's metadata
        nb_png = _notebook(ip, {k: v for k, v in shown.items() if k != "panel"})
        for cell in nb_png.cells:
            cell.outputs[0].data.pop("text/html")
        page.goto(_export(nb_png, tmp_path, "classic").as_uri())
        page.wait_for_load_state("load")
        got = page.locator(".output_png img").evaluate_all("es => es.map(e => e.alt)")
        assert got == [alts[name] for name in ("line", "plane", "boundary")], got


TUTORIALS = Path(__file__).resolve().parents[1] / "notebooks"


def _stored_alts(nb: Any) -> list[str]:
    """The alt text of every stored PNG in ``nb``, in order."""
    return [output.metadata["image/png"]["alt"] for cell in nb.cells
            for output in cell.get("outputs", []) if "image/png" in output.get("data", {})]


@pytest.mark.parametrize("name", ["01_tour_of_the_three_phases", "04_digits_classifier"])
def test_a_tutorials_pyplot_figures_in_an_export(name: str, tmp_path: Path) -> None:
    """A tutorial's own pyplot figures (notebook/plot_words.py), as its stored outputs
    export: each picture is named by its stored alt text, nothing has nbconvert's
    placeholder, axe finds no violation, and each figure's first table opens by keyboard."""
    import nbformat

    nb = nbformat.read(TUTORIALS / f"{name}.ipynb", as_version=4)
    alts = _stored_alts(nb)
    assert alts, f"{name}: no stored figures"
    with chromium_context(timeout_ms=30_000) as context:
        page, report = _audited(context, _export(nb, tmp_path, "lab"), name)
        assert not report.violations, report.describe()
        names = page.locator("img").evaluate_all("es => es.map(e => e.alt)")
        assert all(n.strip() for n in names), names
        assert not any("No description has been provided" in n for n in names), names
        figures = page.locator(".tf-figure")
        assert figures.count() == len(alts)
        for i, alt in enumerate(alts):  # the accessible name, as a screen reader gets it
            named = figures.nth(i).get_by_role("img", name=alt, exact=True)
            assert named.count() == 1, figures.nth(i).aria_snapshot()[:300]
        last = figures.nth(len(alts) - 1)
        summary = last.locator("summary").first
        summary.focus()
        page.keyboard.press("Enter")
        values = last.locator("details").first
        assert values.get_attribute("open") is not None, "Enter did not open the table"
        table = values.aria_snapshot()
        assert 'rowheader "' in table and 'columnheader "' in table, table
        last.evaluate("e => e.scrollIntoView()")
        save_screenshot(page, f"a11y_pyplot_{name[:2]}")
