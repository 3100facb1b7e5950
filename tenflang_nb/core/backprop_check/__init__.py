"""A backward pass written by hand, checked line by line against the compiler's.

A student writes the backward lines of a shape program: definitions of adjoints
``d/<loss>/d/<v>`` and of any helper names (local partials, temporaries); declarations are
optional. :func:`check_backprop` parses them with the usual TenFlang errors (the file is
``NAME (your backward pass)``, ``line N`` is the student's line), runs them after the shape
program's forward pass on several random draws of the inputs and weights, and compares every
adjoint they define with the compiler's ``d/L/d/v`` on the same draws (the full GCP, so the
adjoints of inputs can be checked too). An adjoint the student uses but does not define takes
the compiler's value, so one block of the backward pass can be checked at a time; it is
listed as *missing*, not wrong.

The package, in the order a check runs: ``require`` (which adjoints must be written),
``reference`` (the compiler's side: the full GCP on random draws), ``student`` (the student's
text parsed and run, chained and isolated), ``blame`` (the verdicts: right, wrong, inherits;
the root wrong lines), ``hints`` (why a root line is wrong) and ``report`` (the result and
its text).

>>> from tenflang_nb.core.program import parse
>>> square = parse("declare weight w\\ndeclare loss L\\ndefine L = mul w w\\n", "square.tf")
>>> check_backprop(square, "define d/L/d/w = add w w").ok
True
>>> result = check_backprop(square, "define d/L/d/w = w")
>>> result.ok, result.first_wrong_line
(False, 1)
>>> print(plain(result.lines[0].hint).replace(": ", ":\\n"))
define L = mul w w (line 3 of square.tf) uses w twice, so d/L/d/w has one term per use:
w (first operand) + w (second operand); your value has only one of them
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import TenFlangError
from ..program import Program
from ..settings import Setting, SettingsError
from .blame import blame
from .reference import Reference, TooLarge
from .report import (
    AdjointVerdict,
    BackpropCheck,
    LineVerdict,
    explanation_lines,
    inherits_note,
    plain,
    status_text,
    undecided_note,
)
from .require import required_adjoints
from .student import StudentLines, parse_student

__all__ = ["OPTIONS", "AdjointVerdict", "BackpropCheck", "LineVerdict", "check_backprop",
           "explanation_lines", "inherits_note", "plain", "status_text", "undecided_note"]

DRAWS = 5  # random draws of inputs and weights an answer is checked on

# The numeric options of a check, checked as the training settings are (the same messages
# from Python and from %%tenflang_check, whose --draws and --seed are made from this table).
OPTIONS: Mapping[str, Setting] = {
    "draws": Setting(name="draws", label="draws",
                     help="random draws of the inputs and weights to check on", default=DRAWS,
                     kind=int, requirement="an integer from 1 to 100",
                     accepts=lambda v: 1 <= v <= 100),
    "seed": Setting(name="seed", label="random seed",
                    help="seed of the random draws (in a graded notebook: the student's own)",
                    default=0, kind=int, requirement="an integer >= 0",
                    accepts=lambda v: v >= 0),
}


def check_backprop(program: Program, text: str, *, name: str | None = None,
                   require: Any = None, draws: int = DRAWS, seed: int = 0,
                   formulas: bool = True) -> BackpropCheck:
    """Check the backward lines ``text`` a student wrote for the shape program ``program``.

    ``name`` labels the student's text in errors (``NAME (your backward pass)``; default:
    the shape program's file name). ``require`` lists the adjoints (``d/L/d/w`` or just
    ``w``) that must be written for ``ok``; default: every weight's gradient. ``draws``
    random draws of the inputs and weights, from ``seed``. ``formulas=False`` (grading
    mode): no hint spells out the compiler's formula for a line. Errors in ``text`` are in
    the result (``.error``); a shape program without a loss, or a bad argument, raise
    :class:`TenFlangError`.

    >>> from tenflang_nb.core.examples import SEED_EXAMPLE
    >>> from tenflang_nb.core.program import parse
    >>> seed = parse(SEED_EXAMPLE, "seed.tf")
    >>> r = check_backprop(seed, "define d/lambda/d/diff = mul 2 diff", require=["diff"])
    >>> r.ok, r.right, r.missing
    (True, ['d/lambda/d/diff'], ['d/lambda/d/o', 'd/lambda/d/z', 'd/lambda/d/w'])
    >>> check_backprop(seed, "define d/lambda/d/diff = mul 2 diff", seed=-1)
    Traceback (most recent call last):
    ...
    tenflang_nb.core.settings.SettingsError: error: seed must be an integer >= 0, not -1
    """
    draws = OPTIONS["draws"].check(draws)
    seed = OPTIONS["seed"].check(seed)
    if not isinstance(program, Program):
        raise SettingsError(f"the model must be a TenFlang program, not "
                            f"{type(program).__name__}")
    if not isinstance(text, str):
        raise SettingsError(f"the backward pass must be text (a str), not "
                            f"{type(text).__name__}")
    if name is not None and not isinstance(name, str):
        raise SettingsError(f"name must be text (a str), not {type(name).__name__}")
    loss = program.loss
    label = name or program.file.rsplit("/", 1)[-1].removesuffix(".tf")
    file = f"{label} (your backward pass)"
    required = required_adjoints(program, loss, require)
    reference = Reference(program, draws, seed, formulas)
    try:
        statements = parse_student(text, file, program, loss)
        student = StudentLines(reference, statements, file)
    except TooLarge:
        raise
    except TenFlangError as err:  # every diagnostic is about the student's text
        return BackpropCheck.failed(label, file, loss, text, err, required)
    return blame(student, label, text, required)
