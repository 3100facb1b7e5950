"""Random values for a program's inputs and weights: what the backprop checker checks an
answer on, and what the cost comparison times a gradient on when data is missing.

How the draws are made: every input, expected output and weight gets, per draw, values of
magnitude 0.25 to 1.5 (divided by the square root of its number of rows for a matrix, as the
auto initial weights are, so that hidden units do not saturate). On every other draw every
value is positive (so ``ln``, ``sqrt`` and ``pow`` of a weighted input are defined), on the
others signs are random (so ``relu``, ``abs`` or a sign mistake show). An expected output
that is a vector is drawn as a probability distribution (it sums to 1, as a one-hot label
does, so ``softmax - y`` is the softmax cross-entropy's gradient).

>>> from tenflang_nb.core.program import parse
>>> p = parse("declare input x [2]\\ndeclare exp_output y [3]\\n")
>>> values = draw_values(p, ["x", "y"], 4, np.random.default_rng(0))
>>> values["x"].shape, bool(np.all(values["x"][1] > 0)), values["y"].sum(axis=1).round(6)
((4, 2), True, array([1., 1., 1., 1.]))
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .program import Program

__all__ = ["draw_values"]


def draw_values(program: Program, names: Sequence[str], k: int, rng: np.random.Generator
                ) -> dict[str, np.ndarray]:
    """``k`` draws of each of ``names`` (variables of ``program``), from ``rng``: an array
    (k, *shape) per name, the draws positive on every odd row (see the module)."""
    positive = np.arange(k) % 2 == 1  # every other draw: all values positive
    data: dict[str, np.ndarray] = {}
    for name in names:
        s = program.shapes[name]
        if program.kind(name) == "exp_output" and len(s) == 1:
            data[name] = rng.dirichlet(np.ones(s[0]), size=k)
            continue
        magnitude = rng.uniform(0.25, 1.5, size=(k, *s))
        if len(s) == 2:  # as the auto initial weights: tanh units of x W do not saturate
            magnitude /= np.sqrt(s[0])
        sign = np.where(rng.random((k, *s)) < 0.5, -1.0, 1.0)
        sign[positive] = 1.0
        data[name] = magnitude * sign
    return data
