"""The stepper's predict mode as its view shows it (``model.stepper(example, predict=True)``,
``--show step --predict``): the form that asks for an adjoint's value, the score, and the
data ``static/stepper.js`` answers from, with no kernel: per question the step it stops
before, the right value and its tolerance, and the usual wrong values with the checker's
hint for each (computed by ``notebook/predict.py``).

It is kept apart from the stepper's steps (``data.predict``): dropping the backward half of
a stepper drops it with it.

>>> from tenflang_nb.core.examples import SEED_EXAMPLE
>>> from tenflang_nb.notebook.model import TenFlangModel
>>> run = TenFlangModel(SEED_EXAMPLE, "net").stepper_run({"x": 1.5, "y": 0.2}, predict=True)
>>> data = predict_data(run, {"z": "n1"})
>>> [(q["s"], q["a"], q["k"]) for q in data["q"]][2]
(9, 'd/lambda/d/z', 'n1')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.formatting import fmt_number
from ..stepper import StepperRun
from .html import esc

__all__ = ["NOTHING", "WITHHELD", "ask_html", "predict_data", "score_html", "untrusted_note"]

INTRO = ("Predict mode: in the backward pass the stepper stops before each adjoint's value "
         "and asks for it. Type your value and press Enter (or check); a right one reveals "
         "the line, a wrong one gets a hint; reveal shows it at once.")


def predict_data(run: StepperRun, keys: Mapping[str, str]) -> dict[str, Any]:
    """The questions as the script reads them (``keys``: variable -> its node's element id):
    ``s`` the step it stops before, ``k`` the node, ``a`` the adjoint, ``t`` the question,
    ``e`` the flat index of the entry asked for (-1: a number), ``r`` the right value (to 6
    digits) and ``rt`` as shown, ``tol`` its tolerance, ``m`` the wrong values ``[value, tolerance,
    hint]``, ``u`` the label changes of the step that are not the answer (the loss's own
    adjoint 1, which arrives with the first line of the backward pass); ``hide``: the
    listing hides an open question's right-hand side and the lines after it."""
    return {"intro": INTRO, "hide": run.hide_lines, "q": [{
        "s": q.step, "k": keys.get(q.variable), "a": q.what, "t": q.text,
        "u": [[keys[v], row, text] for v, row, text in run.steps[q.step].updates
              if v != q.variable and v in keys],
        "e": (int(np.ravel_multi_index(q.entry, q.shape)) if q.entry is not None else -1),
        "r": _short(q.right), "rt": fmt_number(q.right, 4), "tol": _short(q.tolerance),
        "m": [[_short(m.value), _short(m.tolerance), m.hint] for m in q.mistakes],
    } for q in run.questions]}


def _short(x: float) -> float:
    """``x`` to 6 significant digits: far finer than any tolerance, and a stored notebook
    does not change with the last digits a CPU's kernels give."""
    return float(fmt_number(x, 6))


def ask_html() -> str:
    """The form under the caption (hidden until a question is asked)."""
    return ('<div class="tf-step-ask" hidden>'
            '<label class="tf-step-ask-label">your value '
            '<input type="text" class="tf-step-guess" inputmode="decimal" autocomplete="off" '
            'spellcheck="false" size="12"></label> '
            '<button type="button" class="tf-step-check" title="check your value (Enter)">'
            "check</button> "
            '<button type="button" class="tf-step-reveal" title="show the value without '
            'predicting it">reveal</button></div>'
            '<div class="tf-step-feedback" aria-live="polite"></div>')


def score_html() -> str:
    return '<span class="tf-step-score" aria-live="polite"></span>'


NOTHING = ('<div class="tf-note">Predict mode: this example gives no adjoint to predict (its '
           "loss is not a number).</div>")
WITHHELD = ('<div class="tf-note">Predict mode: nothing to predict here: it asks for the '
            "backward pass's adjoints, and grading mode leaves the backward pass out.</div>")


def untrusted_note(run: StepperRun) -> str:
    """What the static table says of predict mode where no script runs: how to get the
    script, and the questions, never their answers (the table below stops at the forward
    pass; a student's copy under nbgrader, a download, is untrusted)."""
    asked = "".join(f"<li>{esc(q.text)}</li>" for q in run.questions)
    return (f'<div class="tf-note"><b>Predict mode</b> ({len(run.questions)} adjoints to '
            "predict) needs the stepper's script, which an untrusted notebook does not run. "
            "Trust the notebook: in a terminal, <code>jupyter trust FILE.ipynb</code> (the "
            "notebook's file), or the trust action of the notebook's interface (the command "
            "<i>Trust Notebook</i>, in JupyterLab's command palette or Notebook's File menu); "
            "then open it again and run the cell. Until then, the questions, with no answers: "
            f"<ol>{asked}</ol>Below, the forward pass only: the backward pass holds the "
            "answers.</div>")
