"""The update rules of training, one table entry each: how a gradient becomes a step.

An optimizer keeps its memory (velocities, moment estimates) in an :class:`OptimizerState`
that the trainer owns and resets; the rule itself is a plain function.

>>> state, grads = OptimizerState(), {"w": np.array(2.0)}
>>> [round(float(OPTIMIZERS["momentum"].step(state, grads, lr=0.1, momentum=0.5)["w"]), 6)
...  for _ in range(3)]
[0.2, 0.3, 0.35]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ADAM_BETAS", "ADAM_EPS", "OPTIMIZERS", "Optimizer", "OptimizerState"]

ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8

Grads = dict[str, np.ndarray]


@dataclass
class OptimizerState:
    """What an optimizer remembers between steps: first and second moments, step count."""

    first: Grads = field(default_factory=dict)
    second: Grads = field(default_factory=dict)
    t: int = 0


# step(state, grads, lr=..., momentum=...) -> the amount to subtract from each weight
StepRule = Callable[..., Grads]


@dataclass(frozen=True)
class Optimizer:
    name: str
    rule: str  # the update, as the Guide and --help write it
    step: StepRule


def _gd(state: OptimizerState, grads: Grads, *, lr: float, momentum: float) -> Grads:
    return {w: lr * g for w, g in grads.items()}


def _momentum(state: OptimizerState, grads: Grads, *, lr: float, momentum: float) -> Grads:
    for w, g in grads.items():
        state.first[w] = momentum * state.first.get(w, 0.0) + g
    return {w: lr * state.first[w] for w in grads}


def _adam(state: OptimizerState, grads: Grads, *, lr: float, momentum: float) -> Grads:
    b1, b2 = ADAM_BETAS
    state.t += 1
    steps = {}
    for w, g in grads.items():
        state.first[w] = b1 * state.first.get(w, 0.0) + (1 - b1) * g
        state.second[w] = b2 * state.second.get(w, 0.0) + (1 - b2) * g * g
        m_hat = state.first[w] / (1 - b1 ** state.t)
        s_hat = state.second[w] / (1 - b2 ** state.t)
        steps[w] = lr * m_hat / (np.sqrt(s_hat) + ADAM_EPS)
    return steps


OPTIMIZERS: dict[str, Optimizer] = {o.name: o for o in (
    Optimizer("gd", "w <- w - lr g (the seed's gradient descent)", _gd),
    Optimizer("momentum", "v <- mu v + g; w <- w - lr v (mu: --momentum)", _momentum),
    Optimizer("adam", "Adam: moments with betas 0.9 and 0.999, eps 1e-8", _adam),
)}
