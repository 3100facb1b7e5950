"""The stepper's predict mode: in the backward pass it stops before each adjoint's value and
asks the student for it. Everything an answer needs is computed here, in Python, when the
view is made, and embedded in it, so answering needs no kernel:

* the question: before which step (the first that touches the adjoint ``d/L/d/v``: a
  variable used by several lines is asked for its whole adjoint before its first term
  arrives), and for a tensor which entry (the largest in magnitude, outlined on the node);
* the right value and the tolerance it is accepted within (:func:`tolerance`);
* the usual wrong values, each with its hint: the backward-pass checker's hypotheses
  (``core/backprop_check/hints/``), asked in advance for the values they describe
  (``hints.mistakes``), on this very example (``Reference(given=...)``).

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook.model import TenFlangModel
>>> run = TenFlangModel(SEED_EXAMPLE, "net").stepper_run({"x": 1.5, "y": 0.2}, predict=True)
>>> [(q.adjoint, q.step, round(q.right, 4)) for q in run.questions]
[('d/lambda/d/diff', 4, 0.6), ('d/lambda/d/o', 6, 0.6), ('d/lambda/d/z', 9, 0.15), \
('d/lambda/d/w', 11, 0.225)]
>>> print(run.questions[2].mistakes[0].hint)
your value is the local partial d/o/d/z alone: multiply it by the incoming adjoint \
d/lambda/d/o (chain rule: d/lambda/d/o · d/o/d/z)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.agreement import entrywise_agreement
from ..core.backprop_check.hints import hint, mistakes
from ..core.backprop_check.reference import FLOOR, Reference
from ..core.backprop_check.report import LineVerdict
from ..core.errors import TenFlangError
from ..core.formatting import fmt_number, fmt_shape
from ..core.graph import DataFlowGraph
from ..core.lexical import adjoint_name
from ..core.program import Program

__all__ = ["RELATIVE", "Mistake", "Question", "questions", "tolerance"]

# an answer within 1% of the value is right (the stepper shows 4 significant digits; a
# product of two of them is off by less); a value of about 0 on the example's own scale (the
# checker's FLOOR times its largest adjoint) may be answered by 0
RELATIVE = 0.01
DRAWS = 3  # the example and 2 random draws: a hint's hypothesis must hold on all three


def tolerance(value: float, scale: float) -> float:
    """How far from ``value`` an answer may be and still count as it: 1% of it, at least
    :data:`FLOOR` times ``scale``, the largest adjoint of the example, so that 0 is never
    right for an adjoint that is not about 0 on the example's own scale, however small its
    adjoints (a trained model's). The width of the package's one rule (:func:`_near`), for
    the page's script to apply.

    >>> tolerance(2.5, 4.0), tolerance(0.0, 4.0), tolerance(2e-5, 3e-5) < 2e-5
    (0.025, 4e-06, True)
    """
    return max(RELATIVE * abs(value), FLOOR * scale)


@dataclass(frozen=True)
class Mistake:
    """A usual wrong answer: its value, the tolerance around it, and the checker's hint."""

    value: float
    tolerance: float
    hint: str


@dataclass(frozen=True)
class Question:
    """What the stepper asks before step ``step`` (an index into ``StepperRun.steps``)."""

    step: int
    variable: str
    adjoint: str  # d/L/d/v
    entry: tuple[int, ...] | None  # the entry asked for, when the adjoint is a tensor
    shape: tuple[int, ...]
    right: float
    tolerance: float
    mistakes: tuple[Mistake, ...]

    @property
    def what(self) -> str:
        """``d/L/d/a``, or ``entry [3, 1] of d/L/d/W2``."""
        if self.entry is None:
            return self.adjoint
        return f"entry [{', '.join(map(str, self.entry))}] of {self.adjoint}"

    @property
    def text(self) -> str:
        """The question, as the stepper asks it."""
        where = (f" ({fmt_shape(self.shape)}; the entry is outlined on {self.variable}'s grad "
                 "heatmap)" if self.entry is not None else "")
        return (f"Predict {self.what}{where}: the adjoint of {self.variable}, how much the loss "
                f"moves per unit of {self.variable}, once the lines computing it have run. "
                f"Answers within ±{fmt_number(self.tolerance, 2)} count.")


def questions(*, program: Program, graph: DataFlowGraph, loss: str,
              first_grad: Mapping[str, int], adjoints: Mapping[str, Any],
              given: Mapping[str, Any]) -> tuple[Question, ...]:
    """One question per adjoint ``d/L/d/v`` the run computes (``adjoints``: v -> its value
    after the run), asked before the step ``first_grad[v]`` that first shows it. ``given``:
    the example's inputs and weights, which the checker's reference runs on."""
    wanted = [v for v in first_grad if v != loss and loss in graph.descendants([v])
              and _finite(adjoints.get(v))]
    if not wanted:
        return ()
    try:
        ref: Reference | None = Reference(program, DRAWS, 0, given=given)
    except TenFlangError:  # the example cannot run without the model's data (a NULL)
        ref = None
    # the example's own scale: its largest adjoint (the loss's own 1 left out)
    scale = max(float(np.max(np.abs(np.asarray(adjoints[v], dtype=float)), initial=0.0))
                for v in wanted)
    found = []
    for v in sorted(wanted, key=first_grad.__getitem__):
        value = np.asarray(adjoints[v], dtype=float)
        entry = (tuple(int(i) for i in np.unravel_index(int(np.argmax(np.abs(value))),
                                                        value.shape))
                 if value.ndim else None)
        right = float(value[entry] if entry is not None else value)
        found.append(Question(first_grad[v], v, adjoint_name(loss, v), entry, value.shape,
                              right, tolerance(right, scale),
                              _mistakes(ref, v, entry, right, scale) if ref is not None
                              else ()))
    return tuple(found)


def _near(value: float, reference: float, scale: float) -> bool:
    """Whether ``value`` counts as ``reference``: within :func:`tolerance` of it, by the
    package's one rule (``core.agreement``; never a NaN or an infinity).

    >>> _near(2.52, 2.5, 3.0), _near(0.0, 2e-5, 3e-5), _near(float("nan"), 0.0, 1.0)
    (True, False, False)
    """
    return entrywise_agreement(value, reference, rtol=RELATIVE, atol=FLOOR * scale).ok


def _finite(value: Any) -> bool:
    return value is not None and bool(np.all(np.isfinite(np.asarray(value, dtype=float))))


def _mistakes(ref: Reference, v: str, entry: tuple[int, ...] | None, right: float,
              scale: float) -> tuple[Mistake, ...]:
    """The wrong values of the asked entry that a hint explains (on the example and on the
    reference's other draws alike): none within the tolerance of the right value, none
    within the tolerance of one already listed."""
    name = adjoint_name(ref.loss, v)
    verdict = LineVerdict(0, name, "", "adjoint", "wrong", ref.adjoint(v))
    found: list[Mistake] = []
    for wrong in mistakes(ref, v):
        value = float(wrong[0][entry] if entry is not None else wrong[0])
        if not np.isfinite(value) or _near(value, right, scale):
            continue
        if any(_near(value, m.value, scale) for m in found):
            continue
        text = hint(ref, verdict, wrong)
        if text is not None:
            found.append(Mistake(value, tolerance(value, scale), text))
    return tuple(found)


def first_grad_steps(updates: Sequence[Sequence[tuple[str, str, str]]]) -> dict[str, int]:
    """Each variable's first step (index) whose updates change its grad row."""
    first: dict[str, int] = {}
    for i, step in enumerate(updates):
        for v, row, _ in step:
            if row == "grad":
                first.setdefault(v, i)
    return first
