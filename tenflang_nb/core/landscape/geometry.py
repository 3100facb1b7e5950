"""The geometry of a loss landscape: weight settings as flat vectors (:class:`Layout`), the
slice through weight space a picture shows (:class:`Plane`: a line or a plane, chosen by
:func:`plane_for` or :func:`plane_through`, its directions filter-normalised), and a run's
path of descent projected onto it (:class:`DescentPath`).

A history's weight snapshots (see :class:`~tenflang_nb.core.train.History`) are projected
onto the plane by least squares: the coordinates of the nearest point of the plane, and the
distance to it (0 when the path lies in the plane, as it does for one or two weights).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arguments import Rule, check_arguments, check_instance
from ..errors import TenFlangError
from ..lexical import is_digits
from ..ops import Shape
from ..plan import plain
from ..train import Record, Weights

__all__ = ["DescentPath", "Layout", "Plane", "filter_normalized", "path_of", "plane_for",
           "plane_through"]


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
        check_instance("weights", weights, Mapping, "a dict of weights (name -> value)")
        out = np.empty(self.size)
        for name, where in self.slices.items():
            if name not in weights:
                raise TenFlangError.at(f"no value for the weight '{name}'")
            try:
                value = np.asarray(weights[name], dtype=float)
            except (TypeError, ValueError, OverflowError):
                raise Rule(f"the weight {name!r}", float, "a number or numbers").error(
                    weights[name]) from None
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
            out[name] = plain(vector[where].reshape(self.shapes[name]))
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
    (seed,) = check_arguments(seed=seed)
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
    if isinstance(along, str | Mapping) or not isinstance(along, Sequence) or not all(
            isinstance(a, str | Mapping) for a in along):
        raise Rule("along", list, "one or two weight components (\"W[0, 1]\") or "
                   "directions (dicts of weights)").error(along)
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
    if not np.all(np.isfinite(axes)):
        raise TenFlangError.at("along: the directions must be finite numbers (one holds NaN "
                               "or an infinity)")
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
    if not isinstance(points, Mapping | Sequence) or isinstance(points, str):
        raise Rule("through", list, "two or three weight settings (a list, or a dict naming "
                   "them)").error(points)
    named = dict(points) if isinstance(points, Mapping) else {
        f"point {i + 1}": p for i, p in enumerate(points)}
    if not 2 <= len(named) <= 3:
        raise TenFlangError.at(f"through: give two or three weight settings, not {len(named)}")
    names = list(named)
    flat = [layout.flat(named[n]) for n in names]
    for name, point in zip(names, flat, strict=True):
        if not np.all(np.isfinite(point)):
            raise TenFlangError.at(f"through: the weights of {name} must be finite numbers "
                                   "(they hold NaN or an infinity)")
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
class DescentPath:
    """A run's weight snapshots on the plane: ``iterations``, their coordinates (m, k), the
    loss recorded at each, and their distance from the plane."""

    label: str
    iterations: np.ndarray
    coords: np.ndarray
    loss: np.ndarray
    distance: np.ndarray

    def __len__(self) -> int:
        return len(self.iterations)


def path_of(plane: Plane, layout: Layout, run: Sequence[Record] | Any, label: str = "descent",
            current: Mapping[str, object] | None = None) -> DescentPath:
    """The records of ``run`` that keep a weight snapshot (a long run keeps a thinned-out
    set, the first and newest always), projected onto ``plane``; ``current`` (weights)
    stands in for an empty history. ``run``: the records themselves, or what has a
    ``history`` of them (a model, a ``TrainResult``, a trainer).

    >>> layout = Layout({"w": ()})
    >>> plane = plane_for(layout, {"w": 0.0})
    >>> p = path_of(plane, layout, [Record(0, 1.0, 2.0, {"w": 0.0}), Record(1, 0.5, 1.0, None),
    ...                             Record(2, 0.2, 0.5, {"w": 0.7})])
    >>> p.iterations.tolist(), p.coords.ravel().tolist(), p.loss.tolist()
    ([0, 2], [0.0, 0.7], [1.0, 0.2])
    """
    records: Sequence[Record] = getattr(run, "history", run)
    if not isinstance(records, Sequence) or not all(isinstance(r, Record) for r in records):
        raise Rule(f"the run {label!r}", list, "a model, a TrainResult, a trainer or a list "
                   "of Records").error(run)
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
    return DescentPath(label, iterations, coords, loss, distance)

