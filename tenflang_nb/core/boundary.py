"""A decision boundary: a model's scalar output over the plane of its two input components,
with the data's points and their classes (what TensorFlow Playground shows).

A program qualifies when its inputs are one ``input`` of shape [2] or two scalar ones
(:func:`plane_inputs`), and it has a scalar ``output``. :class:`BoundaryEvaluator` binds a
grid over the data's extent to a plan of the forward pass (only what the output needs) once,
and the training and test points too; each :meth:`BoundaryEvaluator.at` then only sets the
weights and runs three passes, so the training panel can redraw it many times a second.

>>> from tenflang_nb.core.program import parse
>>> from tenflang_nb.core.datafiles import from_columns
>>> p = parse("declare input x [2]\\ndeclare exp_output y\\ndeclare weight w [2]\\n"
...           "declare output o\\ndefine o = matmul x w\\n")
>>> data = from_columns({"x": [[-1.0, 0.0], [1.0, 0.0]], "y": [0.0, 1.0]})
>>> ev = BoundaryEvaluator(p, plane_inputs(p), data, resolution=3)
>>> b = ev.at({"w": np.array([1.0, 0.0])})
>>> b.axes, b.output.round(2).tolist()[0], b.train.labels.tolist(), b.train_accuracy
(('x[0]', 'x[1]'), [-1.2, 0.0, 1.2], [0.0, 1.0], 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .arguments import check_arguments, check_grid, check_limits
from .datafiles import DataTable
from .errors import TenFlangError
from .formatting import fmt_list, fmt_shape
from .plan import Plan, Run
from .program import Program

__all__ = ["Boundary", "BoundaryEvaluator", "PlaneInputs", "Points", "plane_inputs"]

RESOLUTION = 60  # grid points per axis


@dataclass(frozen=True)
class PlaneInputs:
    """Where a program's plane is: its input (one name of shape [2]) or inputs (two scalar
    names), the ``output`` drawn over it and the ``target`` (its scalar ``exp_output``, the
    class label; None without one)."""

    inputs: tuple[str, ...]
    output: str
    target: str | None

    @property
    def axes(self) -> tuple[str, str]:
        """The two axes' labels: ``x[0]``, ``x[1]`` or the two inputs' names."""
        if len(self.inputs) == 1:
            return (f"{self.inputs[0]}[0]", f"{self.inputs[0]}[1]")
        return (self.inputs[0], self.inputs[1])

    def columns(self, xy: np.ndarray) -> dict[str, np.ndarray]:
        """Points (an (m, 2) array) as the program's input columns."""
        if len(self.inputs) == 1:
            return {self.inputs[0]: xy}
        return {self.inputs[0]: xy[:, 0], self.inputs[1]: xy[:, 1]}

    def coordinates(self, table: DataTable) -> np.ndarray:
        """The table's points as an (m, 2) array; an error when it lacks an input."""
        missing = [n for n in self.inputs
                   if n not in table.present or not np.all(table.present[n])]
        if missing:
            raise TenFlangError.at(
                f"the data has no value of {fmt_list([repr(n) for n in missing])} for every "
                "example: a decision boundary needs each point's two input components",
                file=table.file)
        if len(self.inputs) == 1:
            xy = table.columns[self.inputs[0]]
            if xy.shape[1:] != (2,):
                raise TenFlangError.at(
                    f"'{self.inputs[0]}' has shape {fmt_shape(xy.shape[1:])} in the data, "
                    "not [2]", file=table.file)
            return np.asarray(xy, dtype=float)
        return np.column_stack([table.columns[n] for n in self.inputs]).astype(float)

    def labels(self, table: DataTable) -> np.ndarray | None:
        """The table's class labels (its ``target`` column; None without one)."""
        t = self.target
        if t is None or t not in table.present or not np.all(table.present[t]):
            return None
        return np.asarray(table.columns[t], dtype=float).reshape(len(table))


def plane_inputs(program: Program, output: str | None = None) -> PlaneInputs:
    """The plane of ``program``'s input and the output drawn over it (``output``: which,
    when it has several scalar outputs).

    >>> from tenflang_nb.core.program import parse
    >>> plane_inputs(parse("declare input a\\ndeclare input b\\ndeclare exp_output y\\n"
    ...                    "declare output o\\ndefine o = add a b\\n"))
    PlaneInputs(inputs=('a', 'b'), output='o', target='y')
    """
    (output,) = check_arguments(output=output)
    shapes = program.shapes
    inputs = program.names("input")
    shown = fmt_list([f"{n} {fmt_shape(shapes[n])}" if shapes[n] else n
                      for n in inputs]) or "none"
    if [shapes[n] for n in inputs] == [(2,)]:
        chosen: tuple[str, ...] = (inputs[0],)
    elif [shapes[n] for n in inputs] == [(), ()]:
        chosen = (inputs[0], inputs[1])
    else:
        raise TenFlangError.at(
            "a decision boundary needs a program whose input is a point of the plane: one "
            f"'declare input x [2]' or two scalar inputs (this one's inputs: {shown})",
            file=program.file)
    outputs = program.names("output")
    scalars = [n for n in outputs if shapes[n] == ()]
    tensors = [n for n in outputs if shapes[n] != ()]
    # a tensor output is no surface: say how to take one number of it
    hint = _component_hint(tensors[0], shapes[tensors[0]]) if tensors and not scalars else None
    if output is None:
        if len(scalars) != 1:
            raise TenFlangError.at(
                "a decision boundary draws one scalar output over the plane: "
                + (f"choose one of {fmt_list(scalars, 'or')} with output=" if scalars else
                   "this program has no scalar output, only "
                   + fmt_list([f"{n} {fmt_shape(shapes[n])}" for n in tensors])
                   if tensors else "this program declares no output ('declare output o')"),
                file=program.file, hint=hint)
        output = scalars[0]
    elif output not in scalars:
        shape = f" (its shape is {fmt_shape(shapes[output])})" if output in tensors else ""
        raise TenFlangError.at(
            f"'{output}' is not a scalar output of {program.file}{shape}"
            + (f"; its scalar outputs: {fmt_list(scalars)}" if scalars else ""),
            file=program.file, hint=hint)
    targets = [n for n in program.names("exp_output") if shapes[n] == ()]
    return PlaneInputs(chosen, output, targets[0] if len(targets) == 1 else None)


def _component_hint(name: str, shape: tuple[int, ...]) -> str:
    """How to make a scalar output of one component of the tensor output ``name``."""
    return (f"add a scalar output, such as component 1 of '{name}' (the second class's "
            f"score): declare intvar e {fmt_shape(shape)}, declare intvar m "
            f"{fmt_shape(shape)}, declare output p; define e = onehot {name} 1, "
            f"define m = mul {name} e, define p = sum m")


@dataclass(frozen=True)
class Points:
    """Data points on the plane: their coordinates ``xy`` (m, 2), class ``labels`` (None
    without any) and the model's ``output`` at each."""

    xy: np.ndarray
    labels: np.ndarray | None
    output: np.ndarray

    def accuracy(self, level: float | None) -> float | None:
        """The share of points on their label's side of ``level`` (None without labels)."""
        if level is None or self.labels is None or not len(self.labels):
            return None
        return float(np.mean((self.output >= level) == (self.labels >= level)))


@dataclass(frozen=True)
class Boundary:
    """The output over a grid of the plane (``output[i, j]`` at ``ys[i]``, ``xs[j]``), the
    training points and the test points (None without test data).

    ``classes``: the two label values when the training labels take exactly two, and
    ``level`` the output midway between them (0.5 for labels 0 and 1): the decision
    boundary is where the output crosses it.
    """

    plane: PlaneInputs
    xs: np.ndarray
    ys: np.ndarray
    output: np.ndarray
    train: Points
    test: Points | None
    classes: tuple[float, float] | None

    @property
    def axes(self) -> tuple[str, str]:
        return self.plane.axes

    @property
    def level(self) -> float | None:
        return None if self.classes is None else (self.classes[0] + self.classes[1]) / 2

    @property
    def train_accuracy(self) -> float | None:
        return self.train.accuracy(self.level)

    @property
    def test_accuracy(self) -> float | None:
        return None if self.test is None else self.test.accuracy(self.level)


_LARGEST = float(np.finfo(float).max)


def _limits(xy: np.ndarray, margin: float = 0.1) -> tuple[tuple[float, float], ...]:
    """Each axis from the points' extent, widened by ``margin`` of it on each side (at least
    0.1, and a millionth of the points' distance from 0 so that far from 0 the two ends stay
    apart), within the finite floats: points near +-1e308 get a grid too."""
    lo, hi = xy.min(axis=0), xy.max(axis=0)  # finite: a data table holds no infinity
    # margin * hi - margin * lo: the span itself overflows for points from -1e308 to 1e308
    reach = np.maximum(np.abs(lo), np.abs(hi))
    pad = np.maximum(np.maximum(margin * hi - margin * lo, 0.1), 1e-6 * reach)
    with np.errstate(over="ignore"):  # beyond the largest float: the largest float
        low = np.maximum(lo - pad, -_LARGEST)
        high = np.minimum(hi + pad, _LARGEST)
    return tuple((float(a), float(b)) for a, b in zip(low, high, strict=True))


def _axis(low: float, high: float, n: int) -> np.ndarray:
    """``n`` points from ``low`` to ``high``, as np.linspace, also where ``high - low`` is
    beyond the largest float (linspace's step is then infinite, its grid NaN)."""
    if np.isfinite(high - low):
        return np.linspace(low, high, n)
    t = np.linspace(0.0, 1.0, n)
    return low * (1.0 - t) + high * t


class BoundaryEvaluator:
    """The output of ``program`` over the plane and at the data's points, for any weights.

    ``train`` and ``test`` (optional) are data tables with the plane's input column(s);
    their ``target`` column, if there, gives the classes. ``resolution`` grid points per
    axis (default 60); ``limits`` ((x_low, x_high), (y_low, y_high)), by default the points'
    extent with a margin.
    """

    def __init__(self, program: Program, plane: PlaneInputs, train: DataTable,
                 test: DataTable | None = None, *, resolution: int | None = None,
                 limits: Sequence[Sequence[float]] | None = None) -> None:
        resolution = check_grid(resolution, 2, RESOLUTION)
        chosen = check_limits(limits, 2)
        self.program = program
        self.plane = plane
        self.weights = program.names("weight")
        self.plan = Plan(program, targets=[plane.output])
        points = {"train": (plane.coordinates(train), plane.labels(train))}
        if test is not None:
            points["test"] = (plane.coordinates(test), plane.labels(test))
        every = np.concatenate([xy for xy, _ in points.values()])
        (x0, x1), (y0, y1) = chosen or _limits(every)
        self.xs = _axis(x0, x1, resolution)
        self.ys = _axis(y0, y1, resolution)
        gx, gy = np.meshgrid(self.xs, self.ys)
        self._grid_xy = np.column_stack([gx.ravel(), gy.ravel()])
        self._grid: Run | None = self._bind(self._grid_xy)
        self._points = {k: (xy, labels, self._bind(xy)) for k, (xy, labels) in points.items()}
        train_labels = points["train"][1]
        values = np.unique(train_labels) if train_labels is not None else np.array([])
        self.classes = (float(values[0]), float(values[1])) if len(values) == 2 else None

    def _bind(self, xy: np.ndarray) -> Run:
        zeros = {w: np.zeros(self.program.shapes[w]) for w in self.weights}
        run = self.plan.bind({**self.plane.columns(xy), **zeros}, len(xy))
        if run.values.get(self.plane.output) is None:
            raise TenFlangError.at(
                f"the output '{self.plane.output}' is null on the plane: it needs a value "
                "besides the input and the weights", file=self.program.file)
        return run

    def release(self) -> None:
        """Let go of the grid's bound run: a row per grid point for every line of the
        program, 1 MB for a network of 16 hidden units on the training panel's 50 x 50 grid,
        which a panel kept for as long as the kernel lived (issue 26). The next :meth:`at`
        binds it again (a few milliseconds)."""
        self._grid = None

    def _output(self, run: Run, weights: Mapping[str, object]) -> np.ndarray:
        for w in self.weights:
            run.set(w, np.asarray(weights[w], dtype=float))
        run.run()
        value = run.value(self.plane.output)
        assert value is not None
        return np.array(value).reshape(run.n)

    def at(self, weights: Mapping[str, object]) -> Boundary:
        """The boundary with these weights (a dict holding every weight)."""
        missing = [w for w in self.weights if w not in weights]
        if missing:
            raise TenFlangError.at(f"no value for the weight(s) {fmt_list(missing)}",
                                   file=self.program.file)
        if self._grid is None:
            self._grid = self._bind(self._grid_xy)
        output = self._output(self._grid, weights).reshape(len(self.ys), len(self.xs))
        shown = {k: Points(xy, labels, self._output(run, weights))
                 for k, (xy, labels, run) in self._points.items()}
        return Boundary(self.plane, self.xs, self.ys, output, shown["train"],
                        shown.get("test"), self.classes)
