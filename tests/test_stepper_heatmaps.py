"""The stepper's heatmaps (views/heatmap.py): the colour of each entry, the cells on the live
graph and the data that colours them step by step, the table of steps and the final graph
as they read in an untrusted notebook (tests/lab_sanitizer.py), and big tensors summarised.
tests/test_stepper_browser.py hovers them in Chromium."""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
import pytest
from conftest import EXAMPLES
from lab_sanitizer import sanitize_tree, shown_text
from test_stepper import Parsed

from tenflang_nb.core.formatting import fmt_number
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.stepper import HEATMAP_MAX
from tenflang_nb.notebook.views import drawing
from tenflang_nb.notebook.views.heatmap import (
    LEGEND,
    PALETTE,
    PALETTE_CODES,
    grid,
    html_heatmap,
    levels,
)

needs_dot = pytest.mark.skipif(not drawing.shutil.which("dot"), reason="needs Graphviz")
EXAMPLE = {"x": [1.0, 0.5], "y": 1.0}


def xor() -> TenFlangModel:
    model = TenFlangModel((EXAMPLES / "xor" / "shape.tf").read_text(), "xor")
    model.weights["W1"] = np.arange(8.0).reshape(2, 4) / 10 - 0.3
    model.weights["W2"] = np.array([0.5, -0.5, 0.25, 1.0])
    return model


def test_colours_are_signed_and_scaled_to_the_largest_entry() -> None:
    codes = levels(np.array([-4.0, -2.0, 0.0, 1.0, 4.0, np.inf]))
    colours = [PALETTE_CODES[c] for c in codes]
    assert colours[0] == PALETTE[0] and colours[4] == PALETTE[-1]  # the extremes
    assert colours[2] == PALETTE[len(PALETTE) // 2] == "#f7f7f7"  # 0 is white
    assert PALETTE.index(colours[1]) == 3 and PALETTE.index(colours[3]) == 6  # rounded
    assert codes[5] == "n"  # not a number: its own colour
    assert set(levels(np.zeros(3))) == {"5"}  # all zeros: all white, no division by 0
    assert levels(np.array([[1.0, -1.0]])) == levels(np.array([1.0, -1.0]))  # row-major


def test_grids_keep_the_shape_and_wrap_long_vectors() -> None:
    assert grid((7,)) == (1, 7) and grid((33,)) == (2, 32) and grid((4, 3)) == (4, 3)


def test_an_html_heatmap_reads_without_styles_or_scripts() -> None:
    value = np.array([[1.0, -2.0, 0.0], [0.5, 0.25, -1.0]])
    tree = sanitize_tree(html_heatmap("W", value))
    cells = [e for e in tree.iter() if e.tag == "td"]
    assert len(cells) == 6
    assert [c.attrs["title"] for c in cells][:2] == ["W[0, 0] = 1", "W[0, 1] = -2"]
    assert cells[1].styles()["background"] == PALETTE[0]  # -2 is the largest: darkest blue
    assert all(c.styles()["padding"] == "0" for c in cells)  # Lab pads cells otherwise
    assert "[2, 3]" in shown_text(tree)


@needs_dot
def test_the_live_graph_has_one_cell_per_entry_and_the_data_to_colour_them() -> None:
    model = xor()
    run = model.stepper_run(EXAMPLE)
    page = Parsed(model.stepper(EXAMPLE).html)
    data = json.loads(page.script("tf-step-data"))
    ui = page.script("tf-step-ui")
    # every tensor drawn: a group of cells per row, as many cells as entries, row-major
    cells: dict[str, dict[str, int]] = {}
    for block in re.split(r'(?=<g id="tfnb[0-9a-f]+s_n\d+")', ui)[1:]:
        name = re.search(r'data-tf-node="([^"]+)"', block)
        if name is None:
            continue
        for row, rects in re.findall(r'<g class="tf-hm" data-tf-hm="(\w+)"[^>]*>(.*?)</g>',
                                     block):
            cells.setdefault(name.group(1), {})[row] = rects.count("<rect")
    shapes = model.program.shapes
    for v in ("x", "W1", "b1", "a1", "z1", "h", "W2"):
        n = int(np.prod(shapes[v]))
        assert cells[v]["value"] == n, v
        if v != "x":
            assert cells[v]["grad"] == n, v
    assert "y" not in cells and "o" not in cells  # scalars: no heatmap
    # the palette, and the given tensors coloured before any line runs
    assert data["palette"] == PALETTE_CODES
    keys = {s["n"] for s in data["steps"] if s["n"]} | set(data["start"])
    heat0 = {h["n"]: h for rows in data["heat0"].values() for h in rows.values()}
    assert set(heat0) == {"x", "W1", "b1", "W2"} and set(data["heat0"]) <= keys
    assert heat0["W1"]["s"] == [2, 4] and heat0["W1"]["p"] == levels(model.weights["W1"])
    assert heat0["W1"]["t"][1] == fmt_number(model.weights["W1"].ravel()[1], 4)
    # each step colours what it changes: the value it computed, or the adjoint so far
    for step, s in zip(run.steps, data["steps"], strict=True):
        got = {(row, h["n"]): (h["p"], h["s"]) for _, row, h in s["h"]}
        want = {(row, v if row == "value" else f"d/lambda/d/{v}"): (levels(x), list(x.shape))
                for v, row, x in step.tensors}
        assert got == want, step.name
    by_name = {s.name: s for s in run.steps}
    assert np.array_equal(by_name["d/lambda/d/W1"].tensors[0][2],
                          model.values(EXAMPLE)["W1"][1])


@needs_dot
def test_the_static_table_and_the_final_graph_show_the_heatmaps_untrusted() -> None:
    from PIL import Image

    model = xor()
    run = model.stepper_run(EXAMPLE)
    tree = sanitize_tree(model.stepper(EXAMPLE).html)
    text = re.sub(r"\s+", " ", shown_text(tree))
    assert LEGEND in text  # the colour scale, in words beside its swatches
    tables = [e for e in tree.iter() if "tf-hm-table" in e.classes()]
    tensor_steps = [s for s in run.steps if s.array is not None]
    assert len(tables) == len(tensor_steps) > 10
    titles = [c.attrs["title"] for c in tables[0].iter() if c.tag == "td"]
    a1 = tensor_steps[0].array
    assert titles == [f"a1[{i}] = {fmt_number(x, 4)}" for i, x in enumerate(a1)]
    for s in tensor_steps:  # each step's dimension analysis, in its row
        if s.shapes:
            assert f"Shapes: {s.shapes}" in text, s.name
    # the final graph: a PNG holding the heatmaps' colours (the darkest of each scale)
    picture = next(e for e in tree.iter() if "tf-step-png" in e.classes())
    png = base64.b64decode(picture.attrs["src"].split(",", 1)[1])
    colours = {c for _, c in Image.open(io.BytesIO(png)).convert("RGB").getcolors(1 << 16)}
    extremes = {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in (PALETTE[0],
                                                                         PALETTE[-1])}
    assert extremes <= colours


def test_big_tensors_are_summarised_not_drawn() -> None:
    model = TenFlangModel((EXAMPLES / "digits" / "shape.tf").read_text(), "digits")
    rng = np.random.default_rng(0)
    example = {"x": rng.random(64), "y": np.eye(10)[3]}
    run = model.stepper_run(example)
    assert 64 * 32 > HEATMAP_MAX >= 32 * 10
    w1 = model.weights["W1"]
    assert run.start["W1"]["value"] == (f"[64×32] from {fmt_number(w1.min(), 3)} to "
                                        f"{fmt_number(w1.max(), 3)}")
    by_name = {s.name: s for s in run.steps}
    assert by_name["d/lambda/d/W1"].updates[0][2].startswith("[64×32] from ")
    assert by_name["d/lambda/d/W1"].value.startswith("[64×32] ")  # the listing keeps entries
    if drawing.shutil.which("dot"):
        page = Parsed(model.stepper(example).html)
        data = json.loads(page.script("tf-step-data"))
        named = {h[2]["n"] for s in data["steps"] for h in s["h"]}
        assert "d/lambda/d/W2" in named and "d/lambda/d/W1" not in named
