"""The loss landscape: the grid is the interpreter's loss, the path is projected by least
squares, directions are filter-normalised and reproducible, the figures draw what they say,
long runs still have a path, and the training panel shows it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_fd import assert_agree

from tenflang_nb.core import api, ops
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.landscape import (
    DescentPath,
    Landscape,
    Layout,
    LossEvaluator,
    Plane,
    filter_normalized,
    grid_limits,
    landscape,
    path_of,
    plane_for,
    plane_through,
)
from tenflang_nb.core.landscape.evaluation import _Folded
from tenflang_nb.core.settings import TrainSettings
from tenflang_nb.core.train import History, Record
from tenflang_nb.notebook.figures import (
    LandscapeFigure,
    LiveFigure,
    LiveLandscape,
    landscape_figure,
)
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.panel import TrainingPanel

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LOGISTIC = str(EXAMPLES / "logistic" / "training_data.txt")
LINEAR = str(EXAMPLES / "linear" / "training_data.csv")
XOR = str(EXAMPLES / "xor" / "training_data.txt")


def model(example: str, name: str | None = None, **settings: Any) -> TenFlangModel:
    return TenFlangModel((EXAMPLES / example / "shape.tf").read_text(), name or example,
                         **settings)


def interpreter_loss(m: TenFlangModel, weights: dict[str, Any], data: Any = None) -> float:
    """The mean loss as the interpreter computes it, one record at a time if need be."""
    table = m.data if data is None else data
    rows = api.evaluate(m.program, table, weights)
    return float(np.mean([row[m.loss] for row in rows]))


@pytest.fixture(scope="module")
def digits() -> dict[str, np.ndarray]:
    with np.load(EXAMPLES / "digits" / "digits.npz") as npz:
        return {"x": npz["x"], "y": npz["y"]}


# --- the grid is the interpreter's loss


@pytest.mark.parametrize(("example", "data", "settings", "points"), [
    ("logistic", LOGISTIC, {"lr": 300}, [(0,), (57,), (200,)]),
    ("linear", LINEAR, {"lr": 0.3, "max_iter": 12}, [(0, 0), (13, 41), (49, 49)]),
    ("xor", XOR, {"lr": 2, "max_iter": 300}, [(0, 0), (25, 3), (49, 31)]),
])
def test_grid_values_are_the_interpreters_loss(example: str, data: str,
                                               settings: dict[str, Any],
                                               points: list[tuple[int, ...]]) -> None:
    m = model(example)
    m.train(data, **settings)
    land = m.landscape_data()
    assert land.dims == len(points[0])
    for index in points:
        coords = np.array([land.grid[axis][i] for axis, i in enumerate(index)])
        weights = Layout({w: m.program.shapes[w] for w in m.weights}).weights(
            land.plane.points(coords)[0])
        grid_value = land.loss[index] if land.dims == 1 else land.loss[index[1], index[0]]
        assert grid_value == pytest.approx(interpreter_loss(m, weights), rel=1e-12, abs=1e-15)


def test_the_digits_grid_folds_the_first_layer_and_stays_exact(digits: dict) -> None:
    m = model("digits")
    m.train(digits, lr=0.5, tol=0.0, max_iter=3)
    evaluator = m.loss_evaluator()
    assert evaluator.stack == 1  # too big to stack: one pass per setting
    plane = plane_for(evaluator.layout, m.weights, seed=0)
    folded = _Folded.build(evaluator, plane)
    assert folded is not None and folded.frontier == ["z1"]  # x W1 + b1: computed 3 times
    coords = np.array([[-1.2, 0.4], [0.0, 0.0], [0.7, -0.9], [1.4, 1.4], [0.1, 0.2]])
    fast = evaluator.plane_losses(plane, coords)
    slow = evaluator.losses(plane.points(coords))
    assert_agree(fast, slow, rtol=1e-12, atol=0.0)
    weights = evaluator.layout.weights(plane.points(coords[2:3])[0])
    assert fast[2] == pytest.approx(interpreter_loss(m, weights), rel=1e-12)


def test_folding_is_skipped_when_it_saves_nothing() -> None:
    # z = mul x w is cheap; rewriting it from three parts would cost more than it saves
    m = model("logistic")
    m.train(LOGISTIC, max_iter=2)
    evaluator = LossEvaluator(m.program, {k: m.data.columns[k] for k in ("x", "y")},
                              len(m.data), ["w"], stack=1)
    assert _Folded.build(evaluator, plane_for(evaluator.layout, m.weights)) is None


def test_stacked_and_one_pass_per_setting_agree() -> None:
    m = model("xor")
    m.train(XOR, lr=2, max_iter=200)
    stacked = m.loss_evaluator()
    single = LossEvaluator(stacked.program, stacked.data, stacked.n,
                           stacked.layout.names, stack=1)
    assert stacked.stack > 1
    plane = plane_for(stacked.layout, m.weights, seed=3)
    coords = np.random.default_rng(0).uniform(-1, 1, size=(37, 2))
    np.testing.assert_allclose(stacked.plane_losses(plane, coords),
                               single.plane_losses(plane, coords), rtol=1e-12)
    # a batch that does not fill the last stack
    np.testing.assert_allclose(LossEvaluator(stacked.program, stacked.data, stacked.n,
                                             stacked.layout.names, stack=8)
                               .losses(plane.points(coords)), single.losses(plane.points(coords)),
                               rtol=1e-12)


def test_a_loss_without_data_and_a_weight_that_does_not_matter() -> None:
    program = api.parse("declare weight a\ndeclare weight b\ndeclare intvar d\n"
                        "declare loss L\ndefine d = sub a 3\ndefine L = mul d d\n")
    for stack in (1, 4):
        evaluator = LossEvaluator(program, {}, 1, ["a", "b"], stack=stack)
        points = np.array([[3.0, 0.0], [5.0, 9.0], [1.0, -2.0]])
        assert evaluator.losses(points).tolist() == [0.0, 4.0, 4.0]


@pytest.mark.parametrize("name", [op.name for op in ops.OPS_LIST if op.affine_in])
def test_operators_are_affine_where_the_table_says(name: str) -> None:
    """f(u + t v) is affine in t, for each operand the table lists (the landscape computes
    such lines once per plane and combines them)."""
    op = ops.OPS[name]
    rng = np.random.default_rng(1)
    shapes = {"matmul": ((3,), (3, 2)), "outer": ((3,), (2,)), "sumto": ((4, 3), (3,)),
              "broadcast": ((3,), (4, 3)), "transpose": ((3, 2),)}.get(name, ((3,),) * op.arity)
    spec = ops.KernelSpec(shapes, op.shape_rule(*shapes), (False,) * op.arity, (None,) * op.arity)
    kernel = op.kernel(spec)
    base = [rng.normal(size=(1, *s)) for s in shapes]
    for i in op.affine_in:
        step = rng.normal(size=(1, *shapes[i]))

        def at(t: float, i: int = i, step: np.ndarray = step) -> np.ndarray:
            args = list(base)
            args[i] = base[i] + t * step
            return np.asarray(kernel(*args))

        np.testing.assert_allclose(at(2.0) - 2 * at(1.0) + at(0.0), 0.0, atol=1e-12)


# --- directions, planes, paths


def test_filter_normalised_directions() -> None:
    layout = Layout({"W": (3, 4), "b": (4,), "c": (), "d": ()})
    w = {"W": np.arange(12.0).reshape(3, 4) - 5, "b": np.array([3.0, 0.0, 4.0, 0.0]),
         "c": 3.0, "d": -4.0}
    w["W"][:, 2] = 0.0  # a unit whose incoming weights are all 0 does not move
    d = layout.weights(filter_normalized(layout, w, np.random.default_rng(7)))
    np.testing.assert_allclose(np.linalg.norm(d["W"], axis=0), np.linalg.norm(w["W"], axis=0))
    assert np.all(d["W"][:, 2] == 0)
    assert np.linalg.norm(d["b"]) == pytest.approx(5.0)
    assert np.hypot(d["c"], d["d"]) == pytest.approx(5.0)  # the scalars as one filter
    assert len({round(abs(d["c"]), 9), round(abs(d["d"]), 9)}) == 2  # not just +-|w|


def test_directions_are_deterministic_with_a_seed() -> None:
    layout = Layout({"W": (2, 4), "b": (4,), "v": ()})
    w = {"W": np.ones((2, 4)), "b": np.full(4, 0.5), "v": 2.0}
    a, b = plane_for(layout, w, seed=3), plane_for(layout, w, seed=3)
    c = plane_for(layout, w, seed=4)
    assert np.array_equal(a.axes, b.axes) and not np.allclose(a.axes, c.axes)
    assert a.kind == "random" and a.seed == 3 and a.labels == ("direction 1", "direction 2")
    m = model("xor")
    m.train(XOR, lr=2, max_iter=100)
    assert np.array_equal(m.landscape_data(seed=5, resolution=6).loss,
                          m.landscape_data(seed=5, resolution=6).loss)


def test_all_zero_weights_have_no_filter_normalised_direction() -> None:
    layout = Layout({"W": (2, 2), "b": (2,)})
    with pytest.raises(TenFlangError, match=r"every weight is 0.*along="):
        plane_for(layout, {"W": np.zeros((2, 2)), "b": np.zeros(2)})


def test_planes_by_weight_count_and_by_name() -> None:
    one = plane_for(Layout({"w": ()}), {"w": 2.0})
    assert (one.kind, one.labels, one.origin.tolist()) == ("weights", ("w",), [0.0])
    two = plane_for(Layout({"a": (), "b": ()}), {"a": 1.0, "b": 2.0})
    assert two.labels == ("a", "b") and np.array_equal(two.axes, np.eye(2))
    layout = Layout({"W": (2, 3), "b": ()})
    w = {"W": np.arange(6.0).reshape(2, 3), "b": 7.0}
    p = plane_for(layout, w, ["W[1, 2]", "b"])
    assert p.kind == "components" and p.labels == ("W[1, 2]", "b")
    coords, distance = p.project(layout.flat(w)[None])
    assert coords.tolist() == [[5.0, 7.0]] and distance.tolist() == [0.0]
    for bad, message in [(["W"], "name one component"), (["W[2, 0]"], "outside"),
                         (["q"], "not a weight"), (["b", "b"], "same component"),
                         (["W[1 2]"], "write a component"), (["a", "b", "W[0, 0]"], "one or two")]:
        with pytest.raises(TenFlangError, match=message):
            plane_for(layout, w, bad)


def test_path_projection_is_least_squares() -> None:
    rng = np.random.default_rng(2)
    origin = rng.normal(size=5)
    axes = rng.normal(size=(2, 5))  # not orthogonal, not unit length
    plane = Plane(origin, axes, ("u", "v"), "directions")
    inside = np.array([[0.5, -2.0], [3.0, 1.0]])
    coords, distance = plane.project(plane.points(inside))
    np.testing.assert_allclose(coords, inside, atol=1e-12)
    np.testing.assert_allclose(distance, 0.0, atol=1e-12)
    point = rng.normal(size=5) * 3  # off the plane
    coords, distance = plane.project(point[None])
    normal = np.linalg.solve(axes @ axes.T, axes @ (point - origin))  # the normal equations
    np.testing.assert_allclose(coords[0], normal, rtol=1e-10)
    residual = point - plane.points(coords)[0]
    np.testing.assert_allclose(axes @ residual, 0.0, atol=1e-10)  # orthogonal to the plane
    assert distance[0] == pytest.approx(np.linalg.norm(residual)) and distance[0] > 0.1


def test_the_path_is_the_records_with_snapshots_and_the_grid_covers_it() -> None:
    m = model("linear")
    m.train(LINEAR, lr=0.3, max_iter=12)
    land = m.landscape_data()
    (path,) = land.paths
    assert path.iterations.tolist() == list(range(13))
    np.testing.assert_allclose(path.coords, [[r.weights["a"], r.weights["b"]]
                                             for r in m.history])
    assert path.loss.tolist() == [r.loss for r in m.history]
    assert np.all(path.distance == 0)  # two weights: the path lies in the plane
    assert land.contains([path])
    (lo, hi), _ = land.limits
    assert lo < path.coords[:, 0].min() and hi > path.coords[:, 0].max()


def test_grid_limits_cover_marks_skip_non_finite_points_and_widen_a_point() -> None:
    plane = Plane(np.zeros(2), np.eye(2), ("a", "b"), "through",
                  marks={"A": (0.0, 0.0), "B": (1.0, 0.0), "C": (0.0, 1.0)})
    path = DescentPath("p", np.arange(3), np.array([[0.5, 0.5], [np.inf, 0.0], [0.2, 2.0]]),
                    np.ones(3), np.zeros(3))
    (a_lo, a_hi), (b_lo, b_hi) = grid_limits(plane, [path])
    assert a_lo < 0 < 1 < a_hi and b_lo < 0 and b_hi > 2 and np.isfinite(a_hi)
    single = DescentPath("p", np.arange(1), np.array([[4.0]]), np.ones(1), np.zeros(1))
    line = Plane(np.zeros(1), np.eye(1), ("w",), "weights")
    assert grid_limits(line, [single]) == ((2.0, 6.0),)


def test_plane_through_three_settings() -> None:
    m = {seed: model("xor", f"s{seed}", init="normal", seed=seed) for seed in range(3)}
    for mm in m.values():
        mm.train(XOR, lr=2, max_iter=150)
    land = m[0].landscape_data(through={f"seed {k}": v for k, v in m.items()},
                               paths={f"seed {k}": v for k, v in m.items()}, resolution=5,
                               limits=[(-0.5, 1.5), (-0.5, 1.5)])
    assert land.plane.marks == {"seed 0": (0.0, 0.0), "seed 1": (1.0, 0.0),
                                "seed 2": (0.0, 1.0)}
    assert [p.label for p in land.paths] == ["seed 0", "seed 1", "seed 2"]
    # each run ends at its own mark
    for path, mark in zip(land.paths, land.plane.marks.values(), strict=True):
        np.testing.assert_allclose(path.coords[-1], mark, atol=1e-9)
        assert path.distance[-1] == pytest.approx(0.0, abs=1e-9)
    assert land.loss[2, 2] == pytest.approx(  # grid point (0.5, 0.5)
        interpreter_loss(m[0], m[0].loss_evaluator().layout.weights(
            land.plane.points(np.array([0.5, 0.5]))[0])), rel=1e-12)
    with pytest.raises(TenFlangError, match="two or three"):
        plane_through(Layout({"w": ()}), [{"w": 1.0}])
    with pytest.raises(TenFlangError, match="equal or on one line"):
        plane_through(Layout({"w": ()}), [{"w": 1.0}, {"w": 1.0}])


def test_a_long_run_still_has_a_drawable_path() -> None:
    """Bounded memory: a long run keeps a thinned-out set of snapshots, first and last."""
    gcp = api.compile(api.parse(SEED_EXAMPLE))
    t = api.trainer(gcp, LOGISTIC, lr=0.1, tol=0.0, max_iter=30_000)
    t.state.history = History(limit=2_000, weight_limit=100)
    t.run()
    history = t.history
    assert len(history) <= 2_000 + 1
    evaluator = LossEvaluator.of(t)
    plane = plane_for(evaluator.layout, t.weights)
    path = path_of(plane, evaluator.layout, history)
    assert 50 <= len(path) <= 101
    assert path.iterations[0] == 0 and path.iterations[-1] == 30_000
    assert np.all(np.diff(path.iterations) > 0)
    assert path.coords[-1, 0] == pytest.approx(t.weights["w"])
    land = landscape(evaluator, plane, [path], resolution=20)
    fig = landscape_figure(land)
    line, _start, end = fig.path_artists[0]
    assert len(line.get_xdata()) == len(path)
    assert end.get_xdata()[0] == pytest.approx(t.weights["w"])


# --- figures


def test_one_weight_figure() -> None:
    m = model("logistic", "seed")
    m.train(LOGISTIC, lr=300)
    fig = m.landscape()
    assert isinstance(fig, LandscapeFigure)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("w", "mean loss lambda")
    assert ax.get_title() == "the loss against its weight w"
    assert ax.get_yscale() == "log"  # the loss spans more than three decades here
    line, _start, end = fig.path_artists[0]
    assert line.get_xdata().tolist() == [r.weights["w"] for r in m.history]
    assert line.get_ydata().tolist() == [r.loss for r in m.history]
    assert end.get_xdata()[0] == pytest.approx(92.94, abs=0.01)
    assert fig.landscape.loss.shape == (201,)
    assert not fig.note.get_visible()
    assert fig._repr_png_()[:4] == b"\x89PNG"
    assert repr(fig) == "<TenFlang loss landscape: 201 grid, the loss against its weight w>"


def test_two_weight_figure() -> None:
    m = model("linear", "lin")
    m.train(LINEAR, lr=0.3, max_iter=12)
    fig = m.landscape(resolution=20)
    ax, bar = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("a", "b")
    assert bar.get_ylabel() == "mean loss lambda"
    line, start, _end = fig.path_artists[0]
    np.testing.assert_allclose(np.column_stack([line.get_xdata(), line.get_ydata()]),
                               [[r.weights["a"], r.weights["b"]] for r in m.history])
    assert (start.get_xdata()[0], start.get_ydata()[0]) == (0.0, 0.0)
    assert ax.get_xlim() == fig.landscape.limits[0]
    assert fig.landscape.loss.shape == (20, 20)


def test_many_weight_figure_random_and_along() -> None:
    m = model("xor")
    m.train(XOR, lr=2, max_iter=300)
    fig = m.landscape(resolution=12)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("α: direction 1", "β: direction 2")
    assert "filter-normalised" in ax.get_title() and "seed 0" in ax.get_title()
    assert fig.note.get_visible() and "off the plane" in fig.note.get_text()
    (path,) = fig.landscape.paths
    line = fig.path_artists[0][0]
    np.testing.assert_allclose(line.get_xdata(), path.coords[:, 0])
    np.testing.assert_allclose(path.coords[-1], 0.0, atol=1e-12)  # ends at the origin
    fig = m.landscape(along=("W1[0, 1]", "b2"), resolution=12)
    ax = fig.axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("W1[0, 1]", "b2")
    assert fig.path_artists[0][2].get_xdata()[0] == pytest.approx(m.weights["W1"][0, 1])
    fig = m.landscape(along="W2[3]", resolution=12)  # one component: a curve
    assert fig.axes[0].get_xlabel() == "W2[3]" and fig.landscape.loss.shape == (12,)


def test_several_paths_get_a_legend_and_marks_are_labelled() -> None:
    runs = {f"seed {s}": model("xor", f"s{s}", init="normal", seed=s) for s in range(3)}
    for r in runs.values():
        r.train(XOR, lr=2, max_iter=100)
    fig = runs["seed 0"].landscape(through=runs, paths=runs, resolution=8)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(runs)
    assert {t.get_text() for t in ax.texts} >= set(runs)


def test_figures_leave_pyplot_alone_and_display_as_png() -> None:
    import matplotlib.pyplot as plt
    from IPython.core.formatters import DisplayFormatter

    before = plt.get_fignums()
    m = model("logistic")
    m.train(LOGISTIC, lr=2, max_iter=30)
    fig = m.landscape()
    assert plt.get_fignums() == before
    data, _ = DisplayFormatter().format(fig)
    assert data["image/png"][:4] == b"\x89PNG"
    assert data["text/plain"].startswith("<TenFlang loss landscape")


def test_a_shown_figure_lets_go_of_its_ticks_and_draws_the_same_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``Out`` keeps of a shown landscape (issue 26): no drawn ticks (five artists
    each), yet the figure draws the same picture again as one that kept them, its tick
    labels made anew."""
    from tenflang_nb.notebook.figures import canvas

    m = model("linear", "lin")
    m.train(LINEAR, lr=0.3, max_iter=12)
    fig = m.landscape(resolution=20)
    ax, bar = fig.axes
    fig._repr_png_()
    assert all(len(axis.majorTicks) == 1 and len(axis.minorTicks) == 1
               for a in (ax, bar) for axis in (a.xaxis, a.yaxis))
    labels = [t.get_text() for t in ax.get_xticklabels()]  # asked for: made anew
    assert len(labels) > 2 and all(labels)
    again = fig._repr_png_()
    assert len(ax.xaxis.majorTicks) == 1  # the second showing let go of them too
    with monkeypatch.context() as patch:
        patch.setattr(canvas, "release_ticks", lambda fig: None)
        kept = m.landscape(resolution=20)
        kept._repr_png_()
        assert len(kept.axes[0].xaxis.majorTicks) > 2
        assert kept._repr_png_() == again


def test_landscape_needs_data_and_a_loss() -> None:
    m = model("logistic")
    with pytest.raises(TenFlangError, match="no training data yet"):
        m.landscape()
    before = m.landscape(data=LOGISTIC)  # not trained: the path is the starting point
    assert len(before.landscape.paths[0]) == 1
    no_loss = TenFlangModel("declare input x\ndeclare weight w\ndeclare output o\n"
                            "define o = mul x w\n")
    with pytest.raises(TenFlangError, match="no loss"):
        no_loss.landscape(data={"x": [1.0, 2.0]})
    with pytest.raises(TenFlangError, match="along= or through="):
        m.landscape(along="w", through=[{"w": 0.0}, {"w": 1.0}], data=LOGISTIC)
    with pytest.raises(TenFlangError, match="limits"):
        m.landscape(limits=(1, 0), data=LOGISTIC)


def test_live_figure_redraws_only_the_path() -> None:
    plane = Plane(np.zeros(1), np.eye(1), ("w",), "weights")
    grid = (np.linspace(-2, 2, 9),)
    first = DescentPath("p", np.arange(1), np.array([[0.0]]), np.array([4.0]), np.zeros(1))
    land = Landscape(plane, grid, grid[0] ** 2 + 4, (first,))
    live = LiveFigure(land)
    a = live.png([first])
    moved = DescentPath("p", np.arange(2), np.array([[0.0], [1.0]]), np.array([4.0, 5.0]),
                     np.zeros(2))
    b = live.png([moved])
    assert a != b and live.png([first]) == a  # the background is kept, the path redrawn
    assert live.figure.path_artists[0][0].get_xdata().tolist() == [0.0]


# --- the training panel


def panel(example: str, data: Any, landscape: bool = True, **settings: Any) -> TrainingPanel:
    m = model(example)
    return m.training_panel(data, live=False, landscape=landscape, **settings)


def test_panel_shows_the_landscape_when_ticked() -> None:
    p = panel("linear", LINEAR, landscape=False, lr=0.3, max_iter=12)
    assert p.landscape_plot.value == b"" and "loss landscape" not in p.static_html()
    assert p.landscape_plot.layout.display == "none"
    p.show_landscape.value = True  # the box: draws at once, before any training
    assert p.landscape_plot.value[:4] == b"\x89PNG" and p.landscape_plot.layout.display is None
    p.run_sync()
    assert p.state == "done"
    land = p.live_landscape.landscape
    assert land is not None and len(land.paths[0]) == 13
    html = p.static_html()
    assert "alt='loss landscape" in html and "alt='loss curve" in html
    p.show_landscape.value = False
    assert "loss landscape" not in p.static_html()


def test_panel_landscape_grid_once_per_run_path_redrawn() -> None:
    p = panel("xor", XOR, lr=2, max_iter=200)
    live = p.live_landscape
    grids = live.grids  # the idle panel drew one, through the initial weights
    assert grids == 1

    async def scenario() -> None:
        p.redraw_seconds = 0.0
        p.start()
        assert p.session.task is not None
        await p.session.task

    asyncio.run(scenario())
    assert p.state == "done" and p.redraws >= 3
    # a new grid when the run began and one through the final weights at its end (random
    # directions); a grid the path leaves is replaced
    assert live.grids <= grids + 3
    assert np.array_equal(live.landscape.plane.origin,
                          live.evaluator.layout.flat(p.trainer.weights))
    before = live.grids
    p.redraw()  # a redraw of the same finished run: the path only
    assert live.grids == before


def test_a_finished_panel_lets_go_of_the_landscapes_bound_runs() -> None:
    """The evaluator's bound runs (the data repeated once per setting of a pass) are let go
    when a run ends (issue 26); a later grid binds them again and computes the same."""
    p = panel("xor", XOR, lr=2, max_iter=50)
    p.run_sync()
    live = p.live_landscape
    assert live.evaluator is not None and live.evaluator._runs == {}
    assert live.evaluator._plain is None
    land = live.landscape
    again = live.evaluator.plane_losses(land.plane, np.column_stack(
        [g.ravel() for g in np.meshgrid(*land.grid)]))
    assert live.evaluator._runs  # bound again when asked
    np.testing.assert_allclose(again.reshape(land.loss.shape), land.loss, rtol=1e-12)


def test_live_landscape_recomputes_only_when_the_path_leaves_the_grid() -> None:
    gcp = api.compile(api.parse((EXAMPLES / "linear" / "shape.tf").read_text()))
    t = api.trainer(gcp, LINEAR, lr=0.3, tol=0.0, max_iter=100)
    live = LiveLandscape()
    pngs = []
    for _ in range(12):  # a redraw every two steps, as a live run would
        t.step()
        t.step()
        pngs.append(live.png(t, run=0, final=False)[0])
        assert live.landscape is not None and live.landscape.contains(live.landscape.paths)
    assert 1 <= live.grids <= 4 and len(set(pngs)) > 6  # the path moved over a grid
    grids = live.grids
    live.png(t, run=0, final=True)  # two weights: the plane does not move at the end
    assert live.grids == grids
    live.png(t, run=1, final=False)  # a new run: a new grid
    assert live.grids == grids + 1


def test_panel_landscape_for_zero_weights_falls_back_to_two_components() -> None:
    p = panel("xor", XOR, init="zeros", lr=2, max_iter=5)
    land = p.live_landscape.landscape
    assert land.plane.kind == "components" and land.plane.labels == ("W1[0, 0]", "W1[0, 1]")
    assert "could not draw" not in p.message_html.value


def test_panel_landscape_failure_is_a_note_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: object, **_kwargs: object) -> tuple[bytes, float]:
        raise ValueError("no grid today")

    monkeypatch.setattr(LiveLandscape, "png", broken)
    p = panel("logistic", LOGISTIC, max_iter=20)
    p.run_sync()
    assert p.state == "done" and p.trainer.iterations == 20
    assert "could not draw the loss landscape: ValueError: no grid today" in \
        p.message_html.value


def test_panel_state_machine_unchanged_with_the_landscape_shown() -> None:
    gcp = api.compile(api.parse(SEED_EXAMPLE))
    data = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
    p = TrainingPanel(lambda s: api.trainer(gcp, data, s), TrainSettings(max_iter=40),
                      live=False, landscape=True)
    first = p.run_sync()
    p.session.train()  # starts over
    assert p.state == "done" and p.trainer.result().history == first.history
    p.reset()
    assert p.state == "idle" and p.landscape_plot.value[:4] == b"\x89PNG"
    assert len(p.live_landscape.landscape.paths[0]) == 1  # only the starting point


def test_history_records_keep_weights_for_the_path() -> None:
    h = History(limit=8, weight_limit=3)
    for i in range(40):
        h.append(Record(i, 1.0, 1.0, {"w": float(i)}))
    kept = [r for r in h if r.weights is not None]
    assert kept[0].iteration == 0 and kept[-1].iteration == 39 and len(kept) <= 4
