"""Decision boundaries and test data: which programs have an input plane, the output over it
(checked against the interpreter), ``model.boundary()``'s figure and its data, the panel's
boundary box and its live redraw, the test loss of every record and its curve, and the
``--boundary`` / ``--test`` options of the magic."""

from __future__ import annotations

import asyncio
import base64
import io
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from matplotlib.figure import Figure
from PIL import Image

from tenflang_nb import datasets
from tenflang_nb.core.api import compile, evaluate, interpret, load_data, parse, trainer
from tenflang_nb.core.boundary import plane_inputs
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook import TenFlangModel
from tenflang_nb.notebook.figures import loss_curve_figure
from tenflang_nb.notebook.figures.boundary import LiveBoundary

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NET = (EXAMPLES / "xor" / "shape.tf").read_text()  # x [2] -> 4 tanh -> logistic o

# the same kind of network with two scalar inputs u and v
TWO_INPUTS = """\
declare input u
declare input v
declare exp_output y
declare weight a
declare weight b
declare weight c
declare intvar au
declare intvar bv
declare intvar s
declare intvar z
declare output o
declare intvar e
declare loss L
define au = mul a u
define bv = mul b v
define s = add au bv
define z = add s c
define o = logistic z
define e = sub o y
define L = mul e e
"""


def trained(source: str = NET, data: Any = None, test: Any = None, **settings: Any
            ) -> TenFlangModel:
    net = TenFlangModel(source, "net")
    if data is None:
        data, test = datasets.moons(200, noise=0.1, seed=0, test=0.25)
    net.train(data, test=test, **{"lr": 2.0, "tol": 0.0, "max_iter": 300, **settings})
    return net


# ------------------------------------------------------------------------------ the plane

def test_a_plane_is_one_input_of_two_or_two_scalar_inputs() -> None:
    one = plane_inputs(parse(NET))
    assert (one.inputs, one.output, one.target, one.axes) == (("x",), "o", "y",
                                                              ("x[0]", "x[1]"))
    two = plane_inputs(parse(TWO_INPUTS))
    assert (two.inputs, two.axes) == (("u", "v"), ("u", "v"))
    xy = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert list(one.columns(xy)) == ["x"] and np.array_equal(two.columns(xy)["v"], [2.0, 4.0])


@pytest.mark.parametrize(("source", "message"), [
    (SEED_EXAMPLE, "this one's inputs: x)"),
    ("declare input x [3]\ndeclare output o\ndefine o = sum x\n", "inputs: x [3]"),
    ("declare input a\ndeclare input b\ndeclare input c\ndeclare output o\n"
     "define o = add a b\n", "inputs: a, b and c"),
    ("declare input x [2]\ndeclare loss L\ndefine L = sum x\n", "declares no output"),
    # before: "declares none" for a vector output
    ("declare input x [2]\ndeclare weight W [2, 3]\ndeclare output o [3]\n"
     "define o = matmul x W\n", "has no scalar output, only o [3]"),
    ("declare input x [2]\ndeclare output o\ndeclare output p\ndefine o = sum x\n"
     "define p = sum x\n", "choose one of o or p with output="),
])
def test_programs_without_a_plane_are_told_why(source: str, message: str) -> None:
    with pytest.raises(TenFlangError) as info:
        plane_inputs(parse(source, "net.tf"))
    assert message in str(info.value) and "net.tf" in str(info.value)


def test_a_vector_output_is_told_how_to_make_a_scalar_one() -> None:
    source = ("declare input x [2]\ndeclare weight W [2, 2]\ndeclare output o [2]\n"
              "define o = matmul x W\n")
    for output in (None, "o"):
        with pytest.raises(TenFlangError) as info:
            plane_inputs(parse(source, "net.tf"), output)
        hint = info.value.first.hint
        assert hint is not None and "declare output p" in hint and "net.tf" in str(info.value)
        # the hint's lines make the scalar output it promises: o's component 1
        lines = hint.split(": ", 1)[1].replace("; ", ", ").split(", ")
        fixed = parse(source + "\n".join(lines) + "\n")
        assert plane_inputs(fixed).output == "p"
        values = interpret(fixed, {"x": np.array([1.0, 2.0]), "W": np.eye(2)})
        assert values["p"] == values["o"][1] == 2.0
    with pytest.raises(TenFlangError, match=r"'o' is not a scalar output of net.tf \(its "
                                            r"shape is \[2\]\)"):
        plane_inputs(parse(source, "net.tf"), "o")


def test_output_chooses_among_several() -> None:
    source = ("declare input x [2]\ndeclare output o\ndeclare output p\ndeclare output q [2]\n"
              "define o = sum x\ndefine p = mul o 2\ndefine q = mul x 2\n")
    assert plane_inputs(parse(source), "p").output == "p"
    with pytest.raises(TenFlangError, match=r"'q' is not a scalar output"):
        plane_inputs(parse(source), "q")


# ------------------------------------------------------------------------------ the numbers

def test_the_output_over_the_plane_is_the_programs_output_there() -> None:
    net = trained()
    b = net.boundary_data(resolution=7)
    assert b.output.shape == (7, 7) and len(b.xs) == len(b.ys) == 7
    # every grid point against the interpreter, one example at a time
    for i in (0, 3, 6):
        for j in (0, 2, 6):
            [row] = evaluate(net.program, [{"x": [b.xs[j], b.ys[i]]}], net.weights)
            assert b.output[i, j] == pytest.approx(row["o"], rel=1e-12)
    rows = evaluate(net.program, {"x": b.test.xy}, net.weights)
    assert np.allclose(b.test.output, [r["o"] for r in rows], rtol=1e-12)
    assert np.array_equal(b.test.labels, net.test_data.columns["y"])


def test_limits_cover_the_points_with_a_margin_or_are_given() -> None:
    net = trained()
    b = net.boundary_data(resolution=5)
    every = np.concatenate([b.train.xy, b.test.xy])
    assert b.xs[0] < every[:, 0].min() and b.xs[-1] > every[:, 0].max()
    assert b.ys[0] < every[:, 1].min() and b.ys[-1] > every[:, 1].max()
    fixed = net.boundary_data(resolution=3, limits=((-2, 2), (-1, 1)))
    assert fixed.xs.tolist() == [-2.0, 0.0, 2.0] and fixed.ys.tolist() == [-1.0, 0.0, 1.0]
    with pytest.raises(TenFlangError, match="low < high"):
        net.boundary_data(limits=((1, 0), (0, 1)))
    with pytest.raises(TenFlangError, match="resolution"):
        net.boundary_data(resolution=1)


LINEAR = ("declare input x [2]\ndeclare exp_output y\ndeclare weight w [2]\n"
          "declare output o\ndefine o = matmul x w\n")


@pytest.mark.parametrize("points", [
    [[-1e308, 0.0], [1e308, 1.0]],  # before: a NaN grid (the span overflowed)
    [[-1.7e308, -1.7e308], [1.7e308, 1.7e308]],  # ... beyond the largest float with a margin
    [[1e308, 0.0], [1.5e308, 1.0]],  # before: matplotlib's "arange: cannot compute length"
    [[1e308, 1e308], [1e308, 1e308]],  # before: low == high, matplotlib's singular limits
])
def test_points_near_the_largest_float_get_a_grid_and_a_picture(points: list) -> None:
    net = TenFlangModel(LINEAR, "lin")
    net.weights = {"w": np.array([1e-308, -1e-308])}
    data = {"x": np.array(points), "y": np.array([0.0, 1.0])}
    fig = net.boundary(data, resolution=7)
    b = fig.boundary
    for axis, coords in ((b.xs, b.train.xy[:, 0]), (b.ys, b.train.xy[:, 1])):
        assert np.all(np.isfinite(axis)) and np.all(np.diff(axis) > 0)
        assert axis[0] <= coords.min() and axis[-1] >= coords.max()
    assert np.all(np.isfinite(b.output))
    # what is drawn: the axes span the grid, in a unit that keeps matplotlib's ticks finite
    ax = fig.axes[0]
    unit = 10.0 ** np.floor(np.log10(np.abs(b.xs).max()))
    assert ax.get_xlabel() == f"x[0] (in units of {unit:.0e})"
    assert np.allclose(ax.get_xlim(), (b.xs[0] / unit, b.xs[-1] / unit))
    assert np.allclose(fig.train_points.get_offsets()[:, 0], b.train.xy[:, 0] / unit)
    assert fig._repr_png_()[:4] == b"\x89PNG"


def test_classes_level_and_accuracy() -> None:
    net = trained()
    b = net.boundary_data(resolution=5)
    assert b.classes == (0.0, 1.0) and b.level == 0.5
    right = (b.train.output >= 0.5) == (b.train.labels == 1)
    assert b.train_accuracy == pytest.approx(right.mean())
    # a 2-4-1 network separates the two moons after 300 steps; a model at its start does not
    assert b.train_accuracy > 0.9 and b.test_accuracy > 0.85
    start = TenFlangModel(NET, "start")  # o = 0.5 everywhere: all on class 1's side
    at_start = start.boundary_data(net.data, resolution=5)
    assert at_start.train_accuracy == pytest.approx(np.mean(net.data.columns["y"] == 1))
    # labels -1 and 1 (a tanh output): the boundary is where the output crosses 0
    train, _ = datasets.moons(40, labels=(-1, 1))
    assert start.boundary_data(train, resolution=3).level == 0.0


def test_two_scalar_inputs_and_data_from_a_csv_file(tmp_path: Path) -> None:
    xy, classes = datasets.points("blobs", 60, seed=2)
    path = tmp_path / "mine.csv"
    path.write_text("u,v,y\n" + "".join(f"{a!r},{b!r},{c}\n" for (a, b), c in zip(
        xy.tolist(), classes.tolist(), strict=True)))
    net = TenFlangModel(TWO_INPUTS, "net")
    train, test = datasets.split(str(path), 0.25, seed=0)
    net.train(train, test=test, lr=2.0, max_iter=200)
    b = net.boundary_data(resolution=4)
    assert b.axes == ("u", "v") and len(b.train.xy) == 45 and len(b.test.xy) == 15
    assert b.train_accuracy > 0.9
    assert np.array_equal(b.train.xy, np.column_stack([train.columns["u"],
                                                       train.columns["v"]]))
    # a linear model's boundary is the line a u + b v + c = 0
    w = net.weights
    line = -(w["a"] * b.xs + w["c"]) / w["b"]
    inside = (line > b.ys[0]) & (line < b.ys[-1])
    assert inside.any()


def test_data_without_the_input_is_an_error() -> None:
    net = TenFlangModel(NET, "net")
    with pytest.raises(TenFlangError, match="no training data yet"):
        net.boundary_data()
    with pytest.raises(TenFlangError, match="no value of 'x' for every example"):
        net.boundary_data({"z": [1.0, 2.0]})
    with pytest.raises(TenFlangError, match="a decision boundary needs a program"):
        TenFlangModel(SEED_EXAMPLE).boundary_data({"x": [1.0, 2.0]})


# ------------------------------------------------------------------------------ the figure

def test_the_figure_draws_its_data() -> None:
    net = trained()
    fig = net.boundary(resolution=30)
    b = fig.boundary
    assert np.array_equal(b.output, net.boundary_data(resolution=30).output)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x[0]", "x[1]")
    assert fig.title.get_text() == (f"output o · accuracy: training ● {b.train_accuracy:.0%}, "
                                    f"test ▲ {b.test_accuracy:.0%}")
    assert np.array_equal(fig.image.get_array(), b.output)
    assert np.array_equal(fig.train_points.get_offsets(), b.train.xy)
    assert np.array_equal(fig.test_points.get_offsets(), b.test.xy)
    assert np.array_equal(fig.train_points.get_array(), b.train.labels)
    # the decision line: the output is 0.5 on it
    segments = fig.line.get_segments()
    assert segments
    points = np.concatenate(segments)[::5]
    rows = evaluate(net.program, {"x": points}, net.weights)
    assert np.allclose([r["o"] for r in rows], 0.5, atol=0.02)
    assert fig._repr_png_()[:4] == b"\x89PNG"
    assert repr(fig).startswith("<TenFlang decision boundary: 30 x 30 grid, output o")


def test_without_test_data_no_test_points_and_a_shorter_title() -> None:
    train, _ = datasets.moons(50)
    net = trained(data=train)
    fig = net.boundary(resolution=10)
    assert fig.test_points is None and fig.boundary.test is None
    assert fig.title.get_text().startswith("output o · training accuracy ")


def test_the_live_boundary_redraws_only_what_changes() -> None:
    net = trained(max_iter=50)
    evaluator = net.boundary_evaluator(resolution=20)
    live = LiveBoundary(evaluator)
    start = {k: np.zeros_like(v) if isinstance(v, np.ndarray) else 0.0
             for k, v in net.weights.items()}
    first = live.png(start)
    figure = live.figure
    second = live.png(net.weights)
    assert live.figure is figure and live.draws == 2 and first != second
    assert live.png(start) == first  # the kept background: the same picture again
    assert np.array_equal(figure.boundary.output, evaluator.at(start).output)


# ------------------------------------------------------------------------------ test data

def test_every_record_holds_the_test_loss_at_its_weights() -> None:
    gcp = compile(parse(NET))
    train, test = datasets.moons(60, seed=1, test=20)
    t = trainer(gcp, train, lr=1.0, max_iter=20, test=test)
    result = t.run()
    assert len(result.history) == 21
    for record in result.history[::5]:
        rows = evaluate(parse(NET), test, record.weights)
        assert record.test_loss == pytest.approx(np.mean([r["lambda"] for r in rows]),
                                                 rel=1e-12)
    assert result.history[-1].test_loss < result.history[0].test_loss
    assert t.test_loss() == pytest.approx(evaluate_mean(NET, test, t.weights))
    # without test data, none
    assert trainer(gcp, train, max_iter=2).run().history[-1].test_loss is None


def evaluate_mean(source: str, data: Any, weights: Any) -> float:
    return float(np.mean([r["lambda"] for r in evaluate(parse(source), data, weights)]))


def test_test_data_must_give_what_the_loss_needs() -> None:
    gcp = compile(parse(NET))
    train, _ = datasets.moons(20)
    with pytest.raises(TenFlangError, match="missing required input 'y'"):
        trainer(gcp, train, test={"x": [[0.0, 1.0]]})
    with pytest.raises(TenFlangError, match="'q' is not declared"):
        trainer(gcp, train, test={"x": [[0.0, 1.0]], "y": [1.0], "q": [2.0]})


def test_the_curve_draws_the_test_loss_dashed() -> None:
    net = trained(max_iter=30)
    fig = loss_curve_figure(net.history)
    ax = fig.axes[0]
    lines = [line for line in ax.get_lines() if line.get_label() in ("training", "test")]
    assert [(line.get_label(), line.get_linestyle()) for line in lines] == [
        ("training", "-"), ("test", "--")]
    assert np.allclose(lines[1].get_ydata(), [r.test_loss for r in net.history])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["training", "test"]


# ------------------------------------------------------------------------------ the panel

def test_the_panel_has_a_boundary_box_for_a_plane_model_only() -> None:
    train, test = datasets.moons(60, test=0.25)
    panel = TenFlangModel(NET, "net").training_panel(train, test=test, live=False, max_iter=20)
    assert panel.show_boundary.layout.display is None and not panel.show_boundary.value
    assert panel.boundary_plot.value == b""
    seed = TenFlangModel(SEED_EXAMPLE).training_panel({"x": [1.0], "y": [0.5]}, live=False)
    assert seed.show_boundary.layout.display == "none" and seed.live_boundary is None
    with pytest.raises(TenFlangError, match="a decision boundary needs"):
        TenFlangModel(SEED_EXAMPLE).training_panel({"x": [1.0], "y": [0.5]}, boundary=True)


def test_ticking_the_box_draws_the_boundary_of_the_current_weights() -> None:
    net = TenFlangModel(NET, "net")
    train, test = datasets.moons(80, test=0.25)
    panel = net.training_panel(train, test=test, live=False, lr=2.0, max_iter=100)
    panel.run_sync()
    before = panel.redraws
    panel.show_boundary.value = True
    assert panel.redraws == before + 1
    assert panel.boundary_plot.value[:4] == b"\x89PNG"
    shown = panel.live_boundary.figure.boundary
    assert np.array_equal(shown.output, net.boundary_data(resolution=50).output)
    assert "decision boundary" in panel.static_html()
    panel.show_boundary.value = False
    assert panel.boundary_plot.value == b"" and "decision boundary" not in panel.static_html()


def test_a_finished_panel_lets_go_of_the_grid_run_and_draws_the_same_again() -> None:
    """The grid's bound run (a row per grid point for every line) is let go when a run ends
    (issue 26) and bound again for the next picture, which is the same."""
    net = TenFlangModel(NET, "net")
    train, test = datasets.moons(80, test=0.25)
    panel = net.training_panel(train, test=test, live=False, boundary=True, lr=2.0,
                               max_iter=100)
    panel.run_sync()
    evaluator = panel.live_boundary.evaluator
    assert evaluator._grid is None
    shown = panel.live_boundary.boundary.output
    assert np.array_equal(evaluator.at(net.weights).output, shown)
    assert evaluator._grid is not None  # bound again when asked
    picture = bytes(panel.boundary_plot.value)
    panel.redraw()
    assert bytes(panel.boundary_plot.value) == picture
    evaluator.release()
    assert np.array_equal(evaluator.at(net.weights).output, shown)


def test_the_boundary_follows_a_live_run() -> None:
    net = TenFlangModel(NET, "net")
    train, test = datasets.moons(80, test=0.25)
    panel = net.training_panel(train, test=test, boundary=True, lr=2.0, tol=1e-12,
                               max_iter=10**7)
    panel.session.chunk_seconds = 0.002
    panel.redraw_seconds = 0.0
    pictures: list[bytes] = []

    async def scenario() -> None:
        panel.start()
        started = time.perf_counter()
        while panel.live_boundary.draws < 4 and time.perf_counter() - started < 30:
            await asyncio.sleep(0)
            pictures.append(bytes(panel.boundary_plot.value))
        panel.stop()

    asyncio.run(scenario())
    assert panel.live_boundary.draws >= 4 and len(set(pictures)) >= 3
    assert np.array_equal(panel.live_boundary.boundary.output,
                          net.boundary_evaluator(resolution=50).at(panel.trainer.weights).output)


def test_the_panel_shows_the_test_loss() -> None:
    net = TenFlangModel(NET, "net")
    train, test = datasets.moons(60, test=0.25)
    panel = net.training_panel(train, test=test, live=False, lr=2.0, max_iter=10)
    panel.run_sync()
    last = panel.session.history[-1]
    assert f"test loss {last.test_loss:.3g}" in panel.status
    assert net.test_data is not None and len(net.test_data) == 15
    assert net.history[-1].test_loss == last.test_loss


# ------------------------------------------------------------------------------ the magic

def test_the_magic_takes_test_data_and_ticks_the_boundary(ip: Any) -> None:
    ip.user_ns["train"], ip.user_ns["test"] = datasets.moons(60, test=0.25)
    with capture_output() as cap:
        ip.run_cell("%%tenflang net --train train --test test --boundary --no-live --lr 2 "
                    "--max-iter 50 --show none\n" + NET)
    panel = ip.user_ns["net"].panel
    assert panel.show_boundary.value and panel.boundary_plot.value[:4] == b"\x89PNG"
    html = "".join(o.data.get("text/html", "") for o in cap.outputs)
    assert "decision boundary" in html and "test loss" in html


def test_figures_and_saved_panels_keep_small_pngs_whatever_pyplot_registered(ip: Any) -> None:
    # pyplot's inline backend formats every matplotlib Figure with its own printer
    formatter = ip.display_formatter.formatters["image/png"]
    formatter.for_type(Figure, lambda fig: b"pyplot's PNG")
    try:
        net = trained(max_iter=30)
        for fig in (net.boundary(resolution=30), net.landscape(resolution=10)):
            png = ip.display_formatter.format(fig)[0]["image/png"]
            assert Image.open(io.BytesIO(png)).mode == "P", type(fig).__name__  # kept_png's
        ip.run_line_magic("unload_ext", "tenflang_nb")  # the extension's registration did it
        assert ip.display_formatter.format(fig)[0]["image/png"] == b"pyplot's PNG"
        ip.run_line_magic("load_ext", "tenflang_nb")
    finally:
        formatter.pop(Figure, None)
    # a saved panel's pictures too; the live ones stay fast to make
    ip.user_ns["train"], ip.user_ns["test"] = datasets.moons(60, test=0.25)
    with capture_output() as cap:
        ip.run_cell("%%tenflang net --train train --test test --boundary --no-live --lr 2 "
                    "--max-iter 50 --show none\n" + NET)
    html = "".join(o.data.get("text/html", "") for o in cap.outputs)
    saved = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
    assert len(saved) == 2  # the curve and the boundary
    assert {Image.open(io.BytesIO(base64.b64decode(s))).mode for s in saved} == {"P"}
    live = ip.user_ns["net"].panel.boundary_plot.value
    assert Image.open(io.BytesIO(live)).mode == "RGBA"


def test_the_magic_reports_a_model_without_a_plane(ip: Any) -> None:
    ip.user_ns["data"] = {"x": [1.0, 2.0], "y": [0.5, 0.6]}
    with capture_output() as cap:
        ip.run_cell("%%tenflang seed --train data --boundary --no-live --show none\n"
                    + SEED_EXAMPLE)
    text = "".join(o.data.get("text/plain", "") for o in cap.outputs)
    assert "a decision boundary needs a program whose input is a point of the plane" in text


def test_the_magic_names_missing_test_data(ip: Any) -> None:
    ip.user_ns["train"], _ = datasets.moons(20)
    result = ip.run_cell("%%tenflang net --train train --test nowhere --no-live\n" + NET)
    assert isinstance(result.error_in_exec, UsageError)
    assert "--test nowhere: no variable named 'nowhere'" in str(result.error_in_exec)
    assert "net" not in ip.user_ns


def test_a_file_of_test_data(ip: Any, tmp_path: Path) -> None:
    train, test = datasets.moons(40, test=0.25)
    path = tmp_path / "test.csv"
    path.write_text("x[0],x[1],y\n" + "".join(
        f"{a!r},{b!r},{c!r}\n" for (a, b), c in zip(test.columns["x"].tolist(),
                                                   test.columns["y"].tolist(), strict=True)))
    ip.user_ns["train"] = train
    with capture_output():
        ip.run_cell(f"%%tenflang net --train train --test {path} --no-live --max-iter 5 "
                    "--show none\n" + NET)
    net = ip.user_ns["net"]
    assert net.history[-1].test_loss == pytest.approx(
        evaluate_mean(NET, load_data(str(path)), net.weights))


def test_a_failing_boundary_is_a_note_not_a_failed_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: Any, weights: Any) -> bytes:
        raise ValueError("no boundary today")

    monkeypatch.setattr(LiveBoundary, "png", broken)
    train, _ = datasets.moons(40)
    panel = TenFlangModel(NET, "net").training_panel(train, boundary=True, live=False,
                                                     max_iter=5)
    panel.run_sync()
    assert panel.state == "done" and panel.error is None
    assert "could not draw the decision boundary: ValueError: no boundary today" in \
        panel.message_html.value
    assert panel.boundary_plot.value == b""


def test_a_panel_lets_go_of_its_figures_when_a_run_ends() -> None:
    """Issue 26: a lab makes a dozen panels; each kept its figures and their pixels for as
    long as the kernel lived. After a run the pictures and their words stay, the figures go,
    and a change of a setting draws them again (the landscape's grid is not computed again)."""
    train, _ = datasets.moons(40)
    panel = TenFlangModel(NET, "net").training_panel(train, boundary=True, landscape=True,
                                                     live=False, max_iter=5)
    panel.run_sync()
    pictures = (panel.plot.value, panel.boundary_plot.value, panel.landscape_plot.value)
    words = panel.words()
    assert all(pictures) and all(w is not None for w in words)
    assert panel.live_curve.figure is None and panel.live_landscape.figure is None
    assert panel.live_boundary.figure is None
    grids = panel.live_landscape.grids
    panel.log_scale.value = False  # redraws every picture
    assert panel.plot.value not in (b"", pictures[0])
    assert (panel.boundary_plot.value, panel.landscape_plot.value) == pictures[1:]
    assert panel.live_landscape.grids == grids, grids
    assert [w.alt for w in panel.words()[1:]] == [w.alt for w in words[1:]]


# ------------------------------------------------------------------------------ the live curve

def test_the_live_curve_redraws_only_its_curves_while_they_fit() -> None:
    from tenflang_nb.core.train import Record
    from tenflang_nb.notebook.figures.curve import LiveCurve, loss_curve_png

    run = [Record(i, 1.0 / (i + 1), 1.0) for i in range(400)]
    live = LiveCurve()
    first = live.png(run[:100], live=True)
    assert (live.frames, live.blits) == (1, 0)
    pictures = [live.png(run[:n], live=True) for n in (120, 150, 190)]
    assert (live.frames, live.blits) == (1, 3)  # the frame has room up to iteration 198
    assert len({first, *pictures}) == 4
    assert live.png(run[:190], live=True) == pictures[-1]  # the same curves, the same picture
    live.png(run[:250], live=True)  # past the frame's end: a new frame
    assert live.frames == 2
    # a loss that falls by more than the decade of room below it: a new frame
    falling = [Record(i, 10.0 ** -i, 1.0) for i in range(6)]
    live.png(falling[:2], live=True)
    frames = live.frames
    live.png(falling[:3], live=True)
    assert live.frames == frames and live.png(falling, live=True) and live.frames == frames + 1
    # a new curve (a test loss): a new frame
    with_test = [Record(i, 1.0 / (i + 1), 1.0, test_loss=2.0 / (i + 1)) for i in range(50)]
    frames = live.frames
    live.png(with_test, live=True)
    assert live.frames == frames + 1
    # a run that has ended is drawn anew, fitted, as loss_curve_png draws it
    assert live.png(run, live=False) == loss_curve_png(run)
    assert live.png(run[:300], live=True) != loss_curve_png(run[:300])  # room to grow
