"""The one interface of the engines: what binds a plan to data, and what a bound run offers.

Every caller (training, curvature, the loss landscape, the cost measures, H v) binds through
an :class:`Engine` and uses only :class:`BoundRun`: the reference engine
(:data:`REFERENCE`, ``plan.Run``) and the fused one (``fused.FusedEngine``) implement both,
and neither reads the other's internals: the fused engine builds from the bound program
(``bound.BoundProgram``) and the buffers by slot name. ``fused.bind`` chooses the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from .bound import BoundProgram
from .plan import Plan, Run
from .syntax import Define

__all__ = ["REFERENCE", "BoundRun", "Engine", "ReferenceEngine"]

Array = np.ndarray


class BoundRun(Protocol):
    """A plan bound to its data on one engine.

    ``bound``: what runs (of one chunk, on an engine that takes the examples in chunks);
    ``values``: each bound name's buffer (None: NULL; a weight may be written into it, or
    through :meth:`set`, before a :meth:`run`); ``means``: the buffers of the batch means
    named at bind time.
    """

    plan: Plan
    n: int
    bound: BoundProgram
    values: Mapping[str, Array | None]
    means: Mapping[str, Array | None]

    def set(self, name: str, value: Array | float) -> None:
        """Overwrite a bound input (a weight) in place."""

    def run(self) -> None:
        """One pass over the batch: every instruction, then the means (a step's loss and
        gradient, a value, H v: whatever the plan computes)."""

    def value(self, name: str) -> Array | None:
        """``name`` for every example, as of the last pass (None: NULL)."""

    def mean(self, name: str) -> Array | None:
        """``name``'s mean over the batch, as of the last pass (None: NULL)."""

    def finite(self, only: set[str] | None = None) -> bool:
        """Whether every value of the last pass (of the lines defining ``only``) is finite."""

    def first_nonfinite(self, only: set[str] | None = None) -> Define | None:
        """The first line whose value was NaN or infinite (diagnostics)."""


class Engine(Protocol):
    """Binds a plan and data for ``n`` examples to a run. ``means``: names whose batch means
    the caller reads; ``keep``: names whose per-example values it reads with ``value()``
    (an engine may store only those)."""

    def bind(self, plan: Plan, data: Mapping[str, Array | float | None], n: int,
             means: list[str], keep: set[str]) -> BoundRun:
        """A run of ``plan`` on ``data``."""


class ReferenceEngine:
    """The reference engine: one numpy call per line over the whole batch (``plan.Run``).

    >>> from tenflang_nb.core.program import parse
    >>> plan = Plan(parse("declare input x\\ndeclare output y\\ndefine y = mul x 2\\n"))
    >>> run = REFERENCE.bind(plan, {"x": np.array([1.0, 2.5])}, 2, [], {"y"})
    >>> run.run(); run.value("y")
    array([2., 5.])
    """

    def bind(self, plan: Plan, data: Mapping[str, Array | float | None], n: int,
             means: list[str], keep: set[str]) -> Run:
        return plan.bind(data, n, means)


REFERENCE = ReferenceEngine()
