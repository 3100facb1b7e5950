"""A graded check's verdict from data alone: the answer's text or number, the locked model's
text and settings, the student's seed. The kernel's checks (``grading.py``, feedback) and the
autograder's own process (``tenflang_nb.grader``, the grade) both call these, so a student sees
the verdict the grade is made of.

Each returns the line a passing check prints and raises :class:`GradingFailure` (its message
the verdict) when the answer is not right.

>>> exact_number(0.5), exact_number(True), exact_number(float("nan"))
(True, False, False)
>>> class Anything(float):
...     def __eq__(self, other): return True
>>> exact_number(Anything(1.0))
False
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core import api
from ..core.agreement import entrywise_agreement
from ..core.arguments import ArgumentError, Rule, check_values, shown
from ..core.errors import TenFlangError, printable
from ..core.formatting import fmt_list, fmt_value
from ..core.grading import NBGRADER_STUB, rounded, rounding
from ..core.lexical import adjoint_name
from ..core.plan import Plan
from ..core.program import ancestors
from ..core.settings import TrainSettings
from .model import TenFlangModel

__all__ = ["EXACT_NUMBERS", "FIT_MAX_ITER", "FIT_STARTS", "GradingFailure", "answer_verdict",
           "exact_number", "fit_verdict", "gradient_on", "measured_verdict",
           "number_verdict"]


class GradingFailure(AssertionError):
    """A check cell's verdict: not right (yet). IPython shows its message, not a traceback:
    a wrong answer is not a crash."""

    def _render_traceback_(self) -> list[str]:
        return str(self).splitlines()


# A number is one of these types exactly: a subclass can compare equal to anything
EXACT_NUMBERS = (int, float, np.float64, np.float32, np.int64, np.int32)


def exact_number(value: Any) -> bool:
    """``value`` is a finite int or float (or numpy's), of that very type."""
    if type(value) not in EXACT_NUMBERS:
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond any float (10**400)
        return False


def answer_verdict(answer: str, graded: TenFlangModel, text: str | None, *,
                   require: Sequence[str] | None, draws: int, seed: int,
                   grading: bool = True) -> str:
    """A backward pass ``text`` (None: never answered) checked against ``graded``, the
    locked model, with the adjoints ``require`` on ``draws`` draws from ``seed``; grading
    mode's rules unless ``grading`` is False (no pasted GCP, no formula in a hint)."""
    if text is None:
        raise GradingFailure(
            f"{answer} is not answered yet: write your backward pass in the cell that starts "
            f"with %%tenflang_check {graded.name} {answer}, and run it")
    result = graded.check_backprop(text, require=require, draws=draws, seed=seed,
                                   grading=grading)
    if not result.ok:
        raise GradingFailure(f"{answer}: {result.report()}")
    return (f"✓ {answer} is right and complete (checked on {result.draws} random draws of "
            f"{graded.name}'s inputs and weights)")


def number_verdict(name: str, value: Any, expected: float, *, hint: str = "",
                   rtol: float = 1e-6, atol: float = 1e-9) -> str:
    """The number ``value`` given as ``name`` equals ``expected`` (the package's one rule,
    ``core.agreement``). The message never shows ``expected``."""
    if value is None or not exact_number(value):
        raise GradingFailure(f"{name} is not answered with a number")
    if not entrywise_agreement(float(value), expected, rtol=rtol, atol=atol):
        raise GradingFailure(f"{name} = {float(value):g} is not right" + (
            f": {printable(hint)}" if hint else ""))  # the teacher's text, echoed as all is
    return f"✓ {name} is right"


def measured_verdict(name: str, value: Any, expected: float, *, step: float | None = None,
                     digits: int | None = None, hint: str = "") -> str:
    """The number ``value`` given as ``name`` is the measured ``expected``, both rounded
    (:func:`~tenflang_nb.core.grading.rounded`). The message never shows ``expected``.

    >>> measured_verdict("answer_1", 0.107, 0.10700000000000001, step=0.001)
    '✓ answer_1 = 0.107 is right (rounded to a multiple of 0.001)'
    """
    how = rounding(step, digits)
    if value is None:
        raise GradingFailure(f"{name} is not answered yet: set {name} to your number (replace "
                             "None) and run that cell")
    if not exact_number(value):
        raise GradingFailure(f"{name} should be a number, not {shown(value)}")
    if rounded(float(value), step=step, digits=digits) != rounded(expected, step=step,
                                                                  digits=digits):
        raise GradingFailure(f"✗ {name} = {float(value):g} is not right (rounded {how})"
                             + (f": {printable(hint)}" if hint else ""))
    return f"✓ {name} = {float(value):g} is right (rounded {how})"


def gradient_on(graded: TenFlangModel, weight: str, example: Mapping[str, float]) -> float:
    """``d/L/d/weight`` of the model ``graded`` on ``example`` (its weights the example's
    where it gives them)."""
    program = graded.program
    scalars = [w for w in program.names("weight") if not program.shapes[w]]
    if weight not in scalars:  # a numeric check compares one number
        raise Rule("weight", str, f"a weight of {graded.name} that is one number: "
                   f"{fmt_list(scalars, 'or') or 'it has none'}").error(weight)
    given = program.names("input", "exp_output", "weight")
    for name, value in example.items():
        if name not in given:
            raise ArgumentError(f"example: {shown(name)} is no input, expected output or "
                                f"weight of {graded.name} ({fmt_list(given)})")
        check_values(f"example[{name!r}]", value, program.shapes[name])
    unset = [n for n in program.names("input", "exp_output") if n not in example]
    if unset:
        raise ArgumentError(f"example gives no value for {fmt_list(unset)}")
    values = {**graded.weights, **dict(example)}
    gcp = api.compile(program)
    name = adjoint_name(gcp.loss, weight)
    return float(np.asarray(Plan(gcp.program()).example(values, [name])[name]))


FIT_MAX_ITER = 5000  # what a check trains a student's model for at most, per start
FIT_STARTS = 3  # a network can stall at a saddle from one start: the best of three counts


def fit_verdict(answer: str, model: str, source: str | None, settings: TrainSettings, *,
                data: Any, seed: int, accuracy: float = 1.0, max_iter: int = FIT_MAX_ITER,
                starts: int = FIT_STARTS, max_weights: int | None = None) -> str:
    """A model that is the answer (its text ``source``, None: never answered, and the
    ``settings`` of its cell), trained here on ``data`` (at most ``max_iter`` steps) from up
    to ``starts`` starts drawn from ``seed``: one start must classify at least ``accuracy`` of
    the examples right, its output computed from the inputs through weights, its loss
    halved by training, with at most ``max_weights`` numbers in its weights (None: any)."""
    if source is None or NBGRADER_STUB in source:
        raise GradingFailure(f"{answer} is not answered yet: write your model in the cell that "
                             f"starts with %%tenflang {model}, and run it")
    settings = settings.replace(max_iter=min(settings.max_iter, max_iter))
    how = (f"trained from {starts} starts drawn for you (lr {settings.lr:g}, "
           f"{settings.optimizer}, --init {settings.init}, at most {settings.max_iter} steps)")
    best: tuple[int, float, float] | None = None  # right, -end loss, start loss
    try:
        program = TenFlangModel(source, model, settings).program
        output, target = _fit_roles(answer, model, program)
        size = sum(int(np.prod(program.shapes[w], dtype=int)) for w in program.names("weight"))
        if max_weights is not None and size > max_weights:
            raise GradingFailure(f"{answer}: {model}'s weights hold {size} numbers; this "
                                 f"exercise allows at most {max_weights}: a smaller model")
        for k in range(starts):
            fitted = TenFlangModel(source, model, settings.replace(seed=seed + k))
            result = fitted.train(data)
            rows = fitted.evaluate(data)
            expected = np.asarray(rows.inputs.columns[target], dtype=float).reshape(len(rows))
            got = np.array([float(np.asarray(r[output])) for r in rows])
            if not np.all(np.isfinite(got)):  # NaN > 0.5 is False: it would count as class 0
                bad = np.flatnonzero(~np.isfinite(got))
                raise GradingFailure(
                    f"{answer}: trained from a start drawn for you (start {k + 1} of "
                    f"{starts}), the outputs of {model} are not finite: {output} is "
                    f"{fmt_value(got[bad[0]], 'report')} on example {bad[0] + 1} ({len(bad)} of "
                    f"{len(rows)} examples): a class needs a number; change the model (what "
                    f"computes {output})")
            right = int(np.sum((got > 0.5) == (expected > 0.5)))
            tried = (right, -result.loss, result.history[0].loss)
            best = tried if best is None else max(best, tried)
            if right >= accuracy * len(rows):
                break
    except TenFlangError as err:
        raise GradingFailure(f"{answer}: {err}") from None
    right, end, start = best[0], -best[1], best[2]
    if right < accuracy * len(rows):
        raise GradingFailure(f"{answer}: {how}, {model} classifies at best {right} of "
                             f"{len(rows)} examples right ({output} > 0.5 for class 1), loss "
                             f"{end:.3g}: change the model or its settings (its first line)")
    if not end < start / 2:
        raise GradingFailure(f"{answer}: {how}, the loss went from {start:.3g} to {end:.3g}: "
                             f"{model} fits without learning; what fits must be learned")
    return (f"✓ {answer}: {model} learns it: {right} of {len(rows)} examples right after "
            f"training from a start drawn for you (loss {start:.2g} -> {end:.2g})")


def _fit_roles(answer: str, model: str, program: Any) -> tuple[str, str]:
    """The output and the expected output of a model that is an answer, refused when the
    output is not computed from the inputs through weights."""
    outputs, targets = program.names("output"), program.names("exp_output")
    if len(outputs) != 1 or len(targets) != 1:
        raise GradingFailure(f"{answer}: declare one output and one exp_output (the class, "
                             f"0 or 1); {model} has {len(outputs)} and {len(targets)}")
    (output,), (target,) = outputs, targets
    shaped = [n for n in (output, target) if program.shapes[n]]
    if shaped:
        raise GradingFailure(f"{answer}: {shaped[0]} must be one number (the class is 0 or 1), "
                             f"not of shape {list(program.shapes[shaped[0]])}")
    feeds = ancestors(program, output)
    if target in feeds:
        raise GradingFailure(f"{answer}: {output} is computed from {target}, the expected "
                             "output: a model computes its output from its inputs alone")
    if not set(program.names("weight")) & feeds:
        raise GradingFailure(f"{answer}: {output} depends on no weight: there is nothing "
                             "to learn (declare weights and use them)")
    return output, target
