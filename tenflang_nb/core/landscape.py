"""The loss landscape: the mean loss over a line or a plane of weight settings, with the path
of descent projected onto it.

Every picture of a loss landscape is a slice through weight space: the settings
``origin + a d1 (+ b d2)`` for a grid of coordinates ``a`` (and ``b``). What changes is the
slice (:class:`Plane`):

* one weight in all: the loss against ``w`` itself (``origin`` 0, ``d1`` = 1);
* two in all: contours over ``(w1, w2)``;
* more: a plane through the final weights, along two chosen weight components (coordinates
  are then those components' values) or along two random *filter-normalised* directions
  (Li et al., "Visualizing the Loss Landscape of Neural Nets", NeurIPS 2018), with a seed;
* or the line or plane through given settings (two or three minima, say).

:class:`LossEvaluator` computes the grid. It binds the training data to a plan of the
program's forward pass (only what the loss needs) once; then many settings share each pass:
``stack`` settings side by side on the example axis (the data repeated, each example row
with its own weights), as many as fit in a memory budget, so a small model's whole grid is a
few passes. A model too large for that (a copy of every weight per example) runs one pass per
setting, still without binding anything again; over a plane, the lines that are affine in the
plane's coordinates (a first layer ``x W1 + b1``) are then computed three times for the whole
grid, not once per point. ``benchmarks/bench_landscape.py`` measures these against a plain
loop over the grid points.

A history's weight snapshots (see :class:`~tenflang_nb.core.train.History`) are projected
onto the plane by least squares: the coordinates of the nearest point of the plane, and the
distance to it (0 when the path lies in the plane, as it does for one or two weights).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from . import fused, ops
from .errors import TenFlangError
from .lexical import is_digits
from .ops import Shape
from .plan import Plan, Run
from .program import Program
from .train import GradientDescent, Record, Weights, single_threaded_blas

__all__ = ["Landscape", "Layout", "LossEvaluator", "Path", "Plane", "filter_normalized",
           "grid_limits", "landscape", "path_of", "plane_for", "plane_through"]

# One pass over a stack of settings: about this many example rows (measured on the seed
# example, XOR and small_net: 16k-64k rows run the 2,500 settings of a 50 x 50 grid in 1-2 ms;
# a plain loop takes 50-150 ms) ...
STACK_ROWS = 32_768
# ... and at most this many floats bound per pass (every value of the forward pass, weights
# included, once per row): 32 MB. The digits model needs 2,600 floats per row, so its 1,797
# examples never stack: one pass per setting.
STACK_FLOATS = 4_000_000

# Grid points per axis by default: a smooth curve, and contours fine enough to follow.
RESOLUTION_1D = 201
RESOLUTION_2D = 50


# ------------------------------------------------------------------------------ weights


class Layout:
    """Where each weight lives in one flat vector of all the weights (in the given order).

    >>> layout = Layout({"W": (2, 2), "b": ()})
    >>> layout.size, layout.flat({"W": [[1, 2], [3, 4]], "b": 5.0}).tolist()
    (5, [1.0, 2.0, 3.0, 4.0, 5.0])
    >>> layout.label(2), layout.component("W[1, 0]"), layout.component("b")
    ('W[1, 0]', 2, 4)
    """

    def __init__(self, shapes: Mapping[str, Shape]) -> None:
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}
        self.slices: dict[str, slice] = {}
        start = 0
        for name, shape in self.shapes.items():
            size = math.prod(shape)
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start

    @property
    def names(self) -> list[str]:
        return list(self.shapes)

    def flat(self, weights: Mapping[str, object]) -> np.ndarray:
        """The weights as one vector (every weight of the layout must be given)."""
        out = np.empty(self.size)
        for name, where in self.slices.items():
            if name not in weights:
                raise TenFlangError.at(f"no value for the weight '{name}'")
            value = np.asarray(weights[name], dtype=float)
            if value.shape != self.shapes[name]:
                raise TenFlangError.at(
                    f"the weight '{name}' has shape {list(value.shape)}, expected "
                    f"{list(self.shapes[name])}")
            out[where] = value.reshape(-1)
        return out

    def weights(self, vector: np.ndarray) -> Weights:
        """A flat vector back as weights (floats for scalars, arrays otherwise)."""
        out: Weights = {}
        for name, where in self.slices.items():
            part = np.array(vector[where]).reshape(self.shapes[name])
            out[name] = float(part) if part.shape == () else part
        return out

    def label(self, index: int) -> str:
        """How people name one component: ``w`` (a scalar), ``W1[0, 3]``."""
        for name, where in self.slices.items():
            if where.start <= index < where.stop:
                shape = self.shapes[name]
                if not shape:
                    return name
                position = np.unravel_index(index - where.start, shape)
                return f"{name}[{', '.join(str(int(i)) for i in position)}]"
        raise IndexError(index)

    def component(self, label: str) -> int:
        """The flat index of ``w`` or ``W1[0, 3]`` (a weight's name, and an index for a
        tensor: each component of a tensor is one number to move)."""
        text = label.strip()
        name, _, rest = text.partition("[")
        name = name.strip()
        if name not in self.shapes:
            known = ", ".join(self.shapes)
            raise TenFlangError.at(f"'{name}' is not a weight (the weights: {known})")
        shape = self.shapes[name]
        if not rest:
            if shape:
                raise TenFlangError.at(
                    f"'{name}' has shape {list(shape)}: name one component, e.g. "
                    f"{self.label(self.slices[name].start)}")
            return self.slices[name].start
        parts = [p.strip() for p in rest.removesuffix("]").split(",")]
        if not rest.endswith("]") or not all(is_digits(p) for p in parts):
            raise TenFlangError.at(f"'{text}': write a component as {name}[i, j]")
        index = tuple(int(p) for p in parts)
        if len(index) != len(shape) or any(i >= n for i, n in zip(index, shape, strict=True)):
            raise TenFlangError.at(f"'{text}' is outside '{name}', of shape {list(shape)}")
        return self.slices[name].start + int(np.ravel_multi_index(index, shape))


# ------------------------------------------------------------------------------ evaluation


class LossEvaluator:
    """The mean loss of ``program`` over a data set at many weight settings.

    ``data`` maps each data input to its values over the ``n`` examples (as a trainer holds
    them); ``weights`` names the weights (in the order of the flat vectors given to
    :meth:`losses`). ``program`` may be a shape program or a GCP: only what the loss needs
    runs. ``stack`` fixes how many settings share a pass (default: as many as fit, see the
    module docstring; 1 is a plain pass per setting). ``engine``: as training's (a pass of a
    large data set on the fused engine takes bounded memory; see ``fused.bind``).

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> ev = LossEvaluator(parse(SEED_EXAMPLE), {"x": np.array([1.0, 2.0]),
    ...                    "y": np.array([0.5, 0.5])}, 2, ["w"])
    >>> ev.losses(np.array([[0.0], [1.0]])).round(4).tolist()
    [0.0, 0.0992]
    """

    def __init__(self, program: Program, data: Mapping[str, np.ndarray], n: int,
                 weights: Sequence[str], loss: str | None = None, *,
                 stack: int | None = None, engine: str = "auto") -> None:
        self.program = program
        self.engine = engine
        self.loss = loss if loss is not None else program.loss
        self.n = n
        self.layout = Layout({w: program.shapes[w] for w in weights})
        self.plan = Plan(program, targets=[self.loss])
        self.data = {k: np.asarray(v) for k, v in data.items() if k in self.plan.given}
        per_row = sum(math.prod(program.shapes[v]) for v in
                      [*self.plan.given, *(d.target for d in self.plan.defines)])
        fits = STACK_FLOATS // max(1, n * per_row)
        self.stack = stack if stack is not None else max(1, min(STACK_ROWS // n, fits))
        self._runs: dict[int, Run] = {}
        self._plain: Run | None = None

    @classmethod
    def of(cls, trainer: GradientDescent, *, stack: int | None = None) -> LossEvaluator:
        """The loss a trainer descends, over its whole training set."""
        return cls(trainer.gcp, trainer.data, trainer.n, list(trainer.grad_names),
                   trainer.loss_name, stack=stack, engine=trainer.settings.engine)

    def _run(self, size: int) -> Run:
        """A run bound to the data for ``size`` settings side by side (bound once)."""
        run = self._runs.get(size)
        if run is None:
            zeros = {w: np.zeros(s) for w, s in self.layout.shapes.items()}
            if size == 1:
                bound = {**self.data, **zeros}
            else:  # the data repeated; each row its own copy of the weights
                rows = size * self.n
                bound = {k: np.tile(v, (size,) + (1,) * (v.ndim - 1))
                         for k, v in self.data.items()}
                bound.update({w: np.zeros((rows, *s)) for w, s in self.layout.shapes.items()})
            # one setting a pass: the run averages the loss itself (the fused engine never
            # stores it per example); stacked settings read each setting's rows of it
            run = fused.bind(self.plan, bound, size * self.n,
                             means=[self.loss] if size == 1 else None, engine=self.engine,
                             keep=() if size == 1 else [self.loss])
            if run.values.get(self.loss) is None:
                raise TenFlangError.at(
                    f"the loss '{self.loss}' is null: the data lacks a value it needs",
                    file=self.program.file)
            self._runs[size] = run
        return run

    def losses(self, points: np.ndarray | Iterable[Mapping[str, object]]) -> np.ndarray:
        """The mean loss at each setting: ``points`` is a (K, P) array of flat weight vectors
        (see :class:`Layout`) or a sequence of weight dicts. NaN or inf where the loss is."""
        if isinstance(points, np.ndarray):
            flat = np.atleast_2d(np.asarray(points, dtype=float))
        else:
            flat = np.array([self.layout.flat(p) for p in points]).reshape(-1, self.layout.size)
        if flat.shape[1] != self.layout.size:
            raise ValueError(f"points have {flat.shape[1]} components, the weights "
                             f"{self.layout.size}")
        k = len(flat)
        out = np.empty(k)
        size = max(1, min(self.stack, k))
        run = self._run(size)
        mean = self._mean(run, size)
        n = self.n
        with single_threaded_blas(), np.errstate(all="ignore"):
            for start in range(0, k, size):
                chunk = flat[start:start + size]
                g = len(chunk)
                for name, where in self.layout.slices.items():
                    buffer = run.values.get(name)
                    if buffer is None:  # the loss does not depend on this weight
                        continue
                    shape = self.layout.shapes[name]
                    values = chunk[:, where].reshape((g, *shape))
                    if size == 1:
                        buffer[...] = values
                    else:  # rows [i n, (i + 1) n) hold setting i
                        buffer.reshape((size, n, *shape))[:g] = values[:, None]
                run.run()
                out[start:start + g] = mean()[:g]
        return out

    def _mean(self, run: Run, size: int) -> Callable[[], np.ndarray]:
        """The mean loss of each of the ``size`` settings of the last pass of ``run``."""
        if size == 1 and self.loss in getattr(run, "means", {}):
            return lambda: np.atleast_1d(run.mean(self.loss))  # type: ignore[arg-type]
        loss = run.values[self.loss]
        assert loss is not None
        n = self.n
        if loss.shape[0] != size * n:  # depends on neither the weights nor the data
            return lambda: np.full(size, float(loss.reshape(-1)[0]))
        per_setting = loss.reshape(size, n)
        # the mean over each setting's examples as one product, as the trainer takes it
        weights = np.full(n, 1.0 / n)
        return lambda: per_setting @ weights

    def _reference(self) -> Run | None:
        """A reference run of one setting with every line's value in its buffer (what
        folding reads and writes), or None where that would take too much memory."""
        if self._plain is None:
            zeros = {w: np.zeros(s) for w, s in self.layout.shapes.items()}
            bound = {**self.data, **zeros}
            if fused.reference_bytes(self.plan, bound, self.n) > fused.CHUNK_OVER:
                return None
            self._plain = self.plan.bind(bound, self.n)
        return self._plain

    def plane_losses(self, plane: Plane, coords: np.ndarray) -> np.ndarray:
        """The mean loss at ``plane.points(coords)`` for coordinates (K, k), a block of
        settings at a time (never all K weight vectors at once).

        When each setting has a pass of its own (a large model), the lines that are affine
        in the coordinates (``x W1`` with ``W1`` on the plane, and sums of such: see
        ``ops.Op.affine_in``) are computed once for the origin and once per axis, and each
        setting combines them instead of recomputing them: the first layer's matrix
        product, say, costs three products for the whole grid.
        """
        coords = np.asarray(coords, dtype=float).reshape(-1, plane.dims)
        if self.stack == 1 and len(coords) > plane.dims + 1:
            folded = _Folded.build(self, plane)
            if folded is not None:
                return folded.losses(coords)
        block = max(self.stack, 256)
        out = np.empty(len(coords))
        for start in range(0, len(coords), block):
            out[start:start + block] = self.losses(plane.points(coords[start:start + block]))
        return out


class _Folded:
    """One pass per setting, with the lines affine in the plane's coordinates folded: each
    such value is ``V0 + c1 V1 (+ c2 V2)``, its parts computed from passes at the origin
    and at one step along each axis."""

    def __init__(self, evaluator: LossEvaluator, plane: Plane, run: Run, skip: set[str],
                 frontier: list[str], needed: list[str]) -> None:
        self.evaluator = evaluator
        self.plane = plane
        self.run = run
        self.calls = run.calls_without(skip)
        self.needed = needed  # the weights a remaining line reads
        self.frontier = frontier
        self.parts: dict[str, list[np.ndarray]] = {}
        self.scratch = {f: np.empty_like(run.values[f]) for f in frontier}  # type: ignore[arg-type]

    @staticmethod
    def build(evaluator: LossEvaluator, plane: Plane) -> _Folded | None:
        """The folded evaluation, or None when folding saves too little (or cannot be done)."""
        run = evaluator._reference()
        if run is None:
            return None
        layout = evaluator.layout
        moving = {w for w, where in layout.slices.items() if np.any(plane.axes[:, where])}
        status = {name: ("affine" if name in moving else "const")
                  for name in evaluator.plan.given}
        for d in evaluator.plan.defines:
            names = [a if isinstance(a, str) else None for a in d.args]
            varying = [i for i, a in enumerate(names) if a is not None and status[a] != "const"]
            if d.op is None:
                status[d.target] = status[names[0]] if names[0] is not None else "const"
            elif not varying:
                status[d.target] = "const"
            else:
                op = ops.OPS[d.op]
                affine = (all(status[str(names[i])] == "affine" for i in varying)
                          and set(varying) <= set(op.affine_in)
                          and (len(varying) == 1 or op.linear))
                status[d.target] = "affine" if affine else "varying"
        given = set(evaluator.plan.given)
        skip = {d.target for d in evaluator.plan.defines
                if status[d.target] != "varying" and d.target in run.step_of}
        frontier: set[str] = set()
        needed: set[str] = set()
        for d in evaluator.plan.defines:
            if status[d.target] == "varying":
                for a in d.variables():
                    if a in given:
                        needed.add(a)
                    elif status[a] == "affine":
                        frontier.add(a)
        if status[evaluator.loss] == "affine":
            frontier.add(evaluator.loss)
        frontier = {f for f in frontier if run.values.get(f) is not None and f not in given}
        # worth it when the lines skipped touch much more than rewriting the frontier does
        saved = sum(_work(run.step_of[name].out, run.step_of[name].args) for name in skip)
        cost = (plane.dims + 1) * sum(run.values[f].size for f in frontier)  # type: ignore[union-attr]
        if not skip or saved <= 2 * cost:
            return None
        folded = _Folded(evaluator, plane, run, skip, sorted(frontier),
                         [w for w in layout.names if w in needed])
        return folded if folded._measure() else None

    def _set(self, flat: np.ndarray, names: Iterable[str]) -> None:
        layout = self.evaluator.layout
        for name in names:
            buffer = self.run.values.get(name)
            if buffer is not None:
                buffer[...] = flat[layout.slices[name]].reshape(layout.shapes[name])

    def _measure(self) -> bool:
        """Run at the origin and one step along each axis; keep each folded value's parts.
        False when a part is not finite (then differences would not be the value)."""
        plane = self.plane
        seen = []
        with single_threaded_blas(), np.errstate(all="ignore"):
            for point in [plane.origin, *(plane.origin + axis for axis in plane.axes)]:
                self._set(point, self.evaluator.layout.names)
                self.run.run()
                seen.append({f: np.array(self.run.values[f]) for f in self.frontier})
        for f in self.frontier:
            base = seen[0][f]
            self.parts[f] = [base, *(s[f] - base for s in seen[1:])]
            if not all(np.all(np.isfinite(p)) for p in self.parts[f]):
                return False
        return True

    def losses(self, coords: np.ndarray) -> np.ndarray:
        out = np.empty(len(coords))
        mean = self.evaluator._mean(self.run, 1)
        plane, values = self.plane, self.run.values
        with single_threaded_blas(), np.errstate(all="ignore"):
            for i, c in enumerate(coords):
                self._set(plane.origin + c @ plane.axes, self.needed)
                for f in self.frontier:
                    buffer, scratch = values[f], self.scratch[f]
                    base, *steps = self.parts[f]
                    np.multiply(steps[0], c[0], out=buffer)
                    buffer += base
                    for step, cj in zip(steps[1:], c[1:], strict=True):
                        np.multiply(step, cj, out=scratch)
                        buffer += scratch
                for call in self.calls:
                    call()
                out[i] = mean()[0]
        return out


def _work(out: np.ndarray, args: Sequence[object]) -> int:
    """How much a line touches: its rows times its largest operand or result per row (a
    matrix product's multiplications, an elementwise line's elements)."""
    rows = max([out.shape[0], *(a.shape[0] for a in args if isinstance(a, np.ndarray) and a.ndim)])
    per_row = max([out[0].size, *(a[0].size for a in args
                                  if isinstance(a, np.ndarray) and a.ndim)])
    return rows * per_row


# ------------------------------------------------------------------------------ directions


def filter_normalized(layout: Layout, weights: Mapping[str, object],
                      rng: np.random.Generator) -> np.ndarray:
    """A random direction scaled filter by filter to the weights' own sizes (Li et al. 2018).

    A direction drawn from N(0, 1) per component, then rescaled so that moving one unit
    along it changes each part of the network by as much as that part's size:

    * a matrix ``W`` [in, out] (a tensor of rank >= 2): column ``j``, the weights one unit
      receives in ``matmul x W``, gets the norm of ``W[:, j]`` (a convolution's filter in
      the paper; for a fully connected layer, a unit's incoming weights);
    * a vector (a bias, or the weights of a single unit): scaled as a whole to its norm;
    * the scalar weights, together, as one filter: scaled to the norm of all of them.

    (The paper either holds biases fixed or uses the bias itself as its direction; scaling it
    like a filter keeps the direction random when a model has only scalars and vectors.)
    A weight that is 0 does not move. Draws one N(0, 1) array per weight, in layout order.

    >>> layout = Layout({"W": (3, 2), "b": (2,)})
    >>> w = {"W": np.array([[1.0, 0.0], [2.0, 0.0], [2.0, 4.0]]), "b": np.array([0.0, 0.0])}
    >>> d = layout.weights(filter_normalized(layout, w, np.random.default_rng(0)))
    >>> np.linalg.norm(d["W"], axis=0).round(6).tolist(), d["b"].tolist()
    ([3.0, 4.0], [0.0, 0.0])
    """
    out = np.zeros(layout.size)
    scalars: list[str] = []
    for name, shape in layout.shapes.items():
        r = rng.standard_normal(shape)
        w = np.asarray(weights[name], dtype=float)
        where = layout.slices[name]
        if not shape:
            scalars.append(name)
            out[where] = r
        elif len(shape) == 1:
            out[where] = r * _ratio(np.linalg.norm(w), np.linalg.norm(r))
        else:
            axes = tuple(range(len(shape) - 1))
            scale = _ratio(np.sqrt(np.sum(w * w, axis=axes)), np.sqrt(np.sum(r * r, axis=axes)))
            out[where] = (r * scale).reshape(-1)
    if scalars:
        index = [layout.slices[s].start for s in scalars]
        w = np.array([float(np.asarray(weights[s])) for s in scalars])
        out[index] *= _ratio(np.linalg.norm(w), np.linalg.norm(out[index]))
    return out


def _ratio(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray:
    den = np.asarray(den, dtype=float)
    return np.divide(num, den, out=np.zeros(np.shape(den)), where=den > 0)


@dataclass(frozen=True, eq=False)
class Plane:
    """The settings ``origin + c @ axes`` for coordinates ``c`` (one or two per setting).

    ``labels`` name the coordinates (a weight component, or a direction); ``kind`` says how
    the plane was chosen: ``"weights"`` (the model's only weights; coordinates are their
    values), ``"components"`` (chosen components through given weights; coordinates are
    their values), ``"random"`` (filter-normalised directions through given weights, from
    ``seed``), ``"directions"`` (directions given), ``"through"`` (through given settings:
    ``marks`` names the coordinates of each).

    >>> p = Plane(np.zeros(3), np.eye(3)[:2], ("a", "b"), "components")
    >>> coords, distance = p.project(np.array([[1.0, 2.0, 2.0]]))
    >>> coords.tolist(), distance.tolist()
    ([[1.0, 2.0]], [2.0])
    """

    origin: np.ndarray  # (P,)
    axes: np.ndarray  # (k, P), k = 1 or 2
    labels: tuple[str, ...]
    kind: str
    seed: int | None = None
    marks: dict[str, tuple[float, ...]] = field(default_factory=dict)

    @property
    def dims(self) -> int:
        return len(self.axes)

    def points(self, coords: np.ndarray) -> np.ndarray:
        """The flat weight vectors at coordinates ``coords`` (K, k)."""
        return self.origin + np.asarray(coords, dtype=float).reshape(-1, self.dims) @ self.axes

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Least-squares coordinates (m, k) of settings (m, P), and each one's distance from
        the plane (the length of what the plane cannot reach)."""
        offsets = np.atleast_2d(points) - self.origin
        coords = np.linalg.lstsq(self.axes.T, offsets.T, rcond=None)[0].T
        distance = np.linalg.norm(offsets - coords @ self.axes, axis=1)
        return coords, distance


def plane_for(layout: Layout, weights: Mapping[str, object], along: Sequence[object] | None = None,
              *, seed: int = 0) -> Plane:
    """The default slice through ``weights`` (usually the final ones).

    ``along``: None picks by the number of weight components (1: the loss against it; 2:
    both; more: two random filter-normalised directions from ``seed``); one or two component
    names (``"w"``, ``"W1[0, 3]"``: the loss against their values, the others held at
    ``weights``); or one or two directions, each a dict of weights like ``weights``.

    >>> layout = Layout({"a": (), "b": (), "c": ()})
    >>> plane_for(layout, {"a": 1.0, "b": 2.0, "c": 3.0}, ["c"]).origin.tolist()
    [1.0, 2.0, 0.0]
    """
    if not layout.size:
        raise TenFlangError.at("there are no weights, so there is no landscape to draw")
    final = layout.flat(weights)
    if along is None:
        if layout.size <= 2:
            labels = tuple(layout.label(i) for i in range(layout.size))
            return Plane(np.zeros(layout.size), np.eye(layout.size), labels, "weights")
        rng = np.random.default_rng(seed)
        axes = np.array([filter_normalized(layout, weights, rng) for _ in range(2)])
        if not np.any(axes[0]) or not np.any(axes[1]):
            raise TenFlangError.at(
                "every weight is 0, so filter-normalised directions are 0 too: choose two "
                "weights to vary, e.g. along=('" + layout.label(0) + "', '"
                + layout.label(1) + "')")
        return Plane(final, axes, ("direction 1", "direction 2"), "random", seed=seed)
    chosen = list(along)
    if not 1 <= len(chosen) <= 2:
        raise TenFlangError.at(f"along: give one or two weights or directions, not "
                               f"{len(chosen)}")
    if all(isinstance(a, str) for a in chosen):
        index = [layout.component(str(a)) for a in chosen]
        if len(set(index)) != len(index):
            raise TenFlangError.at("along: the two weights are the same component")
        origin = final.copy()
        origin[index] = 0.0  # so that a coordinate is the component's value
        return Plane(origin, np.eye(layout.size)[index], tuple(layout.label(i) for i in index),
                     "components")
    if any(isinstance(a, str) for a in chosen):
        raise TenFlangError.at("along: give weight names or directions, not a mix")
    axes = np.array([layout.flat(a) for a in chosen])  # type: ignore[arg-type]
    if np.linalg.matrix_rank(axes) < len(axes):
        raise TenFlangError.at("along: the directions are 0 or parallel")
    labels = tuple(f"direction {i + 1}" for i in range(len(axes)))
    return Plane(final, axes, labels, "directions")


def plane_through(layout: Layout, points: Mapping[str, Mapping[str, object]]
                  | Sequence[Mapping[str, object]]) -> Plane:
    """The line through two settings, or the plane through three: the first at coordinate
    0 (or (0, 0)), the second at 1 (or (1, 0)), the third at (0, 1). A mapping names them.

    >>> layout = Layout({"w": ()})
    >>> p = plane_through(layout, {"A": {"w": 1.0}, "B": {"w": 3.0}})
    >>> p.points(np.array([[0.5]])).tolist(), p.marks
    ([[2.0]], {'A': (0.0,), 'B': (1.0,)})
    """
    named = dict(points) if isinstance(points, Mapping) else {
        f"point {i + 1}": p for i, p in enumerate(points)}
    if not 2 <= len(named) <= 3:
        raise TenFlangError.at(f"through: give two or three weight settings, not {len(named)}")
    names = list(named)
    flat = [layout.flat(named[n]) for n in names]
    axes = np.array([f - flat[0] for f in flat[1:]])
    if np.linalg.matrix_rank(axes) < len(axes):
        raise TenFlangError.at("through: the settings are equal or on one line")
    labels = tuple(f"{names[0]} → {n}" for n in names[1:])
    unit = np.eye(len(axes))
    marks = {names[0]: (0.0,) * len(axes)}
    marks.update({n: tuple(float(c) for c in unit[i]) for i, n in enumerate(names[1:])})
    return Plane(flat[0], axes, labels, "through", marks=marks)


# ------------------------------------------------------------------------------ the path


@dataclass(frozen=True, eq=False)
class Path:
    """A run's weight snapshots on the plane: ``iterations``, their coordinates (m, k), the
    loss recorded at each, and their distance from the plane."""

    label: str
    iterations: np.ndarray
    coords: np.ndarray
    loss: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:
        return len(self.iterations)


def path_of(plane: Plane, layout: Layout, records: Sequence[Record], label: str = "descent",
            current: Mapping[str, object] | None = None) -> Path:
    """The records that keep a weight snapshot (a long run keeps a thinned-out set, the first
    and newest always), projected onto ``plane``; ``current`` (weights) stands in for an
    empty history.

    >>> layout = Layout({"w": ()})
    >>> plane = plane_for(layout, {"w": 0.0})
    >>> p = path_of(plane, layout, [Record(0, 1.0, 2.0, {"w": 0.0}), Record(1, 0.5, 1.0, None),
    ...                             Record(2, 0.2, 0.5, {"w": 0.7})])
    >>> p.iterations.tolist(), p.coords.ravel().tolist(), p.loss.tolist()
    ([0, 2], [0.0, 0.7], [1.0, 0.2])
    """
    kept = [r for r in records if r.weights is not None]
    if kept:
        flat = np.array([layout.flat(r.weights) for r in kept])  # type: ignore[arg-type]
        iterations = np.array([r.iteration for r in kept])
        loss = np.array([r.loss for r in kept], dtype=float)
    elif current is not None:
        flat = layout.flat(current)[None, :]
        iterations, loss = np.array([0]), np.array([np.nan])
    else:
        flat = np.empty((0, layout.size))
        iterations, loss = np.empty(0, dtype=int), np.empty(0)
    if len(flat):
        coords, distance = plane.project(flat)
    else:
        coords, distance = np.empty((0, plane.dims)), np.empty(0)
    return Path(label, iterations, coords, loss, distance)


def grid_limits(plane: Plane, paths: Sequence[Path], margin: float = 0.2
                ) -> tuple[tuple[float, float], ...]:
    """Per axis, a range that shows every path point (with a ``margin`` of its extent on
    each side), the marked points and, for directions, at least [-1, 1] (Li et al.'s
    range: one filter norm each way). Non-finite points (a run that blew up) are left out.

    >>> plane = Plane(np.zeros(1), np.eye(1), ("w",), "weights")
    >>> path = Path("p", np.arange(2), np.array([[0.0], [10.0]]), np.ones(2), np.zeros(2))
    >>> grid_limits(plane, [path])
    ((-2.0, 12.0),)
    """
    limits = []
    for axis in range(plane.dims):
        values = [p.coords[:, axis] for p in paths if len(p)]
        values.append(np.array([m[axis] for m in plane.marks.values()]))
        if plane.kind in ("random", "directions"):
            values.append(np.array([-1.0, 1.0]))
        points = np.concatenate(values) if values else np.empty(0)
        points = points[np.isfinite(points)]
        if not len(points):
            points = np.array([-1.0, 1.0])
        lo, hi = float(points.min()), float(points.max())
        pad = margin * (hi - lo)
        if pad <= 1e-12 * max(1.0, abs(lo), abs(hi)):  # one point: a window around it
            pad = max(1.0, 0.5 * abs(lo))
        limits.append((lo - pad, hi + pad))
    return tuple(limits)


# ------------------------------------------------------------------------------ the grid


@dataclass(frozen=True, eq=False)
class Landscape:
    """The loss over a grid of a plane, and paths on it.

    ``grid`` holds the coordinates along each axis; ``loss`` is (n,) for a line and
    (n2, n1) for a plane (``loss[j, i]`` at ``(grid[0][i], grid[1][j])``, as matplotlib's
    contour wants it). ``loss_name`` names the loss variable.
    """

    plane: Plane
    grid: tuple[np.ndarray, ...]
    loss: np.ndarray
    paths: tuple[Path, ...]
    loss_name: str = "loss"

    @property
    def dims(self) -> int:
        return self.plane.dims

    @property
    def limits(self) -> tuple[tuple[float, float], ...]:
        return tuple((float(g[0]), float(g[-1])) for g in self.grid)

    def contains(self, paths: Sequence[Path]) -> bool:
        """Whether every finite point of ``paths`` lies inside the grid."""
        for path in paths:
            for axis, (lo, hi) in enumerate(self.limits):
                c = path.coords[:, axis]
                c = c[np.isfinite(c)]
                if len(c) and (c.min() < lo or c.max() > hi):
                    return False
        return True

    def with_paths(self, paths: Sequence[Path]) -> Landscape:
        """The same grid with other paths (the live panel redraws the path, not the grid)."""
        return replace(self, paths=tuple(paths))

    def minimum(self) -> tuple[tuple[float, ...], float]:
        """The grid point of least loss: its coordinates and its loss (NaN-free points)."""
        loss = np.where(np.isfinite(self.loss), self.loss, np.inf)
        index = np.unravel_index(int(np.argmin(loss)), loss.shape)
        coords = tuple(float(self.grid[axis][index[-1 - axis]]) for axis in range(self.dims))
        return coords, float(self.loss[index])


def evaluate_grid(evaluator: LossEvaluator, plane: Plane,
                  limits: Sequence[tuple[float, float]], resolution: int
                  ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """The coordinates along each axis and the loss at every grid point."""
    grid = tuple(np.linspace(lo, hi, resolution) for lo, hi in limits)
    if plane.dims == 1:
        return grid, evaluator.plane_losses(plane, grid[0][:, None])
    a, b = np.meshgrid(grid[0], grid[1])  # (n2, n1): row j is b = grid[1][j]
    coords = np.column_stack([a.ravel(), b.ravel()])
    return grid, evaluator.plane_losses(plane, coords).reshape(a.shape)


def landscape(evaluator: LossEvaluator, plane: Plane, paths: Sequence[Path] = (), *,
              resolution: int | None = None,
              limits: Sequence[tuple[float, float]] | tuple[float, float] | None = None
              ) -> Landscape:
    """The loss on a grid over ``plane`` wide enough for ``paths`` (or over ``limits``: one
    (low, high) for every axis, or one per axis), ``resolution`` points per axis.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> ev = LossEvaluator(parse(SEED_EXAMPLE), {"x": np.array([1.0]), "y": np.array([0.5])},
    ...                    1, ["w"])
    >>> land = landscape(ev, plane_for(ev.layout, {"w": 0.0}), limits=(-1, 1), resolution=3)
    >>> land.grid[0].tolist(), land.loss.round(4).tolist(), land.minimum()
    ([-1.0, 0.0, 1.0], [0.0534, 0.0, 0.0534], ((0.0,), 0.0))
    """
    if limits is None:
        chosen = grid_limits(plane, paths)
    elif len(limits) == 2 and all(isinstance(v, int | float) for v in limits):
        chosen = ((float(limits[0]), float(limits[1])),) * plane.dims  # type: ignore[arg-type]
    else:
        chosen = tuple((float(lo), float(hi)) for lo, hi in limits)  # type: ignore[misc]
    if len(chosen) != plane.dims or any(not lo < hi for lo, hi in chosen):
        raise TenFlangError.at(f"limits: give (low, high) with low < high, for each of "
                               f"the {plane.dims} axes")
    n = resolution or (RESOLUTION_1D if plane.dims == 1 else RESOLUTION_2D)
    if n < 2:
        raise TenFlangError.at("resolution: at least 2 points per axis")
    grid, loss = evaluate_grid(evaluator, plane, chosen, n)
    return Landscape(plane, grid, loss, tuple(paths), evaluator.loss)
