"""The loss landscape's grid: the mean loss at every point of a 50 x 50 grid of weight
settings (a plane through trained weights along two random filter-normalised directions).

Models: the digits network (examples/digits: 1,797 images, 2,410 weights; the target is
"under 2 s"), XOR (4 examples, 17 weights) and, for a curve, the seed's logistic example
(200 examples, 1 weight, 201 points). Each model is trained briefly first (not timed).

Contenders, all in this process, single-threaded, float64, the same grid:

* tenflang: ``core.landscape.landscape`` (``LossEvaluator``: the data bound once; small
  models stack settings on the example axis, large ones run one pass per setting with the
  lines affine in the grid coordinates computed once for the plane);
* tenflang, one pass per setting: the same evaluator, stacking and folding turned off (a plan
  bound once, run K times);
* plain loop: for each grid point, ``api.evaluate`` of the shape program at those weights
  (what a user would write with the public API; timed on a sample of points, extrapolated);
* numpy, hand-written (digits only): the forward pass written out, once per grid point.

Every contender's losses are checked against tenflang's before any time is printed.

    python benchmarks/bench_landscape.py [--resolution 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np
from common import assert_same, machine, one_thread, seconds, table, timed

import tenflang_nb.core.landscape.evaluation as landscape_module
from tenflang_nb.core import api
from tenflang_nb.core.landscape import (
    LossEvaluator,
    Plane,
    landscape,
    path_of,
    plane_for,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TARGET_SECONDS = 2.0


def trained(example: str, data: Any, **settings: Any) -> tuple[Any, Any, Any]:
    shape = api.parse_file(EXAMPLES / example / "shape.tf")
    trainer = api.trainer(api.compile(shape), data, **settings)
    trainer.run()
    return shape, trainer, api.load_data(data)


def grid_coords(land: Any) -> np.ndarray:
    if land.dims == 1:
        return land.grid[0][:, None]
    a, b = np.meshgrid(*land.grid)
    return np.column_stack([a.ravel(), b.ravel()])


def plain_loop(shape: Any, data: Any, evaluator: LossEvaluator, plane: Plane,
               coords: np.ndarray) -> np.ndarray:
    loss = shape.loss
    out = []
    for point in plane.points(coords):
        rows = api.evaluate(shape, data, evaluator.layout.weights(point))
        out.append(np.mean([r[loss] for r in rows]))
    return np.array(out)


def digits_numpy(x: np.ndarray, y: np.ndarray, evaluator: LossEvaluator, plane: Plane,
                 coords: np.ndarray) -> np.ndarray:
    out = np.empty(len(coords))
    layout = evaluator.layout
    for i, point in enumerate(plane.points(coords)):
        w = layout.weights(point)
        logits = np.tanh(x @ w["W1"] + w["b1"]) @ w["W2"] + w["b2"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        out[i] = -np.sum(y * logp) / len(x)
    return out


def one_pass_each(trainer: Any, plane: Plane, coords: np.ndarray) -> np.ndarray:
    evaluator = LossEvaluator.of(trainer, stack=1)
    build = landscape_module._Folded.build
    landscape_module._Folded.build = staticmethod(lambda *_args: None)  # type: ignore[method-assign]
    try:
        return evaluator.plane_losses(plane, coords)
    finally:
        landscape_module._Folded.build = build  # type: ignore[method-assign]


def bench(name: str, shape: Any, trainer: Any, data: Any, resolution: int, repeat: int,
          sample: int, extra: dict[str, Any] | None = None) -> tuple[str, float]:
    evaluator = LossEvaluator.of(trainer)
    plane = plane_for(evaluator.layout, trainer.weights, seed=0)
    path = path_of(plane, evaluator.layout, trainer.history)

    def ours() -> Any:
        return landscape(evaluator, plane, [path], resolution=resolution)

    t_ours, land = timed(ours, repeat)
    coords = grid_coords(land)
    reference = land.loss.ravel()
    per_pass = min(evaluator.stack, len(grid_coords(land)))
    mode = (f"{per_pass} settings per pass" if per_pass > 1 else
            "one pass per setting, affine lines folded")
    rows = [[f"tenflang landscape() ({mode})", seconds(t_ours), "1.00"]]

    t_each, each = timed(lambda: one_pass_each(trainer, plane, coords), repeat)
    assert_same(each, reference, name)
    rows.append(["tenflang, one pass per setting", seconds(t_each), f"{t_each / t_ours:.1f}"])

    picked = np.linspace(0, len(coords) - 1, min(sample, len(coords))).round().astype(int)
    t_loop, loop = timed(lambda: plain_loop(shape, data, evaluator, plane, coords[picked]))
    assert_same(loop, reference[picked], name)
    t_loop *= len(coords) / len(picked)
    star = " *" if len(picked) < len(coords) else ""
    rows.append([f"plain loop: api.evaluate per point{star}", seconds(t_loop),
                 f"{t_loop / t_ours:.0f}"])
    for label, run in (extra or {}).items():
        t, values = timed(lambda run=run: run(evaluator, plane, coords), repeat)
        assert_same(values, reference, f"{name}, {label}")
        rows.append([label, seconds(t), f"{t / t_ours:.1f}"])

    grid = " x ".join(str(len(g)) for g in land.grid)
    print(f"\n{name}: {grid} = {len(coords):,} settings, a path of {len(path)} records, "
          f"{evaluator.n:,} examples, {evaluator.layout.size:,} weight(s)")
    print(table(rows, ["contender", "time", "time / tenflang"]))
    if star:
        print(f"* extrapolated x{len(coords) / len(picked):.0f} from {len(picked)} points")
    return grid, t_ours


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=50, help="grid points per axis")
    parser.add_argument("--repeat", type=int, default=3, help="keep the best of this many")
    parser.add_argument("--sample", type=int, default=50,
                        help="grid points the plain loop is timed on (then extrapolated)")
    args = parser.parse_args()
    with np.load(EXAMPLES / "digits" / "digits.npz") as npz:
        digits = {"x": npz["x"], "y": npz["y"]}
    print(f"bench_landscape: single-threaded (best of {args.repeat}); {machine()}")
    with one_thread():
        shape, trainer, data = trained("digits", digits, lr=0.5, tol=0.0, max_iter=100)
        x, y = digits["x"], digits["y"]
        digits_grid, digits_seconds = bench(
            "digits (64-32-10)", shape, trainer, data, args.resolution, args.repeat,
            args.sample, {"numpy, hand-written, per point":
                          lambda ev, plane, coords: digits_numpy(x, y, ev, plane, coords)})
        shape, trainer, data = trained("xor", str(EXAMPLES / "xor" / "training_data.txt"),
                                       lr=2.0, max_iter=2000)
        bench("xor (2-4-1)", shape, trainer, data, args.resolution, args.repeat, args.sample)
        shape, trainer, data = trained(
            "logistic", str(EXAMPLES / "logistic" / "training_data.txt"), lr=2.0, tol=1e-5)
        bench("seed logistic (1 weight, a curve)", shape, trainer, data, None, args.repeat,
              args.sample)
    met = "met" if digits_seconds < TARGET_SECONDS else "MISSED"
    print(f"\ndigits {digits_grid} grid in {seconds(digits_seconds)} (target < "
          f"{TARGET_SECONDS:g} s): {met}")


if __name__ == "__main__":
    main()
