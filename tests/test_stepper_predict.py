"""The stepper's predict mode without a browser: which adjoints it asks for and before which
step, the right values and tolerances, the embedded table of wrong values and hints (checked
against the usual mistakes computed here by hand, as notebook 02 computes them), the HTML
(the form, the data, the note an untrusted notebook shows) and how it is asked for (the
model, ``model.show``, the magic's ``--predict``). tests/test_stepper_browser.py answers
questions in Chromium."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from conftest import FAN_OUT
from IPython.utils.capture import capture_output
from lab_sanitizer import sanitize_tree, shown_text
from stepper_support import mlp_run
from test_stepper import Parsed

from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.lexical import split_derivative
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.predict import Question, tolerance
from tenflang_nb.notebook.stepper import StepperRun

EXAMPLE = {"x": 1.5, "y": 0.2}


def fan() -> TenFlangModel:
    model = TenFlangModel(FAN_OUT, "fan")
    model.weights["w"] = 0.8
    return model


def seed() -> TenFlangModel:
    model = TenFlangModel(SEED_EXAMPLE, "net")
    model.weights["w"] = 0.8
    return model


def by_variable(run: StepperRun) -> dict[str, Question]:
    return {q.variable: q for q in run.questions}


def hint_for(q: Question, value: float) -> str | None:
    """The hint the stepper would show for ``value`` (as its script matches it)."""
    return next((m.hint for m in q.mistakes if abs(value - m.value) <= m.tolerance), None)


# ------------------------------------------------------------------------------ questions


def test_one_question_per_adjoint_before_its_first_line() -> None:
    model = fan()
    run = model.stepper_run(EXAMPLE, predict=True)
    asked = by_variable(run)
    values = model.values(EXAMPLE)
    # every variable with an adjoint but the loss (and the given y, whose adjoint is pruned)
    assert list(asked) == ["e", "o", "c", "b", "a", "w"]
    for v, q in asked.items():
        assert q.adjoint == f"d/L/d/{v}" and q.entry is None
        assert q.right == pytest.approx(float(values[v][1]), rel=1e-12)
        assert q.tolerance == max(0.01 * abs(q.right), 5e-4)
        step = run.steps[q.step]
        assert step.phase == "backward" and split_derivative(step.name)[1] == v  # type: ignore
        # no line before it showed anything of v's adjoint
        assert all(u[0] != v or u[1] != "grad" for s in run.steps[:q.step] for u in s.updates)
        assert any(u[:2] == (v, "grad") for u in step.updates)
    # a: asked for its whole adjoint before the first of its two terms arrives
    assert run.steps[asked["a"].step].name == "d/L/d/a:0"
    assert [q.step for q in run.questions] == sorted(q.step for q in run.questions)


def test_without_predict_nothing_is_asked() -> None:
    run = fan().stepper_run(EXAMPLE)
    assert run.questions == () and not run.predicting
    page = Parsed(fan().stepper(EXAMPLE).html)
    assert "predict" not in json.loads(page.script("tf-step-data"))
    assert "tf-step-guess" not in page.script("tf-step-ui")


def test_the_usual_mistakes_get_the_checkers_hints() -> None:
    """Each wrong value a student typically gives, computed here by hand, finds its hint."""
    x, y, w = 1.5, 0.2, 0.8
    a = w * x
    b, c = 1 / (1 + np.exp(-a)), np.tanh(a)
    o = b + c
    e = o - y
    dL_de = 2 * e
    via_b, via_c = dL_de * b * (1 - b), dL_de * (1 - c * c)
    asked = by_variable(fan().stepper_run(EXAMPLE, predict=True))
    assert asked["a"].right == pytest.approx(via_b + via_c)
    # fan-out: one path forgotten
    for one, missing in ((via_b, "c = tanh a"), (via_c, "b = logistic a")):
        text = hint_for(asked["a"], round(one, 4))
        assert text is not None and text.startswith("fan-out: a is used 2 times")
        assert f"misses the term via `define {missing}`" in text
    # mul e e: one of its two terms
    assert "uses e twice" in str(hint_for(asked["e"], round(e, 4)))
    # a sign, a factor 2
    assert "negative of the right one" in str(hint_for(asked["w"], -round(asked["w"].right, 4)))
    assert "twice the right one" in str(hint_for(asked["w"], 2 * asked["w"].right))
    # the local partial without the incoming adjoint; the adjoint without the local partial
    assert "the local partial d/a/d/w alone" in str(hint_for(asked["w"], x))
    assert "the incoming adjoint d/L/d/a alone" in str(
        hint_for(asked["w"], round(via_b + via_c, 4)))
    # the value where the local partial belongs: d/L/d/a · a instead of d/L/d/a · x
    text = str(hint_for(asked["w"], round((via_b + via_c) * a, 4)))
    assert text.startswith("you used the value of a where the local partial d/a/d/w = x "
                           "belongs: here, a = 1.2")
    # a value no hypothesis explains gets no hint (the script then says it is not right)
    assert hint_for(asked["w"], 123.0) is None


def test_the_table_is_unambiguous() -> None:
    for run in (fan().stepper_run(EXAMPLE, predict=True),
                seed().stepper_run(EXAMPLE, predict=True), mlp_run(predict=True)):
        for q in run.questions:
            assert q.mistakes, q.adjoint
            for i, m in enumerate(q.mistakes):
                assert abs(m.value - q.right) > q.tolerance, (q.adjoint, m)
                assert m.tolerance == tolerance(m.value)
                assert all(abs(m.value - other.value) > other.tolerance
                           for other in q.mistakes[:i]), (q.adjoint, m)


def test_a_tensor_adjoint_is_asked_one_entry_the_largest() -> None:
    run = mlp_run(predict=True)
    asked = by_variable(run)
    final = {v: x for s in run.steps for v, row, x in s.tensors if row == "grad"}
    q = asked["W2"]
    assert q.shape == (5, 4) and q.entry is not None
    assert q.entry == np.unravel_index(np.argmax(np.abs(final["W2"])), (5, 4))
    assert q.right == final["W2"][q.entry]
    assert q.what == f"entry [{q.entry[0]}, {q.entry[1]}] of d/lambda/d/W2"
    assert "outlined on W2's grad heatmap" in q.text
    assert "negative of the right one" in str(hint_for(q, -q.right))


def test_an_example_without_a_loss_value_has_nothing_to_predict() -> None:
    model = seed()
    run = model.stepper_run({"x": 1.5, "y": None}, predict=True)
    assert run.questions == () and run.predicting
    assert repr(model.stepper({"x": 1.5, "y": None}, predict=True)).endswith(
        ": 12 steps, 0 to predict>")
    assert "gives no adjoint to predict" in model.stepper({"x": 1.5, "y": None},
                                                          predict=True).html


# ------------------------------------------------------------------------------ the HTML


def test_the_html_embeds_the_questions_apart_from_the_steps() -> None:
    model = fan()
    run = model.stepper_run(EXAMPLE, predict=True)
    shown = model.stepper(EXAMPLE, predict=True)
    assert repr(shown) == "<TenFlang stepper of 'fan' on {x: 1.5, y: 0.2}: 22 steps, 6 to predict>"
    page = Parsed(shown.html)
    data = json.loads(page.script("tf-step-data"))
    ui = page.script("tf-step-ui")
    ids = {a["id"] for _, a in Parsed(ui).tags if "id" in a}
    for control in ("tf-step-ask", "tf-step-guess", "tf-step-check", "tf-step-reveal",
                    "tf-step-feedback", "tf-step-score"):
        assert f'class="{control}"' in ui, control
    assert 'inputmode="decimal"' in ui and "aria-live" in ui
    asked = data["predict"]["q"]
    assert [q["s"] for q in asked] == [q.step for q in run.questions]
    for q, want in zip(asked, run.questions, strict=True):
        assert q["k"] in ids and q["a"] == want.adjoint and q["t"] == want.text
        assert q["r"] == pytest.approx(want.right, rel=5e-6) and q["e"] == -1
        assert q["tol"] == pytest.approx(want.tolerance, rel=5e-6)
        assert [m[2] for m in q["m"]] == [m.hint for m in want.mistakes]
        assert [m[0] for m in q["m"]] == pytest.approx([m.value for m in want.mistakes],
                                                      rel=5e-6)
        assert all(len(repr(x)) <= 12 for x in (q["r"], q["tol"]))  # no digits that move
        assert data["steps"][q["s"]]["p"] == "backward"
    # the loss's own adjoint 1 shows while the first question is asked
    assert asked[0]["u"] and asked[0]["u"][0][1:] == ["grad", "1"]
    # the steps themselves are the same as without predict mode: the backward half of the
    # data stands alone, and predict mode only points at its steps
    plain = json.loads(Parsed(model.stepper(EXAMPLE).html).script("tf-step-data"))
    assert [s["c"] for s in plain["steps"]] == [s["c"] for s in data["steps"]]


def test_a_tensor_question_points_at_its_heatmap_cell() -> None:
    from tenflang_nb.notebook.views.predict import predict_data

    run = mlp_run(predict=True)
    q = by_variable(run)["W2"]
    data = predict_data(run, {"W2": "nW2"})
    entry = next(x for x in data["q"] if x["a"] == q.what)
    assert entry["e"] == q.entry[0] * 4 + q.entry[1] and entry["k"] == "nW2"  # type: ignore


def test_untrusted_it_is_the_table_of_steps_with_a_note() -> None:
    model = fan()
    tree = sanitize_tree(model.stepper(EXAMPLE, predict=True).html)
    text = " ".join(shown_text(tree).split())
    assert "Predict mode (6 adjoints to predict) needs the stepper's script" in text
    assert "Trust Notebook" in text
    assert not [e for e in tree.iter() if e.tag in ("input", "button")]  # nothing to press
    run = model.stepper_run(EXAMPLE, predict=True)
    for s in run.steps:
        assert s.caption in text


# ------------------------------------------------------------------------------ asking for it


def test_model_show_and_the_magic_ask_for_predict_mode(ip: Any) -> None:
    model = fan()
    html = model.show("step", example=EXAMPLE, predict=True).html
    assert 'class="tf-step-guess"' in html and '"predict"' in html
    assert 'class="tf-step-guess"' not in model.show("step", example=EXAMPLE).html
    with capture_output() as cap:
        result = ip.run_cell('%%tenflang fan --show step --predict --example '
                             '"{x: 1.5, y: 0.2}"\n' + FAN_OUT)
    assert result.success
    out = "".join(o.data.get("text/html", "") for o in cap.outputs)
    assert 'class="tf-step-guess"' in out and '"predict"' in out
    from tenflang_nb.notebook.magic import TenFlangMagics

    assert "--predict" in str(TenFlangMagics.tenflang.__doc__)
