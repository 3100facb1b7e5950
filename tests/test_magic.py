"""``%%tenflang`` through IPython's InteractiveShell: options, errors, binding, training."""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import CapturedIO, capture_output

from tenflang_nb.core.api import compile, evaluate, parse, train
from tenflang_nb.core.errors import TenFlangError
from tenflang_nb.core.examples import SEED_EXAMPLE
from tenflang_nb.notebook.loop import kernel_loop_running
from tenflang_nb.notebook.model import TenFlangModel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BAD = SEED_EXAMPLE.replace("define o = logistic z", "define o = logistik z")
DATA = {"x": [1.0, -1.0, 2.0], "y": [0.9, 0.1, 0.95]}


def run(ip: Any, line: str, cell: str) -> tuple[Any, CapturedIO]:
    """Run a %%tenflang cell as a user would; the result and everything it showed."""
    with capture_output() as cap:
        result = ip.run_cell(f"%%tenflang {line}\n{cell}")
    return result, cap


def plain(cap: CapturedIO) -> list[str]:
    return [o.data.get("text/plain", "") for o in cap.outputs]


def html(cap: CapturedIO) -> str:
    return "".join(o.data.get("text/html", "") for o in cap.outputs)


# ------------------------------------------------------------------------------ the extension

def test_load_and_unload_the_extension(shell: Any) -> None:
    shell.run_line_magic("load_ext", "tenflang_nb")
    assert "tenflang" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", "tenflang_nb")
    assert "tenflang" not in shell.magics_manager.magics["cell"]
    assert "TenFlangMagics" not in shell.magics_manager.registry
    result = shell.run_cell("%%tenflang net\n" + SEED_EXAMPLE)
    assert isinstance(result.error_in_exec, UsageError)  # cell magic not found
    shell.run_line_magic("load_ext", "tenflang_nb")  # loads again after an unload
    assert "tenflang" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", "tenflang_nb")


def test_help_lists_every_option(ip: Any) -> None:
    with capture_output() as cap:
        ip.run_cell("%%tenflang?")
    text = cap.stdout
    assert "%%tenflang [--show VIEWS]" in text
    for option in ("--show", "--full", "--example", "--train", "--lr", "--tol", "--max-iter",
                   "--init", "--seed", "--no-live", "--landscape"):
        assert option in text
    assert "graph, order, gcp, expanded" in text


# ------------------------------------------------------------------------------ binding

def test_good_program_is_bound_and_shown(ip: Any) -> None:
    result, cap = run(ip, "net", SEED_EXAMPLE)
    assert result.success and result.result is None  # nothing echoed as Out[]
    model = ip.user_ns["net"]
    assert isinstance(model, TenFlangModel)
    assert repr(model) == "<TenFlang model 'net': 7 variables, 1 weight>"
    assert model.gcp == compile(parse(SEED_EXAMPLE, "net.tf")).text
    assert model.weights == {"w": 0.0}
    assert plain(cap) == ["<TenFlang views of 'net': graph, order, gcp>"]
    assert "<svg" in html(cap) and "data-tf-gcp-line" in html(cap)


def test_without_a_name_nothing_is_bound(ip: Any) -> None:
    def bound() -> set[str]:  # IPython's own history names (_, _i3, ...) aside
        return {k for k in ip.user_ns if not k.startswith("_")}

    before = bound()
    result, cap = run(ip, "--show order", SEED_EXAMPLE)
    assert result.success and bound() == before
    assert plain(cap) == ["<TenFlang views of 'cell': order>"]


def test_bad_program_shows_line_and_caret_and_binds_nothing(ip: Any) -> None:
    result, cap = run(ip, "net", BAD)
    assert result.success  # shown, not raised: no traceback
    assert "net" not in ip.user_ns
    text = plain(cap)[0]
    # line 10 of the program is line 11 of the cell: under the %%tenflang line, where the
    # editor (its line numbers on) shows it
    headline = "net.tf: line 10 (line 11 of the cell): error: unknown operator 'logistik'"
    assert text.splitlines()[:3] == [headline, "    define o = logistik z",
                                     "               ^^^^^^^^"]
    assert f"%%tenflang net\n{BAD}".splitlines()[11 - 1] == "define o = logistik z"
    assert html_lib.escape(headline) in html(cap)
    assert "tf-caret" in html(cap) and 'class="tf-bad" data-tf-line="10"' in html(cap)
    assert "nothing was bound" in html(cap)
    assert "Traceback" not in cap.stdout + cap.stderr + html(cap)


def test_bad_program_keeps_the_earlier_model(ip: Any) -> None:
    run(ip, "net --show none", SEED_EXAMPLE)
    good = ip.user_ns["net"]
    run(ip, "net --show none", BAD)
    assert ip.user_ns["net"] is good


def test_every_error_is_reported_not_only_the_first(ip: Any) -> None:
    text = SEED_EXAMPLE.replace("mul x w", "mul x q").replace("sub o y", "sub o yy")
    _, cap = run(ip, "net", text)
    lines = [ln for ln in plain(cap)[0].splitlines() if ": error: " in ln]
    found = {re.search(r"line (\d+)", ln).group(1) for ln in lines}
    assert {"9", "11"} <= found  # (the core adds follow-on errors of lines using z)


def test_warnings_are_shown(ip: Any) -> None:
    _, cap = run(ip, "net --show none", SEED_EXAMPLE + "declare input unused\n")
    assert plain(cap) == [
        "net.tf: line 13 (line 14 of the cell): warning: 'unused' is declared but never used"]
    assert "net.tf: line 13 (line 14 of the cell): &#x27;unused&#x27;" in html(cap)
    assert "net" in ip.user_ns


@pytest.mark.parametrize("line, message", [
    ("1net", "not a valid Python name"),
    ("class", "not a valid Python name"),
    ("net --show graf", "unknown view 'graf'"),
    ("net --train nowhere", "no variable named 'nowhere'"),
    ("net --train {data}", "no variable named '{data}'"),  # the line is not var-expanded
    ("net --show step --example nowhere", "--example nowhere: give a record"),
    ('net --show step --example "{x: 1.5, y: }"', "--example: expected a value for 'y'"),
])
def test_bad_options_are_usage_errors_and_bind_nothing(ip: Any, line: str, message: str) -> None:
    ip.user_ns["data"] = DATA
    result, _ = run(ip, line, SEED_EXAMPLE)
    assert isinstance(result.error_in_exec, UsageError)
    assert message in str(result.error_in_exec)
    assert "net" not in ip.user_ns


@pytest.mark.parametrize("line, message", [
    ("net --lr -1", "lr must be a finite number >= 0, not -1.0"),
    ("net --init ones", "init must be one of auto, zeros, normal, not 'ones'"),
    ("net --seed -1", "seed must be an integer >= 0, not -1"),
    ("net --momentum 1", "momentum must be a number in [0, 1), not 1.0"),
    ("net --max-iter inf", "max_iter must be an integer, not 'inf'"),
])
def test_bad_settings_are_the_cores_errors_and_bind_nothing(ip: Any, line: str, message: str
                                                             ) -> None:
    result, cap = run(ip, line, SEED_EXAMPLE)
    assert isinstance(result.error_in_exec, TenFlangError)
    assert message in str(result.error_in_exec)
    assert "Traceback" not in cap.stdout + cap.stderr
    assert "net" not in ip.user_ns


# ------------------------------------------------------------------------------ views

def test_show_chooses_the_views(ip: Any) -> None:
    _, cap = run(ip, "net --show gcp,expanded", SEED_EXAMPLE)
    assert plain(cap) == ["<TenFlang views of 'net': gcp, expanded>"]
    assert "<svg" not in html(cap) and "tf-expanded-line" in html(cap)
    _, cap = run(ip, "net --show none", SEED_EXAMPLE)
    assert cap.outputs == []


def test_show_cost_asks_the_model_to_measure(ip: Any) -> None:
    # the view only renders what the model measured: naming it in --show is the request
    _, cap = run(ip, "net --show cost", SEED_EXAMPLE)
    assert plain(cap) == ["<TenFlang views of 'net': cost>"]
    assert ip.user_ns["net"].costs is not None
    assert "What one gradient costs" in html(cap) and "Not measured yet" not in html(cap)


def test_full_shows_the_full_gcp(ip: Any) -> None:
    _, cap = run(ip, "net --show gcp --full", SEED_EXAMPLE)
    full = compile(parse(SEED_EXAMPLE), full=True)
    origins = re.findall(r'data-tf-line="(\d+)" data-tf-gcp-line', html(cap))
    assert [int(o) for o in origins] == full.provenance()


def test_no_dot_means_a_fallback_not_an_exception(ip: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    result, cap = run(ip, "net", SEED_EXAMPLE)
    assert result.success and "<svg" not in html(cap)
    assert "apt-get install graphviz" in html(cap)
    assert "net" in ip.user_ns


def test_a_program_without_a_loss_is_still_a_model(ip: Any) -> None:
    text = "declare input x\ndeclare output y\ndefine y = mul x 2\n"
    result, cap = run(ip, "model", text)
    assert result.success and "declares no loss" not in plain(cap)[0]
    assert "No GCP: the program declares no loss" in html(cap)
    assert ip.user_ns["model"].evaluate({"x": [1.0, 2.0]}) == [{"y": 2.0}, {"y": 4.0}]


# ------------------------------------------------------------------------------ training

def test_train_no_live_with_a_dict_is_deterministic(ip: Any) -> None:
    pytest.importorskip("tenflang_nb.notebook.panel")
    ip.user_ns["data"] = DATA
    weights = []
    for _ in range(2):
        result, cap = run(ip, "net --show none --train data --no-live --max-iter 30 --lr 0.5",
                          SEED_EXAMPLE)
        assert result.success
        model = ip.user_ns["net"]
        weights.append(model.weights["w"])
        assert len(model.history) == 31 and model.result.iterations == 30
        assert model.panel.state == "done"
        assert plain(cap) == [model.panel.__repr__()]  # the panel, shown once, final state
        assert plain(cap)[0].startswith("<TenFlang training panel: iteration 30/30")
    core = train(compile(parse(SEED_EXAMPLE)), DATA, lr=0.5, max_iter=30)
    assert weights[0] == weights[1] == core.weights["w"]


def test_train_with_the_landscape_shown(ip: Any) -> None:
    pytest.importorskip("tenflang_nb.notebook.panel")
    ip.user_ns["data"] = DATA
    _, cap = run(ip, "net --show none --train data --no-live --max-iter 20 --landscape",
                 SEED_EXAMPLE)
    panel = ip.user_ns["net"].panel
    assert panel.show_landscape.value and panel.landscape_plot.value[:4] == b"\x89PNG"
    assert "alt='loss landscape" in html(cap) and "alt='loss curve" in html(cap)
    _, cap = run(ip, "net --show none --train data --no-live --max-iter 20", SEED_EXAMPLE)
    assert "loss landscape" not in html(cap)


def test_train_from_a_file_and_show_values(ip: Any) -> None:
    pytest.importorskip("tenflang_nb.notebook.panel")
    path = EXAMPLES / "logistic" / "training_data.txt"
    _, cap = run(ip, f"net --show values --train {path} --no-live --max-iter 5", SEED_EXAMPLE)
    model = ip.user_ns["net"]
    assert model.result.iterations == 5 and len(model.data) == 200
    assert plain(cap)[-1] == "<TenFlang views of 'net': values>"
    caption = "Values and gradients d/lambda/d/v on training example 0: {x: 2.8031, y: 1.0434}"
    assert caption in html(cap) and html(cap).count(">grad ") == 7


def test_show_step_on_an_example(ip: Any) -> None:
    _, cap = run(ip, 'net --show step --example "{x: 1.5, y: 0.2}"', SEED_EXAMPLE)
    assert plain(cap) == ["<TenFlang views of 'net': step>"]
    assert html(cap).count('class="tf-stepper"') == 1
    assert "on the example <code>{x: 1.5, y: 0.2}</code>, weights w = 0" in html(cap)
    # a variable holding the example, beside another view that runs on it
    ip.user_ns["one"] = {"x": -1.0, "y": 0.9}
    _, cap = run(ip, "net --show step,values --example one", SEED_EXAMPLE)
    assert "{x: -1, y: 0.9}" in html(cap) and "Values and gradients" in html(cap)
    # no example and no data: a note saying how to get one, no error
    result, cap = run(ip, "net --show step", SEED_EXAMPLE)
    assert result.success and "--example" in html(cap) and "tf-step-data" not in html(cap)


def test_show_step_after_training_on_an_example_by_index(ip: Any) -> None:
    pytest.importorskip("tenflang_nb.notebook.panel")
    ip.user_ns["data"] = DATA
    _, cap = run(ip, "net --show step --train data --no-live --max-iter 3 --example 2",
                 SEED_EXAMPLE)
    assert plain(cap)[-1] == "<TenFlang views of 'net': step>"
    w = ip.user_ns["net"].weights["w"]
    assert f"on the example <code>{{x: 2, y: 0.95}}</code>, weights w = {w:.4g}" in html(cap)


def test_train_with_bad_data_shows_the_error_and_keeps_the_model(ip: Any) -> None:
    ip.user_ns["data"] = {"x": [1.0, 2.0]}  # no y
    result, cap = run(ip, "net --show none --train data --no-live", SEED_EXAMPLE)
    assert result.success
    assert "missing required input 'y'" in plain(cap)[0]
    assert ip.user_ns["net"].result is None


def test_plain_ipython_never_trains_live(ip: Any) -> None:
    assert kernel_loop_running(ip) is False


# ------------------------------------------------------------------------------ model methods

def test_evaluate_matches_the_core(ip: Any) -> None:
    run(ip, "net --show none", SEED_EXAMPLE)
    model = ip.user_ns["net"]
    model.train(DATA, max_iter=20)
    inputs = [{"x": 0.5}, {"x": -2.0, "y": 0.2}]
    got = model.evaluate(inputs)
    assert got == evaluate(model.program, inputs, model.weights)
    table = got._repr_html_()
    assert table.count("<tr>") == 3 and "<th>lambda</th>" in table and "null" in table
    assert model.evaluate({"x": 0.5}) == got[:1]  # one example as a dict of numbers


def test_gradcheck_agrees_and_catches_a_wrong_gcp() -> None:
    xor = TenFlangModel((EXAMPLES / "xor" / "shape.tf").read_text(), "xor", init="normal")
    check = xor.gradcheck({"x": [0.0, 1.0], "y": 1.0})  # one example, x a vector
    assert check.ok and len(check) == 2 * 4 + 4 + 4 + 1 and check.max_rel_error < 1e-5
    seed = TenFlangModel(SEED_EXAMPLE, "net")
    seed.weights = {"w": 0.7}
    wrong = seed.gcp.replace("define d/lambda/d/w = mul d/lambda/d/z d/z/d/w",
                             "define d/lambda/d/w = add d/lambda/d/z d/z/d/w")
    assert wrong != seed.gcp
    seed.gcp_program = parse(wrong, "<wrong GCP>")  # what training and the check run
    bad = seed.gradcheck({"x": 1.5, "y": 0.2})
    assert not bad.ok and bad[0]["rel_error"] > 0.1
    assert "MISMATCH" in bad._repr_html_()


def test_values_give_the_adjoints_of_the_full_gcp() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "net")
    model.weights = {"w": 0.3}
    values = model.values({"x": 2.0, "y": 1.0})
    o = 1 / (1 + np.exp(-0.6))
    assert float(values["o"][0]) == pytest.approx(o)
    assert float(values["lambda"][1]) == 1.0
    # d lambda / d w = 2 (o - y) o (1 - o) x, and the numeric check agrees with the GCP
    assert float(values["w"][1]) == pytest.approx(2 * (o - 1) * o * (1 - o) * 2.0)
    assert model.gradcheck({"x": 2.0, "y": 1.0})[0]["gcp"] == pytest.approx(
        float(values["w"][1]))


def test_examples_by_index_need_training_data() -> None:
    model = TenFlangModel(SEED_EXAMPLE, "net")
    with pytest.raises(Exception, match="no training data yet"):
        model.show_values(0)
    model.train(DATA, max_iter=1)
    with pytest.raises(Exception, match="out of range: the training data has 3"):
        model.values(3)


@pytest.mark.parametrize(("line", "message"), [
    ("net --train data --lr 1_000", "lr must be a number, not '1_000'"),
    ("net --train data --max-iter ١٠", "max_iter must be an integer, not '١٠'"),
    ("net --show step --example ٢", "--example ٢: give a record"),
])
def test_options_take_numbers_as_the_language_writes_them(ip: Any, line: str,
                                                          message: str) -> None:
    # before: int() and float() took other scripts' digits and 1_000 (issue 16, item 14)
    ip.user_ns["data"] = DATA
    result, cap = run(ip, line, SEED_EXAMPLE)
    shown = str(result.error_in_exec) + cap.stdout + cap.stderr + html(cap)
    assert message in shown, shown
