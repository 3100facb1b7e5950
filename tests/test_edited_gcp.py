"""Training with a broken GCP: ``model.with_gcp(text)`` and ``%%tenflang_gcp``. The edited
text's errors (parse errors and the GCP's interface, naming the file and the line), the
gradient check naming each weight whose gradient the edit broke, training with the edited
GCP, the true GCP's run beside it in the panel (the session's reference), the landscape with
both paths, and the magic."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output
from matplotlib.colors import to_rgba

from tenflang_nb.core.api import compile, parse, train, trainer
from tenflang_nb.core.edited import EditedGcp, edit_gcp
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.settings import TrainSettings
from tenflang_nb.notebook import TenFlangModel
from tenflang_nb.notebook.figures import loss_curve_figure
from tenflang_nb.notebook.panel import TrainingSession

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
XOR = EXAMPLES / "xor"

# notebook 02's fan-out: a feeds b = logistic a and c = tanh a
FAN = """\
declare input x
declare exp_output y
declare weight w
declare intvar a
declare intvar b
declare intvar c
declare output o
declare intvar e
declare loss L
define a = mul w x
define b = logistic a
define c = tanh a
define o = add b c
define e = sub o y
define L = mul e e
"""
FAN_OUT = "define d/L/d/a = add d/L/d/a:0 d/L/d/a:1"
FORGOT_C = "define d/L/d/a = d/L/d/a:1"  # only the contribution via b
FAN_DATA = {"x": np.linspace(-2.0, 2.0, 21),
            "y": 0.9 * np.tanh(1.5 * np.linspace(-2.0, 2.0, 21)) + 0.5}


def fan() -> TenFlangModel:
    return TenFlangModel(FAN, "fan")


def broken(model: TenFlangModel | None = None, old: str = FAN_OUT, new: str = FORGOT_C
           ) -> TenFlangModel:
    model = model or fan()
    assert old in model.gcp
    return model.with_gcp(model.gcp.replace(old, new))


def error_of(model: TenFlangModel, text: str) -> TenFlangError:
    with pytest.raises(TenFlangError) as info:
        model.with_gcp(text)
    return info.value


# ------------------------------------------------------------------------------ the edit

def test_the_edit_is_a_gcp_with_its_changed_lines() -> None:
    model = fan()
    variant = broken(model)
    edited = variant.compiled
    assert isinstance(edited, EditedGcp) and edited.original is model.compiled
    line = variant.gcp.splitlines().index(FORGOT_C) + 1
    assert edited.changed == (line,)
    assert edited.removed == (model.gcp.splitlines().index(FAN_OUT) + 1,)
    # the unchanged lines keep where they came from; the changed one, the line it replaced
    assert edited.provenance() == model.compiled.provenance()
    assert variant.gcp_program.file == "fan (edited GCP)"
    assert variant.name == "fan_edited" and model.with_gcp(model.gcp, "same").name == "same"
    assert model.with_gcp(model.gcp).compiled.changed == ()
    # the original is untouched
    assert FAN_OUT in model.gcp and model.gcp_program.file != "fan (edited GCP)"


def test_blank_lines_and_comments_are_allowed_and_lines_deleted_or_added() -> None:
    model = fan()
    lines = model.gcp.splitlines()
    at = lines.index(FAN_OUT)
    text = "\n".join([*lines[:at], "", "# only via b", FORGOT_C, *lines[at + 1:]]) + "\n"
    variant = model.with_gcp(text)
    shown = variant.gcp.splitlines()
    assert "" not in shown and "# only via b" in shown
    assert [shown[n - 1] for n in variant.compiled.changed] == ["# only via b", FORGOT_C]


@pytest.mark.parametrize(("change", "line_text", "message"), [
    (lambda g: g.replace(FAN_OUT, "define d/L/d/a = add d/L/d/a:0 d/L/d/q"),
     "define d/L/d/a = add d/L/d/a:0 d/L/d/q", "'d/L/d/q' is not declared before this line"),
    (lambda g: g.replace(FAN_OUT, "define d/L/d/a = ad d/L/d/a:0 d/L/d/a:1"),
     "define d/L/d/a = ad d/L/d/a:0 d/L/d/a:1", "unknown operator 'ad'"),
    (lambda g: g.replace("declare output d/L/d/w", "declare intvar d/L/d/w"),
     "declare intvar d/L/d/w", "'d/L/d/w' must stay an output (the gradient of 'w'), not an "
                               "intvar"),
    (lambda g: g.replace("declare input w", "declare input w [2]\ndeclare intvar w1").replace(
        "define a = mul w x", "define w1 = sum w\ndefine a = mul w1 x", 1),
     "declare input w [2]", "'w' must keep its shape scalar (an input of the GCP (data or a "
                            "weight)), not [2]"),
    (lambda g: g.replace("declare input x\n", "declare input x\ndeclare input z\n"),
     "declare input z", "'z' is an input the compiled GCP does not have"),
    # before: accepted, and training blamed line 1 of the data file ("missing required input")
    (lambda g: g.replace("declare input x\n", "declare input x\ndeclare weight v\n").replace(
        "define a = mul w x", "define a = mul v x", 1),
     "declare weight v", "'v' is a weight the compiled GCP does not have"),
    (lambda g: g.replace("declare input x\n", "declare input x\ndeclare exp_output t\n"),
     "declare exp_output t", "'t' is an exp_output the compiled GCP does not have"),
    (lambda g: g.replace("declare loss L", "declare intvar L"),
     "declare intvar L", "'L' must stay a loss (the loss), not an intvar"),
])
def test_errors_name_the_edited_gcp_and_the_line(change: Any, line_text: str, message: str
                                                  ) -> None:
    model = fan()
    text = change(model.gcp)
    err = error_of(model, text)
    first = err.first
    assert first.file == "fan (edited GCP)" and message in first.message
    assert first.line == text.splitlines().index(line_text) + 1
    assert f"fan (edited GCP): line {first.line}: error" in err.render()


def test_what_the_gcp_must_keep_is_named_when_it_is_gone() -> None:
    model = fan()
    gcp = model.gcp
    without_output = gcp.replace("declare output d/L/d/w\n", "").replace(
        "define d/L/d/w = mul d/L/d/a d/a/d/w\n", "")
    err = error_of(model, without_output)
    assert "must keep the gradient of 'w': 'd/L/d/w' is not declared" in err.first.message
    assert err.first.hint == "the compiled GCP declares it 'declare output d/L/d/w'"
    # an input nobody uses any more is still an input: the data gives it
    unused = gcp.replace("declare input y\n", "").replace("define e = sub o y",
                                                          "define e = sub o 0.5")
    assert "an input of the GCP (data or a weight): 'y' is not declared" in str(
        error_of(model, unused))
    assert "empty program" in str(error_of(model, "\n# nothing\n"))
    with pytest.raises(TenFlangError, match="declares no loss"):
        TenFlangModel("declare input x\ndeclare output o\ndefine o = mul x 2\n").with_gcp("")


def test_edit_gcp_in_the_core_reports_every_problem_at_once() -> None:
    gcp = compile(parse(FAN))
    text = (gcp.text.replace("declare output d/L/d/w", "declare intvar d/L/d/w")
            .replace("declare input x\n", "declare input x\ndeclare input z\n"))
    with pytest.raises(TenFlangError) as info:
        edit_gcp(gcp, text, "mine")
    assert len(info.value.diagnostics) == 2


# ------------------------------------------------------------------------------ gradcheck

def test_gradcheck_names_the_weight_whose_gradient_the_edit_broke() -> None:
    variant = broken()
    variant.weights["w"] = 0.8
    check = variant.gradcheck({"x": 1.5, "y": 0.2})
    assert not check.ok and check.wrong == ["w"]
    [row] = check
    # the GCP's value is the contribution via b alone; the numeric one is the true slope
    true = fan()
    true.weights["w"] = 0.8
    values = true.values({"x": 1.5, "y": 0.2})
    a, b = float(values["a"][0]), float(values["b"][0])
    dl_do = float(values["o"][1])
    assert row["gcp"] == pytest.approx(dl_do * b * (1 - b) * 1.5, rel=1e-9)
    assert row["numeric"] == pytest.approx(float(values["w"][1]), rel=1e-6)
    assert np.tanh(a) != 0  # the forgotten term was not zero
    assert "the gradient of w disagrees" in check._repr_html_()


def test_only_the_broken_weights_are_named() -> None:
    xor = TenFlangModel((XOR / "shape.tf").read_text(), "xor")
    rng = np.random.default_rng(0)
    weights = {w: rng.normal(0.0, 1.0, np.shape(v)) for w, v in xor.weights.items()}
    weights["b2"] = 0.3
    example = {"x": [0.0, 1.0], "y": 1.0}

    def check(model: TenFlangModel) -> Any:
        model.weights = dict(weights)
        return model.gradcheck(example)

    # a sign flipped in the output layer's bias gradient: only b2 is wrong
    flipped = broken(xor, "define d/lambda/d/b2 = mul d/lambda/d/z2 d/z2/d/b2",
                     "define d/lambda/d/b2 = mul d/lambda/d/z2 -1")
    assert check(flipped).wrong == ["b2"]
    # the logistic's slope forgotten: every weight below it is wrong
    slope = broken(xor, "define d/lambda/d/z2 = mul d/lambda/d/o d/o/d/z2",
                   "define d/lambda/d/z2 = d/lambda/d/o")
    assert check(slope).wrong == ["W1", "b1", "W2", "b2"]
    # the hidden layer's tanh slope forgotten: only the first layer's weights
    hidden = broken(xor, "define d/lambda/d/z1 = mul d/lambda/d/h d/h/d/z1",
                    "define d/lambda/d/z1 = d/lambda/d/h")
    assert check(hidden).wrong == ["W1", "b1"]
    assert check(xor).ok


def test_an_edit_that_makes_a_gradient_nan_is_named_and_its_row_says_which_side() -> None:
    # the one tolerance rule: no NaN agrees, and the row names the side that is NaN
    variant = broken(new="define d/L/d/a = sqrt -1")
    variant.weights["w"] = 0.8
    with np.errstate(all="ignore"):
        check = variant.gradcheck({"x": 1.5, "y": 0.2})
    [row] = check
    assert np.isnan(row["gcp"]) and np.isfinite(row["numeric"])
    assert not check.ok and check.wrong == ["w"]
    assert row["problem"] == "the GCP's gradient is NaN"
    assert "MISMATCH: the GCP's gradient is NaN" in repr(check)
    assert "the gradient of w disagrees" in check._repr_html_()


# ------------------------------------------------------------------------------ training

def test_training_uses_the_edited_gcp() -> None:
    model = fan()
    variant = broken(model)
    result = variant.train(FAN_DATA, lr=0.5, max_iter=50, tol=0)
    expected = train(variant.gcp, FAN_DATA, lr=0.5, max_iter=50, tol=0)
    assert [r.loss for r in result.history] == [r.loss for r in expected.history]
    true = model.train(FAN_DATA, lr=0.5, max_iter=50, tol=0)
    # the same start, different steps: the missing term makes every step shorter here
    assert result.history[0].loss == true.history[0].loss
    assert result.history[1].loss > true.history[1].loss
    assert variant.weights["w"] != model.weights["w"]
    # the edited GCP stops where ITS gradient is zero: not the minimum of the loss
    long = variant.train(FAN_DATA, lr=0.5, max_iter=5000, tol=1e-10)
    best = model.train(FAN_DATA, lr=0.5, max_iter=5000, tol=1e-10)
    assert long.converged and best.converged
    assert long.loss > best.loss * 1.01
    assert not variant.gradcheck(FAN_DATA).ok


def test_the_landscape_shows_where_the_wrong_gradient_walks() -> None:
    model = fan()
    variant = broken(model)
    variant.train(FAN_DATA, lr=0.5, max_iter=40, tol=0)
    model.train(FAN_DATA, lr=0.5, max_iter=40, tol=0)
    land = variant.landscape_data(paths={"edited GCP": variant, "true GCP": model},
                                  resolution=21)
    edited_path, true_path = land.paths
    assert (edited_path.label, true_path.label) == ("edited GCP", "true GCP")
    assert edited_path.coords[0, 0] == true_path.coords[0, 0] == 0.0
    assert edited_path.coords[-1, 0] == pytest.approx(variant.weights["w"])
    # the loss drawn is the true one: the shape program's
    assert land.loss.min() <= min(edited_path.loss.min(), true_path.loss.min()) + 1e-3


def test_the_variant_runs_its_own_gcp_not_the_forms_the_model_kept() -> None:
    """The model keeps its GCP parsed back and its Hessian-vector program once made; a
    variant made after makes them anew from the edited GCP: training and H v follow the
    edit."""
    model = fan()
    model.weights["w"] = 0.8
    example = {"x": [1.5], "y": [0.2]}
    true_hv = model.hvp({"w": 1.0}, example)["w"]  # the model's forms made and kept
    model.train(FAN_DATA, lr=0.5, max_iter=3, tol=0)
    variant = broken(model)
    result = variant.train(FAN_DATA, lr=0.5, max_iter=3, tol=0)
    expected = train(variant.gcp, FAN_DATA, lr=0.5, max_iter=3, tol=0)
    assert [r.loss for r in result.history] == [r.loss for r in expected.history]
    assert FORGOT_C in variant.compiled_hvp.text and FORGOT_C not in model.compiled_hvp.text

    def gradient(w: float) -> float:  # the edited GCP's gradient at w
        variant.weights["w"] = w
        return variant.gradcheck(example)[0]["gcp"]

    variant.weights["w"] = 0.8
    edited_hv = variant.hvp({"w": 1.0}, example)["w"]
    h = 1e-5
    assert edited_hv == pytest.approx((gradient(0.8 + h) - gradient(0.8 - h)) / (2 * h),
                                      rel=1e-5)
    assert edited_hv != pytest.approx(true_hv, rel=1e-2)


# ------------------------------------------------------------------------------ the panel

def test_the_panel_trains_the_true_gcp_beside_the_edited_one() -> None:
    model = fan()
    variant = broken(model)
    panel = variant.training_panel(FAN_DATA, live=False, lr=0.5, max_iter=60, tol=1e-9)
    reference = panel.session.reference
    assert reference is not None and reference.gcp_program.file != "fan (edited GCP)"
    panel.run_sync()
    true = model.train(FAN_DATA, lr=0.5, max_iter=60, tol=1e-9)
    assert [r.loss for r in reference.history] == [r.loss for r in true.history]
    assert reference.initial == panel.trainer.initial
    assert variant.history == list(panel.trainer.history)  # the edited run is the model's
    assert model.history == list(true.history)
    fig = loss_curve_figure(panel.trainer.history, label=panel.label,
                            reference=reference.history, reference_label=panel.reference_label)
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "edited GCP", "true GCP"]
    # a model not edited trains alone
    assert model.training_panel(FAN_DATA, live=False).session.reference is None


def drawn_colours(lines: Any) -> dict[str, tuple[float, ...]]:
    """The colour of each labelled line drawn (matplotlib's own "_child" labels left out)."""
    return {line.get_label(): to_rgba(line.get_color()) for line in lines
            if not line.get_label().startswith("_")}


def test_each_run_has_one_colour_in_the_curve_and_on_the_landscape() -> None:
    # before: the true GCP's curve was orange, and so was the edited run's landscape path
    variant = broken()
    panel = variant.training_panel(FAN_DATA, live=False, lr=0.5, max_iter=40, tol=0,
                                   landscape=True)
    panel.run_sync()
    panel.redraw()  # the panel let go of its figures when the run ended: drawn again
    curve = drawn_colours(panel.live_curve.axes.lines)
    landscape = panel.live_landscape.figure.figure
    paths = drawn_colours(line for line, _start, _end in landscape.path_artists)
    assert set(curve) == set(paths) == {"edited GCP", "true GCP"}
    assert curve == paths and curve["edited GCP"] != curve["true GCP"]
    legend = landscape.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["edited GCP", "true GCP"]
    # the true GCP's path is its own run's, beside the edited one
    true_path = panel.live_landscape.landscape.paths[1]
    assert true_path.coords[-1, 0] == pytest.approx(panel.session.reference.weights["w"])
    # the figures a model draws: the same colour for the same run
    model = fan()
    model.train(FAN_DATA, lr=0.5, max_iter=40, tol=0)
    figure = variant.landscape(paths={"edited GCP": variant, "true GCP": model})
    drawn = drawn_colours(line for line, _start, _end in figure.path_artists)
    assert drawn == curve


def factory(source: str, data: Any) -> Any:
    gcp = compile(parse(source))
    return lambda settings: trainer(gcp, data, settings)


def test_a_session_runs_its_reference_in_lockstep_to_the_end_of_both() -> None:
    data = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
    from tenflang_nb.core.examples import SEED_EXAMPLE

    reference = trainer(compile(parse(SEED_EXAMPLE)), data, TrainSettings())
    session = TrainingSession(factory(SEED_EXAMPLE, data),
                              TrainSettings(lr=0.5, tol=1e-12, max_iter=30), live=True,
                              reference=reference)
    assert reference.settings == session.settings  # the same settings from the start
    session.chunk_seconds = 0.0005

    async def scenario() -> tuple[int, int]:
        session.start()
        while session.trainer.iterations < 5:
            await asyncio.sleep(0)
        session.stop()
        return session.trainer.iterations, reference.iterations

    main, ref = asyncio.run(scenario())
    assert main == ref  # one step each, in turn
    session.settings = TrainSettings(lr=0.5, tol=1e-12, max_iter=40)
    assert reference.settings.max_iter == 40
    session.run_sync()  # continues both to the end
    assert session.trainer.iterations == reference.iterations == 40
    assert [r.loss for r in session.history] == [r.loss for r in reference.history]
    session.reset()
    assert reference.iterations == 0 and reference.history == []


def test_the_reference_goes_on_after_the_trainer_is_done_and_its_errors_stop_it_alone() -> None:
    from tenflang_nb.core.examples import SEED_EXAMPLE

    data = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}
    harder = {"x": [1.0, -1.0, 2.0], "y": [0.999, 0.001, 0.9999]}  # a long way to w = 7
    quick = TrainingSession(factory(SEED_EXAMPLE, data), TrainSettings(lr=0.5, max_iter=200,
                                                                     tol=0.05), live=False,
                            reference=trainer(compile(parse(SEED_EXAMPLE)), harder))
    slow = quick.reference
    quick.run_sync()
    assert quick.trainer.converged and quick.trainer.iterations < slow.iterations
    assert slow.done and quick.state == "done"
    # a reference that blows up ends alone; the trainer's run goes on
    quartic = ("declare input x\ndeclare exp_output y\ndeclare weight w\ndeclare intvar z\n"
               "declare intvar d\ndeclare loss L\ndefine z = mul x w\ndefine d = sub z y\n"
               "define L = pow d 4\n")
    blows = trainer(compile(parse(quartic)), {"x": [1.0, 2.0], "y": [0.5, 1.0]})
    session = TrainingSession(factory(SEED_EXAMPLE, data), TrainSettings(lr=50.0, max_iter=60,
                                                                       tol=1e-12),
                              live=False, reference=blows)
    session.run_sync()
    assert session.error is None and session.trainer.iterations == 60
    assert session.reference_error is not None and "NaN or infinite" in str(
        session.reference_error)
    assert session.state == "done"


def test_a_live_edited_run_draws_both_curves() -> None:
    variant = broken()
    # neither run converges (at tol 1e-12 the true GCP's did within the first chunk of steps
    # on a fast machine, leaving nothing to compare): tol 0, the slider's "off"
    panel = variant.training_panel(FAN_DATA, lr=0.5, tol=0, max_iter=10**6)
    panel.session.chunk_seconds = 0.002
    panel.redraw_seconds = 0.0

    ref = panel.session.reference
    apart: list[int] = []

    async def scenario() -> None:
        panel.start()
        started = time.perf_counter()
        while panel.redraws < 4 and time.perf_counter() - started < 30:
            await asyncio.sleep(0)
            if not (ref.done or panel.trainer.done):  # in lockstep while both run
                apart.append(panel.trainer.iterations - ref.iterations)
        panel.stop()

    asyncio.run(scenario())
    assert apart and set(apart) == {0}
    assert panel.plot.value[:4] == b"\x89PNG" and ref.iterations > 0


# ------------------------------------------------------------------------------ the magic

@pytest.fixture
def ip(ip: Any) -> Any:
    """The conftest's shell with the extension, and the model fan in it."""
    with capture_output():
        ip.run_cell("%%tenflang fan --show none\n" + FAN)
    return ip


def run(ip: Any, line: str, cell: str) -> tuple[Any, list[Any]]:
    with capture_output() as cap:
        result = ip.run_cell(f"%%tenflang_gcp {line}\n{cell}")
    return result, cap.outputs


def test_the_magic_binds_the_edited_model_and_shows_the_edit(ip: Any) -> None:
    gcp = ip.user_ns["fan"].gcp
    result, outputs = run(ip, "fan", gcp.replace(FAN_OUT, FORGOT_C))
    assert result.success
    variant = ip.user_ns["fan_edited"]
    assert isinstance(variant.compiled, EditedGcp) and FORGOT_C in variant.gcp
    [summary] = outputs
    assert summary.data["text/plain"] == ("<TenFlang model 'fan_edited': the GCP of 'fan' with "
                                          "1 line changed, 1 removed>")
    assert "- " in summary.data["text/html"] and "+ " in summary.data["text/html"]
    run(ip, "fan broken", gcp.replace(FAN_OUT, FORGOT_C))
    assert "broken" in ip.user_ns


def test_the_magic_checks_the_gradients_and_trains_beside_the_true_gcp(ip: Any) -> None:
    ip.user_ns["data"] = FAN_DATA
    gcp = ip.user_ns["fan"].gcp
    result, outputs = run(ip, "fan broken --train data --lr 0.5 --max-iter 40 --tol 1e-6 "
                          "--no-live", gcp.replace(FAN_OUT, FORGOT_C))
    assert result.success
    check, panel = outputs[1].data, outputs[2].data
    assert "MISMATCH" in check["text/plain"] and "the gradient of w disagrees" in check[
        "text/html"]
    variant = ip.user_ns["broken"]
    assert variant.settings.lr == 0.5 and variant.settings.max_iter == 40
    true = fan().train(FAN_DATA, lr=0.5, max_iter=40, tol=1e-6)
    assert variant.panel.session.reference.history == true.history
    assert variant.history == train(variant.gcp, FAN_DATA, lr=0.5, max_iter=40,
                                    tol=1e-6).history
    assert panel["text/plain"].startswith("<TenFlang training panel: iteration 40/40")
    # the gradient check on one example instead of the whole data
    result, outputs = run(ip, "fan broken --example \"{x: 1.5, y: 0.2}\"",
                          gcp.replace(FAN_OUT, FORGOT_C))
    assert len(outputs) == 2 and outputs[1].data["text/plain"].count("\n") == 1


def test_a_bad_edit_shows_the_line_and_binds_nothing(ip: Any) -> None:
    gcp = ip.user_ns["fan"].gcp
    result, outputs = run(ip, "fan bad", gcp.replace("declare output d/L/d/w",
                                                     "declare intvar d/L/d/w"))
    assert result.success and "bad" not in ip.user_ns
    [shown] = outputs
    assert "The edited GCP has errors: nothing was bound." in shown.data["text/html"]
    assert shown.data["text/plain"].startswith("fan (edited GCP): line ")
    # the line as the editor numbers it too: the magic line is the cell's line 1
    line = gcp.splitlines().index("declare output d/L/d/w") + 1
    assert shown.data["text/plain"].startswith(
        f"fan (edited GCP): line {line} (line {line + 1} of the cell)")


def test_usage_errors(ip: Any) -> None:
    for line, message in [("nobody", "no variable named 'nobody'"),
                          ("fan 2x", "'2x' is not a valid Python name"),
                          ("fan --train nowhere", "--train nowhere: no variable")]:
        result, _ = run(ip, line, "declare input x\n")
        assert isinstance(result.error_in_exec, UsageError), line
        assert message in str(result.error_in_exec)


def test_trace_and_stepper_run_the_edited_gcp() -> None:
    variant = broken()
    variant.weights["w"] = 0.8
    steps = {s.name: s.value for s in variant.trace({"x": 1.5, "y": 0.2})}
    assert steps["d/L/d/a"] == steps["d/L/d/a:1"] != steps["d/L/d/a:0"] + steps["d/L/d/a:1"]
    true = fan()
    true.weights["w"] = 0.8
    expected = {s.name: s.value for s in true.trace({"x": 1.5, "y": 0.2})}
    assert steps["d/L/d/w"] != expected["d/L/d/w"]
    run = variant.stepper_run({"x": 1.5, "y": 0.2})
    assert [s.caption for s in run.steps if "d/L/d/a = " in s.caption][-1].startswith(
        "d/L/d/a = d/L/d/a:1")
    assert repr(variant.stepper({"x": 1.5, "y": 0.2})).startswith("<TenFlang stepper of "
                                                                 "'fan_edited'")
