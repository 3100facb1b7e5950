"""What a numeric exercise's answer is measured against: one table, each entry a name, what
it measures, and how, from a locked model, data and the student's drawn example.

A check cell names a measurement (``tf.grading.check_measured("answer_1", "lr_limit",
example="ex1", model="lin", ...)``), so that the right number is computed for each student's
own draw: in their kernel for the feedback, and again in the autograder's own process for
the grade (``grader/grade.py``), never read from anything the student's kernel holds.

>>> MEASURES["equivalent_copies"].measure({}, tanh=4)
384.0
>>> MEASURES["equivalent_copies"].measure({}, tanh=3, relu=2)
96.0
>>> MEASURES["equivalent_copies"].measure({}, tanh=4, sigmoid=1)
Traceback (most recent call last):
...
tenflang_nb.notebook.verdicts.GradingFailure: the measurement equivalent_copies takes tanh, \
relu, not sigmoid
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.datafiles.table import DataTable
from .model import TenFlangModel
from .verdicts import GradingFailure

__all__ = ["MEASURES", "Measure"]

PLATEAU_FACTOR = 10.0  # a final loss this many times the minimum's: a plateau, not a minimum
MAX_LR = 400  # plateau_lr searches the whole learning rates 1 .. MAX_LR


def _whole(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) \
            or not 1 <= value <= 30:
        raise GradingFailure(f"{what} must be a whole number from 1 to 30, not {value!r}")
    return int(value)


def lr_limit(model: TenFlangModel, data: DataTable, *, scale: float = 1.0,
             step: float = 0.001) -> float:
    """The largest multiple of ``step`` below ``2 / h_max``, h_max the largest eigenvalue of
    the Hessian of ``model``'s mean loss over ``data`` with every input multiplied by
    ``scale`` (at the model's initial weights: for a quadratic loss, everywhere): the
    largest learning rate at which plain gradient descent still converges."""
    inputs = set(model.program.names("input"))
    scaled = {name: column * scale if name in inputs else column
              for name, column in data.columns.items()}
    hessian = model.curvature(scaled).hessian()
    h_max = float(np.linalg.eigvalsh((hessian + hessian.T) / 2).max())
    # the limit itself is excluded (a step of 2 / h_max bounces forever); a rounding error of
    # the float division must not move it across a multiple of step
    return math.floor(2 / h_max / step - 1e-9) * step


def plateau_lr(model: TenFlangModel, data: DataTable, *, tol: float) -> float:
    """The smallest whole learning rate at which ``model`` trained on ``data`` (from its
    initial weights, with tolerance ``tol``) stops on a plateau: at a final loss more than
    :data:`PLATEAU_FACTOR` times the minimum's (found with a small step and tolerance)."""
    minimum = model.train(data, lr=2, tol=1e-6, max_iter=20_000).loss
    for lr in range(1, MAX_LR + 1):
        if model.train(data, lr=lr, tol=tol).loss > PLATEAU_FACTOR * minimum:
            return float(lr)
    raise GradingFailure(f"no learning rate up to {MAX_LR} ends on a plateau with tol {tol:g}")


def adjoint_ratio(model: TenFlangModel, *, of: tuple[str, str], replace: Mapping[str, str],
                  seed: float, x: float = 1.0, y: float = 1.0) -> float:
    """``|d/L/d/a| / |d/L/d/b|`` (``of`` = (a, b)) on the example ``x``, ``y`` for the model
    with each text of ``replace`` replaced by its value, its weights drawn with
    ``init normal`` and ``seed``."""
    source = model.source
    for old, new in replace.items():
        if old not in source:
            raise GradingFailure(f"the measurement's model has no {old!r} to replace")
        source = source.replace(old, new)
    if isinstance(seed, bool) or not isinstance(seed, int | float) or seed != int(seed) \
            or not 0 <= seed < 2**32:
        raise GradingFailure(f"seed must be a whole number from 0 to 2**32 - 1, not {seed!r}")
    changed = TenFlangModel(source, model.name, model.settings, init="normal", seed=int(seed))
    loss = changed.program.losses[0]
    size = {s.name: abs(float(s.value)) for s in changed.trace({"x": x, "y": y})
            if s.value is not None}
    a, b = (size.get(f"d/{loss}/d/{w}") for w in of)
    if a is None or b is None or b == 0:
        raise GradingFailure(f"the measurement's model has no non-zero d/{loss}/d/{of[1]}")
    return a / b


def equivalent_copies(*, tanh: float, relu: float | None = None) -> float:
    """The weight settings of a network with a tanh hidden layer of ``tanh`` units (then a
    relu layer of ``relu`` units) that compute the same function as one solution (itself
    included), counting relabelled units (n! per layer) and sign flips (2^n for tanh, which
    is odd; none for relu: ``-relu(-z)`` is not ``relu(z)``)."""
    n = _whole(tanh, "a layer's width")
    count = 2**n * math.factorial(n)
    if relu is not None:
        count *= math.factorial(_whole(relu, "a layer's width"))
    return float(count)


@dataclass(frozen=True)
class Measure:
    """One measurement: its ``name``, what it measures (``what``), and ``compute``, whose
    first parameters are the locked model and the data when it takes them."""

    name: str
    what: str
    compute: Callable[..., float]

    def takes(self) -> list[str]:
        """The arguments a check cell (or the drawn example) gives it."""
        return [p for p in inspect.signature(self.compute).parameters
                if p not in ("model", "data")]

    def needs(self, what: str) -> bool:
        return what in inspect.signature(self.compute).parameters

    def measure(self, given: Mapping[str, Any], **arguments: Any) -> float:
        """The number, for ``given`` (the model, the data it needs) and ``arguments``."""
        unknown = sorted(set(arguments) - set(self.takes()))
        if unknown:
            raise GradingFailure(f"the measurement {self.name} takes "
                                 f"{', '.join(self.takes())}, not {', '.join(unknown)}")
        for what in ("model", "data"):
            if self.needs(what) and what not in given:
                raise GradingFailure(f"the measurement {self.name} needs {what}=")
        positional = [given[w] for w in ("model", "data") if self.needs(w)]
        try:
            value = self.compute(*positional, **arguments)
        except TypeError as err:  # a missing argument: the check cell's to name
            raise GradingFailure(f"the measurement {self.name}: {err}") from None
        return float(value)


MEASURES: dict[str, Measure] = {m.name: m for m in (
    Measure("lr_limit", "the largest learning rate (a multiple of step) below 2 / h_max",
            lr_limit),
    Measure("plateau_lr", "the smallest whole learning rate that ends on a plateau",
            plateau_lr),
    Measure("adjoint_ratio", "|d/L/d/a| / |d/L/d/b| for a changed model, one example",
            adjoint_ratio),
    Measure("equivalent_copies", "the weight settings equal to one solution of a tanh (and "
            "relu) network", equivalent_copies),
)}
