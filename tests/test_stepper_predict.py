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
from conftest import FAN_OUT, XOR_SHAPE
from IPython.utils.capture import capture_output
from lab_sanitizer import sanitize_tree, shown_text
from stepper_support import mlp_run
from test_stepper import Parsed

from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.core.lexical import split_derivative
from tenflang_nb.core.syntax import Define
from tenflang_nb.notebook.model import TenFlangModel
from tenflang_nb.notebook.predict import Question, tolerance
from tenflang_nb.notebook.stepper import StepperRun
from tenflang_nb.notebook.views.step import final_labels

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


def scale(run: StepperRun) -> float:
    """The example's own scale: its largest adjoint (each question asks for its adjoint's
    largest entry)."""
    return max(abs(q.right) for q in run.questions)


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
        assert q.tolerance == tolerance(q.right, scale(run))
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
                assert m.tolerance == tolerance(m.value, scale(run))
                assert all(abs(m.value - other.value) > other.tolerance
                           for other in q.mistakes[:i]), (q.adjoint, m)


def test_0_is_never_right_for_an_adjoint_that_is_not_0_however_small() -> None:
    """On a model that fits its example (as after training) every adjoint is below the old
    absolute floor 0.0005: 0 counted as right for all of them (issue 25)."""
    model = seed()
    fit = {"x": 1.5, "y": 1 / (1 + np.exp(-1.2)) - 1e-4}  # o misses y by 1e-4
    run = model.stepper_run(fit, predict=True)
    assert len(run.questions) == 4
    for q in run.questions:
        assert 0 < abs(q.right) < 5e-4, q  # what the old floor accepted 0 for
        assert abs(0.0 - q.right) > q.tolerance, q
        assert abs(q.right * 1.005 - q.right) <= q.tolerance  # 4 digits still count
        assert hint_for(q, 0.0) == "your value is 0"  # one example: no "on every draw"
    page = Parsed(model.stepper(fit, predict=True).html)
    for asked in json.loads(page.script("tf-step-data"))["predict"]["q"]:
        assert abs(0.0 - asked["r"]) > asked["tol"] > 0  # what the page's script applies


def test_on_trained_xor_no_question_accepts_0() -> None:
    """The issue's case: XOR trained, then stepped through in predict mode; on its second
    example 4 of the 11 questions accepted 0 under the old absolute floor."""
    model = TenFlangModel(XOR_SHAPE, "xor")
    model.train({"x": [[0, 0], [0, 1], [1, 0], [1, 1]], "y": [0, 1, 1, 0]}, lr=0.5,
                max_iter=5000, tol=1e-6)
    small = 0
    for example in range(4):
        run = model.stepper_run(example, predict=True)
        assert len(run.questions) == 11
        for q in run.questions:  # (on x = [0, 0] d/lambda/d/W1 is exactly 0: 0 is right)
            assert (abs(0.0 - q.right) <= q.tolerance) == (q.right == 0), (example, q.adjoint)
            small += 0 < abs(q.right) <= 5e-4
    assert small >= 4  # adjoints the old floor of 0.0005 would have taken 0 for


def test_a_hint_names_a_variable_only_where_it_is_one_on_other_draws_too() -> None:
    """A local partial equal to an adjoint (d/lambda/d/diff = 2 diff = d/lambda/d/o), or a
    value equal to another on this one example, is no "variable used where another
    belongs" (issue 25): the hints' hypotheses hold on random draws besides the example."""
    for run in (seed().stepper_run(EXAMPLE, predict=True),
                fan().stepper_run(EXAMPLE, predict=True)):
        hints = [m.hint for q in run.questions for m in q.mistakes]
        assert not [h for h in hints if "where d/" in h and "belongs: the local partial" in h]
        assert not [h for h in hints if "every draw" in h or "draw 1" in h]
    asked = by_variable(seed().stepper_run(EXAMPLE, predict=True))
    # the structural one stays: d/z/d/w is x on every draw
    assert hint_for(asked["w"], round(asked["z"].right * 0.2, 6)) == (
        "you used y where x belongs: the local partial d/z/d/w is x")


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


def test_the_listing_can_hide_an_asked_lines_formula_by_default() -> None:
    """Each backward line's right-hand side is marked for the script to hide while its
    question is open (issue 25: the formula is the answer); hide_lines=False leaves it."""
    model = fan()
    run = model.stepper_run(EXAMPLE, predict=True)
    assert run.hide_lines
    page = Parsed(model.stepper(EXAMPLE, predict=True).html)
    assert json.loads(page.script("tf-step-data"))["predict"]["hide"] is True
    ui = page.script("tf-step-ui")
    backward = sum(1 for line in run.gcp.lines
                   if line.section == "backward" and isinstance(line.statement, Define))
    assert ui.count('class="tf-step-rhs"') == backward
    # the asked line: "define d/L/d/e = " then its hidden right-hand side
    row = ui.split(f'data-tf-step-line="{run.steps[by_variable(run)["e"].step].line}"')[1]
    head, rhs = row.split('<span class="tf-step-rhs">', 1)
    assert ">d/L/d/e<" in head and "mul" in rhs.split("</div>")[0]
    shown = Parsed(model.stepper(EXAMPLE, predict=True, hide_lines=False).html)
    assert json.loads(shown.script("tf-step-data"))["predict"]["hide"] is False
    assert "tf-step-rhs" not in shown.script("tf-step-ui")
    assert "tf-step-rhs" not in Parsed(model.stepper(EXAMPLE).html).script("tf-step-ui")


def test_a_tensor_question_points_at_its_heatmap_cell() -> None:
    from tenflang_nb.notebook.views.predict import predict_data

    run = mlp_run(predict=True)
    q = by_variable(run)["W2"]
    data = predict_data(run, {"W2": "nW2"})
    entry = next(x for x in data["q"] if x["a"] == q.what)
    assert entry["e"] == q.entry[0] * 4 + q.entry[1] and entry["k"] == "nW2"  # type: ignore


def test_untrusted_it_asks_the_questions_and_never_prints_their_answers() -> None:
    """An untrusted notebook (nbgrader's student copy, a download) runs no script: the static
    fallback says how to trust it and lists the questions, and shows the forward pass only:
    the backward pass's values are the answers (issue 25)."""
    for model, example in ((fan(), EXAMPLE), (seed(), EXAMPLE)):
        run = model.stepper_run(example, predict=True)
        html = model.stepper(example, predict=True).html
        tree = sanitize_tree(html)
        text = " ".join(shown_text(tree).split())
        n = len(run.questions)
        assert f"Predict mode ({n} adjoints to predict) needs the stepper's script" in text
        assert "jupyter trust FILE.ipynb" in text and "Trust Notebook" in text
        assert not [e for e in tree.iter() if e.tag in ("input", "button")]  # nothing to press
        for q in run.questions:
            assert q.text in text
            assert f"= {q.right:.4g}" not in text and q.adjoint + " =" not in text
        for s in run.steps:
            assert (s.caption in text) == (s.phase == "forward"), s.caption
        assert "After the forward pass, every value:" in text
        assert all(grad is None for _, grad in final_labels(run).values())
        # the picture (an image, kept by the sanitizer) draws no adjoint either
        assert "its adjoint" not in html.split('class="tf-step-static"')[1].split(
            "tf-step-ui")[0]
    # without predict mode the table still holds every step
    text = " ".join(shown_text(sanitize_tree(fan().stepper(EXAMPLE).html)).split())
    assert all(s.caption in text for s in fan().stepper_run(EXAMPLE).steps)


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
