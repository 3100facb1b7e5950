"""Every view reads correctly in an untrusted notebook: its HTML passed through a model of
JupyterLab's sanitizer (tests/lab_sanitizer.py) still shows the graph (as a PNG), listings
one numbered statement per line, the legend as words beside swatches, errors with a caret, and
a training panel's saved picture; and the same output, trusted, keeps the interactive SVG.
tests/test_browser.py opens the committed tutorials untrusted in JupyterLab itself."""

from __future__ import annotations

import asyncio
import base64
import io
import re

import pytest
from conftest import VECTOR_PROGRAM, XOR_SHAPE
from lab_sanitizer import Element, parse, sanitize, sanitize_tree, shown_text

from tenflang_nb.core.api import TenFlangError, TrainSettings, compile, trainer
from tenflang_nb.core.api import parse as tf_parse
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook.figures.canvas import kept_png
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.panel import TrainingPanel, stop_live_runs
from tenflang_nb.notebook.views import drawing
from tenflang_nb.notebook.views.diagnostics import error_view
from tenflang_nb.notebook.views.html import static_text as _static

XOR = XOR_SHAPE
VECTORS = VECTOR_PROGRAM
SEED_DATA = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
needs_dot = pytest.mark.skipif(not drawing.shutil.which("dot"), reason="needs Graphviz")


@pytest.fixture
def seed() -> TenFlangModel:
    return TenFlangModel(SEED_EXAMPLE, "net")


def _visible(element: Element, root: Element) -> bool:
    """Neither ``element`` nor an ancestor (within ``root``) is ``display:none``."""
    def path(node: Element) -> list[Element] | None:
        if node is element:
            return [node]
        for child in node.children:
            if isinstance(child, Element):
                found = path(child)
                if found is not None:
                    return [node, *found]
        return None

    chain = path(root)
    assert chain is not None
    return not any(e.hidden() for e in chain)


def _png_of(img: Element) -> bytes:
    src = img.attrs["src"]
    assert src.startswith("data:image/png;base64,"), src[:40]
    return base64.b64decode(src.split(",", 1)[1])


# ------------------------------------------------------------------------------ the graph

@needs_dot
def test_graph_is_a_picture_when_sanitized(seed: TenFlangModel) -> None:
    tree = sanitize_tree(seed.show("graph").html)
    assert not tree.find_all("svg") and not tree.find_all("style") and not tree.find_all("script")
    images = tree.find_all("img", "tf-graph-png")
    assert len(images) == 1 and _visible(images[0], tree)
    png = _png_of(images[0])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    # drawn at the SVG's size: PNG pixels at 144 dpi, CSS pixels at 96
    assert int(images[0].attrs["width"]) == round(int.from_bytes(png[16:20], "big") * 96 / 144)
    assert "x: input" in images[0].attrs["alt"] and "z = mul x w" in images[0].attrs["alt"]
    # the SVG's labels are left behind as loose words, but hidden
    shown = shown_text(tree)
    assert "Data-flow graph" in shown
    assert not re.search(r"\d\. x", shown), f"the SVG's text shows: {shown[:200]!r}"


@needs_dot
def test_graph_trusted_shows_the_svg_and_hides_the_picture(seed: TenFlangModel) -> None:
    """Unsanitized (trusted, nbconvert, the website) our stylesheet swaps them round."""
    html = seed.show("graph").html
    tree = parse(html)
    box = tree.find_all("div", "tf-styled-only")[0]
    assert box.hidden() and box.find_all("svg"), "the SVG sits in the box the stylesheet shows"
    assert tree.find_all("div", "tf-plain-only")[0].find_all("img")
    css = re.sub(r"\s+", " ", _static("tenflang.css"))
    assert ".tf-root .tf-styled-only { display: block !important; }" in css
    assert ".tf-root .tf-plain-only { display: none !important; }" in css
    assert "<style>" in html and "<script>" in html  # what makes it so, and the hover


@needs_dot
def test_graph_picture_keeps_every_kind_colour_and_is_deterministic() -> None:
    model = TenFlangModel(XOR, "xor")
    layout = drawing.layout_graph(model.program, model.graph, "tfnbtest000000")
    png, width = drawing.render_png(layout)
    assert (png, width) == drawing.render_png(layout), "same layout, same bytes (nbval)"
    from PIL import Image

    with Image.open(io.BytesIO(png)) as image:
        colours = {c for _, c in image.convert("RGB").getcolors(1 << 16)}
    for kind in {n.kind for n in layout.nodes}:
        for key in ("fill", "line"):
            hex_colour = drawing.KIND_STYLES[kind][key]
            rgb = tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
            assert rgb in colours, f"{kind}'s {key} {hex_colour} is not in the picture"
    assert (255, 255, 255) in colours, "on white: an untrusted output may sit on a dark theme"


@needs_dot
def test_values_graph_is_a_picture_too(seed: TenFlangModel) -> None:
    seed.weights["w"] = 0.5
    tree = sanitize_tree(seed.show_values({"x": 1.0, "y": 0.5}).html)
    assert len(tree.find_all("img", "tf-graph-png")) == 1
    assert "grad" not in shown_text(tree).split("Values and gradients")[1].split("value:")[0]


def test_legend_is_words_beside_swatches_that_survive(seed: TenFlangModel) -> None:
    tree = sanitize_tree(seed.show("graph").html)
    legend = tree.find_all("div", "tf-legend")[0]
    assert shown_text(legend).split() == ["input", "exp_output", "weight", "intvar", "output",
                                          "loss", "constant"]
    for swatch in legend.find_all("span", "tf-swatch"):
        styles = swatch.styles()
        assert styles["display"] == "inline-block"
        assert styles["width"] == styles["height"] == "11px"
        assert styles["background"].startswith("#")
        assert re.fullmatch(r"1\.5px (solid|dashed) #[0-9a-f]{6}", styles["border"])


def test_graph_without_dot_is_still_lists(seed: TenFlangModel,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(drawing.shutil, "which", lambda _name: None)
    shown = shown_text(sanitize_tree(seed.show("graph").html))
    assert "No graph drawing" in shown and "z = mul x w" in shown


# ------------------------------------------------------------------------------ listings

def _listing_lines(tree: Element, cls: str) -> list[str]:
    panes = tree.find_all("pre", cls)
    assert len(panes) == 1, f"{len(panes)} listings .{cls}"
    text = panes[0].text()
    assert text.endswith("\n")
    return text[:-1].split("\n")


def _numbered(lines: list[str]) -> list[str]:
    width = len(str(len(lines)))
    return [f"{n:>{width}}  {line}" for n, line in enumerate(lines, 1)]


def test_listings_read_line_by_line_when_sanitized(seed: TenFlangModel) -> None:
    tree = sanitize_tree(seed.show("gcp").html)
    assert _listing_lines(tree, "tf-shape") == _numbered(SEED_EXAMPLE.rstrip("\n").split("\n"))
    gcp = [str(line.statement) for line in seed.compiled.lines]
    assert _listing_lines(tree, "tf-gcp") == _numbered(gcp)
    # nothing else in a line: no provenance attributes survive, only text
    assert "data-tf-line" not in sanitize(seed.show("gcp").html)


def test_a_long_gcp_aligns_its_numbers() -> None:
    chain = ["declare input x", "declare weight w", "declare loss L"]
    chain += [f"declare intvar a{i}" for i in range(30)]
    chain += ["define a0 = mul x w"] + [f"define a{i} = mul a{i - 1} w" for i in range(1, 30)]
    model = TenFlangModel("\n".join([*chain, "define L = mul a29 a29"]) + "\n", "chain")
    lines = _listing_lines(sanitize_tree(model.show("gcp").html), "tf-gcp")
    assert len(lines) >= 100
    assert lines[0].startswith("  1  ") and lines[99].startswith("100  ")


def test_expanded_listing_says_where_each_line_was_written() -> None:
    model = TenFlangModel(VECTORS, "vectors")
    assert model.program.expanded
    lines = _listing_lines(sanitize_tree(model.show("expanded").html), "tf-expanded-code")
    statements = model.program.statements
    assert len(lines) == len(statements)
    for n, (line, s) in enumerate(zip(lines, statements, strict=True), 1):
        match = re.match(r"^ *(\d+)  +←(\d+)  (.*)$", line)
        assert match, line
        assert (int(match.group(1)), int(match.group(2)), match.group(3)) == (
            n, s.src.line, str(s))


def test_long_lines_wrap_when_sanitized() -> None:
    """A long line wraps at its pane's edge rather than running past it: inline styles,
    which the sanitizer keeps; its rows stay inline there (as blocks their text would read
    with a blank line between lines), so the indent under the code is the stylesheet's."""
    name = "the_first_weight_of_the_hidden_layer_of_a_network"
    model = TenFlangModel(f"declare input x\ndeclare weight {name}\ndeclare loss L\n"
                          f"define L = mul x {name}\n", "long")
    html = model.show("gcp,expanded").html
    tree = sanitize_tree(html)
    for cls, before in (("tf-shape", 0), ("tf-gcp", 0), ("tf-expanded-code", 4)):
        pane = tree.find_all("pre", cls)[0]
        assert pane.styles()["white-space"] == "pre-wrap", cls
        assert pane.styles()["overflow-wrap"] == "break-word", cls  # a long name too
        # at a space where there is one (JupyterLab's pre breaks anywhere: break-all)
        assert pane.styles()["word-break"] == "normal", cls
        rows = pane.find_all("span", "tf-line")
        assert rows and not any(row.styles() for row in rows), cls
        # trusted, the stylesheet indents a wrapped line's rest to its code: past the number
        # and its two spaces (and, expanded, where the line was written)
        styled = parse(html).find_all("pre", cls)[0]
        width = len(str(len(rows)))
        assert styled.styles()["--tf-hang"] == str(width + 2 + before), cls
    css = re.sub(r"\s+", " ", _static("tenflang.css"))
    assert ("pre.tf-hang > .tf-line { padding-left: calc(4px + var(--tf-hang) * 1ch); "
            "text-indent: calc(var(--tf-hang) * -1ch); }") in css


def test_listing_lines_are_one_row_each_when_styled(seed: TenFlangModel) -> None:
    """Trusted, a line is a block (a highlight spans the row) ending in its newline: no
    blank row between lines, and the numbers cannot be selected with the code."""
    css = re.sub(r"\s+", " ", _static("tenflang.css"))
    assert ".tf-line { display: block;" in css and "user-select: none" in css
    html = seed.show("gcp").html
    assert re.search(r'<span class="tf-line tf-gcp-line"[^>]*><span class="tf-ln"', html)
    assert "\n</span>" in html and "</span>\n<span" not in html


# ------------------------------------------------------------------------------ errors

def test_error_shows_its_caret_when_sanitized() -> None:
    source = "declare input x\ndeclare loss L\ndefine L = mul zz x\n"
    with pytest.raises(TenFlangError) as info:
        tf_parse(source, "bad.tf")
    tree = sanitize_tree(error_view(info.value, source).html)
    listing = tree.find_all("pre")[0].text().split("\n")
    bad = next(i for i, line in enumerate(listing) if line.startswith("> 3"))
    caret = listing[bad + 1]
    assert caret.index("^") == listing[bad].index("zz"), (listing[bad], caret)
    assert tree.find_all("span", "tf-caret")[0].styles()["color"] == "#dc2626"


# ------------------------------------------------------------------------------ the panel

def _panel(live: bool, **settings: float) -> TrainingPanel:
    gcp = compile(tf_parse(SEED_EXAMPLE))
    chosen = TrainSettings(**{"lr": 0.1, "tol": 1e-12, "max_iter": 10**7, **settings})
    panel = TrainingPanel(lambda s: trainer(gcp, SEED_DATA, s), chosen, live=live)
    panel.session.chunk_seconds = 0.002
    return panel


def test_saved_panel_is_a_picture_with_its_final_curve() -> None:
    panel = _panel(live=False, max_iter=60)
    panel.run_sync()
    tree = sanitize_tree(panel._repr_mimebundle_()["text/html"])
    shown = shown_text(tree)
    assert "Saved picture of the training panel" in shown and "run the cell to train live" in shown
    assert "iteration 60/60" in shown and "reached max iterations" in shown
    assert "max iterations 60" in shown  # an int, not 6e+01
    curve = tree.find_all("img")
    # the widget's final picture, in the small encoding of a kept picture
    assert len(curve) == 1 and _png_of(curve[0]) == kept_png(bytes(panel.plot.value))
    assert _visible(curve[0], tree)
    # what Train does next needs the buttons, which a picture has not
    assert "Train starts over" not in shown


def test_panel_saved_while_running_says_so_and_draws_no_empty_plot() -> None:
    panel = _panel(live=True)

    async def begin() -> str:
        panel.start()  # as the magic does: the first picture is published at the start
        html = panel.static_html()
        panel.stop()
        return html

    html = asyncio.run(begin())
    shown = shown_text(sanitize_tree(html))
    assert "iteration 0/" in shown and "still running when saved" in shown
    assert "taken while it trained" in shown and "no loss curve yet" in shown
    assert "<img" not in html


def _live_run_stopped_at(iteration: int, spins: int) -> tuple[TrainingPanel, list[dict]]:
    """A live run that went on for ``spins`` turns of the loop, then stop_live_runs; the panel
    and the bundles it published."""
    panel = _panel(live=True)
    published: list[dict] = []

    class Handle:
        def update(self, bundle: dict, raw: bool = False) -> None:
            published.append(bundle)

    panel.displays.append(Handle())

    async def scenario() -> None:
        panel.start()
        for _ in range(spins):
            await asyncio.sleep(0)
        assert stop_live_runs(at_iteration=iteration) >= 1
        await asyncio.sleep(0.01)  # the task resumes and exits without stepping

    asyncio.run(scenario())
    return panel, published


def test_stop_live_runs_stops_at_the_same_iteration_every_time() -> None:
    """What notebooks/refresh.py does after the last cell: the saved picture of a live run is
    the run stopped at a fixed iteration, whether the run was before or past it."""
    reference = _panel(live=False, max_iter=400)
    reference.run_sync()
    for spins in (0, 200):
        panel, published = _live_run_stopped_at(400, spins)
        assert panel.state == "stopped" and panel.trainer.iterations == 400
        assert panel.trainer.weights == reference.trainer.weights
        # a stopped run has evaluated iterations 0..399; the finished one also 400
        losses = [r.loss for r in panel.trainer.history]
        assert len(losses) == 400 and losses == [r.loss for r in reference.trainer.history][:400]
        assert "iteration 400/10000000" in published[-1]["text/html"]
        assert "stopped" in published[-1]["text/plain"]
    assert stop_live_runs() == 0  # nothing left running


def test_stop_live_runs_republishes_a_run_that_ended_by_itself() -> None:
    """A live run that converged between cells sent its final picture with the parent of the
    cell that started it, which nbclient no longer hears; before, notebook 06's saved XOR
    panel said "iteration 0/3000 · running" though the run had converged at 830."""
    panel = _panel(live=True, max_iter=50)
    published: list[dict] = []

    class Handle:
        def update(self, bundle: dict, raw: bool = False) -> None:
            published.append(bundle)

    panel.displays.append(Handle())

    async def scenario() -> None:
        panel.start()
        while panel.state == "running":
            await asyncio.sleep(0)

    asyncio.run(scenario())
    assert panel.state == "done"
    before = len(published)
    assert stop_live_runs(at_iteration=10) == 0  # nothing stopped, nothing re-run
    assert panel.trainer.iterations == 50
    assert len(published) == before + 1
    assert "iteration 50/50" in published[-1]["text/html"]
    assert "running" not in published[-1]["text/plain"]
