"""Grading that holds: what a teacher writes into the locked cells of a graded notebook
(``import tenflang_nb as tf``, then ``tf.grading.start(...)`` and so on).

* ``start(assignment, graded=[...], no_training=[...])`` in the locked setup cell: grading
  mode on (see ``grading_mode``); the teacher's copy turns it off again with
  ``teacher_copy()`` inside an nbgrader hidden-tests region, which the student version leaves
  out. While nbgrader runs the notebook it stays on whatever the cells say.
* ``check_answer("ex4", model="quad", fingerprint="...", require=[...])`` in a locked check
  cell: re-checks the answer text the ``%%tenflang_check quad ex4`` cell recorded, with the
  requirements written here, against the model whose definition has that fingerprint (the
  locked ``%%tenflang quad`` cell's: what a student redefines changes nothing). Whatever the
  variable ``ex4`` holds is ignored. A failure raises :class:`GradingFailure` whose message
  is the check's report.
* ``example("ex3", x=[...], y=[...])``: the student's own example, drawn from their seed.
* ``batch = variant("batch", TEMPLATE, n=[5, 6], ...)``: the student's own model, its
  ``{n}`` placeholders picked from their seed; its check names it by the fingerprint of the
  template and choices (``variant_fingerprint``).
* ``check_measured("answer_1", "lr_limit", example="ex1", model="lin", ...)``: a number
  measured per student (``notebook/measures.py``: the measurements' table) from their
  drawn example, right or wrong; the autograder measures it again in its own process.
* ``given("answer_3")`` in a check cell's visible part: an answer is there and is a number;
  ``check_number("answer_3", expected)`` in its hidden part, with the expected value from
  ``gradient(...)`` (refused in the student's copy: it computes the answer).
* ``fingerprint(model)``: what a locked check cell names a model by.
* ``check_engine("backward")`` in a locked check cell of notebook 07: the student's function
  of that name (``forward``, ``backprop_step``, ``backward``), run on random programs drawn
  from their seed with the package's compilers and interpreter switched off, against the
  compiler's values (``core/engine_check.py``).

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook.model import TenFlangModel
>>> fingerprint(TenFlangModel(SEED_EXAMPLE, "seed"))
'2fb015a781ff'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.api import load_data
from ..core.arguments import (
    Rule,
    check_arguments,
    check_instance,
    label,
    python_name,
    shown,
)
from ..core.backprop_check import DRAWS, OPTIONS
from ..core.engine_check import PROGRAMS, engine_part
from ..core.engine_check import check_engine as check_function
from ..core.formatting import fmt_assignments, fmt_list
from ..core.grading import draw_example, draw_variant, rounding, variant_fingerprint
from ..core.grading import fingerprint as model_digest
from ..core.settings import SETTINGS, TrainSettings
from .grading_mode import GRADING, Definition
from .measures import MEASURES
from .model import TenFlangModel
from .verdicts import (
    FIT_MAX_ITER,
    FIT_STARTS,
    GradingFailure,
    answer_verdict,
    exact_number,
    fit_verdict,
    gradient_on,
    measured_verdict,
    number_verdict,
)

__all__ = [
    "GradingFailure",
    "check_answer",
    "check_engine",
    "check_fit",
    "check_measured",
    "check_number",
    "example",
    "fingerprint",
    "fingerprints",
    "given",
    "gradient",
    "start",
    "teacher_copy",
    "variant",
]


# ``name`` means a variable in given/check_number, a label in example
VARIABLE = Rule("name", str, "the name of the Python variable that holds the answer",
                python_name)
EXAMPLE = Rule("name", str, "the example's name: a string, not blank, without control "
               "characters", label)


def _user_ns() -> dict[str, Any]:
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def _cell() -> int | None:
    """The execution count of the cell running now (None outside IPython)."""
    from IPython import get_ipython

    shell = get_ipython()
    return shell.execution_count if shell is not None else None


# ------------------------------------------------------------------------------ the mode


def start(assignment: str, graded: Sequence[str], no_training: Sequence[str] = ()) -> None:
    """Grading mode on (the locked setup cell): for the models ``graded`` (by their names in
    ``%%tenflang NAME`` cells) what would hand over an answer is withheld, and for those in
    ``no_training`` training too (an exercise asks for a number training would give). The
    student's id seeds the checker's draws and the examples of ``assignment``."""
    # checked before anything is recorded: what a kernel grades only ever grows
    assignment, graded, no_training = check_arguments(assignment=assignment, graded=graded,
                                                      no_training=no_training)
    if GRADING.started and assignment != GRADING.assignment:
        raise GradingFailure(f"grading mode has started for {GRADING.assignment} already: it "
                             f"stays so in this kernel (restart the kernel for {assignment})")
    GRADING.start(assignment, graded, no_training, cell=_cell())
    who = {"default": f"the default student id '{GRADING.student}' (no JupyterHub user, not "
                      "nbgrader's autograder: every copy like this one has the same numbers)",
           "JupyterHub user": f"student '{GRADING.student}' (your JupyterHub user)",
           "TENFLANG_STUDENT": f"student '{GRADING.student}' (TENFLANG_STUDENT)",
           "nbgrader autograde": f"student '{GRADING.student}' (nbgrader's autograder)"}
    drawn = f"drawn for {who[GRADING.student_source]}."
    if not GRADING.graded:  # an engine's checks: nothing of a model to withhold
        print(f"Grading mode is on. The checks' random programs are {drawn}")
        return
    names = fmt_list(list(GRADING.graded))
    trained = (f"; training {fmt_list(list(GRADING.untrained))} is withheld too"
               if GRADING.untrained else "")
    their = "their" if len(GRADING.graded) != 1 else "its"
    print(f"Grading mode is on for {names}: {their} GCP, the stepper's backward pass and "
          f"{their} values and adjoints on an example are withheld{trained}. The checker's random "
          f"draws and your examples are {drawn}")


def teacher_copy() -> None:
    """Grading mode off: the teacher's copy shows everything (written in a hidden-tests
    region of the setup cell, so the student version never runs it). Only in the cell that
    started grading mode, before any other: a student's cell cannot turn it off. While
    nbgrader runs the notebook (autograde, validate) grading mode stays on."""
    running = GRADING.nbgrader_running()
    if running is not None:
        print(f"nbgrader is running this notebook ({running}): grading mode stays on.")
        return
    if GRADING.started and GRADING.started_in != _cell():
        raise GradingFailure("grading mode stays on: only the setup cell of the teacher's "
                             "copy turns it off (teacher_copy() in the cell that starts it)")
    GRADING.switched_on = False
    print("The teacher's copy: grading mode is off, everything is shown. (The student "
          "version leaves this line out.)")


def fingerprint(model: TenFlangModel) -> str:
    """The fingerprint a locked check cell names ``model`` by: its program and the settings
    of its ``%%tenflang`` cell."""
    check_instance("model", model, TenFlangModel, "a model (what a %%tenflang NAME cell "
                   "binds to NAME)")
    return model_digest(model.source, model.settings)


def fingerprints() -> dict[str, str]:
    """Every model this kernel defined (the latest definition of each name) -> its
    fingerprint: what a teacher copies into the check cells."""
    drawn = {d.name: print_ for print_, d in GRADING.variants.items()}
    return {d.name: drawn.get(d.name, d.fingerprint) for d in GRADING.definitions}


# ------------------------------------------------------------------------------ answers


def _graded_model(model: str, print_: str) -> TenFlangModel:
    """A fresh model from the definition with the fingerprint ``print_`` (named ``model``)."""
    definition = GRADING.definition(print_)
    if definition is None:
        raise GradingFailure(
            f"run the locked cell that defines {model} (the %%tenflang {model} cell above) "
            "first: this check grades that model, and no cell with its text and settings has "
            "run in this kernel")
    return TenFlangModel(definition.source, model, definition.settings)


def check_answer(answer: str, *, model: str, fingerprint: str,
                 require: Sequence[str] | None = None, draws: int = DRAWS) -> None:
    """The locked check of the answer named ``answer`` (a ``%%tenflang_check MODEL ANSWER``
    cell): its recorded text, checked again here against the model ``model`` with the
    fingerprint ``fingerprint``, with the adjoints ``require`` (default: all the weights'
    gradients need) on ``draws`` draws from the student's seed. Raises
    :class:`GradingFailure` with the check's report when it is not right and complete."""
    answer, model, fingerprint = check_arguments(answer=answer, model=model,
                                                 fingerprint=fingerprint)
    draws = OPTIONS["draws"].check(draws)
    graded = _graded_model(model, fingerprint)
    recorded = GRADING.answers.get(answer)
    seed = GRADING.seed(f"check/{graded.name}") or 0
    print(answer_verdict(answer, graded, None if recorded is None else recorded.text,
                         require=require, draws=draws, seed=seed,
                         grading=GRADING.on))


def check_engine(name: str, *, programs: int = PROGRAMS) -> None:
    """The locked check of the function ``name`` of the student's own engine (notebook 07:
    ``forward``, ``backprop_step`` or ``backward``), as the kernel holds it now: run on
    ``programs`` random programs (or lines) drawn from the student's seed, with the
    package's compilers and interpreter switched off, and compared with the package's values.
    Raises :class:`GradingFailure` with the verdict (which program, which variable, expected
    and actual values, a hint) when it is not right."""
    name = engine_part(name)
    (programs,) = check_arguments(programs=programs)
    seed = GRADING.seed(f"engine/{name}")
    result = check_function(name, _user_ns().get(name), 0 if seed is None else seed, programs)
    if not result.ok:
        raise GradingFailure(result.text)
    print(result.text)


def example(name: str, **choices: Sequence[float]) -> dict[str, float]:
    """The student's own example for the exercise ``name``: one value per variable, picked
    from its ``choices`` by the student's seed (the same in their copy and at autograde).
    Says which; the hidden tests find it again by ``name``. In grading mode an example once
    drawn stays: drawn again, from other values, it is refused."""
    name = EXAMPLE.check(name)
    seed = GRADING.seed(f"example/{name}")
    values = draw_example(0 if seed is None else seed, choices)
    if GRADING.on and GRADING.examples.get(name, values) != values:
        raise GradingFailure(f"grading mode: the example {name} is drawn already "
                             f"({fmt_assignments(GRADING.examples[name], 'step')}); it is "
                             "not drawn again from other values")
    GRADING.examples[name] = values
    print(f"Your example for {name}: {fmt_assignments(values, 'step')}")
    return values


def variant(name: str, template: str, **choices: Sequence[float | str]) -> TenFlangModel:
    """The student's own model ``name``: ``template`` with each ``{placeholder}`` replaced by
    one of its ``choices``, picked by the student's seed (the same in their copy and at
    autograde). Shows the program drawn; the locked check finds it by
    ``variant_fingerprint(template, choices)`` (other choices make another fingerprint, and
    the grader draws the locked cell's choices itself)."""
    name = EXAMPLE.check(name)
    if not python_name(name):
        raise GradingFailure(f"{name!r}: a model's name must be a Python name")
    seed = GRADING.seed(f"variant/{name}")
    text, _ = draw_variant(0 if seed is None else seed, template, choices)
    print_ = variant_fingerprint(template, choices)
    model = TenFlangModel(text, name)
    GRADING.define(name, text, model.settings)
    GRADING.variants[print_] = Definition(name, text, model.settings)
    print(f"Your model {name}, drawn for you:\n\n" + "\n".join(
        "    " + line if line.strip() else "" for line in text.strip("\n").split("\n")))
    return model


def given(name: str) -> None:
    """The visible part of a numeric check: the variable ``name`` holds an answer, a
    number. Says nothing of whether it is right (the hidden part checks that)."""
    name = VARIABLE.check(name)
    ns = _user_ns()
    value = ns.get(name)
    if value is None:
        raise GradingFailure(f"{name} is not answered yet: set {name} to your number (replace "
                             "None) and run that cell")
    if not exact_number(value):
        raise GradingFailure(f"{name} should be a number, not {shown(value)}")
    print(f"{name} = {float(value):g} is a number: the autograder reads the number written in "
          "your answer cell and checks its value.")


def check_measured(name: str, measure: str, *, step: float | None = None,
                   digits: int | None = None, hint: str = "", example: str | None = None,
                   model: str | None = None, fingerprint: str | None = None,
                   data: str | None = None, **arguments: Any) -> None:
    """The check of a numeric answer measured per student: the variable ``name``, rounded
    to a multiple of ``step`` (or to ``digits`` significant digits), is what the measurement
    ``measure`` (``notebook/measures.py``) gives for the student's example ``example`` (its
    values are the measurement's arguments, with ``arguments``), the locked model ``model``
    with the fingerprint ``fingerprint``, and the data file ``data``. Right or wrong, with
    ``hint`` when wrong; the number itself is never shown. The grade is the autograder's: it
    measures again in its own process and reads the number written in the answer cell."""
    name = VARIABLE.check(name)
    (hint,) = check_arguments(hint=hint)
    rounding(step, digits)  # the teacher's step or digits, checked before the student's number
    found = MEASURES.get(measure)
    if found is None:
        raise GradingFailure(f"{measure!r} is not a measurement: {fmt_list(list(MEASURES))}")
    value = _user_ns().get(name)
    running = GRADING.nbgrader_running()
    if running is not None:  # the grade is measured in nbgrader's process, not here
        print(f"nbgrader is running this notebook ({running}): the autograder measures the "
              f"right number for {name} in its own process.")
        return
    given: dict[str, Any] = {}
    if model is not None:
        given["model"] = _graded_model(model, fingerprint or "")
    if data is not None:
        given["data"] = load_data(data)
    drawn: dict[str, Any] = {}
    if example is not None:
        if example not in GRADING.examples:
            raise GradingFailure(f"run the locked cell that draws the example {example} first")
        drawn = GRADING.examples[example]
    expected = found.measure(given, **{**drawn, **arguments})
    print(measured_verdict(name, value, expected, step=step, digits=digits, hint=hint)
          + "; the autograder checks the number written in your answer cell again.")


def check_number(name: str, expected: float, *, hint: str = "", rtol: float = 1e-6,
                 atol: float = 1e-9) -> None:
    """The hidden part of a numeric check: the variable ``name`` equals ``expected`` (within
    ``rtol`` of it, or ``atol`` where it is about 0: the package's one rule,
    ``core.agreement``). The message never shows ``expected``; ``hint`` says where to look."""
    name = VARIABLE.check(name)
    expected, hint, rtol, atol = check_arguments(expected=expected, hint=hint, rtol=rtol,
                                                 atol=atol)
    print(number_verdict(name, _user_ns().get(name), expected, hint=hint, rtol=rtol,
                         atol=atol))


def gradient(model: str, weight: str, *, fingerprint: str,
             example: str | Mapping[str, float]) -> float:
    """``d/L/d/weight`` of the model with the fingerprint ``fingerprint`` on the example
    (the name an :func:`example` was drawn under, or the values), its weights the example's
    where it gives them. For hidden tests: refused in the student's copy in grading mode."""
    model, weight, fingerprint = check_arguments(model=model, weight=weight,
                                                 fingerprint=fingerprint)
    check_instance("example", example, str | Mapping, "the name an example was drawn under, "
                   "or its values ({'x': 1.0, ...})")
    if GRADING.on:  # the autograder computes it in its own process, never in a kernel
        raise GradingFailure("grading mode: gradient() computes an answer; the autograder "
                             "computes it in its own process, no notebook's kernel does")
    graded = _graded_model(model, fingerprint)
    if isinstance(example, str):
        if example not in GRADING.examples:
            raise GradingFailure(f"run the locked cell that draws the example {example} first")
        example = GRADING.examples[example]
    return gradient_on(graded, weight, example)


# ------------------------------------------------------------------------------ a model, the answer

def check_fit(answer: str, *, model: str, data: Any, accuracy: float = 1.0,
              max_iter: int = FIT_MAX_ITER, starts: int = FIT_STARTS,
              max_weights: int | None = None) -> None:
    """The locked check of an exercise whose answer is a model: the text of the latest
    ``%%tenflang MODEL`` cell, trained here on ``data`` with that cell's settings (at most
    ``max_iter`` steps) from up to ``starts`` starts drawn from the student's seed, must
    classify at least ``accuracy`` of the examples right from one of them (its one output
    above 0.5 where the expected output is, below where it is not). What the student's cell
    trained or set counts for nothing; the output must be computed from the inputs through
    weights, and training must lower the loss (a model that fits before training has
    learned nothing); its weights hold at most ``max_weights`` numbers (None: any)."""
    answer, model, accuracy, starts = check_arguments(answer=answer, model=model,
                                                      accuracy=accuracy, starts=starts)
    if max_weights is not None:
        (max_weights,) = check_arguments(max_weights=max_weights)
    max_iter = SETTINGS["max_iter"].check(max_iter)
    mine = next((d for d in reversed(GRADING.definitions) if d.name == model), None)
    seed = (GRADING.seed(f"fit/{model}") or 0) % 10_000
    print(fit_verdict(answer, model, None if mine is None else mine.source,
                      TrainSettings() if mine is None else mine.settings,
                      data=data, seed=seed, accuracy=accuracy, max_iter=max_iter, starts=starts,
                      max_weights=max_weights))
